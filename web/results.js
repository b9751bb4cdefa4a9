// The results of one plan: the headline (step time, cost, what was planned)
// with what the plan is worth (proven optimal, or its lower bound and gap:
// views/bound.js), the cost breakdown, the memory per GPU, the layer graph, the layers grouped
// by how they are split (the result's summary) and the strategy table, kept
// in step with each other, and the download of the plan-result
// document. Also the "does not fit" state: a plan refused because no
// strategy fits the memory per GPU is an answer about the cluster, shown
// here rather than as an input error.
//
// Results stay visible after an input changes, but dimmed ("stale"): they no
// longer answer the question the form asks. When the latest choice of graph
// failed (a refused file, source.js), a note above them says which graph they
// are of, and that it is not that file's.
//
// The layer table can be filtered to one group of the summary: the select
// above it, or a click on a summary row; "Showing N of M layers" and Clear
// filter say so. A layer chosen in the graph outside the group clears it. A
// plan with a pipeline (views/pipeline.js) has its stage strip above the
// graph, its label by the step time, and its stages in the filter too (a
// click on a stage's segment).

import { formatBytes, formatCostUnit, formatCount, formatDeviceRange, formatSeconds, formatShare } from './format.js';
import { parametersText } from './views/imported.js';
import { renderTable, highlightRow, filterTable } from './views/table.js';
import { renderGraph, renderLegend, highlightVertex } from './views/graph.js';
import { renderBreakdown } from './views/charts.js';
import { renderMemory } from './views/memory.js';
import { renderBound } from './views/bound.js';
import { renderSummary, markSummaryGroup } from './views/summary.js';
import { renderStageStrip } from './views/pipeline.js';
import { el } from './views/dom.js';

// The core's error when nothing fits (core/src/search/weighted_plan.cpp, at cluster.memory_gib):
// "no strategy fits in 0.001 GiB per device: the least memory any strategy reaches is 0.2117 GiB".
const noFitPattern = /^no strategy fits in ([\d.e+-]+) GiB per device(?:: the least memory any strategy reaches is ([\d.e+-]+) GiB)?/;
// ... and with a pipeline (core/src/pipeline/pipeline_search.cpp):
// "no pipeline of the stage and micro-batch counts tried fits in 1.000000 GiB per device".
const noPipelineFitPattern = /^no pipeline of the stage and micro-batch counts tried fits in ([\d.e+-]+) GiB per device/;

/**
 * The capacity and the least reachable memory (GiB; null if the message does
 * not give it) of a planner error that says no strategy fits, else null;
 * `pipeline` is true when it says that no pipeline fits.
 * @param {{message: string, where: string}} error
 */
export function parseNoFit(error) {
  if (error?.where !== 'cluster.memory_gib') return null;
  const piped = noPipelineFitPattern.exec(error.message ?? '');
  if (piped) return { capacityGib: Number(piped[1]), leastGib: null, pipeline: true };
  const match = noFitPattern.exec(error.message ?? '');
  if (!match) return null;
  return { capacityGib: Number(match[1]), leastGib: match[2] === undefined ? null : Number(match[2]) };
}

/** "2 nodes × 8 · 450 GB/s inside nodes, 50 GB/s between", or the flat "16 GB/s links". */
function linksText(c) {
  if (!(c.gpus_per_node > 0)) return `${c.bandwidth_gbps} GB/s links`;
  const nodes = Math.ceil(c.devices / c.gpus_per_node);
  const shape = nodes === 1 ? 'one node' : `${nodes} nodes × ${c.gpus_per_node}`;
  return `${shape} · ${c.intra_node_gbps} GB/s inside nodes, ${c.bandwidth_gbps} GB/s between`;
}

/**
 * What a plan recomputes, per decoder block (core/docs/practice-model.md,
 * "Recomputation"): "none", "selective", or "full on decoder blocks 0-11,
 * selective on the others".
 */
export function recomputeText(training) {
  const mode = training?.recompute ?? 'none';
  const blocks = training?.recompute_blocks;
  const rest = training?.recompute_rest ?? 'none';
  if (blocks == null || mode === rest) return mode;
  const first = blocks === 0 ? 'no decoder block' : blocks === 1 ? 'decoder block 0' : `decoder blocks 0-${blocks - 1}`;
  return `${mode} on ${first}, ${rest} on the others`;
}

export class Results {
  /** the result document on display, or null */
  plan = null;
  /** called after a plan is shown (the Export menu follows it) */
  onShow = () => {};
  #text = ''; // ... and its JSON for the download
  #label = ''; // ... and how the status line names its graph ("attention_block.json")
  #refused = null; // the refused choice the plan is not of (source.js), or null
  #ui;
  #filter = null; // the vertex ids the table shows, or null: all

  /**
   * @param {{stepTime, stepNote, stepParts, totalCost, costNote, planTitle, pipelineLabel, stageStrip,
   *          planNote, downloadButton, breakdown, memory, graph, legend, summary, table, splitHint,
   *          filter: {select, count, clear}, noFit: {box, need, message, hint}, planOf, bound}} ui
   *   the elements of the results area (planOf: the note on which graph they are of;
   *   bound: the sentence on whether the plan is proven optimal)
   */
  constructor(ui) {
    this.#ui = ui;
    renderLegend(ui.legend);
    ui.downloadButton.addEventListener('click', () => this.download());
    ui.filter.select.addEventListener('change', () => {
      const { value } = ui.filter.select;
      if (value.startsWith('stage-')) this.filterStage(Number(value.slice(6)));
      else this.filterGroup(value === '' ? null : Number(value));
    });
    ui.filter.clear.addEventListener('click', () => this.filterGroup(null));
    this.#redrawOnResize();
  }

  /**
   * Shows `plan` (a plan-result document). `title` names the graph in the
   * headline ("ResNet-101", "attention-block"), the result's own name (the
   * network's id) by default; `label` as the status line does
   * ("attention_block.json"), the title by default.
   */
  show(plan, { title = plan.graph, label = title } = {}) {
    const ui = this.#ui;
    this.plan = plan;
    this.#text = `${JSON.stringify(plan, null, 2)}\n`;
    this.#label = label;
    this.#showPlanOf();
    this.clearNoFit();
    document.body.classList.remove('stale');
    document.body.classList.add('has-plan');
    const c = plan.cluster;
    // The step time is the cost over the peak: it assumes every device
    // computes at its peak and that no communication overlaps computation
    // (core/docs/cost-model.md, section 7).
    ui.stepTime.textContent = formatSeconds(plan.step_time_s);
    const p = plan.pipeline;
    ui.pipelineLabel.hidden = !p;
    ui.pipelineLabel.textContent = p ? p.label : '';
    ui.pipelineLabel.title = p ? `Bubble ${formatShare(p.bubble)}: the stages' mean idle share of the pipeline's latency` : '';
    const per = p ? `per training step of ${p.microbatches} micro-batch${p.microbatches === 1 ? '' : 'es'} of ${p.micro_batch}, bubble ${formatShare(p.bubble)}`
      : 'per training step';
    if (c.cost_model === 'practice') {
      // The practice model (core/docs/practice-model.md): achieved rates,
      // fused attention, overlap; with a language model's throughput.
      const t = plan.throughput;
      ui.stepNote.textContent = `${per}, practice cost model (achieved rates, ${c.memory_gbps} GB/s memory, overlap)`
        + (t ? `, MFU ${formatShare(t.mfu)}, ${formatCount(t.tokens_per_s)} tokens/s` : '');
      ui.stepNote.title = 'Matrix products at the fraction of the peak their shapes reach, memory-bound ops at the '
        + 'memory bandwidth, fused attention, collectives with latency, gradient reduction overlapped with the backward pass.';
    }
    // The practice model's step by part (core/docs/practice-model.md, "The
    // step's parts"); the paper model has no such split.
    const parts = c.cost_model === 'practice' ? plan.step : null;
    ui.stepParts.hidden = !parts;
    ui.stepParts.textContent = parts
      ? `compute ${formatSeconds(parts.compute_s)} · recomputation ${formatSeconds(parts.recompute_s)}`
        + ` · exposed communication ${formatSeconds(parts.communication_s)} · pipeline bubble ${formatSeconds(parts.bubble_s)}`
        + `; recomputing ${recomputeText(plan.training)}${plan.training.recompute_searched ? ' (chosen by the search)' : ''}`
      : '';
    if (c.cost_model !== 'practice') {
      ui.stepNote.textContent = `${per}, at the peak ${c.tflops} TFLOP/s per device, no overlap of communication with compute`;
      ui.stepNote.title = 'The total cost divided by the peak rate: real kernels run below peak (slower), '
        + 'and frameworks overlap communication with compute (faster). Compare plans with it, rather than promise it.';
    }
    // Rounded, with its unit; the exact value for tools and tests.
    ui.totalCost.textContent = formatCostUnit(plan.cost);
    ui.totalCost.dataset.exact = String(plan.cost);
    ui.totalCost.title = `${plan.cost} FLOP-equivalents exactly`;
    ui.costNote.textContent = 'FLOP-equivalents: compute, with communication counted as the FLOPs it costs in time';
    ui.planTitle.textContent = `${title} on ${c.devices} device${c.devices === 1 ? '' : 's'}`;
    ui.planTitle.title = plan.graph && plan.graph !== title ? `graph "${plan.graph}"` : '';
    this.showSplitHint(c.devices);
    const s = plan.search ?? {};
    // The graph's parameter count, in results that carry it.
    const parameters = Number.isFinite(plan.parameters) ? ` · ${parametersText(plan.parameters)}` : '';
    // The bounded search sums its rounds' tables (core/docs/bounded-search.md).
    const how = s.method === 'bounded' ? ` (bounded search, ${s.rounds} round${s.rounds === 1 ? '' : 's'})` : '';
    // A language model's vocabulary as the engines pad it (core/docs/llm.md,
    // "Vocabulary padding"): its rows count in the cost and the memory.
    const v = plan.vocab_padding;
    const padding = v ? ` · vocabulary padded from ${formatCount(v.vocab_size)} to ${formatCount(v.padded_vocab_size)} rows (a multiple of ${v.multiple}, as Megatron-LM pads it)` : '';
    ui.planNote.textContent = `${linksText(c)} · ${plan.vertices.length} layers${parameters}${padding} · searched ${formatCount(s.table_entries)} table entries in ${formatSeconds(s.time_s)}${how}`;
    renderBound(ui.bound, plan);
    ui.downloadButton.disabled = false;
    this.onShow();
    renderBreakdown(ui.breakdown, plan, { onSelect: (id) => this.#select(id) });
    renderMemory(ui.memory, plan);
    renderGraph(ui.graph, plan, { onSelect: (id) => this.#select(id) });
    renderSummary(ui.summary, plan, {
      onGroup: (index) => {
        this.filterGroup(index);
        const first = plan.summary[index]?.vertices[0];
        if (first !== undefined) this.#select(first);
      },
    });
    renderTable(ui.table, plan);
    renderStageStrip(ui.stageStrip, plan, {
      onStage: (s) => {
        this.filterStage(s);
        const first = p.stage[s]?.first_vertex;
        if (first !== undefined) this.#select(first);
      },
    });
    const groups = (Array.isArray(plan.summary) ? plan.summary : []).map((group, index) => el('option', {
      value: index, text: `${group.op}: ${group.label} (${group.vertices.length})`,
    }));
    const stages = (p?.stage ?? []).map((stage, s) => el('option', {
      value: `stage-${s}`, text: `Stage ${s}: ${formatDeviceRange(stage.first_device, stage.devices)} (${stage.layers})`,
    }));
    ui.filter.select.replaceChildren(
      el('option', { value: '', text: 'All layers' }),
      ...(stages.length ? [el('optgroup', { label: 'Pipeline stages' }, stages), el('optgroup', { label: 'Layers split alike' }, groups)] : groups),
    );
    this.filterGroup(null);
  }

  /**
   * Shows only the layers of the summary's group `index` in the table, or
   * all of them (null).
   */
  filterGroup(index) {
    const group = index === null ? null : this.plan?.summary?.[index];
    this.#applyFilter(group ? group.vertices : null, group ? String(index) : '');
    markSummaryGroup(this.#ui.summary, group ? index : null);
  }

  /** Shows only the layers of pipeline stage `s` in the table. */
  filterStage(s) {
    const stage = this.plan?.pipeline?.stage?.[s];
    if (!stage) {
      this.filterGroup(null);
      return;
    }
    const of = this.plan.pipeline.stage_of;
    const ids = this.plan.vertices.map((v) => v.id)
      .filter((id) => (Array.isArray(of) ? of[id] === s : id >= stage.first_vertex && id < stage.end_vertex));
    this.#applyFilter(ids, `stage-${s}`);
    markSummaryGroup(this.#ui.summary, null);
  }

  /** The table shows the layers `ids` (all: null); `value` is the filter select's. */
  #applyFilter(ids, value) {
    const ui = this.#ui;
    this.#filter = ids ? new Set(ids) : null;
    const total = this.plan?.vertices.length ?? 0;
    const shown = filterTable(ui.table, this.#filter);
    ui.filter.select.value = ids ? value : '';
    ui.filter.count.textContent = ids ? `Showing ${shown} of ${total} layers` : `${total} layers`;
    ui.filter.clear.hidden = !ids;
  }

  /**
   * The "does not fit" state for a planner error that parseNoFit() reads:
   * the least memory any strategy reaches and what would lower it. The plan
   * shown before, if any, stays, dimmed.
   * @param {{message: string}} error
   * @param {{capacityGib: number, leastGib: number|null, pipeline?: boolean}} noFit
   * @param {{devices: number|null, zero: number|null}} cluster what was asked for (zero null: searched)
   */
  showNoFit(error, noFit, { devices, zero }) {
    const ui = this.#ui.noFit;
    ui.box.querySelector('h2').textContent = `Does not fit in ${noFit.capacityGib} GiB per GPU`;
    ui.need.textContent = noFit.pipeline ? 'No pipeline of the stage and micro-batch counts asked for fits: every plan tried has a stage over the cap.'
      : noFit.leastGib === null ? 'No strategy fits.'
        : `The least memory any strategy reaches is ${formatBytes(noFit.leastGib * 2 ** 30)} per GPU.`;
    ui.message.textContent = `The planner says: ${error.message}.`;
    const ways = [devices ? `more devices (now ${devices})` : 'more devices'];
    if (zero !== null && zero < 3) ways.push(`a higher ZeRO stage (now ${zero})`);
    if (noFit.pipeline) ways.push('more pipeline stages or micro-batches (or auto)');
    ways.push('GPUs with more memory', 'a smaller batch');
    ui.hint.textContent = `To lower it, try ${ways.slice(0, -1).join(', ')} or ${ways.at(-1)}.`;
    ui.box.hidden = false;
    this.markStale();
  }

  /**
   * The table's hint with a device count: "b÷16 means the batch is split 16
   * ways". The plan's own once a plan is shown (the table is that plan's),
   * else the form's; null or not a count keeps the hint as it is.
   * @param {number|null} devices
   */
  showSplitHint(devices) {
    const hint = this.#ui.splitHint;
    if (!hint || !Number.isInteger(devices) || devices < 1) return;
    if (devices === 1) {
      hint.replaceChildren('Split dimensions are highlighted; on one device nothing is split.');
      return;
    }
    hint.replaceChildren(
      'Split dimensions are highlighted: ',
      el('span', { class: 'dim split' }, ['b', el('b', { text: `÷${devices}` })]),
      ` means the batch is split ${devices} ways.`,
    );
    hint.dataset.devices = devices;
  }

  clearNoFit() {
    this.#ui.noFit.box.hidden = true;
  }

  /**
   * Notes above the plan on display that it is of the graph planned before
   * `refused` (source.js's Refused), the latest choice, which did not become
   * the source: "This plan is of attention_block.json, not of bad.json,
   * which was not loaded." null takes the note away.
   * @param {import('./source.js').Refused|null} refused
   */
  showRefused(refused) {
    this.#refused = refused;
    this.#showPlanOf();
  }

  #showPlanOf() {
    const note = this.#ui.planOf;
    const refused = this.#refused;
    note.hidden = !(refused && this.plan);
    // The results are dimmed too, as stale ones are.
    document.body.classList.toggle('other-graph', !note.hidden);
    if (note.hidden) {
      note.textContent = '';
      return;
    }
    const why = refused.asked ? 'which waits for the sizes of its dynamic dimensions' : `which was not ${refused.verb}`;
    // A file chosen again under the plan's name, changed and now refused.
    const other = refused.name === this.#label ? `the ${refused.name} chosen since` : refused.name;
    note.textContent = `This plan is of ${this.#label}, not of ${other}, ${why}.`;
  }

  markStale() {
    if (this.plan) document.body.classList.add('stale');
  }

  download() {
    if (!this.plan) return;
    const blob = new Blob([this.#text], { type: 'application/json' });
    const url = URL.createObjectURL(blob);
    const c = this.plan.cluster;
    const link = el('a', { href: url, download: `${this.plan.graph}-${c.devices}dev-plan.json` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }

  /** A layer chosen in one view is shown in the others (a filter hiding it is cleared). */
  #select(id) {
    if (this.#filter && !this.#filter.has(id)) this.filterGroup(null);
    highlightRow(this.#ui.table, id);
    highlightVertex(this.#ui.graph, id);
  }

  /** Redraws the graph when its width changes (window resize, embed frames). */
  #redrawOnResize() {
    const graph = this.#ui.graph;
    let lastWidth = graph.clientWidth;
    let pending = 0;
    new ResizeObserver(() => {
      const width = graph.clientWidth;
      if (!this.plan || Math.abs(width - lastWidth) < 24) return;
      lastWidth = width;
      clearTimeout(pending);
      pending = setTimeout(() => renderGraph(graph, this.plan, { onSelect: (id) => this.#select(id) }), 120);
    }).observe(graph);
  }
}
