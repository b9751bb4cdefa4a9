// Memory per GPU: one stacked bar of what device 0 keeps (parameters,
// gradients, optimizer state, activations and, under the practice model, the
// working buffers; core/docs/cluster.md, "Memory per device"), drawn against
// the capacity line when the cluster caps the memory, with a legend in
// readable bytes. The capacity is the GPU's (memory.device_bytes); under the
// practice model the framework's reserve and the headroom are parts of it,
// drawn at the track's end, and the line stands where they begin (what the
// plan may use: memory.capacity_bytes). Every number is the result's. Plain HTML boxes, like the breakdown
// chart. Whether a plan under a cap is proven the cheapest that fits is said
// under the headline, in the words of a bounded search's plan (bound.js).
//
// A plan with a pipeline keeps its stages' memory apart: the bar is the
// largest stage's (the result's memory), and under it each stage has a bar of
// its own on one scale, with whether it fits the capacity.
//
// Test hooks (in #memory-chart): `.memory-bar[data-total]` with one
// `.memory-seg[data-part][data-bytes]` per kind (they add up to the total),
// `.memory-cap[data-capacity]` (the plan's limit) and
// `.memory-kept-seg[data-part][data-bytes]` (reserve, headroom) when capped,
// `.memory-legend li[data-part]`, `.memory-headline`; with a pipeline one
// `.stage-memory-row[data-stage][data-bytes][data-fits]` per stage.

import { capacityOf, capacityText, deviceCapacity, formatBytes, formatDeviceRange, formatShare } from '../format.js';
import { el } from './dom.js';
import { stageClass } from './pipeline.js';

export { capacityOf, capacityText };

const parts = [
  { id: 'params', label: 'Parameters' },
  { id: 'grads', label: 'Gradients' },
  { id: 'optimizer', label: 'Optimizer state' },
  { id: 'activations', label: 'Activations' },
  // The practice model's gradient buffers of the largest layer (and ZeRO-3's gathered weights).
  { id: 'working', label: 'Working buffers', practice: true },
];

// What the GPU keeps out of a plan's reach under the practice model, as the result gives it.
const kept = [
  { id: 'headroom', label: 'Headroom', bytes: 'headroom_bytes' },
  { id: 'reserved', label: 'Reserved (framework)', bytes: 'reserved_bytes' },
];

/** The parts `memory` has: the working buffers only where the result counts them. */
function partsOf(memory) {
  return parts.filter((p) => !p.practice || Number.isFinite(memory[p.id]));
}

/** The reserve and the headroom of a capped practice plan, with their bytes. */
function keptOf(memory) {
  if (!(memory.capacity_bytes > 0)) return [];
  return kept.filter((k) => memory[k.bytes] > 0).map((k) => ({ ...k, value: memory[k.bytes] }));
}

/** "2+2+12 bytes per parameter, 2 per activation, ZeRO 0", as the CLI says it. */
export function trainingText(training) {
  if (!training) return '';
  const t = training;
  return `${t.param_bytes}+${t.grad_bytes}+${t.optimizer_bytes} bytes per parameter, ${t.activation_bytes} per activation, ZeRO ${t.zero}`;
}

function headline(memory, pipeline) {
  const total = formatBytes(memory.per_device_bytes);
  // With a pipeline, the result's memory is its largest stage's.
  const largest = pipeline?.stage?.length > 1 ? largestStage(pipeline) : -1;
  const per = largest >= 0 ? `per GPU in the largest stage (stage ${largest})` : 'per GPU';
  if (!(memory.capacity_bytes > 0)) return `${total} ${per}, no memory cap`;
  const capacity = capacityText(deviceCapacity(memory));
  return memory.fits ? `${total} of ${capacity} ${per}: fits` : `${total} ${per}: does not fit in ${capacityOf(memory)}`;
}

function largestStage(pipeline) {
  let best = -1;
  pipeline.stage?.forEach((s, i) => {
    if (best < 0 || s.memory_bytes > pipeline.stage[best].memory_bytes) best = i;
  });
  return best;
}

/** The bar of `memory`; `scale` (bytes: the track's width) holds it and the GPU's memory. */
function bar(memory, scale = Math.max(memory.per_device_bytes, deviceCapacity(memory)) || 1) {
  const total = memory.per_device_bytes;
  const capacity = memory.capacity_bytes > 0 ? memory.capacity_bytes : 0;
  const device = deviceCapacity(memory);
  const reserve = keptOf(memory);
  const label = partsOf(memory).map((p) => `${p.label} ${formatBytes(memory[p.id])}`).join(', ')
    + (device ? `; capacity ${capacityText(device)}${reserve.map((k) => `, ${k.label.toLowerCase()} ${formatBytes(k.value)}`).join('')}` : '');
  return el('div', { class: 'memory-track', role: 'img', 'aria-label': label }, [
    // The reserve and the headroom: the end of the GPU's memory, from the plan's limit on.
    reserve.length ? el('div', {
      class: 'memory-kept',
      style: { left: `${(100 * capacity) / scale}%`, width: `${(100 * Math.max(0, device - capacity)) / scale}%` },
    }, reserve.map((k) => el('span', {
      class: `memory-kept-seg mem-${k.id}`,
      dataset: { part: k.id, bytes: k.value },
      style: { flex: `${k.value} 1 0` },
      title: `${k.label}: ${formatBytes(k.value)} of the ${capacityText(device)}, out of the plan's reach`,
    }))) : null,
    el('div', { class: memory.fits === false ? 'memory-bar over' : 'memory-bar', dataset: { total }, style: { width: `${(100 * total) / scale}%` } },
      partsOf(memory).map((p) => el('span', {
        class: `memory-seg mem-${p.id}`,
        dataset: { part: p.id, bytes: memory[p.id] },
        style: { flex: `${Math.max(0, memory[p.id]) / (total || 1)} 1 0` },
        title: `${p.label}: ${formatBytes(memory[p.id])} (${formatShare(memory[p.id] / (total || 1))})`,
      }))),
    capacity ? el('span', {
      class: 'memory-cap',
      dataset: { capacity },
      style: { left: `${(100 * capacity) / scale}%` },
      title: device > capacity
        ? `The plan may use ${capacityText(capacity)} of the ${capacityText(device)} per GPU`
        : `Capacity: ${capacityText(capacity)} per GPU`,
    }) : null,
  ]);
}

function legend(memory) {
  const total = memory.per_device_bytes || 1;
  const rows = partsOf(memory).map((p) => el('li', { dataset: { part: p.id } }, [
    el('span', { class: `swatch mem-${p.id}` }),
    el('span', { class: 'legend-label', text: p.label }),
    el('span', { class: 'legend-value mono', text: formatBytes(memory[p.id]) }),
    el('span', { class: 'legend-share', text: formatShare(memory[p.id] / total) }),
  ]));
  if (memory.capacity_bytes > 0) {
    // The GPU's memory and its parts out of the plan's reach, their shares of it.
    const device = deviceCapacity(memory);
    for (const k of keptOf(memory)) {
      rows.push(el('li', { dataset: { part: k.id } }, [
        el('span', { class: `swatch mem-${k.id}` }),
        el('span', { class: 'legend-label', text: k.label }),
        el('span', { class: 'legend-value mono', text: formatBytes(k.value) }),
        el('span', { class: 'legend-share', text: formatShare(k.value / device), title: `of the GPU's ${capacityText(device)}` }),
      ]));
    }
    rows.push(el('li', { dataset: { part: 'capacity' } }, [
      el('span', { class: 'swatch cap-swatch' }),
      el('span', { class: 'legend-label', text: 'Capacity' }),
      el('span', { class: 'legend-value mono', text: capacityText(device) }),
      el('span', { class: 'legend-share', text: memory.fits ? 'fits' : 'over' }),
    ]));
  }
  return el('ul', { class: 'breakdown-legend memory-legend' }, rows);
}

/** Each stage's memory per GPU, on one scale, against the capacity. */
function stageRows(plan) {
  const stages = plan.pipeline?.stage;
  // One stage (micro-batches without a pipeline): the bar above is its own.
  if (!Array.isArray(stages) || stages.length < 2) return null;
  const capacity = plan.memory.capacity_bytes > 0 ? plan.memory.capacity_bytes : 0;
  const scale = Math.max(deviceCapacity(plan.memory), ...stages.map((s) => s.memory_bytes)) || 1;
  return el('div', { class: 'stage-memory-list' }, [
    el('h3', { text: 'Per stage' }),
    el('ol', {}, stages.map((stage, index) => {
      const fits = stage.fits !== false;
      const memory = {
        working: plan.memory.working != null ? 0 : undefined,
        ...stage.memory,
        per_device_bytes: stage.memory_bytes,
        capacity_bytes: capacity,
        device_bytes: plan.memory.device_bytes,
        reserved_bytes: plan.memory.reserved_bytes,
        headroom_bytes: plan.memory.headroom_bytes,
        fits,
      };
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
