/* The planner worker: the one place where the WebAssembly module lives.
 *
 * A classic worker (not a module worker) because pase.js is a classic
 * -sMODULARIZE build that defines the global createPase().
 *
 * Protocol (planner-client.js is the other side):
 *   in:  {id, action, payload}
 *   out: {id, result} | {id, error: {message, where}} | {id, progress}
 * Long work is cancelled by terminating this worker; it keeps no state that
 * would need cleaning up.
 */
'use strict';

let loadError = null;
try {
  importScripts('pase.js');
} catch (e) {
  loadError = e;
}

// Instantiated once; every request waits for it. A failure is kept and
// reported to each request, so the page shows it in its error box.
const ready = loadError
  ? Promise.reject(loadError)
  : createPase({
      // Without this, Emscripten prints aborts only to the console.
      printErr: (text) => console.warn('[pase]', text),
    });
ready.catch(() => {}); // reported per request below

const actions = {
  // payload: the request document as JSON text, passed through untouched so
  // the core sees exactly what the user gave.
  plan: (pase, payload, progress) => pase.plan(payload, progress),
  evaluate: (pase, payload) => pase.evaluate(payload),
  // payload: a plan request plus an optional "mcmc" object (compare.hpp).
  compare: (pase, payload) => pase.compare(payload),
  // payload: a pase-graph/1 document as JSON text; the answer is a summary
  // {ok, name, layers, vertices, edges, parameters}, or an error whose `where` is the
  // document's own field ("layers[2].filter").
  validate: (pase, payload) => pase.validate(payload),
  models: (pase) => pase.models(),
  exportModel: (pase, payload) => pase.exportModel(String(payload.name), Number(payload.batch ?? 0)),
  // version() is plain text, not JSON.
  version: (pase) => JSON.stringify(pase.version()),
};

self.onmessage = async (event) => {
  const { id, action, payload } = event.data;
  let pase;
  try {
    pase = await ready;
  } catch (e) {
    const detail = e && e.message ? e.message : String(e);
    self.postMessage({ id, error: { message: `the planner module failed to load: ${detail}`, where: 'module' } });
    return;
  }
  const run = actions[action];
  if (!run) {
    self.postMessage({ id, error: { message: `unknown action '${action}'`, where: 'action' } });
    return;
  }
  try {
    const text = run(pase, payload, (fraction) => self.postMessage({ id, progress: fraction }));
    const doc = JSON.parse(text);
    if (doc && typeof doc === 'object' && !Array.isArray(doc) && doc.error) {
      self.postMessage({ id, error: doc.error });
    } else {
      self.postMessage({ id, result: doc });
    }
  } catch (e) {
    // Only an abort of the module lands here (the bindings return errors as
    // documents); after an abort the module is unusable, so say so.
    const detail = e && e.message ? e.message : String(e);
    self.postMessage({ id, error: { message: `the planner module stopped: ${detail}`, where: 'module' } });
  }
};
