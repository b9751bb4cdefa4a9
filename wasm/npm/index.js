// The planner for a page of one's own: `new PlannerClient()` starts the
// package's worker (worker.js, next to this file), which loads the threaded
// module (pase-mt.js) on a cross-origin isolated page and the single-threaded
// one (pase.js) elsewhere, as the planning page does. README.md shows a page
// that uses it; index.d.ts types the requests, the results and the errors.
export { PlannerClient, PlannerError } from './planner-client.js';
