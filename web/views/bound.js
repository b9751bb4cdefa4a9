// What a plan is worth, in one sentence under the headline (#plan-bound):
// whether its cost is proven the least, and if not, the least cost the
// search proves every strategy has (the plan result's `lower_bound`) and how
// far above it the plan may be (`gap_percent`). A plan is not proven optimal
// after the bounded search (core/docs/bounded-search.md), which plans graphs
// whose exact tables exceed the table limit, or under a memory cap whose
// Lagrangian bound it does not meet (core/docs/cluster.md, "Planning under a
// memory cap"); both say it in the same words, once. An exact plan without a
// cap is optimal by construction: nothing is said.
//
// Test hooks: #plan-bound[data-optimal="true"|"false"][data-method][data-gap]
// (data-gap: the result's gap_percent, absent when unknown).

import { capacityOf, formatCostUnit, formatShare } from '../format.js';

/** "3 rounds", "1 round". */
function rounds(count) {
  return `${count} round${count === 1 ? '' : 's'}`;
}

/** "7.5% more", "less than 0.1% more": how far above the bound the plan may be. */
function gapPhrase(percent) {
  const share = formatShare(percent / 100);
  return share.startsWith('<') ? `less than ${share.slice(1)} more` : `at most ${share} more`;
}

/**
 * What `plan` (a plan-result document) is worth: {optimal, method, gap, text},
 * or null when there is nothing to say (an exact plan without a memory cap,
 * proven optimal by construction). `gap` is the gap in per cent of the
 * bound, null when unknown (a bound of 0). Results saved before the bounded
 * search have no top-level `optimal`: a capped one's memory report says it.
 */
export function planBound(plan) {
  const memory = plan?.memory ?? {};
  const capped = memory.capacity_bytes > 0;
  const method = plan?.search?.method === 'bounded' ? 'bounded' : 'exact';
  const bounded = method === 'bounded';
  const optimal = typeof plan?.optimal === 'boolean' ? plan.optimal : capped && typeof memory.optimal === 'boolean' ? memory.optimal : null;
  if (optimal === null) return null;
  if (optimal && !bounded && !capped) return null;
  const lowerBound = Number.isFinite(plan.lower_bound) ? plan.lower_bound : memory.lower_bound;
  let gap = null;
  if (Number.isFinite(plan.gap_percent)) gap = plan.gap_percent;
  else if (plan.gap_percent === undefined && lowerBound > 0) gap = (100 * Math.max(0, plan.cost - lowerBound)) / lowerBound;
  const fits = capped ? ' that fits' : '';
  const searchRounds = Number.isInteger(plan.search?.rounds) ? ` (${rounds(plan.search.rounds)})` : '';
  if (optimal) {
    const text = bounded
      ? `Proven optimal by the bounded search's bound${searchRounds}: no strategy${fits} costs less.`
      : `Proven optimal: the cheapest strategy that fits in ${capacityOf(memory, ' per GPU')}.`;
    return { optimal, method, gap, text };
  }
  const who = bounded ? `the bounded search${searchRounds}${capped ? ' under the memory cap' : ''}`
    : plan.pipeline ? 'the pipeline search'
      : capped ? 'the search under the memory cap' : 'the search';
  const bound = lowerBound > 0 && gap !== null
    ? `every strategy${fits} costs at least ${formatCostUnit(lowerBound)}, this plan ${gapPhrase(gap)}`
    : 'no lower bound above 0 is known, so how far it is from the optimum is not known';
  return { optimal, method, gap, text: `Not proven optimal: ${who} found this plan; ${bound}.` };
}

/** Fills `note` (#plan-bound) for `plan`, or hides it when there is nothing to say. */
export function renderBound(note, plan) {
  const bound = planBound(plan);
  note.hidden = !bound;
  note.textContent = bound ? bound.text : '';
  note.classList.toggle('unproven', bound?.optimal === false);
  for (const key of ['optimal', 'method', 'gap']) delete note.dataset[key];
  if (!bound) return;
  note.dataset.optimal = String(bound.optimal);
  note.dataset.method = bound.method;
  if (bound.gap !== null) note.dataset.gap = String(bound.gap);
}
