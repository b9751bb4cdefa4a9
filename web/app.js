// The page: inputs -> plan request -> worker -> result views.
//
// State lives in three places, each with one job: the form controls (what the
// user sees and edits), `state` below (what is not a control: the chosen graph
// source, the plan in flight, the last result) and the URL (a copy of both for
// sharing, rewritten with replaceState on every change).

import { PlannerClient } from './planner-client.js';
import { presets, customPreset, matchPreset } from './presets.js';
import { readState, writeState } from './url-state.js';
import { formatCost, formatCount, formatSeconds } from './format.js';
import { renderTable, clearTable, highlightRow } from './views/table.js';
import { renderGraph, renderLegend, highlightVertex } from './views/graph.js';
import { renderBreakdown } from './views/charts.js';
import { renderComparison, renderComparisonMessage } from './views/compare.js';
import { el } from './views/dom.js';

const $ = (id) => document.getElementById(id);
const ui = {
  modelSelect: $('model-select'),
  modelDescription: $('model-description'),
  batch: $('batch'),
  graphFile: $('graph-file'),
  dropzone: $('dropzone'),
  preset: $('preset'),
  devices: $('devices'),
  tflops: $('tflops'),
  bandwidth: $('bandwidth'),
  order: $('order'),
  planButton: $('plan-button'),
  cancelButton: $('cancel-button'),
  progress: $('progress'),
  status: $('status'),
  error: $('error'),
  errorTitle: $('error-title'),
  errorMessage: $('error-message'),
  errorClose: $('error-close'),
  stepTime: $('step-time'),
  stepNote: $('step-note'),
  totalCost: $('total-cost'),
  costNote: $('cost-note'),
  planTitle: $('plan-title'),
  planNote: $('plan-note'),
  downloadButton: $('download-button'),
  breakdown: $('breakdown'),
  graph: $('graph'),
  legend: $('graph-legend'),
  table: $('strategy-table'),
  comparison: $('comparison'),
  shareButton: $('share-button'),
  openFull: $('open-full'),
  moduleVersion: $('module-version'),
};

const defaultModel = 'alexnet';
const defaultDevices = 8;
// Files beyond this are refused before reading: the benchmark networks export
// to well under 1 MB, so anything this large is not a graph worth planning here.
const maxFileBytes = 32 * 1024 * 1024;
// The comparison's MCMC search gets a fixed proposal budget and no time
// limit, so the page shows the same numbers on every machine (compare.hpp,
// DETERMINISM); 20000 proposals take well under a second on every benchmark.
const comparisonMcmc = { iterations: 20000, time_limit_s: 0 };
const uploadValue = 'upload';
const examplePrefix = 'example:';

// Request fields -> the control they came from, to mark it when it is wrong.
const fieldControls = {
  'cluster.devices': 'devices',
  'cluster.tflops': 'tflops',
  'cluster.bandwidth_gbps': 'bandwidth',
  batch: 'batch',
  model: 'modelSelect',
  order: 'order',
};

const state = {
  client: null,
  models: [],      // [{name, description, default_batch, ...}] from the module
  examples: [],    // file names under examples/
  source: null,    // {kind: 'model', name} | {kind: 'example', name, text} | {kind: 'upload', fileName, text}
  upload: null,    // the last uploaded graph, kept selectable: {fileName, text}
  running: null,   // token of the plan in flight; any other answer is stale
  comparing: null, // token of the comparison in flight, likewise
  plan: null,      // the last result document
  planText: '',    // ... and its JSON for the download
  embed: false,
  ready: null,     // resolves to true once the module answered, false if it failed
};
let markReady;
state.ready = new Promise((resolve) => { markReady = resolve; });

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

function clearFieldMarks() {
  for (const key of Object.values(fieldControls)) ui[key].removeAttribute('aria-invalid');
}

/** The one place errors appear. `where` names the offending field, if any. */
function showError(title, message, where = '') {
  ui.errorTitle.textContent = title;
  ui.errorMessage.replaceChildren(...(where ? [el('code', { text: where }), ': '] : []), message);
  ui.error.hidden = false;
  const control = ui[fieldControls[where]];
  if (control) control.setAttribute('aria-invalid', 'true');
}

function clearError() {
  ui.error.hidden = true;
  ui.errorMessage.textContent = '';
  clearFieldMarks();
}

function showPlannerError(error, { file } = {}) {
  if (error.kind === 'module') {
    showError('The planner module failed', error.message);
    return;
  }
  let { where } = error;
  let title = 'The plan request was refused';
  if (file) {
    // Errors inside the graph are reported against the file's own fields.
    title = `Invalid graph file ${file}`;
    if (where === 'graph') where = '';
    else if (where.startsWith('graph.')) where = where.slice('graph.'.length);
  } else if (/more than the limit|more than \d+ configurations|out of memory/.test(error.message)) {
    // The memory guard's `where` (max_memory) is a request field the page
    // does not show; the message itself says what to change.
    title = 'The graph is too big to plan';
    where = '';
  }
  showError(title, error.message, where);
}

// ---- Inputs ---------------------------------------------------------------------

function numberValue(input) {
  // An empty or malformed field becomes null in JSON; the module then names it.
  return Number.isFinite(input.valueAsNumber) ? input.valueAsNumber : null;
}

function cluster() {
  return { devices: numberValue(ui.devices), tflops: numberValue(ui.tflops), bandwidth_gbps: numberValue(ui.bandwidth) };
}

function modelInfo(name) {
  return state.models.find((m) => m.name === name);
}

function displayName(model) {
  // "AlexNet: 5 conv + 3 FC layers" -> "AlexNet"
  return model.description?.split(':')[0] || model.name;
}

/** The request as JSON text. A graph file's text is spliced in unchanged, so
 *  the module sees exactly the bytes the user gave (and the CLI would).
 *  `extra` holds further request fields (the comparison's "mcmc"). */
function requestText(extra = {}) {
  let tail = `"cluster": ${JSON.stringify(cluster())}, "order": ${JSON.stringify(ui.order.value)}`;
  for (const [key, value] of Object.entries(extra)) tail += `, ${JSON.stringify(key)}: ${JSON.stringify(value)}`;
  const source = state.source;
  if (source.kind === 'model') {
    const batch = numberValue(ui.batch);
    return `{"model": ${JSON.stringify(source.name)}, "batch": ${JSON.stringify(batch)}, ${tail}}`;
  }
  return `{"graph": ${source.text}\n, ${tail}}`;
}

function sourceLabel(source) {
  if (source.kind === 'model') return displayName(modelInfo(source.name) ?? source);
  if (source.kind === 'example') return `${source.name}.json`;
  return source.fileName;
}

function fillModelSelect() {
  const groups = [
    el('optgroup', { label: 'Benchmark networks' },
      state.models.map((m) => el('option', { value: m.name, text: `${displayName(m)} (${m.name})` }))),
  ];
  if (state.examples.length) {
    groups.push(el('optgroup', { label: 'Example graphs' },
      state.examples.map((name) => el('option', { value: examplePrefix + name, text: `${name}.json` }))));
  }
  if (state.upload) {
    groups.push(el('optgroup', { label: 'Your file' },
      el('option', { value: uploadValue, text: `Uploaded: ${state.upload.fileName}` })));
  }
  ui.modelSelect.replaceChildren(...groups);
  syncSelect();
}

/** Reflects state.source in the select, the batch field and the hint. */
function syncSelect() {
  const source = state.source;
  if (!source) return;
  ui.modelSelect.value = source.kind === 'model' ? source.name
    : source.kind === 'example' ? examplePrefix + source.name : uploadValue;
  const isModel = source.kind === 'model';
  ui.batch.disabled = !isModel;
  ui.batch.title = isModel ? '' : 'A graph file sets its own batch size';
  if (isModel) {
    const info = modelInfo(source.name);
    ui.modelDescription.textContent = info?.description ?? '';
  } else if (source.kind === 'example') {
    ui.modelDescription.textContent = 'An example pase-graph/1 file shipped with the planner.';
  } else {
    ui.modelDescription.textContent = `Planning the graph in ${source.fileName}. Choose another model to leave it.`;
  }
}

async function fetchExample(name) {
  const response = await fetch(`examples/${encodeURIComponent(name)}.json`);
  if (!response.ok) throw new Error(`examples/${name}.json: HTTP ${response.status}`);
  return response.text();
}

async function chooseFromSelect() {
  const value = ui.modelSelect.value;
  markStale();
  if (value === uploadValue && state.upload) {
    state.source = { kind: 'upload', ...state.upload };
  } else if (value.startsWith(examplePrefix)) {
    const name = value.slice(examplePrefix.length);
    try {
      state.source = { kind: 'example', name, text: await fetchExample(name) };
    } catch (e) {
      showError('Could not load the example', e.message);
      syncSelect();
      return;
    }
  } else {
    state.source = { kind: 'model', name: value };
    const info = modelInfo(value);
    if (info) ui.batch.value = info.default_batch;
  }
  syncSelect();
  updateUrl();
}

function applyPreset() {
  const preset = presets.find((p) => p.id === ui.preset.value);
  if (!preset) return;
  ui.tflops.value = preset.tflops;
  ui.bandwidth.value = preset.bandwidth;
}

function syncPreset() {
  ui.preset.value = matchPreset(numberValue(ui.tflops), numberValue(ui.bandwidth)).id;
}

function fillPresets() {
  ui.preset.replaceChildren(
    ...presets.map((p) => el('option', { value: p.id, text: p.label })),
    el('option', { value: customPreset.id, text: customPreset.label, disabled: true }),
  );
}

// ---- Uploads --------------------------------------------------------------------

async function acceptFile(file) {
  if (!file) return;
  // A file dropped while the module loads is checked once it is there.
  if (!(await state.ready)) return;
  clearError();
  if (file.size > maxFileBytes) {
    showError('Graph file too big', `${file.name} is ${(file.size / 2 ** 20).toFixed(1)} MiB; the limit is ${maxFileBytes / 2 ** 20} MiB`);
    return;
  }
  const text = await file.text();
  try {
    JSON.parse(text);
  } catch (e) {
    showError(`Invalid graph file ${file.name}`, `not valid JSON: ${e.message}`);
    return;
  }
  // A plan of the old graph is moot once a new graph arrives; stopping it
  // also frees the worker to check the file at once.
  if (state.running) cancelPlan('Plan cancelled: a new graph was loaded.');
  cancelComparison('Comparison cancelled: a new graph was loaded.');
  setStatus(`Checking ${file.name}…`);
  try {
    // One device has one configuration per layer, so this is a full
    // validation of the graph at almost no cost.
    await state.client.call('plan', `{"graph": ${text}\n, "cluster": {"devices": 1}}`);
  } catch (e) {
    if (e.kind === 'cancelled') return;
    showPlannerError(e, { file: file.name });
    setStatus(`${file.name} was not loaded.`);
    return;
  }
  state.upload = { fileName: file.name, text };
  state.source = { kind: 'upload', ...state.upload };
  fillModelSelect();
  markStale();
  updateUrl();
  setStatus(`Loaded ${file.name}. Press Plan to plan it.`);
}

function setUpDropTarget() {
  ui.graphFile.addEventListener('change', () => {
    acceptFile(ui.graphFile.files?.[0]);
    ui.graphFile.value = ''; // choosing the same file again must fire again
  });
  // The whole window accepts drops, so a near miss does not make the browser
  // navigate away to the dropped file.
  let depth = 0;
  window.addEventListener('dragenter', (event) => {
    if (!event.dataTransfer?.types.includes('Files')) return;
    depth++;
    ui.dropzone.classList.add('active');
  });
  window.addEventListener('dragleave', () => {
    if (--depth <= 0) {
      depth = 0;
      ui.dropzone.classList.remove('active');
    }
  });
  window.addEventListener('dragover', (event) => event.preventDefault());
  window.addEventListener('drop', (event) => {
    event.preventDefault();
    depth = 0;
    ui.dropzone.classList.remove('active');
    acceptFile(event.dataTransfer?.files?.[0]);
  });
}

// ---- Planning -------------------------------------------------------------------

async function startPlan() {
  if (!state.source) return;
  if (state.running) cancelPlan(); // a new plan replaces the one in flight
  cancelComparison(); // ... and the comparison of the previous plan
  clearError();
  const token = {};
  state.running = token;
  const label = sourceLabel(state.source);
  setRunning(true);
  setProgress(0);
  setStatus(`Planning ${label}…`);
  updateUrl();
  const request = requestText();
  // Built now, from the inputs this plan answers, not from what the form
  // says once the plan is done.
  const compareRequest = requestText({ mcmc: comparisonMcmc });
  const started = performance.now();
  let planned = false;
  try {
    const plan = await state.client.call('plan', request, {
      onProgress: (fraction) => {
        if (state.running === token) {
          setProgress(fraction);
          setStatus(`Planning ${label}… ${Math.round(fraction * 100)}%`);
        }
      },
    });
    if (state.running !== token) return;
    showPlan(plan);
    setProgress(1);
    setStatus(`Planned ${label} in ${formatSeconds((performance.now() - started) / 1000)}.`);
    planned = true;
  } catch (e) {
    if (state.running !== token) return; // superseded or cancelled
    const file = state.source.kind === 'model' ? undefined : sourceLabel(state.source);
    // Only graph errors belong to the file; cluster errors are the form's.
    showPlannerError(e, { file: e.where?.startsWith('graph') ? file : undefined });
    setProgress(0);
    setStatus('Planning failed.');
  } finally {
    if (state.running === token) {
      state.running = null;
      setRunning(false);
    }
  }
  if (planned) compareStrategies(compareRequest, label);
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
  // WebAssembly cannot be interrupted: drop the worker and start afresh.
  state.client.restart();
  setRunning(false);
  setProgress(0);
  setStatus(message);
}

function showPlan(plan) {
  state.plan = plan;
  state.planText = `${JSON.stringify(plan, null, 2)}\n`;
  document.body.classList.remove('stale');
  document.body.classList.add('has-plan');
  const c = plan.cluster;
  ui.stepTime.textContent = formatSeconds(plan.step_time_s);
  ui.stepNote.textContent = `per training step at ${c.tflops} TFLOP/s per device`;
  ui.totalCost.textContent = String(plan.cost);
  ui.costNote.textContent = `≈ ${formatCost(plan.cost)} FLOP-equivalents`;
  ui.planTitle.textContent = `${plan.graph} on ${c.devices} device${c.devices === 1 ? '' : 's'}`;
  const s = plan.search ?? {};
  ui.planNote.textContent = `${c.bandwidth_gbps} GB/s links · ${plan.vertices.length} layers · searched ${formatCount(s.table_entries)} table entries in ${formatSeconds(s.time_s)}`;
  ui.downloadButton.disabled = false;
  const select = (id) => {
    highlightRow(ui.table, id);
    highlightVertex(ui.graph, id);
  };
  renderBreakdown(ui.breakdown, plan, { onSelect: select });
  renderGraph(ui.graph, plan, { onSelect: select });
  renderTable(ui.table, plan);
}

/** Results stay visible after an input changes, but dimmed: they no longer
 *  answer the question the form asks. */
function markStale() {
  if (state.plan) document.body.classList.add('stale');
}

function downloadPlan() {
  if (!state.plan) return;
  const blob = new Blob([state.planText], { type: 'application/json' });
  const url = URL.createObjectURL(blob);
  const c = state.plan.cluster;
  const link = el('a', { href: url, download: `${state.plan.graph}-${c.devices}dev-plan.json` });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// ---- URL state ------------------------------------------------------------------

function pageState() {
  const source = state.source;
  return {
    source: source && (source.kind === 'model' ? { ...source, batch: numberValue(ui.batch) } : source),
    devices: numberValue(ui.devices),
    tflops: numberValue(ui.tflops),
    bandwidth: numberValue(ui.bandwidth),
    order: ui.order.value,
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
  ui.modelSelect.addEventListener('change', chooseFromSelect);
  ui.preset.addEventListener('change', () => {
    applyPreset();
    markStale();
    updateUrl();
  });
  for (const input of [ui.devices, ui.tflops, ui.bandwidth, ui.batch]) {
    input.addEventListener('input', () => {
      input.removeAttribute('aria-invalid');
      if (input !== ui.devices && input !== ui.batch) syncPreset();
      markStale();
      updateUrl();
    });
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !ui.planButton.disabled) startPlan();
    });
  }
  ui.order.addEventListener('change', () => {
    markStale();
    updateUrl();
  });
  ui.planButton.addEventListener('click', startPlan);
  ui.cancelButton.addEventListener('click', () => {
    if (state.running) cancelPlan();
    else cancelComparison();
  });
  ui.downloadButton.addEventListener('click', downloadPlan);
  ui.errorClose.addEventListener('click', clearError);
  ui.shareButton.addEventListener('click', copyLink);
  setUpDropTarget();
  // Redraw the graph when its width changes (window resize, embed frames).
  let lastWidth = ui.graph.clientWidth;
  let pending = 0;
  new ResizeObserver(() => {
    const width = ui.graph.clientWidth;
    if (!state.plan || Math.abs(width - lastWidth) < 24) return;
    lastWidth = width;
    clearTimeout(pending);
    pending = setTimeout(() => renderGraph(ui.graph, state.plan, {
      onSelect: (id) => {
        highlightRow(ui.table, id);
        highlightVertex(ui.graph, id);
      },
    }), 120);
  }).observe(ui.graph);
}

async function loadExamples() {
  try {
    const response = await fetch('examples/index.json');
    if (response.ok) state.examples = (await response.json()).map((f) => f.replace(/\.json$/, ''));
  } catch {
    state.examples = []; // the page works without them
  }
}

async function init() {
  fillPresets();
  renderLegend(ui.legend);
  wireControls();
  setRunning(false);

  const initial = await readState(location.href);
  state.embed = initial.embed;
  document.body.classList.toggle('embed', state.embed);
  const preset = presets[0];
  ui.devices.value = initial.devices ?? defaultDevices;
  ui.tflops.value = initial.tflops ?? preset.tflops;
  ui.bandwidth.value = initial.bandwidth ?? preset.bandwidth;
  if (initial.order) ui.order.value = initial.order;
  syncPreset();

  state.client = new PlannerClient('worker.js');
  const examples = loadExamples();
  try {
    state.models = await state.client.call('models');
    ui.moduleVersion.textContent = `module ${await state.client.call('version')}`;
  } catch (e) {
    showError('The planner module failed to load', e.message);
    setStatus('The planner is not available.');
    ui.modelSelect.replaceChildren(el('option', { text: 'Planner unavailable' }));
    markReady(false);
    return;
  }
  await examples;

  let source = initial.source;
  if (source?.kind === 'model' && !modelInfo(source.name)) {
    // Left as is, the module reports the unknown name when planning.
    state.models.push({ name: source.name, description: '', default_batch: source.batch });
  }
  if (source?.kind === 'example') {
    try {
      source = { ...source, text: await fetchExample(source.name) };
    } catch (e) {
      showError('Could not load the example', e.message);
      source = null;
    }
  }
  if (source?.kind === 'upload') state.upload = { fileName: source.fileName, text: source.text };
  state.source = source ?? { kind: 'model', name: defaultModel };
  if (state.source.kind === 'model') {
    ui.batch.value = initial.source?.batch ?? modelInfo(state.source.name)?.default_batch ?? '';
  }
  fillModelSelect();
  ui.planButton.disabled = false;
  markReady(true);
  setStatus('Ready. Choose a network and press Plan.');
  updateUrl();
  if (initial.hasPlanState || state.embed) startPlan();
}

init();
