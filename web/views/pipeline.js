// A plan with a pipeline (the result's "pipeline", core/docs/pipeline.md):
// the stage strip above the graph, one segment per stage in the vertex
// order, each as wide as its share of the layers (so the strip lines up with
// the graph and the table, which run in the same order), coloured by stage,
// with its devices, its time per micro-batch, its memory per GPU and a bar
// of how busy it is: the hatched rest of the bar is its idle share of the
// pipeline's latency, 1 - busy_share; the pipeline's bubble (the mean idle
// share) is in the strip's head. A segment (a button) shows its stage's
// layers in the table. The graph rings each node and the table badges each
// layer with the colour of its stage (stageClass()).
//
// Test hooks (in #stage-strip): `.stage-bubble[data-bubble]`, one
// `.stage-seg[data-stage][data-first-device][data-devices][data-layers][data-busy]`
// per stage with `.stage-devices`, `.stage-time` and
// `.stage-memory[data-bytes][data-fits]`.

import { capacityOf, formatBytes, formatDeviceRange, formatSeconds, formatShare } from '../format.js';
import { el } from './dom.js';

// Stage colours cycle through this many (pipeline.css, --stage-0 ...).
const stageColours = 8;

/** The colour class of stage `s`: "stage-c0" ... */
export function stageClass(s) {
  return `stage-c${((s % stageColours) + stageColours) % stageColours}`;
}

/** The stage of each vertex id, or null for a plan without a pipeline. */
export function stageOf(plan) {
  const list = plan?.pipeline?.stage_of;
  return Array.isArray(list) ? list : null;
}

/** "layers 3–8" (vertex ids, the end exclusive in the result). */
function layerRange(stage) {
  const last = stage.end_vertex - 1;
  return last === stage.first_vertex ? `layer ${last}` : `layers ${stage.first_vertex}–${last}`;
}

/** `memory`: the plan's memory report (its capacity, the GPU's). */
function memoryText(stage, memory) {
  const bytes = formatBytes(stage.memory_bytes);
  if (!(memory?.capacity_bytes > 0)) return `${bytes} per GPU`;
  return stage.fits === false ? `${bytes} per GPU: over ${capacityOf(memory)}` : `${bytes} per GPU: fits`;
}

function segment(stage, index, memoryReport, onStage) {
  const busy = Number.isFinite(stage.busy_share) ? Math.min(1, Math.max(0, stage.busy_share)) : 1;
  const idle = 1 - busy;
  const devices = formatDeviceRange(stage.first_device, stage.devices);
  const time = `${formatSeconds(stage.time_s)} per micro-batch`;
  const memory = memoryText(stage, memoryReport);
  const layers = `${stage.layers} layer${stage.layers === 1 ? '' : 's'}`;
  const over = stage.fits === false;
  return el('li', { class: 'stage-item', style: { flex: `${Math.max(1, stage.layers)} 1 0` } }, el('button', {
    type: 'button',
    class: `stage-seg ${stageClass(index)}${over ? ' over' : ''}`,
    dataset: {
      stage: index,
      firstDevice: stage.first_device,
      devices: stage.devices,
      layers: stage.layers,
      busy: stage.busy_share,
    },
    'aria-label': `Stage ${index}: ${layers} (${layerRange(stage)}) on ${devices}, ${time}, `
      + `busy ${formatShare(busy)} and idle ${formatShare(idle)} of the pipeline's latency, ${memory}. Show its layers in the table.`,
    title: `Stage ${index}: ${layerRange(stage)}, ${stage.activation_copies} micro-batch${stage.activation_copies === 1 ? '' : 'es'} of activations held\n`
      + `F ${stage.F.toPrecision(4)}, W ${stage.W.toPrecision(4)}, X ${stage.X.toPrecision(4)} FLOP-eq\nClick to show its layers in the table`,
    onclick: onStage ? () => onStage(index) : null,
  }, [
    el('span', { class: 'stage-name' }, [el('strong', { text: `Stage ${index}` }), ` · ${layers}`]),
    el('span', { class: 'stage-devices', text: devices }),
    el('span', { class: 'stage-time', text: time }),
    el('span', { class: 'stage-busy', 'aria-hidden': 'true' }, el('span', { class: 'stage-busy-fill', style: { width: `${100 * busy}%` } })),
    el('span', { class: 'stage-idle', text: `idle ${formatShare(idle)}` }),
    el('span', {
      class: over ? 'stage-memory over' : 'stage-memory',
      dataset: { bytes: stage.memory_bytes, fits: String(stage.fits !== false) },
      text: memory,
    }),
  ]));
}

/**
 * Fills `container` (#stage-strip) with the stages of `plan`, or hides it
 * for a plan without a pipeline. `onStage(s)` is called when a stage's
 * segment is pressed.
 */
export function renderStageStrip(container, plan, { onStage } = {}) {
  const pipeline = plan?.pipeline;
  if (!pipeline || !Array.isArray(pipeline.stage)) {
    container.hidden = true;
    container.replaceChildren();
    return;
  }
  const bubble = Number.isFinite(pipeline.bubble) ? pipeline.bubble : 0;
  container.hidden = false;
  container.replaceChildren(
    el('div', { class: 'stage-strip-head' }, [
      el('h3', { id: 'stage-strip-title', text: `Pipeline: ${pipeline.stages} stage${pipeline.stages === 1 ? '' : 's'}` }),
      el('span', { class: 'stage-bubble', dataset: { bubble }, title: 'The mean idle share of the stages over the pipeline\'s latency' },
        ['bubble ', el('strong', { text: formatShare(bubble) })]),
      el('span', { class: 'stage-strip-note', text: `${pipeline.label}, micro-batch of ${pipeline.micro_batch}` }),
    ]),
    el('ol', { class: 'stage-segs', 'aria-label': 'Pipeline stages, in layer order' },
      pipeline.stage.map((stage, index) => segment(stage, index, plan.memory, onStage))),
    el('p', { class: 'stage-strip-key' }, [
      'Width: the stage\'s share of the layers. Bar: how busy the stage is over the pipeline\'s latency; ',
      el('span', { class: 'stage-idle-swatch', 'aria-hidden': 'true' }), ' hatched: idle (the bubble). ',
      'The graph rings each layer in its stage\'s colour.',
    ]),
  );
}

/** The layer table's Stage header, there for a plan with a pipeline (`on`) only. */
export function stageHeader(table, on) {
  const row = table.tHead?.rows[0];
  const header = row?.querySelector('th.stage-col');
  if (on && row && !header) {
    row.append(el('th', { scope: 'col', class: 'stage-col', title: 'The pipeline stage the layer runs in', text: 'Stage' }));
  } else if (!on) {
    header?.remove();
  }
}

/** The layer table's stage cell: a badge in the stage's colour; none without a pipeline. */
export function stageCell(stages, vertexId) {
  if (!stages) return null;
  const s = stages[vertexId];
  if (!Number.isInteger(s)) return el('td', { class: 'stage-col' });
  return el('td', { class: 'stage-col', dataset: { stage: s } },
    el('span', { class: `stage-badge ${stageClass(s)}`, text: `stage ${s}` }));
}
