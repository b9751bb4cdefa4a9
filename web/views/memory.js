// Memory per GPU: one stacked bar of what device 0 keeps (parameters,
// gradients, optimizer state, activations; core/docs/cluster.md, "Memory per
// device"), drawn against the capacity line when the cluster caps the memory,
// with a legend in readable bytes. Plain HTML boxes, like the breakdown
// chart. Whether a plan under a cap is proven the cheapest that fits is said
// under the headline, in the words of a bounded search's plan (bound.js).
//
// A plan with a pipeline keeps its stages' memory apart: the bar is the
// largest stage's (the result's memory), and under it each stage has a bar of
// its own on one scale, with whether it fits the capacity.
//
// Test hooks (in #memory-chart): `.memory-bar[data-total]` with one `.memory-seg[data-part]`
// per kind, `.memory-cap[data-capacity]` when capped, `.memory-headline`; with a
// pipeline one `.stage-memory-row[data-stage][data-bytes][data-fits]` per stage.

import { capacityText, formatBytes, formatDeviceRange, formatShare } from '../format.js';
import { el } from './dom.js';
import { stageClass } from './pipeline.js';

export { capacityText };

const parts = [
  { id: 'params', label: 'Parameters' },
  { id: 'grads', label: 'Gradients' },
  { id: 'optimizer', label: 'Optimizer state' },
  { id: 'activations', label: 'Activations' },
];

/** "2+2+12 bytes per parameter, 2 per activation, ZeRO 0", as the CLI says it. */
export function trainingText(training) {
  if (!training) return '';
  const t = training;
  return `${t.param_bytes}+${t.grad_bytes}+${t.optimizer_bytes} bytes per parameter, ${t.activation_bytes} per activation, ZeRO ${t.zero}`;
}

function headline(memory, pipeline) {
  const total = formatBytes(memory.per_device_bytes);
  // With a pipeline, the result's memory is its largest stage's.
  const largest = pipeline ? largestStage(pipeline) : -1;
  const per = largest >= 0 ? `per GPU in the largest stage (stage ${largest})` : 'per GPU';
  if (!(memory.capacity_bytes > 0)) return `${total} ${per}, no memory cap`;
  const capacity = capacityText(memory.capacity_bytes);
  return memory.fits ? `${total} of ${capacity} ${per}: fits` : `${total} ${per}: does not fit in ${capacity}`;
}

function largestStage(pipeline) {
  let best = -1;
  pipeline.stage?.forEach((s, i) => {
    if (best < 0 || s.memory_bytes > pipeline.stage[best].memory_bytes) best = i;
  });
  return best;
}

/** The bar of `memory`; `scale` (bytes: the track's width) holds it and the capacity line. */
function bar(memory, scale = Math.max(memory.per_device_bytes, memory.capacity_bytes > 0 ? memory.capacity_bytes : 0) || 1) {
  const total = memory.per_device_bytes;
  const capacity = memory.capacity_bytes > 0 ? memory.capacity_bytes : 0;
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

/** Each stage's memory per GPU, on one scale, against the capacity. */
function stageRows(plan) {
  const stages = plan.pipeline?.stage;
  if (!Array.isArray(stages) || stages.length === 0) return null;
  const capacity = plan.memory.capacity_bytes > 0 ? plan.memory.capacity_bytes : 0;
  const scale = Math.max(capacity, ...stages.map((s) => s.memory_bytes)) || 1;
  return el('div', { class: 'stage-memory-list' }, [
    el('h3', { text: 'Per stage' }),
    el('ol', {}, stages.map((stage, index) => {
      const fits = stage.fits !== false;
      const memory = { ...stage.memory, per_device_bytes: stage.memory_bytes, capacity_bytes: capacity, fits };
      const verdict = capacity ? (fits ? 'fits' : 'over') : '';
      return el('li', {
        class: `stage-memory-row ${stageClass(index)}${fits ? '' : ' over'}`,
        dataset: { stage: index, bytes: stage.memory_bytes, fits: String(fits) },
        title: `${stage.activation_copies} micro-batch${stage.activation_copies === 1 ? '' : 'es'} of activations held`,
      }, [
        el('span', { class: 'stage-memory-name' }, [
          el('span', { class: 'stage-swatch', 'aria-hidden': 'true' }),
          `Stage ${index} · ${formatDeviceRange(stage.first_device, stage.devices)}`,
        ]),
        bar(memory, scale),
        el('span', { class: 'legend-value mono', text: formatBytes(stage.memory_bytes) }),
        el('span', { class: 'legend-share', text: verdict }),
      ]);
    })),
  ]);
}

/** Fills `container` with the memory of `plan` (a plan-result document). */
export function renderMemory(container, plan) {
  const memory = plan.memory;
  if (!memory) {
    container.replaceChildren(el('p', { class: 'placeholder', text: 'This result has no memory report.' }));
    return;
  }
  const notes = [trainingText(plan.training)].filter(Boolean);
  container.replaceChildren(
    el('p', { class: memory.fits === false ? 'memory-headline over' : 'memory-headline', text: headline(memory, plan.pipeline) }),
    bar(memory),
    legend(memory),
    stageRows(plan) ?? '',
    el('ul', { class: 'memory-notes' }, notes.map((text) => el('li', { text }))),
  );
}
