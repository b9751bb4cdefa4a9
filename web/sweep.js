// The device sweep on the page (`pase compare --sweep`): the current graph
// and cluster compared with the baselines at 1, 2, 4, ... devices up to the
// cluster's, each count one `compare` request without MCMC, drawn as PaSE's
// speedup over data parallelism (views/scaling.js).
//
// It runs in a worker of its own (a second PlannerClient, started on the
// first sweep), so a sweep and a plan do not wait for each other, and Cancel
// stops the sweep alone: the worker is terminated and a fresh one started.
// Before it starts, the searches of all counts are estimated; above the
// long-search threshold (long-search.js) the page asks first. A count where
// no strategy fits the memory per GPU is marked and the sweep goes on; any
// other error stops it, keeping the points already drawn.

import { formatSeconds } from './format.js';
import { confirmAboveSeconds, estimatedSeconds, formatDuration, longSearchMessage } from './long-search.js';
import { parseNoFit } from './results.js';
import { renderScaling } from './views/scaling.js';

// The counts of `pase compare --sweep` a page can afford: at most 17 (1 to 65536).
export function sweepCounts(devices) {
  if (!Number.isInteger(devices) || devices < 1) return [];
  const counts = [];
  for (let p = 1; p < devices; p *= 2) counts.push(p);
  counts.push(devices);
  return counts;
}

// The comparison's fields of a sweep: no MCMC search (`pase compare --sweep
// --mcmc-iterations 0`); the chart shows PaSE's and the expert's speedups.
const noMcmc = { mcmc: { iterations: 0 } };

export class DeviceSweep {
  #ui;
  #deps;
  #client = null;
  #token = null; // the sweep in flight; any other answer is stale

  /**
   * @param {{button, cancel, progress, status, chart}} ui
   * @param {{makeClient: () => import('./planner-client.js').PlannerClient,
   *          current: () => ({label: string, devices: number|null}|null),
   *          requestFor: (devices: number, extra?: object) => string,
   *          ask: (message: any, goLabel: string) => Promise<boolean>}} deps
   *   `current` names what the form asks to plan (null: nothing chosen),
   *   `requestFor` is its plan request at a device count, with the fields of
   *   `extra` added, `ask` the long-search confirmation.
   */
  constructor(ui, deps) {
    this.#ui = ui;
    this.#deps = deps;
    ui.button.addEventListener('click', () => this.run());
    ui.cancel.addEventListener('click', () => this.cancel());
  }

  get running() {
    return this.#token !== null;
  }

  /** Lets the button be pressed once the module is ready. */
  enable() {
    this.#ui.button.disabled = this.running;
  }

  async run() {
    const ui = this.#ui;
    const what = this.#deps.current();
    if (!what) {
      this.#status('Choose a network first.');
      return;
    }
    const counts = sweepCounts(what.devices);
    if (counts.length === 0) {
      this.#status('Set the number of devices first: the sweep goes from 1 up to it.');
      return;
    }
    this.cancel(null);
    const token = {};
    this.#token = token;
    this.#setRunning(true);
    this.#progress(0);
    renderScaling(ui.chart, []);
    this.#client ??= this.#deps.makeClient();
    const client = this.#client;
    const range = counts.length === 1 ? '1 device' : `1 to ${what.devices} devices`;
    try {
      this.#status(`Estimating the sweep of ${what.label} over ${range}…`);
      let seconds = 0;
      let pairs = 0;
      let capped = false;
      for (const devices of counts) {
        const estimate = await client.call('estimate', this.#deps.requestFor(devices)).catch((e) => {
          if (e.kind === 'cancelled') throw e;
          return null; // the comparison reports the error at that count
        });
        if (this.#token !== token) return;
        seconds += estimatedSeconds(estimate) ?? 0;
        pairs += estimate?.search?.pairs ?? 0;
        capped ||= Boolean(estimate?.memory_capped);
      }
      if (seconds > confirmAboveSeconds) {
        const go = await this.#deps.ask(longSearchMessage(`Sweeping ${what.label} over ${range}`, seconds, { pairs, capped }), 'Sweep anyway');
        if (this.#token !== token) return;
        if (!go) {
          this.#finish(token, `Not swept: it would take about ${formatDuration(seconds)}.`);
          return;
        }
      }
      const started = performance.now();
      const points = [];
      for (const [i, devices] of counts.entries()) {
        this.#status(`Comparing ${what.label} at ${devices} device${devices === 1 ? '' : 's'} (${i + 1} of ${counts.length})…`);
        let point;
        try {
          const doc = await client.call('compare', this.#deps.requestFor(devices, noMcmc));
          if (this.#token !== token) return;
          const { pase, expert, data_parallel: dp } = doc.strategies;
          // A speedup over data parallelism where it does not fit would be
          // one over a run nobody can launch: such a count is marked, with
          // PaSE's step time, and no speedup is drawn (nor an expert's that
          // does not fit).
          const dataParallelFits = dp?.memory?.fits !== false;
          point = {
            devices,
            pase: dataParallelFits ? pase.speedup : undefined,
            expert: dataParallelFits && expert?.memory?.fits !== false ? expert?.speedup : undefined,
            paseTime: pase.step_time_s,
            dataParallelFits,
          };
        } catch (e) {
          if (this.#token !== token) return;
          if (!(e.kind === 'input' && parseNoFit(e))) {
            renderScaling(ui.chart, points);
            this.#finish(token, `The sweep stopped at ${devices} device${devices === 1 ? '' : 's'}: ${e.message}`, { error: true });
            return;
          }
          point = { devices, noFit: true };
        }
        points.push(point);
        renderScaling(ui.chart, points);
        this.#progress((i + 1) / counts.length);
      }
      const last = points.at(-1);
      const at = `${last.devices} device${last.devices === 1 ? '' : 's'}`;
      let summary = `no strategy fits at ${at}`;
      if (!last.noFit) {
        summary = Number.isFinite(last.pase) ? `PaSE ${last.pase.toFixed(2)}× data parallelism at ${at}`
          : !last.dataParallelFits ? `data parallelism does not fit at ${at}; PaSE plans ${formatSeconds(last.paseTime)} a step`
            : `compared at ${at}`;
      }
      this.#finish(token, `Swept ${what.label} over ${range} in ${formatSeconds((performance.now() - started) / 1000)}: ${summary}.`);
    } catch (e) {
      if (this.#token !== token) return; // cancelled
      this.#finish(token, `The sweep failed: ${e.message}`, { error: true });
    }
  }

  /** Stops the sweep in flight, if any, saying `message` (null: say nothing). */
  cancel(message = 'Sweep cancelled.') {
    if (!this.#token) return;
    this.#token = null;
    this.#client.restart();
    this.#setRunning(false);
    this.#progress(0);
    if (message) this.#status(message);
  }

  #finish(token, message, { error = false } = {}) {
    if (this.#token !== token) return;
    this.#token = null;
    this.#setRunning(false);
    this.#status(message, { error });
  }

  #setRunning(running) {
    this.#ui.button.disabled = running;
    this.#ui.cancel.disabled = !running;
    this.#ui.chart.closest('.card')?.classList.toggle('sweeping', running);
  }

  #progress(fraction) {
    this.#ui.progress.value = fraction;
    this.#ui.progress.textContent = `${Math.round(fraction * 100)}%`;
  }

  #status(text, { error = false } = {}) {
    this.#ui.status.textContent = text;
    this.#ui.status.classList.toggle('sweep-error', error);
  }
}
