// The page: inputs -> plan request -> worker -> result views.
//
// State lives in three places, each with one job: the form controls (what the
// user sees and edits), the objects below (what is not a control: the chosen
// graph in `source`, the plan in flight in `state`, the last result in
// `results`) and the URL (a copy of both for sharing, rewritten with
// replaceState on every change). The graph source (source.js), the cluster
// panel (cluster-form.js), the error box (error-box.js) and the results area
// (results.js) are modules of their own; this one wires them to the planner
// and the URL.

import { PlannerClient } from './planner-client.js';
import { ClusterForm, numberValue } from './cluster-form.js';
import { readState, writeState } from './url-state.js';
import { formatSeconds } from './format.js';
import { renderComparison, renderComparisonMessage } from './views/compare.js';
import { ErrorBox } from './error-box.js';
import { GraphSource } from './source.js';
import { Results, parseNoFit } from './results.js';
import { LongSearchDialog, confirmAboveSeconds, estimatedSeconds, formatDuration, longSearchMessage } from './long-search.js';
import { DeviceSweep } from './sweep.js';

const $ = (id) => document.getElementById(id);
const ui = {
  modelSelect: $('model-select'),
  batch: $('batch'),
  seq: $('seq'),
  order: $('order'),
  pow2Only: $('pow2-only'),
  maxMemory: $('max-memory'),
  planButton: $('plan-button'),
  cancelButton: $('cancel-button'),
  progress: $('progress'),
  status: $('status'),
  comparison: $('comparison'),
  shareButton: $('share-button'),
  openFull: $('open-full'),
  moduleVersion: $('module-version'),
  searchMode: $('search-mode'),
};

// The comparison's MCMC search gets a fixed proposal budget and no time
// limit, so the page shows the same numbers on every machine (compare.hpp,
// DETERMINISM); 20000 proposals take well under a second on every benchmark.
const comparisonMcmc = { iterations: 20000, time_limit_s: 0 };

const state = {
  client: null,
  running: null,   // token of the plan in flight; any other answer is stale
  comparing: null, // token of the comparison in flight, likewise
  embed: false,
  ready: null,     // resolves to true once the module answered, false if it failed
  waiting: null,   // token of a Plan click waiting for the pending choice to be checked
};
let markReady;
state.ready = new Promise((resolve) => { markReady = resolve; });

const clusterForm = new ClusterForm({
  preset: $('preset'),
  devices: $('devices'),
  nodes: $('nodes'),
  gpusPerNode: $('gpus-per-node'),
  tflops: $('tflops'),
  intraBandwidth: $('intra-bandwidth'),
  bandwidth: $('bandwidth'),
  bandwidthLabel: $('bandwidth-label'),
  memory: $('memory'),
  zero: $('zero'),
  paramBytes: $('param-bytes'),
  gradBytes: $('grad-bytes'),
  optimizerBytes: $('optimizer-bytes'),
  activationBytes: $('activation-bytes'),
  topology: $('topology'),
});

// Request fields -> the control they came from, to mark it when it is wrong.
const errors = new ErrorBox(
  { box: $('error'), title: $('error-title'), message: $('error-message'), close: $('error-close') },
  {
    ...clusterForm.controls,
    batch: ui.batch,
    seq: ui.seq,
    model: ui.modelSelect,
    order: ui.order,
    pow2_only: ui.pow2Only,
    max_memory: ui.maxMemory,
  },
);

const longSearch = new LongSearchDialog({
  box: $('long-search'), text: $('long-search-text'), go: $('long-search-go'), cancel: $('long-search-cancel'),
});

const results = new Results({
  stepTime: $('step-time'),
  stepNote: $('step-note'),
  totalCost: $('total-cost'),
  costNote: $('cost-note'),
  planTitle: $('plan-title'),
  planNote: $('plan-note'),
  downloadButton: $('download-button'),
  breakdown: $('breakdown'),
  memory: $('memory-chart'),
  graph: $('graph'),
  legend: $('graph-legend'),
  summary: $('summary-table'),
  table: $('strategy-table'),
  splitHint: $('split-hint'),
  filter: { select: $('layer-filter'), count: $('filter-count'), clear: $('filter-clear') },
  noFit: { box: $('no-fit'), need: $('no-fit-need'), message: $('no-fit-message'), hint: $('no-fit-hint') },
});

// The device sweep, in a worker of its own (sweep.js); its requests are the
// plan's with the device count replaced.
const sweep = new DeviceSweep(
  { button: $('sweep-button'), cancel: $('sweep-cancel'), progress: $('sweep-progress'), status: $('sweep-status'), chart: $('sweep-chart') },
  {
    makeClient: () => new PlannerClient('worker.js'),
    current: () => (source.current ? { label: source.label(source.current), devices: clusterForm.pageState().devices } : null),
    requestFor: (devices, extra = {}) => requestText(extra, { ...clusterForm.cluster(), devices }),
    ask: (message, goLabel) => longSearch.ask(message, goLabel),
  },
);

const source = new GraphSource(
  {
    select: ui.modelSelect,
    description: $('model-description'),
    batch: ui.batch,
    seq: ui.seq,
    seqField: $('seq-field'),
    fileInput: $('graph-file'),
    dropzone: $('dropzone'),
    imported: $('imported'),
    dimsForm: $('dims-form'),
  },
  {
    ready: state.ready,
    validate: (text) => state.client.call('validate', text),
    importModel: (file, options) => state.client.call('importModel', { file, options }),
    errors,
    setStatus,
    onNewGraph: () => {
      // A plan of the old graph is moot once a new graph arrives; stopping it
      // also frees the worker to check the file at once.
      if (state.running) cancelPlan('Plan cancelled: a new graph was loaded.');
      cancelComparison('Comparison cancelled: a new graph was loaded.');
      sweep.cancel('Sweep cancelled: a new graph was loaded.');
    },
    onStale: () => results.markStale(),
    onChange: () => updateUrl(),
    // The import is still the pending choice here: plan without waiting for it.
    onImported: () => planCurrent(),
  },
);

// ---- Small UI helpers -----------------------------------------------------------

function setStatus(text) {
  ui.status.textContent = text;
}

function setProgress(fraction) {
  ui.progress.value = Math.max(0, Math.min(1, fraction));
  ui.progress.textContent = `${Math.round(fraction * 100)}%`;
}

function setRunning(running) {
  document.body.classList.toggle('planning', running);
  syncCancelButton();
}

/** Cancel stops whatever the worker is doing: a plan or, after it, its comparison. */
function syncCancelButton() {
  ui.cancelButton.disabled = !(state.running || state.comparing);
}

// ---- Inputs ---------------------------------------------------------------------

/** The search options' fields: pow2_only when checked, max_memory (bytes,
 *  from GiB) when given; the core's defaults otherwise. */
function searchOptions() {
  const options = {};
  if (ui.pow2Only.checked) options.pow2_only = true;
  const gib = numberValue(ui.maxMemory);
  // A negative value is sent as it is, for the core to refuse at max_memory.
  if (gib !== null) options.max_memory = Math.round(gib * 2 ** 30);
  return options;
}

/** The request as JSON text: the graph source's fields, the cluster, the
 *  training, the order and the search options. `extra` holds further request
 *  fields (the comparison's "mcmc"); `cluster` replaces the form's (a sweep's
 *  device counts). */
function requestText(extra = {}, cluster = clusterForm.cluster()) {
  let tail = `"cluster": ${JSON.stringify(cluster)}, "training": ${JSON.stringify(clusterForm.training())}`
    + `, "order": ${JSON.stringify(ui.order.value)}`;
  for (const [key, value] of Object.entries(searchOptions())) tail += `, ${JSON.stringify(key)}: ${JSON.stringify(value)}`;
  for (const [key, value] of Object.entries(extra)) tail += `, ${JSON.stringify(key)}: ${JSON.stringify(value)}`;
  return `{${source.requestFields(numberValue(ui.batch), numberValue(ui.seq))}, ${tail}}`;
}

// ---- Planning -------------------------------------------------------------------

/**
 * Plan pressed (or Enter) while a file or example is still being checked or
 * imported: waits for it, so that the click plans what was just chosen
 * rather than the graph before it. Resolves to whether to go on planning;
 * when not, the status line says why (the check's refusal, the dimensions
 * to give) or a newer click or choice took over.
 */
async function waitForPendingChoice() {
  const pending = source.pending;
  if (!pending) return true;
  const token = {};
  state.waiting = token;
  setStatus(`Checking ${pending.name} before planning it…`);
  const outcome = await pending.done;
  if (state.waiting !== token) return false; // a newer click waits instead
  state.waiting = null;
  if (outcome === 'loaded') return true;
  // An import plans the model itself once it is in: it is planning now.
  if (outcome === 'imported' || outcome === 'superseded') return false;
  if (outcome === 'refused') setStatus(`${pending.name} was not loaded, so nothing was planned.`);
  return false;
}

/** What Plan and Enter do: plan the current source, once a pending choice is in. */
async function startPlan() {
  if (source.pending && !(await waitForPendingChoice())) return;
  await planCurrent();
}

/**
 * Estimates the search of `request` with `client` and, above
 * confirmAboveSeconds, asks whether to go on (long-search.js). Resolves to
 * {go, seconds}; seconds is null when the estimate failed, and then the
 * search goes on, for the plan to report the error with its field. Rejects
 * only when the call was cancelled.
 */
async function checkLongSearch(client, request, what, then) {
  let estimate;
  try {
    estimate = await client.call('estimate', request);
  } catch (e) {
    if (e.kind === 'cancelled') throw e;
    return { go: true, seconds: null };
  }
  const seconds = estimatedSeconds(estimate);
  if (!(seconds > confirmAboveSeconds)) return { go: true, seconds };
  const message = longSearchMessage(what, seconds, { pairs: estimate.search.pairs, capped: estimate.memory_capped, then });
  setStatus(`${what} would take about ${formatDuration(seconds)}: plan anyway, or cancel.`);
  return { go: await longSearch.ask(message, 'Plan anyway'), seconds };
}

/** Plans the current source now (an imported model's own plan, and startPlan()). */
async function planCurrent() {
  if (!source.current) return;
  if (state.running) cancelPlan(); // a new plan replaces the one in flight
  cancelComparison(); // ... and the comparison of the previous plan
  errors.clear();
  results.clearNoFit();
  const token = {};
  state.running = token;
  const planning = source.current;
  const label = source.label(planning);
  setRunning(true);
  setProgress(0);
  setStatus(`Planning ${label}…`);
  updateUrl();
  const request = requestText();
  // Built now, from the inputs this plan answers, not from what the form
  // says once the plan is done.
  const compareRequest = requestText({ mcmc: comparisonMcmc });
  const asked = { devices: clusterForm.pageState().devices, zero: clusterForm.zero };
  let long = false;
  let planned = false;
  let started = performance.now();
  try {
    setStatus(`Estimating the search for ${label}…`);
    const devices = asked.devices;
    const check = await checkLongSearch(state.client, request, `Planning ${label}${devices ? ` on ${devices} devices` : ''}`,
      'The comparison with the baselines, which searches again, is then offered rather than started.');
    if (state.running !== token) return;
    if (!check.go) {
      setStatus(`Not planned: the search for ${label} would take about ${formatDuration(check.seconds)}.`);
      return;
    }
    long = check.seconds > confirmAboveSeconds;
    setStatus(`Planning ${label}…`);
    started = performance.now();
    const plan = await state.client.call('plan', request, {
      onProgress: (fraction) => {
        if (state.running === token) {
          setProgress(fraction);
          setStatus(`Planning ${label}… ${Math.round(fraction * 100)}%`);
        }
      },
    });
    if (state.running !== token) return;
    // The title names a built-in network as the status line does
    // ("ResNet-101", not its id "resnet101"); a file's graph by its own name
    // (an imported model's is derived from the file), or the file's when the
    // document has none.
    results.show(plan, { title: planning.kind === 'model' || !plan.graph ? label : plan.graph });
    setProgress(1);
    setStatus(`Planned ${label} in ${formatSeconds((performance.now() - started) / 1000)}.`);
    planned = true;
  } catch (e) {
    if (state.running !== token) return; // superseded or cancelled
    setProgress(0);
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
    if (state.running === token) {
      state.running = null;
      setRunning(false);
    }
  }
  if (!planned) return;
  if (long) {
    renderComparisonMessage(ui.comparison, 'The comparison with the baselines searches again, as long as the plan took.', {
      action: { label: 'Compare now', onClick: () => compareStrategies(compareRequest, label) },
    });
  } else {
    compareStrategies(compareRequest, label);
  }
}

/** Prices the baselines (data parallel, expert, MCMC) next to the plan just
 *  shown, in the same worker; its errors stay in the comparison card, since
 *  the plan itself succeeded. */
async function compareStrategies(request, label) {
  const token = {};
  state.comparing = token;
  syncCancelButton();
  renderComparisonMessage(ui.comparison, 'Comparing with data parallelism, the expert strategy and an MCMC search…');
  const started = performance.now();
  try {
    const comparison = await state.client.call('compare', request);
    if (state.comparing !== token) return;
    renderComparison(ui.comparison, comparison);
    setStatus(`Planned ${label}; compared with the baselines in ${formatSeconds((performance.now() - started) / 1000)}.`);
  } catch (e) {
    if (state.comparing !== token) return; // superseded or cancelled
    renderComparisonMessage(ui.comparison, `The comparison failed: ${e.message}`, { error: true });
  } finally {
    if (state.comparing === token) {
      state.comparing = null;
      syncCancelButton();
    }
  }
}

function cancelComparison(message = 'Comparison cancelled.') {
  if (!state.comparing) return;
  state.comparing = null;
  state.client.restart();
  renderComparisonMessage(ui.comparison, message);
  syncCancelButton();
}

function cancelPlan(message = 'Plan cancelled.') {
  if (!state.running) return;
  state.running = null;
  longSearch.dismiss(); // a plan still asking whether to go on
  // WebAssembly cannot be interrupted: drop the worker and start afresh.
  state.client.restart();
  setRunning(false);
  setProgress(0);
  setStatus(message);
}

// ---- URL state ------------------------------------------------------------------

function pageState() {
  const current = source.current;
  return {
    source: current && (current.kind === 'model'
      ? { ...current, batch: numberValue(ui.batch), seq: source.hasSeq(current) ? numberValue(ui.seq) : null }
      : current),
    ...clusterForm.pageState(),
    order: ui.order.value,
    pow2Only: ui.pow2Only.checked,
    maxMemory: numberValue(ui.maxMemory),
    embed: state.embed,
  };
}

let urlWrite = Promise.resolve();
function updateUrl() {
  // Serialised: writeState is async (compression) and must not reorder.
  urlWrite = urlWrite.then(async () => {
    const { href, graphShared } = await writeState(location.href, pageState());
    history.replaceState(null, '', href);
    ui.shareButton.title = graphShared ? 'Copy a link to this plan'
      : 'The uploaded graph is too large to travel in a link; the link keeps only the cluster';
    const full = new URL(href);
    full.searchParams.delete('embed');
    ui.openFull.href = full.href;
  }).catch(() => {});
  return urlWrite;
}

async function copyLink() {
  await updateUrl();
  try {
    await navigator.clipboard.writeText(location.href);
    setStatus('Link copied to the clipboard.');
  } catch {
    setStatus(`Link: ${location.href}`);
  }
}

// ---- Start-up -------------------------------------------------------------------

function wireControls() {
  source.wire();
  clusterForm.wire(() => {
    results.markStale();
    // Before any plan the table's hint follows the form's device count.
    if (!results.plan) results.showSplitHint(clusterForm.pageState().devices);
    updateUrl();
  });
  for (const input of [ui.batch, ui.seq]) {
    input.addEventListener('input', () => {
      input.removeAttribute('aria-invalid');
      results.markStale();
      updateUrl();
    });
  }
  for (const input of [ui.batch, ui.seq, ...clusterForm.inputs]) {
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !ui.planButton.disabled) startPlan();
    });
  }
  for (const input of [ui.order, ui.pow2Only, ui.maxMemory]) {
    input.addEventListener(input === ui.maxMemory ? 'input' : 'change', () => {
      input.removeAttribute('aria-invalid');
      results.markStale();
      updateUrl();
    });
  }
  ui.maxMemory.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !ui.planButton.disabled) startPlan();
  });
  ui.planButton.addEventListener('click', startPlan);
  ui.cancelButton.addEventListener('click', () => {
    if (state.running) cancelPlan();
    else cancelComparison();
  });
  ui.shareButton.addEventListener('click', copyLink);
}

async function init() {
  wireControls();
  setRunning(false);

  const initial = await readState(location.href);
  state.embed = initial.embed;
  document.body.classList.toggle('embed', state.embed);
  clusterForm.restore(initial);
  results.showSplitHint(clusterForm.pageState().devices);
  if (initial.order) ui.order.value = initial.order;
  ui.pow2Only.checked = initial.pow2Only;
  if (initial.maxMemory !== null) ui.maxMemory.value = String(initial.maxMemory);
  // The search options folded away are shown when the link sets them.
  if (initial.pow2Only || initial.maxMemory !== null) $('search-details').open = true;

  state.client = new PlannerClient('worker.js');
  const examples = source.loadExamples();
  try {
    source.models = await state.client.call('models');
    // The GPU presets are the core's own list (the module's presets()).
    clusterForm.setPresets(await state.client.call('presets'));
    ui.moduleVersion.textContent = `module ${await state.client.call('version')}`;
    // How many threads a plan runs on, or why only one (worker.js).
    ui.searchMode.textContent = (await state.client.call('mode')).text;
  } catch (e) {
    errors.show('The planner module failed to load', e.message);
    setStatus('The planner is not available.');
    source.showUnavailable();
    markReady(false);
    return;
  }
  await examples;
  await source.restore(initial.source);
  ui.planButton.disabled = false;
  sweep.enable();
  markReady(true);
  setStatus('Ready. Choose a network and press Plan.');
  updateUrl();
  if (initial.hasPlanState || state.embed) startPlan();
}

init();
