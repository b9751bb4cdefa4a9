// Where the cost goes: one stacked bar of the plan's total split into compute,
// in-layer communication and re-distribution between layers, then the most
// expensive layers as stacked bars of their own compute and communication.
// Plain HTML boxes sized by flex/width: crisp at any zoom and readable by
// screen readers, which an SVG or canvas chart would need extra work for.
// With a pipeline the parts are one micro-batch's (the result is over the
// micro-batch graph), and the rest of the step time is a part of its own:
// the other micro-batches, at the pace of the slowest stage.

import { formatCost, formatShare } from '../format.js';
import { el } from './dom.js';

const baseParts = [
  { id: 'compute', label: 'Compute' },
  { id: 'comm', label: 'In-layer communication' },
  { id: 'redistribution', label: 'Re-distribution' },
];
const pipelinePart = { id: 'pipeline', label: 'Other micro-batches' };

const topLayerCount = 8;

function totalBar(breakdown, total, parts) {
  return el('div', { class: 'stack', role: 'img', 'aria-label': parts.map((p) => `${p.label} ${formatShare(breakdown[p.id] / total)}`).join(', ') },
    parts.map((p) => el('span', {
      class: `seg seg-${p.id}`,
      style: { flex: `${Math.max(0, breakdown[p.id]) / total} 1 0` },
      title: `${p.label}: ${formatCost(breakdown[p.id])} (${formatShare(breakdown[p.id] / total)})`,
    })));
}

function legend(breakdown, total, parts) {
  return el('ul', { class: 'breakdown-legend' }, parts.map((p) => el('li', {}, [
    el('span', { class: `swatch seg-${p.id}` }),
    el('span', { class: 'legend-label', text: p.label }),
    el('span', { class: 'legend-value mono', text: formatCost(breakdown[p.id]) }),
    el('span', { class: 'legend-share', text: formatShare(breakdown[p.id] / total) }),
  ])));
}

function topLayers(plan, onSelect) {
  const layers = [...plan.vertices].sort((a, b) => b.cost - a.cost || a.id - b.id).slice(0, topLayerCount)
    .filter((v) => v.cost > 0);
  if (layers.length === 0) return null;
  const max = layers[0].cost;
  return el('div', { class: 'top-layers' }, [
    el('h3', { text: 'Most expensive layers' }),
    el('ol', {}, layers.map((v) => el('li', {}, [
      el('button', { type: 'button', class: 'link', text: v.name, title: `Show ${v.name} in the table`, onclick: () => onSelect?.(v.id) }),
      el('span', { class: 'bar', role: 'img', 'aria-label': `compute ${formatCost(v.compute)}, communication ${formatCost(v.comm)}` }, [
        el('span', { class: 'seg seg-compute', style: { width: `${(100 * v.compute) / max}%` } }),
        el('span', { class: 'seg seg-comm', style: { width: `${(100 * v.comm) / max}%` } }),
      ]),
      el('span', { class: 'mono value', text: formatCost(v.cost) }),
    ]))),
  ]);
}

/** Fills `container` with the breakdown of `plan`. */
export function renderBreakdown(container, plan, { onSelect } = {}) {
  const breakdown = { ...(plan.breakdown ?? { compute: plan.cost, comm: 0, redistribution: 0 }) };
  const parts = [...baseParts];
  const once = baseParts.reduce((sum, p) => sum + (Number.isFinite(breakdown[p.id]) ? breakdown[p.id] : 0), 0);
  if (plan.pipeline && plan.cost > once) {
    breakdown.pipeline = plan.cost - once;
    parts.push(pipelinePart);
  }
  // A pipeline whose stages reduce their weight gradients at once may cost
  // less than one micro-batch's parts added up: the bar is then their sum.
  const total = Math.max(plan.pipeline ? once : 0, plan.cost) || 1;
  container.replaceChildren(totalBar(breakdown, total, parts), legend(breakdown, total, parts), topLayers(plan, onSelect) ?? '');
}
