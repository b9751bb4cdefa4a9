// What Plan (or Enter) does: wait for a file or example still being checked
// (source.js), and say why when that choice fails; once a refused file's
// error is on display, plan the graph the page shows (the error box gives
// way to the plan); estimate the search and, above the
// long-search threshold, ask whether to go on (long-search.js), plan in the
// page's worker and show the result (results.js), then compare it with the
// baselines (views/compare.js), or only offer to after a long search. Also
// Cancel, which stops whichever of the plan and its comparison is running,
// the progress bar and whether the page is planning. The request's text, the
// worker and the other parts of the page are app.js's, handed in as hooks.

import { formatSeconds } from './format.js';
import { renderComparison, renderComparisonMessage } from './views/compare.js';
import { parseNoFit } from './results.js';
import { confirmAboveSeconds, durationPhrase, estimatedSeconds, isBounded, longSearchMessage } from './long-search.js';

// The comparison's MCMC search gets a fixed proposal budget and no time
// limit, so the page shows the same numbers on every machine (compare.hpp,
// DETERMINISM); 20000 proposals take well under a second on every benchmark.
const comparisonMcmc = { iterations: 20000, time_limit_s: 0 };

/**
 * ", about 12 s left", ", about 3 min left", ", under a second left"; '' while
 * the module has no estimate (null) yet.
 */
export function timeLeftText(seconds) {
  if (seconds === null || !Number.isFinite(seconds) || seconds < 0) return '';
  if (seconds < 1) return ', under a second left';
  if (seconds < 90) return `, about ${Math.round(seconds)} s left`;
  if (seconds < 5400) return `, about ${Math.round(seconds / 60)} min left`;
  return `, about ${Math.round(seconds / 3600)} h left`;
}

export class Planning {
  /** token of the plan in flight; any other answer is stale */
  running = null;
  /** token of the comparison in flight, likewise */
  comparing = null;
  // token of a Plan click waiting for the pending choice to be checked
  #waiting = null;
  // token of the plan that Cancel stopped (stopPlan()), whose best found is on its way
  #stopping = null;
  // token of the plan in flight when its search keeps a best plan found (stopPlan())
  #keepsBest = null;
  #ui;
  #hooks;

  /**
   * @param {{progress: HTMLProgressElement, cancelButton: HTMLButtonElement, comparison: HTMLElement}} ui
   * @param {object} hooks
   * @param {() => import('./planner-client.js').PlannerClient} hooks.client the page's worker
   * @param {import('./source.js').GraphSource} hooks.source
   * @param {import('./cluster-form.js').ClusterForm} hooks.clusterForm
   * @param {import('./results.js').Results} hooks.results
   * @param {import('./error-box.js').ErrorBox} hooks.errors
   * @param {import('./long-search.js').LongSearchDialog} hooks.longSearch
   * @param {(text: string) => void} hooks.setStatus
   * @param {(extra?: object, options?: {pipeline?: boolean}) => string} hooks.requestText the
   *   plan request as JSON text, with the further fields `extra`; `pipeline: false` leaves
   *   the pipeline out (the comparison's)
   * @param {() => void} hooks.updateUrl
   * @param {() => ({message: string, where: string}|null)} [hooks.checkInputs] what the page
   *   refuses itself before planning (a pipeline field that is not a count or "auto")
   */
  constructor(ui, hooks) {
    this.#ui = ui;
    this.#hooks = hooks;
  }

  /** Sets the bar (clamped to 0..1); returns the value shown. */
  #setProgress(fraction) {
    const value = Math.max(0, Math.min(1, fraction));
    this.#ui.progress.value = value;
    this.#ui.progress.textContent = `${Math.round(value * 100)}%`;
    return value;
  }

  setRunning(running) {
    document.body.classList.toggle('planning', running);
    this.#syncCancelButton();
  }

  /** Cancel stops whatever the worker is doing: a plan or, after it, its comparison. */
  #syncCancelButton() {
    this.#ui.cancelButton.disabled = !(this.running || this.comparing);
  }

  /**
   * Plan pressed (or Enter) while a file or example is still being checked or
   * imported: waits for it, so that the click plans what was just chosen
   * rather than the graph before it. Resolves to whether to go on planning;
   * when not, the status line says why (the check's refusal, the dimensions
   * to give: #sayWhyNot) or a newer click or choice took over.
   */
  async #waitForPendingChoice() {
    const { source, setStatus } = this.#hooks;
    const pending = source.pending;
    if (!pending) return true;
    const token = {};
    this.#waiting = token;
    setStatus(`Checking ${pending.name} before planning it…`);
    const outcome = await pending.done;
    if (this.#waiting !== token) return false; // a newer click waits instead
    this.#waiting = null;
    if (outcome === 'loaded') return true;
    // An import plans the model itself once it is in: it is planning now.
    if (outcome === 'imported' || outcome === 'superseded') return false;
    if (!this.#sayWhyNot()) setStatus(`${pending.name} was not loaded, so nothing was planned.`);
    return false;
  }

  /**
   * When the choice a click waited for failed (the source's `refused`), that
   * click does not plan the source chosen before it, which the select still
   * shows: it shows the file's error and says on the status line that
   * nothing was planned, and how to plan that source (press Plan again, or
   * give a model's dynamic dimensions or cancel them). Returns whether it
   * said so.
   */
  #sayWhyNot() {
    const { source, errors, setStatus } = this.#hooks;
    const refused = source.refused;
    if (!refused) return false;
    const current = source.current ? source.label() : null;
    if (refused.asked) {
      setStatus(`${refused.name} has dynamic dimensions: give their sizes to import it${current ? `, or cancel to plan ${current}` : ''}.`);
      return true;
    }
    const { title, message, where } = refused.error;
    errors.show(title, message, where);
    setStatus(`${refused.name} was not ${refused.verb}, so nothing was planned.${current ? ` Press Plan to plan ${current}.` : ''}`);
    return true;
  }

  /**
   * What Plan and Enter do: plan the current source, once a pending choice
   * is in (if that choice fails, say why instead). A file refused before
   * the click, its error on display, is taken as seen: Plan plans the
   * source the page shows, as closing the error would have let it, rather
   * than do nothing until the error is closed. A model still waiting for
   * its dynamic dimensions is asked for first.
   */
  async start() {
    const { source } = this.#hooks;
    if (source.pending) {
      if (!(await this.#waitForPendingChoice())) return;
    } else if (source.refused?.asked || (source.refused && !source.current)) {
      this.#sayWhyNot();
      return;
    } else if (source.refused) {
      source.forgetRefused();
    }
    await this.planCurrent();
  }

  /**
   * Estimates the search of `request` with `client` and, above
   * confirmAboveSeconds, asks whether to go on (long-search.js). Resolves to
   * {go, seconds, pipeline, bounded} (pipeline: the estimate's, when it
   * asked; bounded: whether the estimate is the bounded search's budget);
   * seconds is null when the estimate failed, and then the
   * search goes on, for the plan to report the error with its field. Rejects
   * only when the call was cancelled.
   */
  async #checkLongSearch(client, request, what, then) {
    let estimate;
    try {
      estimate = await client.call('estimate', request);
    } catch (e) {
      if (e.kind === 'cancelled') throw e;
      return { go: true, seconds: null };
    }
    const seconds = estimatedSeconds(estimate);
    if (!(seconds > confirmAboveSeconds)) return { go: true, seconds };
    const pipeline = estimate.pipeline ?? null;
    const bounded = isBounded(estimate) ? estimate.search : null;
    const message = longSearchMessage(what, seconds, { pairs: estimate.search.pairs, capped: estimate.memory_capped, then, pipeline, bounded });
    this.#hooks.setStatus(`${what} would take ${durationPhrase(seconds, pipeline, Boolean(bounded))}: plan anyway, or cancel.`);
    return { go: await this.#hooks.longSearch.ask(message, 'Plan anyway'), seconds, pipeline, bounded: Boolean(bounded) };
  }

  /** Plans the current source now (an imported model's own plan, and start()). */
  async planCurrent() {
    const { source, clusterForm, results, errors, setStatus, requestText } = this.#hooks;
    if (!source.current) return;
    if (this.running) this.cancelPlan(); // a new plan replaces the one in flight
    this.cancelComparison(); // ... and the comparison of the previous plan
    errors.clear();
    results.clearNoFit();
    const refused = this.#hooks.checkInputs?.();
    if (refused) {
      errors.show('The plan request was refused', refused.message, refused.where);
      setStatus(`Not planned: ${refused.where} is not valid.`);
      return;
    }
    const token = {};
    this.running = token;
    const planning = source.current;
    const label = source.label(planning);
    this.setRunning(true);
    this.#setProgress(0);
    setStatus(`Planning ${label}…`);
    this.#hooks.updateUrl();
    const request = requestText();
    // Built now, from the inputs this plan answers, not from what the form
    // says once the plan is done.
    // The comparison plans without a pipeline (compare_json() has none); a
    // pipeline plan is set beside its results (views/compare.js).
    const compareRequest = requestText({ mcmc: comparisonMcmc }, { pipeline: false });
    // ZeRO "auto": searched for a built-in language model under the practice
    // model (null: no higher stage to suggest), none (0) for any other plan.
    const searched = clusterForm.costModel === 'practice' && source.current?.kind === 'model'
      && source.modelInfo(source.current.name)?.llm;
    const asked = { devices: clusterForm.pageState().devices, zero: clusterForm.zero ?? (searched ? null : 0) };
    // What a stop keeps: a built-in language model's answers under the
    // practice model and a pipeline search keep their best plan found; any
    // other search keeps none, so Cancel drops it at once.
    this.#keepsBest = searched || hasPipeline(request) ? token : null;
    let long = false;
    let planned = null;
    let started = performance.now();
    try {
      setStatus(`Estimating the search for ${label}…`);
      const devices = asked.devices;
      const check = await this.#checkLongSearch(this.#hooks.client(), request, `Planning ${label}${devices ? ` on ${devices} devices` : ''}`,
        'The comparison with the baselines, which searches again, is then offered rather than started.');
      if (this.running !== token) return;
      if (!check.go) {
        setStatus(`Not planned: the search for ${label} would take ${durationPhrase(check.seconds, check.pipeline, check.bounded)}.`);
        return;
      }
      long = check.seconds > confirmAboveSeconds;
      setStatus(`Planning ${label}…`);
      started = performance.now();
      const plan = await this.#hooks.client().call('plan', request, {
        // The module's progress is the whole request's and never goes back
        // (each search fills its share of it), with its phase and the time
        // left (pase::Progress), and the core's note on a long search ahead.
        onProgress: (fraction, { phase = '', secondsLeft = null, note = '', gap = null } = {}) => {
          if (this.running === token) {
            const shown = this.#setProgress(fraction);
            // The gap: how far the best plan so far may be from the best (a time limit stops there).
            const gapText = gap === null ? '' : `, gap ${(100 * gap).toFixed(1)}%`;
            setStatus(`Planning ${label}… ${Math.round(shown * 100)}%${phase ? `, ${phase}` : ''}${gapText}${timeLeftText(secondsLeft)}${note ? ` (${note})` : ''}`);
          }
        },
      });
      if (this.running !== token) return;
      // The title names a built-in network as the status line does
      // ("ResNet-101", not its id "resnet101"); a file's graph by its own name
      // (an imported model's is derived from the file), or the file's when the
      // document has none.
      results.show(plan, { title: planning.kind === 'model' || !plan.graph ? label : plan.graph, label });
      this.#setProgress(1);
      const took = formatSeconds((performance.now() - started) / 1000);
      if (this.#stopping === token) {
        // Cancelled: the best found is shown; no comparison follows.
        setStatus(`Stopped planning ${label} after ${took}: the best plan found is shown.`);
        return;
      }
      setStatus(`Planned ${label} in ${took}.`);
      planned = plan;
    } catch (e) {
      if (this.running !== token) return; // superseded or cancelled
      this.#setProgress(0);
      if (this.#stopping === token && e.kind === 'input' && e.message === 'cancelled' && !e.where) {
        // Stopped before it kept a plan (a search without a pipeline keeps none).
        setStatus('Plan cancelled.');
        return;
      }
      const noFit = e.kind === 'input' ? parseNoFit(e) : null;
      if (noFit) {
        // Not a mistake in the form: the answer is that this cluster is too small.
        results.showNoFit(e, noFit, asked);
        clusterForm.memoryInput.setAttribute('aria-invalid', 'true');
        setStatus(`${label} does not fit: no strategy fits in the memory per GPU.`);
        return;
      }
      // Only graph errors belong to the file; cluster errors are the form's.
      const file = planning.kind !== 'model' && e.where?.startsWith('graph') ? label : undefined;
      errors.showPlannerError(e, { file, under: 'graph' });
      setStatus('Planning failed.');
    } finally {
      if (this.running === token) {
        this.running = null;
        this.setRunning(false);
      }
    }
    if (!planned) return;
    if (long) {
      renderComparisonMessage(this.#ui.comparison, 'The comparison with the baselines searches again, as long as the plan took.', {
        action: { label: 'Compare now', onClick: () => this.#compareStrategies(compareRequest, label, planned) },
      });
    } else {
      this.#compareStrategies(compareRequest, label, planned);
    }
  }

  /** Prices the baselines (data parallel, expert, MCMC) next to the plan just
   *  shown, in the same worker; its errors stay in the comparison card, since
   *  the plan itself succeeded. `plan` is the plan shown: one with a
   *  pipeline is set beside the baselines, which have none. */
  async #compareStrategies(request, label, plan) {
    const token = {};
    this.comparing = token;
    this.#syncCancelButton();
    renderComparisonMessage(this.#ui.comparison, 'Comparing with data parallelism, the expert strategy and an MCMC search…');
    const started = performance.now();
    try {
      const comparison = await this.#hooks.client().call('compare', request);
      if (this.comparing !== token) return;
      renderComparison(this.#ui.comparison, comparison, { pipelinePlan: plan?.pipeline ? plan : null });
      this.#hooks.setStatus(`Planned ${label}; compared with the baselines in ${formatSeconds((performance.now() - started) / 1000)}.`);
    } catch (e) {
      if (this.comparing !== token) return; // superseded or cancelled
      renderComparisonMessage(this.#ui.comparison, `The comparison failed: ${e.message}`, { error: true });
    } finally {
      if (this.comparing === token) {
        this.comparing = null;
        this.#syncCancelButton();
      }
    }
  }

  cancelComparison(message = 'Comparison cancelled.') {
    if (!this.comparing) return;
    this.comparing = null;
    this.#hooks.client().restart();
    renderComparisonMessage(this.#ui.comparison, message);
    this.#syncCancelButton();
  }

  /**
   * Cancel pressed during a plan: on a cross-origin isolated page the
   * search stops as at a time limit and the plan that comes back is the best
   * found (a language model's answers and a pipeline keep one, with its
   * proven gap); elsewhere, for a search that keeps none, or before the
   * search has started, the plan is dropped at once (cancelPlan()).
   */
  stopPlan() {
    if (!this.running) return;
    if (this.#stopping !== this.running && this.#keepsBest === this.running && this.#hooks.client().stop()) {
      this.#stopping = this.running;
      this.#ui.cancelButton.disabled = true;
      this.#hooks.setStatus('Stopping: the best plan found so far comes next…');
      return;
    }
    if (this.#stopping !== this.running) this.cancelPlan();
  }

  cancelPlan(message = 'Plan cancelled.') {
    if (!this.running) return;
    this.running = null;
    this.#hooks.longSearch.dismiss(); // a plan still asking whether to go on
    // WebAssembly cannot be interrupted: drop the worker and start afresh.
    this.#hooks.client().restart();
    this.setRunning(false);
    this.#setProgress(0);
    this.#hooks.setStatus(message);
  }
}

/** Whether a plan request asks for a pipeline; false for text that is not
 *  JSON (an upload's mistake, which the module reports). */
function hasPipeline(request) {
  try {
    return JSON.parse(request).pipeline != null;
  } catch {
    return false;
  }
}
