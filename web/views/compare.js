// The plan next to what users would do otherwise: one horizontal bar per
// strategy of the comparison document (compare_json(), core/docs/baselines.md),
// its length the predicted step time, with the speedup over a reference
// strategy as text. Every strategy is priced by the same cost model, so the
// bars are directly comparable. Plain HTML boxes, like the breakdown chart.
//
// Each row also gives the strategy's memory per GPU; under a memory cap the
// baselines are priced without it (core/docs/cluster.md), and a strategy
// that does not fit is marked, in its memory and in its speedup, which it
// has none of: it is not a plan one can run. The reference (1x) is data
// parallelism when it fits, else the first of the expert strategy and MCMC
// that fits, else PaSE's own plan: never a strategy that does not fit.
//
// The baselines have no pipeline, and neither has the comparison's PaSE plan;
// a plan with a pipeline (or with micro-batches) is set above them as a row
// of its own ("pipeline"), and the headline is about it. The two PaSE rows'
// labels say how they differ: their stages and micro-batches.
//
// The text is the page's own, from the document's fields (step times,
// memory, fits, in_enumeration, optimal); the core's "notes", written for a
// terminal, are not shown.
//
// Test hook: one `.compare-row[data-strategy]` per strategy ("pipeline", "pase",
// "data_parallel", "expert", "mcmc") holding a `.compare-time` text, a
// `.compare-speedup` and a `.compare-memory[data-bytes]`; a strategy over the
// cap has `data-fits="false"` and a `.compare-nofit` mark; the reference row
// has `data-reference="true"`.

import { formatBytes, formatSeconds } from '../format.js';
import { el } from './dom.js';
import { capacityOf } from './memory.js';

const order = ['pase', 'data_parallel', 'expert', 'mcmc'];

const expertLabels = {
  owt: 'Expert (OWT)',
  gnmt: 'Expert (GNMT)',
  mesh_tensorflow: 'Expert (Mesh-TF)',
};

/** "pipeline x2, 4 micro-batches", or "8 micro-batches" without a pipeline: what a PaSE row plans with. */
function shapeText(stages, microbatches) {
  const mb = `${microbatches} micro-batch${microbatches === 1 ? '' : 'es'}`;
  return stages > 1 ? `pipeline x${stages}, ${mb}` : mb;
}

function strategyLabel(name, doc) {
  // The plan shown, with its stages and micro-batches; the comparison's own
  // PaSE plan has one of each.
  if (name === 'pipeline') return `PaSE, ${shapeText(doc.pipeline.stages, doc.pipeline.microbatches)}`;
  if (name === 'pase') {
    if (!doc.pipeline) return 'PaSE';
    // Against a pipeline the stages differ; against one stage, the micro-batches.
    return doc.pipeline.stages > 1 ? 'PaSE, no pipeline' : 'PaSE, 1 micro-batch';
  }
  if (name === 'data_parallel') return 'Data parallel';
  if (name === 'expert') return expertLabels[doc.expert_kind] ?? 'Expert';
  return 'MCMC (FlexFlow)';
}

const fits = (report) => report?.memory?.fits !== false;

/**
 * The 1x row: data parallelism when it fits, else the first baseline that
 * fits, else PaSE's plan without a pipeline (which always fits: a plan that
 * does not is refused before it is compared).
 */
function referenceOf(doc) {
  return ['data_parallel', 'expert', 'mcmc'].find((name) => doc.strategies[name] && fits(doc.strategies[name])) ?? 'pase';
}

/** The step-time ratio of the reference over `report`; NaN when it has none. */
function speedupOver(doc, report) {
  const ref = doc.strategies[doc.reference];
  return report.step_time_s > 0 && Number.isFinite(ref?.step_time_s) ? ref.step_time_s / report.step_time_s : NaN;
}

/** 6.19 -> "6.19×"; the reference is "1× (reference)"; a strategy over the cap has none. */
function speedupText(name, report, doc) {
  if (!fits(report)) return 'does not fit';
  if (name === doc.reference) return '1× (reference)';
  const speedup = speedupOver(doc, report);
  return Number.isFinite(speedup) ? `${speedup.toFixed(2)}×` : '—';
}

const strategyNames = {
  pase: 'PaSE\'s plan', data_parallel: 'data parallelism', expert: 'the expert strategy', mcmc: 'the MCMC search',
};

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
    title: over ? `Needs ${formatBytes(memory.per_device_bytes)} per GPU, more than the ${capacityOf(memory)} there are` : null,
  }, [
    el('span', { class: 'mono', text: `${formatBytes(memory.per_device_bytes)} per GPU` }),
    over ? el('span', { class: 'compare-nofit', text: `does not fit in ${capacityOf(memory)}` }) : null,
  ]);
}

function row(name, report, doc, longest) {
  const label = strategyLabel(name, doc);
  const outside = report.in_enumeration === false;
  const time = formatSeconds(report.step_time_s);
  const speedup = speedupText(name, report, doc);
  const fit = fits(report);
  const reference = name === doc.reference;
  const memory = report.memory ? `, ${formatBytes(report.memory.per_device_bytes)} per GPU${fit ? '' : ', does not fit'}` : '';
  const versus = !fit ? '' : reference ? ', the reference' : `, speedup ${speedup} over ${referenceName(doc)}`;
  // At least a sliver, so a tiny bar still reads as a bar.
  const width = longest > 0 ? Math.max(0.5, (100 * report.step_time_s) / longest) : 0;
  return el('li', {
    class: `compare-row${name === doc.lead ? ' is-pase' : ''}${fit ? '' : ' over'}`,
    dataset: { strategy: name, fits: String(fit), reference: String(reference) },
    title: tooltip(report),
    'aria-label': `${label}${outside ? ' (outside the enumeration)' : ''}: ${time} per step${versus}${memory}`,
  }, [
    el('span', { class: 'compare-name' }, [label, outside ? el('sup', { class: 'compare-star', text: '*' }) : null]),
    el('span', { class: 'compare-track' }, el('span', { class: 'compare-bar', style: { width: `${width}%` } })),
    el('span', { class: 'compare-time mono', text: time }),
    el('span', { class: fit ? 'compare-speedup' : 'compare-speedup over', text: speedup }),
    memoryCell(report),
  ]);
}

/** How the text names the reference: "data parallelism", "PaSE without a pipeline". */
function referenceName(doc) {
  if (doc.reference !== 'pase' || !doc.pipeline) return strategyNames[doc.reference];
  return doc.pipeline.stages > 1 ? 'PaSE without a pipeline' : 'PaSE with 1 micro-batch';
}

/** How the headline names the plan shown: "PaSE", "PaSE with pipeline x2, 4 micro-batches". */
function leadName(doc) {
  if (doc.lead !== 'pipeline') return 'PaSE';
  const { stages, microbatches } = doc.pipeline;
  return `PaSE with ${shapeText(stages, microbatches)}`;
}

const capitalized = (text) => text.charAt(0).toUpperCase() + text.slice(1);

/** "data parallelism and the MCMC search" */
function listText(items) {
  return items.length <= 2 ? items.join(' and ') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** The baselines that do not fit, and the capacity they miss ("80 GiB per GPU"). */
function overCap(doc) {
  const over = ['data_parallel', 'expert', 'mcmc'].filter((name) => doc.strategies[name] && !fits(doc.strategies[name]));
  const memory = over.length ? doc.strategies[over[0]].memory : null;
  return { names: over.map((name) => strategyNames[name]), cap: memory?.capacity_bytes > 0 ? capacityOf(memory, ' per GPU') : '' };
}

function headline(doc) {
  const lead = doc.strategies[doc.lead];
  const speedup = speedupOver(doc, lead);
  if (!Number.isFinite(speedup)) return null;
  // Under a memory cap the baselines, priced without it, may not fit.
  const over = overCap(doc);
  const overText = over.names.length ? `${listText(over.names)} ${over.names.length === 1 ? 'does' : 'do'} not fit in ${over.cap}` : '';
  const who = leadName(doc);
  const reference = referenceName(doc);
  let text;
  if (doc.reference === 'pase' && doc.lead === 'pase') {
    text = `${capitalized(overText)}; PaSE's plan does`;
  } else if (speedup > 1.0005) {
    text = `${who} is ${speedup.toFixed(2)}× faster than ${reference}${overText ? `; ${overText}` : ''}`;
  } else if (speedup < 0.9995) {
    text = `${capitalized(reference)} is ${(1 / speedup).toFixed(2)}× faster here (see the notes)${overText ? `; ${overText}` : ''}`;
  } else if (doc.reference === 'data_parallel') {
    text = 'PaSE matches data parallelism here: splitting only the batch is already best';
  } else {
    text = `${who} matches ${reference} here${overText ? `; ${overText}` : ''}`;
  }
  return el('p', { class: 'compare-headline', text });
}

/**
 * What a baseline faster than PaSE's plan means, from the document's fields
 * (the core's notes say the same for a terminal): it does not fit, it uses
 * configurations the search leaves out, or the search was not exact.
 */
function fasterNote(name, report, pase) {
  const who = capitalized(strategyNames[name]);
  const time = formatSeconds(report.step_time_s);
  if (!fits(report)) {
    return `${who} would take ${time} per step, less than PaSE's plan, but needs ${formatBytes(report.memory.per_device_bytes)} `
      + `per GPU, more than the ${capacityOf(report.memory)} there are.`;
  }
  if (report.in_enumeration === false) {
    return `${who} takes ${time} per step, less than PaSE's plan, with configurations outside the enumeration PaSE searches (*).`;
  }
  if (pase.optimal === false) {
    const search = pase.search?.method === 'bounded' ? 'the bounded search' : 'the search under the memory cap';
    return `${who} takes ${time} per step, less than PaSE's plan, and fits: ${search} did not find it (the plan is not proven optimal).`;
  }
  return `${who} takes ${time} per step, less than PaSE's plan, which is proven optimal: the two disagree, please report it.`;
}

function notes(doc, reports) {
  const items = [];
  if (reports.some(([, r]) => r.in_enumeration === false)) {
    items.push('* uses configurations outside the enumeration PaSE searches (priced by the same cost model).');
  }
  const { pipeline, pase } = doc.strategies;
  if (pipeline && pase && pase.step_time_s < pipeline.step_time_s && fits(pase)) {
    items.push(`PaSE without a pipeline is faster here (${formatSeconds(pase.step_time_s)} per step): `
      + 'try 1 stage, or auto stages and micro-batches.');
  }
  if (!doc.strategies.expert) {
    items.push('No expert strategy here: only the paper\'s five networks have one.');
  }
  if (pase) {
    for (const name of ['data_parallel', 'expert', 'mcmc']) {
      const report = doc.strategies[name];
      if (report && report.step_time_s < pase.step_time_s * (1 - 1e-12)) items.push(fasterNote(name, report, pase));
    }
  }
  return items.length ? el('ul', { class: 'compare-notes' }, items.map((text) => el('li', { text }))) : null;
}

/**
 * The row of a plan with a pipeline, as the comparison's rows are: its step
 * time and its memory (the largest stage's).
 */
function pipelineReport(plan) {
  const m = plan.memory;
  return {
    description: `The plan shown: ${plan.pipeline.label}, bubble ${(100 * plan.pipeline.bubble).toFixed(1)}%`,
    step_time_s: plan.step_time_s,
    memory: m ? { per_device_bytes: m.per_device_bytes, capacity_bytes: m.capacity_bytes, device_bytes: m.device_bytes, fits: m.fits } : undefined,
  };
}

/**
 * Fills `container` with the comparison document `doc`; `pipelinePlan`, the
 * plan shown when it has a pipeline, is set above the baselines.
 */
export function renderComparison(container, comparison, { pipelinePlan = null } = {}) {
  const doc = { ...comparison, strategies: { ...comparison.strategies }, lead: 'pase' };
  if (pipelinePlan?.pipeline && doc.strategies?.pase) {
    doc.strategies.pipeline = pipelineReport(pipelinePlan);
    doc.pipeline = { stages: pipelinePlan.pipeline.stages, microbatches: pipelinePlan.pipeline.microbatches };
    doc.lead = 'pipeline';
  }
  doc.reference = referenceOf(doc);
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
        el('span', { text: 'Speedup', title: `Over ${referenceName(doc)}, the reference (1×)` }),
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
