// Memory per GPU: one stacked bar of what device 0 keeps (parameters,
// gradients, optimizer state, activations; core/docs/cluster.md, "Memory per
// device"), drawn against the capacity line when the cluster caps the memory,
// with a legend in readable bytes and, for a plan under a cap, its lower
// bound. Plain HTML boxes, like the breakdown chart.
//
// Test hooks (in #memory-chart): `.memory-bar[data-total]` with one `.memory-seg[data-part]`
// per kind, `.memory-cap[data-capacity]` when capped, `.memory-headline`.

import { formatBytes, formatCost, formatShare } from '../format.js';
import { el } from './dom.js';

const parts = [
  { id: 'params', label: 'Parameters' },
  { id: 'grads', label: 'Gradients' },
  { id: 'optimizer', label: 'Optimizer state' },
  { id: 'activations', label: 'Activations' },
];

/** A capacity as it was typed when it is whole GiB ("80 GiB"), else in readable bytes. */
export function capacityText(bytes) {
  const gib = bytes / 2 ** 30;
  return Number.isInteger(gib) ? `${gib} GiB` : formatBytes(bytes);
}

/** "2+2+12 bytes per parameter, 2 per activation, ZeRO 0", as the CLI says it. */
export function trainingText(training) {
  if (!training) return '';
  const t = training;
  return `${t.param_bytes}+${t.grad_bytes}+${t.optimizer_bytes} bytes per parameter, ${t.activation_bytes} per activation, ZeRO ${t.zero}`;
}

function headline(memory) {
  const total = formatBytes(memory.per_device_bytes);
  if (!(memory.capacity_bytes > 0)) return `${total} per GPU, no memory cap`;
  const capacity = capacityText(memory.capacity_bytes);
  return memory.fits ? `${total} of ${capacity} per GPU: fits` : `${total} per GPU: does not fit in ${capacity}`;
}

function bar(memory) {
  const total = memory.per_device_bytes;
  const capacity = memory.capacity_bytes > 0 ? memory.capacity_bytes : 0;
  // The scale holds both the bar and the capacity line.
  const scale = Math.max(total, capacity) || 1;
  const label = parts.map((p) => `${p.label} ${formatBytes(memory[p.id])}`).join(', ')
    + (capacity ? `; capacity ${capacityText(capacity)}` : '');
  return el('div', { class: 'memory-track', role: 'img', 'aria-label': label }, [
    el('div', { class: memory.fits === false ? 'memory-bar over' : 'memory-bar', dataset: { total }, style: { width: `${(100 * total) / scale}%` } },
      parts.map((p) => el('span', {
        class: `memory-seg mem-${p.id}`,
        dataset: { part: p.id, bytes: memory[p.id] },
        style: { flex: `${Math.max(0, memory[p.id]) / (total || 1)} 1 0` },
        title: `${p.label}: ${formatBytes(memory[p.id])} (${formatShare(memory[p.id] / (total || 1))})`,
      }))),
    capacity ? el('span', {
      class: 'memory-cap',
      dataset: { capacity },
      style: { left: `${(100 * capacity) / scale}%` },
      title: `Capacity: ${capacityText(capacity)} per GPU`,
    }) : null,
  ]);
}

function legend(memory) {
  const total = memory.per_device_bytes || 1;
  const rows = parts.map((p) => el('li', {}, [
    el('span', { class: `swatch mem-${p.id}` }),
    el('span', { class: 'legend-label', text: p.label }),
    el('span', { class: 'legend-value mono', text: formatBytes(memory[p.id]) }),
    el('span', { class: 'legend-share', text: formatShare(memory[p.id] / total) }),
  ]));
  if (memory.capacity_bytes > 0) {
    rows.push(el('li', {}, [
      el('span', { class: 'swatch cap-swatch' }),
      el('span', { class: 'legend-label', text: 'Capacity' }),
      el('span', { class: 'legend-value mono', text: capacityText(memory.capacity_bytes) }),
      el('span', { class: 'legend-share', text: memory.fits ? 'fits' : 'over' }),
    ]));
  }
  return el('ul', { class: 'breakdown-legend memory-legend' }, rows);
}

/** Under a cap: whether the plan is proven the cheapest that fits (core/docs/cluster.md). */
function boundText(plan) {
  const m = plan.memory;
  if (!(m.capacity_bytes > 0) || !Number.isFinite(m.lower_bound)) return null;
  if (m.optimal) return 'The cheapest strategy that fits, proven optimal.';
  const gap = m.lower_bound > 0 ? (plan.cost - m.lower_bound) / m.lower_bound : 0;
  return `The cheapest strategy found that fits, not proven optimal: every strategy that fits costs at least ${formatCost(m.lower_bound)}, the plan ${formatShare(gap)} more.`;
}

/** Fills `container` with the memory of `plan` (a plan-result document). */
export function renderMemory(container, plan) {
  const memory = plan.memory;
  if (!memory) {
    container.replaceChildren(el('p', { class: 'placeholder', text: 'This result has no memory report.' }));
    return;
  }
  const notes = [trainingText(plan.training), boundText(plan)].filter(Boolean);
  container.replaceChildren(
    el('p', { class: memory.fits === false ? 'memory-headline over' : 'memory-headline', text: headline(memory) }),
    bar(memory),
    legend(memory),
    el('ul', { class: 'memory-notes' }, notes.map((text) => el('li', { text }))),
  );
}
