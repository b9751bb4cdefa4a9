// The results of one plan: the summary (step time, cost, what was planned),
// the cost breakdown, the layer graph and the strategy table, kept in step
// with each other, and the download of the plan-result document.
//
// Results stay visible after an input changes, but dimmed ("stale"): they no
// longer answer the question the form asks.

import { formatCost, formatCount, formatSeconds } from './format.js';
import { parametersText } from './views/imported.js';
import { renderTable, highlightRow } from './views/table.js';
import { renderGraph, renderLegend, highlightVertex } from './views/graph.js';
import { renderBreakdown } from './views/charts.js';
import { el } from './views/dom.js';

export class Results {
  /** the result document on display, or null */
  plan = null;
  #text = ''; // ... and its JSON for the download
  #ui;

  /**
   * @param {{stepTime, stepNote, totalCost, costNote, planTitle, planNote, downloadButton,
   *          breakdown, graph, legend, table}} ui the elements of the results area
   */
  constructor(ui) {
    this.#ui = ui;
    renderLegend(ui.legend);
    ui.downloadButton.addEventListener('click', () => this.download());
    this.#redrawOnResize();
  }

  show(plan) {
    const ui = this.#ui;
    this.plan = plan;
    this.#text = `${JSON.stringify(plan, null, 2)}\n`;
    document.body.classList.remove('stale');
    document.body.classList.add('has-plan');
    const c = plan.cluster;
    ui.stepTime.textContent = formatSeconds(plan.step_time_s);
    ui.stepNote.textContent = `per training step at ${c.tflops} TFLOP/s per device`;
    ui.totalCost.textContent = String(plan.cost);
    ui.costNote.textContent = `≈ ${formatCost(plan.cost)} FLOP-equivalents`;
    ui.planTitle.textContent = `${plan.graph} on ${c.devices} device${c.devices === 1 ? '' : 's'}`;
    const s = plan.search ?? {};
    // The graph's parameter count, in results that carry it.
    const parameters = Number.isFinite(plan.parameters) ? ` · ${parametersText(plan.parameters)}` : '';
    ui.planNote.textContent = `${c.bandwidth_gbps} GB/s links · ${plan.vertices.length} layers${parameters} · searched ${formatCount(s.table_entries)} table entries in ${formatSeconds(s.time_s)}`;
    ui.downloadButton.disabled = false;
    renderBreakdown(ui.breakdown, plan, { onSelect: (id) => this.#select(id) });
    renderGraph(ui.graph, plan, { onSelect: (id) => this.#select(id) });
    renderTable(ui.table, plan);
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

  /** A layer chosen in one view is shown in the others. */
  #select(id) {
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
