// The page: inputs -> plan request -> worker -> result views.
//
// State lives in three places, each with one job: the form controls (what the
// user sees and edits), the objects below (what is not a control: the chosen
// graph in `source`, the plan in flight in `planning`, the last result in
// `results`) and the URL (a copy of both for sharing, rewritten with
// replaceState on every change). The graph source (source.js), the cluster
// panel (cluster-form.js), the error box (error-box.js), what Plan does
// (planning.js) and the results area (results.js) are modules of their own;
// this one wires them to the planner and the URL.

import { PlannerClient } from './planner-client.js';
import { ClusterForm, numberValue } from './cluster-form.js';
import { readState, writeState } from './url-state.js';
import { ErrorBox } from './error-box.js';
import { GraphSource, paperModel } from './source.js';
import { Planning } from './planning.js';
import { Results } from './results.js';
import { ExportMenu } from './export-menu.js';
import { LongSearchDialog } from './long-search.js';
import { DeviceSweep } from './sweep.js';
import { PipelineOptions } from './pipeline-options.js';
import { LayoutRanking } from './layouts.js';
import { renderAnswers } from './views/layouts.js';

const $ = (id) => document.getElementById(id);
const ui = {
  modelSelect: $('model-select'),
  batch: $('batch'),
  seq: $('seq'),
  order: $('order'),
  search: $('search'),
  pow2Only: $('pow2-only'),
  meshOnly: $('mesh-only'),
  maxMemory: $('max-memory'),
  timeLimit: $('time-limit'),
  maxGap: $('max-gap'),
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

// The search options' pipeline fields: stages, micro-batches, schedule.
const pipelineOptions = new PipelineOptions({ stages: $('stages'), microbatches: $('microbatches'), schedule: $('schedule') });

const state = {
  client: null,
  embed: false,
  ready: null,     // resolves to true once the module answered, false if it failed
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
  headroom: $('headroom'),
  zero: $('zero'),
  costModel: $('cost-model'),
  memoryBandwidth: $('memory-bandwidth'),
  recompute: $('recompute'),
  practiceFields: $('practice-fields'),
  rates: $('rates'),
  practiceRates: $('practice-rates'),
  ratesText: $('rates-text'),
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
    search: ui.search,
    pow2_only: ui.pow2Only,
    max_memory: ui.maxMemory,
    time_limit_s: ui.timeLimit,
    max_gap: ui.maxGap,
    ...pipelineOptions.controls,
  },
);

const longSearch = new LongSearchDialog({
  box: $('long-search'), text: $('long-search-text'), go: $('long-search-go'), cancel: $('long-search-cancel'),
});

const results = new Results({
  stepTime: $('step-time'),
  stepNote: $('step-note'),
  stepParts: $('step-parts'),
  totalCost: $('total-cost'),
  costNote: $('cost-note'),
  planTitle: $('plan-title'),
  pipelineLabel: $('pipeline-label'),
  stageStrip: $('stage-strip'),
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
  planOf: $('plan-of'),
  bound: $('plan-bound'),
});

// The Export menu (export-menu.js): the plan on display, evaluated again with
// "emit" on the form's request, downloaded and previewed with Copy.
const exportMenu = new ExportMenu(
  {
    select: $('export-target'),
    button: $('export-button'),
    note: $('export-note'),
    preview: {
      box: $('export-preview'),
      title: $('export-preview-title'),
      text: $('export-text'),
      copy: $('export-copy'),
      download: $('export-download'),
      status: $('export-copy-status'),
    },
  },
  {
    client: () => state.client,
    plan: () => results.plan,
    // Megatron-LM and torchtitan get the layout chosen among the ranked ones.
    layout: () => layoutRanking.chosen?.layout ?? null,
    requestText: () => requestText({}, { pipeline: false }),
    errors,
  },
);

// The layouts the engines run, ranked (layouts.js), in a worker of their own;
// the search's request is the plan's, without the pipeline it searches itself.
const layoutRanking = new LayoutRanking(
  {
    card: $('layouts-card'),
    tokens: $('layout-tokens'),
    price: $('layout-price'),
    rank: $('layouts-button'),
    status: $('layouts-status'),
    table: $('layouts-table'),
    overBlock: $('layouts-over-block'),
    over: $('layouts-over'),
    paste: $('layout-paste'),
    place: $('layout-place'),
    given: $('layout-given'),
  },
  {
    makeClient: () => new PlannerClient('worker.js'),
    requestText: (extra) => requestText(extra, { pipeline: false }),
    defaultPrice: presetPrice,
    errors,
    // The ranking's days and cost price the plan's two answers too.
    onRanked: (ranking) => renderAnswers($('answers'), results.plan, ranking),
  },
);

results.onShow = () => {
  exportMenu.enable(true);
  // A language model's plan: the best layout first, then the per-layer plan.
  renderAnswers($('answers'), results.plan);
  layoutRanking.planShown(results.plan, isLanguageModel());
};

// The device sweep, in a worker of its own (sweep.js); its requests are the
// plan's with the device count replaced.
const sweep = new DeviceSweep(
  { button: $('sweep-button'), cancel: $('sweep-cancel'), progress: $('sweep-progress'), status: $('sweep-status'), chart: $('sweep-chart') },
  {
    makeClient: () => new PlannerClient('worker.js'),
    current: () => (source.current ? { label: source.label(source.current), devices: clusterForm.pageState().devices } : null),
    // PaSE against data parallelism, without a pipeline (a comparison has none).
    requestFor: (devices, extra = {}) => requestText(extra, { cluster: { ...clusterForm.cluster(), devices }, pipeline: false }),
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
      // A plan of the old graph is moot once a file is chosen; stopping it
      // also frees the worker to check the file at once, and keeps its late
      // answer off the status line, which is about the file now.
      if (planning.running) planning.cancelPlan('Plan cancelled: a new graph was loaded.');
      planning.cancelComparison('Comparison cancelled: a new graph was loaded.');
      sweep.cancel('Sweep cancelled: a new graph was loaded.');
    },
    onStale: () => results.markStale(),
    // A refused file: the plan on display says it is of the graph before it.
    onRefused: (refused) => results.showRefused(refused),
    onChange: () => updateUrl(),
    // The import is still the pending choice here: plan without waiting for it.
    onImported: () => planning.planCurrent(),
  },
);

// Plan, its comparison with the baselines, and Cancel (planning.js).
const planning = new Planning(
  { progress: ui.progress, cancelButton: ui.cancelButton, comparison: ui.comparison },
  {
    client: () => state.client,
    source,
    clusterForm,
    results,
    errors,
    longSearch,
    setStatus,
    requestText,
    updateUrl,
    checkInputs: () => clusterForm.check() ?? pipelineOptions.check(),
  },
);

// ---- Small UI helpers -----------------------------------------------------------

function setStatus(text) {
  ui.status.textContent = text;
}

// ---- Inputs ---------------------------------------------------------------------

/** Whether the plan on display is of a language model under the practice model (what the layout search lays out). */
function isLanguageModel() {
  return Boolean(results.plan?.best_layout) || (Boolean(source.current) && source.hasSeq(source.current)
    && clusterForm.costModel === 'practice');
}

/** The price of a GPU-hour of the chosen preset, or of the GPU kind of the practice rates once edited; null: none. */
function presetPrice() {
  const id = $('preset').value === 'custom' ? $('rates').value : $('preset').value;
  const price = clusterForm.presets.find((p) => p.id === id)?.gpuHourUsd;
  return price > 0 ? price : null;
}

/** Seconds a plan may search on the page unless its Time limit field says otherwise. */
const pageTimeLimitSeconds = 30;

/** The search options' fields: search when not auto (exact, or bounded:
 *  core/docs/bounded-search.md), pow2_only when checked, max_memory (bytes,
 *  from GiB) when given, pipeline when it has more than one stage or
 *  micro-batch (and `pipeline` is true); the core's defaults otherwise. */
function searchOptions({ pipeline = true } = {}) {
  const options = {};
  if (ui.search.value !== 'auto') options.search = ui.search.value;
  if (ui.pow2Only.checked) options.pow2_only = true;
  if (ui.meshOnly.checked) options.mesh_only = true;
  const gib = numberValue(ui.maxMemory);
  // A negative value is sent as it is, for the core to refuse at max_memory.
  if (gib !== null) options.max_memory = Math.round(gib * 2 ** 30);
  const piped = pipeline ? pipelineOptions.request() : null;
  if (piped) options.pipeline = piped;
  // The plan's time limit (not the comparison's or the sweep's): the page's
  // default keeps an answer within half a minute, the best found with its
  // proven gap (core/docs/pipeline.md, "A time limit"); 0: none. A negative
  // value is sent for the core to refuse at time_limit_s.
  const limit = numberValue(ui.timeLimit);
  const seconds = limit === null ? pageTimeLimitSeconds : limit;
  if (pipeline && seconds !== 0) options.time_limit_s = seconds;
  // The gap accepted, in per cent on the page, a fraction in the request
  // (a bad value is sent for the core to refuse at max_gap).
  const gap = numberValue(ui.maxGap);
  if (pipeline && gap !== null && gap !== 0) options.max_gap = gap / 100;
  return options;
}

/** The request as JSON text: the graph source's fields, the cluster, the
 *  training, the order and the search options. `extra` holds further request
 *  fields (the comparison's "mcmc"); `cluster` replaces the form's (a sweep's
 *  device counts); `pipeline: false` leaves the pipeline out (the
 *  comparison and the sweep, which plan without one). */
function requestText(extra = {}, { cluster = clusterForm.cluster(), pipeline = true } = {}) {
  let tail = `"cluster": ${JSON.stringify(cluster)}, "training": ${JSON.stringify(clusterForm.training())}`
    + `, "order": ${JSON.stringify(ui.order.value)}`;
  // Named always: the module's default depends on the cluster (practice with
  // nodes), the form's is the select's.
  tail += `, "cost_model": ${JSON.stringify(clusterForm.costModel)}`;
  for (const [key, value] of Object.entries(searchOptions({ pipeline }))) tail += `, ${JSON.stringify(key)}: ${JSON.stringify(value)}`;
  for (const [key, value] of Object.entries(extra)) tail += `, ${JSON.stringify(key)}: ${JSON.stringify(value)}`;
  return `{${source.requestFields(numberValue(ui.batch), numberValue(ui.seq))}, ${tail}}`;
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
    search: ui.search.value,
    pow2Only: ui.pow2Only.checked,
    meshOnly: ui.meshOnly.checked,
    maxMemory: numberValue(ui.maxMemory),
    timeLimit: numberValue(ui.timeLimit),
    maxGap: numberValue(ui.maxGap),
    pipeline: pipelineOptions.pageState(),
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

/**
 * The PaSE paper's setting, the page's first screen until a current LLM
 * replaced it: AlexNet at its default batch on the flat ring of the paper's
 * preset (8 devices, no memory cap, the paper's cost model), as a link
 * without those fields opens. The search options stay as they are.
 */
async function choosePaperSetup() {
  clusterForm.restore({});
  results.markStale();
  if (!results.plan) results.showSplitHint(clusterForm.pageState().devices);
  await source.chooseModel(paperModel);
  setStatus('The PaSE paper\'s setup: AlexNet on a flat ring of 8 devices. Press Plan to plan it.');
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
      if (event.key === 'Enter' && !ui.planButton.disabled) planning.start();
    });
  }
  for (const input of [ui.order, ui.search, ui.pow2Only, ui.meshOnly, ui.maxMemory, ui.timeLimit, ui.maxGap]) {
    input.addEventListener(input === ui.maxMemory || input === ui.timeLimit || input === ui.maxGap ? 'input' : 'change', () => {
      input.removeAttribute('aria-invalid');
      results.markStale();
      updateUrl();
    });
  }
  ui.maxMemory.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !ui.planButton.disabled) planning.start();
  });
  pipelineOptions.wire(() => {
    results.markStale();
    updateUrl();
  }, () => {
    if (!ui.planButton.disabled) planning.start();
  });
  ui.planButton.addEventListener('click', () => planning.start());
  ui.cancelButton.addEventListener('click', () => {
    if (planning.running) planning.stopPlan();
    else planning.cancelComparison();
  });
  ui.shareButton.addEventListener('click', copyLink);
  $('paper-setup').addEventListener('click', () => choosePaperSetup());
  // Closing a refused file's error: Plan plans the source chosen before it again.
  $('error-close').addEventListener('click', () => source.forgetRefused());
}

async function init() {
  wireControls();
  planning.setRunning(false);

  const initial = await readState(location.href);
  state.embed = initial.embed;
  document.body.classList.toggle('embed', state.embed);
  clusterForm.restore(initial);
  results.showSplitHint(clusterForm.pageState().devices);
  if (initial.order) ui.order.value = initial.order;
  // A search the select does not offer keeps auto.
  const search = [...ui.search.options].some((o) => o.value === initial.search) ? initial.search : 'auto';
  ui.search.value = search;
  ui.pow2Only.checked = initial.pow2Only;
  ui.meshOnly.checked = initial.meshOnly;
  if (initial.maxMemory !== null) ui.maxMemory.value = String(initial.maxMemory);
  if (initial.timeLimit !== null) ui.timeLimit.value = String(initial.timeLimit);
  if (initial.maxGap !== null) ui.maxGap.value = String(initial.maxGap);
  const piped = pipelineOptions.restore(initial.pipeline);
  // The search options folded away are shown when the link sets them.
  if (search !== 'auto' || initial.pow2Only || initial.meshOnly || initial.maxMemory !== null || initial.timeLimit !== null || initial.maxGap !== null || piped) $('search-details').open = true;

  state.client = new PlannerClient('worker.js');
  const examples = source.loadExamples();
  try {
    source.models = await state.client.call('models');
    // The GPU presets are the core's own list (the module's presets()).
    clusterForm.setPresets(await state.client.call('presets'));
    // A URL without parameters opens on a current LLM on one node of 8 H100
    // with the practice model; one with parameters keeps the paper's values
    // for those it lacks, so an old link plans what it always did.
    if (initial.bare) clusterForm.choosePreset('h100');
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
  if (initial.hasPlanState || state.embed) planning.start();
}

init();
