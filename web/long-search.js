// Long searches announced: before a plan (or a device sweep) whose search the
// module's estimate() says will take more than a few seconds, the page says
// so and asks whether to go on.
//
// The rule (README, "In the browser"; core/docs/performance.md): the search
// visits `pairs` (table entry, configuration) pairs, and the module does one
// in about 0.2 to 0.5 ns when the pairs dominate (dense rows in SIMD128 lanes:
// the Transformer at 1024 devices, 4.59e10 pairs, in 18.4 s on one thread
// under Node 20, 0.40 ns; the same search natively in 10.3 s), so the page
// counts 0.6 ns per pair, on the slow side (a machine busy with other work,
// or without SIMD, is slower; threads make it faster). Under a
// memory cap the planner may search several times (the least cost, then, if
// it does not fit, the least memory and the dual's breakpoints: a handful),
// so a capped request counts three searches. A pipeline search makes the
// whole-graph searches the estimate's pipeline.whole_graph_searches counts
// (S = M = 1 under "auto", for the comparison), and plans its stages on
// top: it counts those searches, and the message says "at least". When the
// exact search's tables are over the request's table limit, the plan runs
// the bounded search instead (search "auto", core/docs/bounded-search.md):
// the estimate then says search.method "bounded", and its pairs are the
// bounded search's budget (at most search.rounds rounds of a fixed size), so
// the time is at most what they take, and the message says "at most". Only
// a search held to the exact one (search "exact": the estimate's method
// "exact") with tables over the limit is refused at once by the plan itself:
// nothing to announce. Fixed costs (enumeration, cost tables, the bounded
// search's bound) are not counted: they are what the estimate itself
// takes, already spent.

import { el } from './views/dom.js';
import { formatBytes, formatSeconds } from './format.js';

export const nsPerPair = 0.6;
export const searchesUnderCap = 3;
// Above this many seconds the page asks first.
export const confirmAboveSeconds = 5;

/** Whether the estimate is of the bounded search (its pairs are then its budget). */
export function isBounded(estimate) {
  return estimate?.search?.method === 'bounded';
}

/**
 * The seconds a plan request's search is expected to take, from the
 * module's estimate document (estimate_json(): {memory_capped, max_memory,
 * search: {method, pairs, peak_bytes, rounds?}, pipeline?:
 * {whole_graph_searches}}); for the bounded search (method "bounded") at
 * most this long; 0 when the plan would refuse the exact search over the
 * table limit, null when the document gives no pairs. For a pipeline, the
 * whole-graph searches alone: its stage plans come on top
 * (core/docs/formats.md, "Estimate").
 */
export function estimatedSeconds(estimate) {
  const pairs = estimate?.search?.pairs;
  if (!Number.isFinite(pairs) || pairs < 0) return null;
  const limit = estimate.max_memory;
  // The exact search only (an estimate without a method is of a module from
  // before the bounded search, which was always exact): the bounded search's
  // peak_bytes is its round budget, never refused.
  if (!isBounded(estimate) && Number.isFinite(limit) && limit > 0 && estimate.search.peak_bytes > limit) return 0;
  const searches = Math.max(1, estimate.pipeline?.whole_graph_searches ?? 1);
  return (pairs * nsPerPair * 1e-9) * (estimate.memory_capped ? searchesUnderCap : 1) * searches;
}

/** 165 -> "2.8 min", 42.3 -> "42 s", 7200 -> "2.0 h": a duration people read at a glance. */
export function formatDuration(seconds) {
  if (!Number.isFinite(seconds)) return '—';
  if (seconds < 1) return formatSeconds(seconds);
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${(seconds / 60).toFixed(1)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

/**
 * The inline confirmation (#long-search): a message, "Plan anyway" and
 * "Cancel". One question at a time: asking again, or dismiss(), answers the
 * open question with false.
 */
export class LongSearchDialog {
  #ui;
  #answer = null; // resolves the open question

  /** @param {{box: HTMLElement, text: HTMLElement, go: HTMLButtonElement, cancel: HTMLButtonElement}} ui */
  constructor(ui) {
    this.#ui = ui;
    ui.go.addEventListener('click', () => this.#settle(true));
    ui.cancel.addEventListener('click', () => this.#settle(false));
    ui.box.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') this.#settle(false);
    });
  }

  get open() {
    return this.#answer !== null;
  }

  /**
   * Shows `message` (text or nodes) with `goLabel` on the button that goes
   * on; resolves to true (go on) or false (cancelled, or replaced).
   */
  ask(message, goLabel = 'Plan anyway') {
    this.dismiss();
    const ui = this.#ui;
    ui.text.replaceChildren(...[message].flat());
    ui.go.textContent = goLabel;
    ui.box.hidden = false;
    ui.cancel.focus();
    return new Promise((resolve) => { this.#answer = resolve; });
  }

  dismiss() {
    this.#settle(false);
  }

  #settle(value) {
    const answer = this.#answer;
    if (!answer) return;
    this.#answer = null;
    this.#ui.box.hidden = true;
    answer(value);
  }
}

/**
 * "about 42 s"; for a pipeline (the estimate's `pipeline`) "at least 42 s",
 * for the bounded search (`bounded`) "at most 42 s".
 */
export function durationPhrase(seconds, pipeline = null, bounded = false) {
  return `${pipeline ? 'at least' : bounded ? 'at most' : 'about'} ${formatDuration(seconds)}`;
}

/**
 * The dialog's text for a search of `seconds`: "about 2.8 min ... (1.2e10
 * pairs)"; with `pipeline` (the estimate's), "at least", and the searches
 * counted; with `bounded` (the estimate's search, method "bounded"), "at
 * most", and the bounded search's budget of rounds.
 */
export function longSearchMessage(what, seconds, { pairs, capped = false, then = '', pipeline = null, bounded = null } = {}) {
  const whole = pipeline?.whole_graph_searches ?? 0;
  const counted = !pipeline
    ? ''
    : whole > 0
      ? `, ${whole} whole-graph ${whole === 1 ? 'search' : 'searches'} of the pipeline (its stage plans come on top)`
      : ', the pipeline\'s stage plans as one search of the whole graph';
  const budget = bounded
    ? ` (the bounded search's budget: at most ${bounded.rounds} rounds, since the exact search would need`
      + ` ${formatBytes(bounded.exact_peak_bytes)} of tables)`
    : '';
  return [
    el('strong', { text: `${what} will take ${durationPhrase(seconds, pipeline, Boolean(bounded))}.` }),
    ' ',
    `The estimate counts ${Number.isFinite(pairs) ? pairs.toExponential(2) : 'its'} table pairs${budget} at ${nsPerPair} ns each`
      + `${capped ? `, ${searchesUnderCap} searches under the memory cap` : ''}${counted}; the page stays usable meanwhile and Cancel stops it.`,
    then ? ` ${then}` : '',
  ];
}
