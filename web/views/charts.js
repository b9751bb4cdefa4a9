// Where the cost goes: one stacked bar of the plan's total split into compute,
// in-layer communication and re-distribution between layers, then the most
// expensive layers as stacked bars of their own compute and communication.
// Plain HTML boxes sized by flex/width: crisp at any zoom and readable by
// screen readers, which an SVG or canvas chart would need extra work for.

import { formatCost, formatShare } from '../format.js';
import { el } from './dom.js';

const parts = [
  { id: 'compute', label: 'Compute' },
  { id: 'comm', label: 'In-layer communication' },
  { id: 'redistribution', label: 'Re-distribution' },
];

const topLayerCount = 8;

function totalBar(breakdown, total) {
  return el('div', { class: 'stack', role: 'img', 'aria-label': parts.map((p) => `${p.label} ${formatShare(breakdown[p.id] / total)}`).join(', ') },
    parts.map((p) => el('span', {
      class: `seg seg-${p.id}`,
      style: { flex: `${Math.max(0, breakdown[p.id]) / total} 1 0` },
      title: `${p.label}: ${formatCost(breakdown[p.id])} (${formatShare(breakdown[p.id] / total)})`,
    })));
}

function legend(breakdown, total) {
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
  const breakdown = plan.breakdown ?? { compute: plan.cost, comm: 0, redistribution: 0 };
  const total = plan.cost > 0 ? plan.cost : 1;
  container.replaceChildren(totalBar(breakdown, total), legend(breakdown, total), topLayers(plan, onSelect) ?? '');
}
