// The per-layer strategy table: one row per vertex, its dimensions with their
// sizes and splits (split ones highlighted), its split kind, its cost and
// the memory one GPU keeps for it (`td.memory[data-bytes]`) and, in a plan with
// a pipeline, its stage (`td.stage-col[data-stage]`, under a Stage header
// added for such a plan only). A filter shows the rows of one group of the plan's summary, or
// of one stage, only (filterTable()).

import { formatBytes, formatCost, formatShare } from '../format.js';
import { el } from './dom.js';
import { splitKind, splitKindLabel, describeSplits } from './split-kind.js';
import { stageCell, stageHeader, stageOf } from './pipeline.js';

function dimensionChips(vertex) {
  return vertex.dims.map((dim, i) => {
    const split = vertex.config?.[i] ?? 1;
    const size = vertex.sizes?.[i];
    const title = split > 1 ? `${dim}: ${size} split ${split} ways` : `${dim}: ${size}, not split`;
    return el('span', { class: split > 1 ? 'dim split' : 'dim', title }, [
      dim,
      el('small', { text: size }),
      split > 1 ? el('b', { text: `÷${split}` }) : null,
    ]);
  });
}

/** Fills `table` (the #strategy-table element) with the plan's vertices. */
export function renderTable(table, plan) {
  const tbody = table.tBodies[0];
  const total = plan.cost > 0 ? plan.cost : 1;
  const stages = stageOf(plan);
  stageHeader(table, Boolean(stages));
  const rows = plan.vertices.map((vertex) => {
    const kind = splitKind(vertex);
    return el('tr', { id: `layer-${vertex.id}`, dataset: { kind, vertex: vertex.id } }, [
      el('td', { class: 'num muted', text: vertex.id }),
      el('td', { class: 'layer-name', text: vertex.name, title: vertex.name }),
      el('td', { class: 'op', text: vertex.op }),
      el('td', { class: 'dims', 'aria-label': describeSplits(vertex) }, dimensionChips(vertex)),
      el('td', {}, el('span', { class: `kind kind-${kind}`, text: splitKindLabel(kind) })),
      el('td', {
        class: 'num mono',
        text: formatCost(vertex.cost),
        title: `compute ${formatCost(vertex.compute)}, communication ${formatCost(vertex.comm)}`,
        dataset: { cost: vertex.cost },
      }),
      el('td', { class: 'num share' }, el('span', { class: 'share-cell' }, [
        el('span', { class: 'share-track' }, el('span', { class: 'share-fill', style: { width: `${Math.min(100, (100 * vertex.cost) / total)}%` } })),
        el('span', { class: 'share-text', text: formatShare(vertex.cost / total) }),
      ])),
      el('td', {
        class: 'num mono memory',
        text: formatBytes(vertex.memory_bytes),
        title: Number.isFinite(vertex.memory_bytes) ? `${vertex.memory_bytes.toLocaleString('en-US')} bytes per GPU` : null,
        dataset: { bytes: vertex.memory_bytes },
      }),
      stageCell(stages, vertex.id),
    ]);
  });
  tbody.replaceChildren(...rows);
}

/**
 * Shows only the rows of the vertices in `ids` (a Set of vertex ids), or
 * every row when `ids` is null; returns how many rows show.
 */
export function filterTable(table, ids) {
  let shown = 0;
  for (const row of table.tBodies[0].rows) {
    const visible = !ids || ids.has(Number(row.dataset.vertex));
    row.hidden = !visible;
    if (visible) shown += 1;
  }
  return shown;
}

export function clearTable(table) {
  table.tBodies[0].replaceChildren();
}

/** Scrolls to a layer's row and flashes it (from a click in the graph). */
export function highlightRow(table, vertexId) {
  const row = table.querySelector(`#layer-${vertexId}`);
  if (!row) return;
  for (const old of table.querySelectorAll('tr.selected')) old.classList.remove('selected');
  row.classList.add('selected');
  row.scrollIntoView({ block: 'center', behavior: 'smooth' });
}
