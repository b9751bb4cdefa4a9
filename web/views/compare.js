// The plan next to what users would do otherwise: one horizontal bar per
// strategy of the comparison document (compare_json(), core/docs/baselines.md),
// its length the predicted step time, with the speedup over data parallelism
// as text. Every strategy is priced by the same cost model, so the bars are
// directly comparable. Plain HTML boxes, like the breakdown chart.
//
// Each row also gives the strategy's memory per GPU; under a memory cap the
// baselines are priced without it (core/docs/cluster.md), and a strategy
// that does not fit is marked.
//
// The baselines have no pipeline, and neither has the comparison's PaSE plan;
// a plan with a pipeline is set above them as a row of its own ("pipeline",
// named by its label), its speedup over the same data parallelism, and the
// headline is about it.
//
// Test hook: one `.compare-row[data-strategy]` per strategy ("pipeline", "pase",
// "data_parallel", "expert", "mcmc") holding a `.compare-time` text and a
// `.compare-memory[data-bytes]`; a strategy over the cap has `data-fits="false"`
// and a `.compare-nofit` mark.

import { formatBytes, formatSeconds } from '../format.js';
import { el } from './dom.js';
import { capacityText } from './memory.js';

const order = ['pase', 'data_parallel', 'expert', 'mcmc'];

const expertLabels = {
  owt: 'Expert (OWT)',
  gnmt: 'Expert (GNMT)',
  mesh_tensorflow: 'Expert (Mesh-TF)',
};

function strategyLabel(name, doc) {
  // "pipeline x2 (4 micro-batches, 1F1B)" is in the headline and the tooltip.
  if (name === 'pipeline') return `PaSE, ${doc.pipelineLabel.replace(/ \(.*\)$/, '')}`;
  if (name === 'pase') return doc.pipelineLabel ? 'PaSE, no pipeline' : 'PaSE';
  if (name === 'data_parallel') return 'Data parallel';
  if (name === 'expert') return expertLabels[doc.expert_kind] ?? 'Expert';
  return 'MCMC (FlexFlow)';
}

/** 6.19 -> "6.19×"; data parallelism itself is the baseline. */
function speedupText(name, speedup) {
  if (name === 'data_parallel') return 'baseline';
  return Number.isFinite(speedup) ? `${speedup.toFixed(2)}×` : '—';
}

function tooltip(report) {
  const lines = [report.description];
  const m = report.mcmc;
  if (m) lines.push(`${m.iterations.toLocaleString('en-US')} proposals, seed ${m.seed}, stopped: ${m.stop}`);
  return lines.filter(Boolean).join('\n');
}

/** The memory line under the bar: bytes per GPU and, over the cap, the mark. */
function memoryCell(report) {
  const memory = report.memory;
  if (!memory) return el('span', { class: 'compare-memory', text: '—' });
  const over = memory.fits === false;
  return el('span', {
    class: over ? 'compare-memory over' : 'compare-memory',
    dataset: { bytes: memory.per_device_bytes },
    title: over ? `Needs ${formatBytes(memory.per_device_bytes)} per GPU, more than the ${capacityText(memory.capacity_bytes)} there are` : null,
  }, [
    el('span', { class: 'mono', text: `${formatBytes(memory.per_device_bytes)} per GPU` }),
    over ? el('span', { class: 'compare-nofit', text: `does not fit in ${capacityText(memory.capacity_bytes)}` }) : null,
  ]);
}

function row(name, report, doc, longest) {
  const label = strategyLabel(name, doc);
  const outside = report.in_enumeration === false;
  const time = formatSeconds(report.step_time_s);
  const speedup = speedupText(name, report.speedup);
  const fits = report.memory?.fits !== false;
  const memory = report.memory ? `, ${formatBytes(report.memory.per_device_bytes)} per GPU${fits ? '' : ', does not fit'}` : '';
  // At least a sliver, so a tiny bar still reads as a bar.
  const width = longest > 0 ? Math.max(0.5, (100 * report.step_time_s) / longest) : 0;
  return el('li', {
    class: `compare-row${name === doc.lead ? ' is-pase' : ''}${fits ? '' : ' over'}`,
    dataset: { strategy: name, fits: String(fits) },
    title: tooltip(report),
    'aria-label': `${label}${outside ? ' (outside the enumeration)' : ''}: ${time} per step, ${name === 'data_parallel' ? 'the baseline' : `speedup ${speedup} over data parallelism`}${memory}`,
  }, [
    el('span', { class: 'compare-name' }, [label, outside ? el('sup', { class: 'compare-star', text: '*' }) : null]),
    el('span', { class: 'compare-track' }, el('span', { class: 'compare-bar', style: { width: `${width}%` } })),
    el('span', { class: 'compare-time mono', text: time }),
    el('span', { class: 'compare-speedup', text: speedup }),
    memoryCell(report),
  ]);
}

function headline(doc) {
  const { data_parallel: dp } = doc.strategies;
  const speedup = doc.strategies[doc.lead].speedup;
  if (!Number.isFinite(speedup)) return null;
  // Under a memory cap data parallelism, priced without it, may not fit.
  const dpOver = dp?.memory?.fits === false;
  const cap = dpOver ? `${capacityText(dp.memory.capacity_bytes)} per GPU` : '';
  let text;
  const who = doc.lead === 'pipeline' ? `PaSE with ${doc.pipelineLabel}` : 'PaSE';
  if (speedup > 1.0005) {
    text = `${who} is ${speedup.toFixed(2)}× faster than data parallelism${dpOver ? `, which does not even fit in ${cap}` : ''}`;
  } else if (dpOver) {
    text = `Data parallelism does not fit in ${cap}; ${doc.lead === 'pipeline' ? 'the pipeline plan' : 'PaSE\'s plan'} does`;
  } else if (speedup < 0.9995) {
    text = `Data parallelism is ${(1 / speedup).toFixed(2)}× faster here (see the notes)`;
  } else {
    text = 'PaSE matches data parallelism here: splitting only the batch is already best';
  }
  return el('p', { class: 'compare-headline', text });
}

function notes(doc, reports) {
  const items = [];
  if (reports.some(([, r]) => r.in_enumeration === false)) {
    items.push('* uses configurations outside the enumeration PaSE searches (priced by the same cost model).');
  }
  const { pipeline, pase } = doc.strategies;
  if (pipeline && pase && pase.step_time_s < pipeline.step_time_s && pase.memory?.fits !== false) {
    items.push(`PaSE without a pipeline is faster here (${formatSeconds(pase.step_time_s)} per step): `
      + 'try 1 stage, or auto stages and micro-batches.');
  }
  if (!doc.strategies.expert) {
    items.push('No expert strategy here: only the paper\'s five networks have one.');
  }
  // The core's own findings, except the one the line above already says.
  for (const note of doc.notes ?? []) if (!/^no expert strategy/i.test(note)) items.push(note);
  return items.length ? el('ul', { class: 'compare-notes' }, items.map((text) => el('li', { text }))) : null;
}

/**
 * The row of a plan with a pipeline, as the comparison's rows are: its step
 * time, its speedup over `dp` and its memory (the largest stage's).
 */
function pipelineReport(plan, dp) {
  const m = plan.memory;
  return {
    description: `The plan shown: ${plan.pipeline.label}, bubble ${(100 * plan.pipeline.bubble).toFixed(1)}%`,
    step_time_s: plan.step_time_s,
    speedup: dp && plan.step_time_s > 0 ? dp.step_time_s / plan.step_time_s : NaN,
    memory: m ? { per_device_bytes: m.per_device_bytes, capacity_bytes: m.capacity_bytes, fits: m.fits } : undefined,
  };
}

/**
 * Fills `container` with the comparison document `doc`; `pipelinePlan`, the
 * plan shown when it has a pipeline, is set above the baselines.
 */
export function renderComparison(container, comparison, { pipelinePlan = null } = {}) {
  const doc = { ...comparison, strategies: { ...comparison.strategies }, lead: 'pase' };
  if (pipelinePlan?.pipeline && doc.strategies?.pase) {
    doc.strategies.pipeline = pipelineReport(pipelinePlan, doc.strategies.data_parallel);
    doc.pipelineLabel = pipelinePlan.pipeline.label;
    doc.lead = 'pipeline';
  }
  const reports = ['pipeline', ...order].filter((name) => doc.strategies?.[name]).map((name) => [name, doc.strategies[name]]);
  const longest = Math.max(0, ...reports.map(([, r]) => r.step_time_s).filter(Number.isFinite));
  container.replaceChildren(
    headline(doc) ?? '',
    // One grid for the header and all rows (rows are subgrids), so the name
    // column is as wide as the longest name and the bars line up.
    el('div', { class: 'compare-chart' }, [
      el('div', { class: 'compare-head', 'aria-hidden': 'true' }, [
        el('span', { text: 'Strategy' }),
        el('span', { text: 'Predicted step time' }),
        el('span', { text: 'Speedup' }),
      ]),
      el('ol', { class: 'compare-rows', 'aria-label': 'Predicted step time per strategy' },
        reports.map(([name, report]) => row(name, report, doc, longest))),
    ]),
    notes(doc, reports) ?? '',
  );
}

/**
 * A one-line state instead of the chart: comparing, cancelled, failed, or
 * not started (after a long search), with `action` {label, onClick} as a
 * button under it.
 */
export function renderComparisonMessage(container, text, { error = false, action = null } = {}) {
  container.replaceChildren(
    el('p', { class: error ? 'placeholder compare-error' : 'placeholder', text }),
    action ? el('button', { type: 'button', class: 'compare-action', text: action.label, onclick: action.onClick }) : '',
  );
}
