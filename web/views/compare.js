// The plan next to what users would do otherwise: one horizontal bar per
// strategy of the comparison document (compare_json(), core/docs/baselines.md),
// its length the predicted step time, with the speedup over data parallelism
// as text. Every strategy is priced by the same cost model, so the bars are
// directly comparable. Plain HTML boxes, like the breakdown chart.
//
// Test hook: one `.compare-row[data-strategy]` per strategy ("pase",
// "data_parallel", "expert", "mcmc") holding a `.compare-time` text.

import { formatSeconds } from '../format.js';
import { el } from './dom.js';

const order = ['pase', 'data_parallel', 'expert', 'mcmc'];

const expertLabels = {
  owt: 'Expert (OWT)',
  gnmt: 'Expert (GNMT)',
  mesh_tensorflow: 'Expert (Mesh-TF)',
};

function strategyLabel(name, doc) {
  if (name === 'pase') return 'PaSE';
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

function row(name, report, doc, longest) {
  const label = strategyLabel(name, doc);
  const outside = report.in_enumeration === false;
  const time = formatSeconds(report.step_time_s);
  const speedup = speedupText(name, report.speedup);
  // At least a sliver, so a tiny bar still reads as a bar.
  const width = longest > 0 ? Math.max(0.5, (100 * report.step_time_s) / longest) : 0;
  return el('li', {
    class: name === 'pase' ? 'compare-row is-pase' : 'compare-row',
    dataset: { strategy: name },
    title: tooltip(report),
    'aria-label': `${label}${outside ? ' (outside the enumeration)' : ''}: ${time} per step, ${name === 'data_parallel' ? 'the baseline' : `speedup ${speedup} over data parallelism`}`,
  }, [
    el('span', { class: 'compare-name' }, [label, outside ? el('sup', { class: 'compare-star', text: '*' }) : null]),
    el('span', { class: 'compare-track' }, el('span', { class: 'compare-bar', style: { width: `${width}%` } })),
    el('span', { class: 'compare-time mono', text: time }),
    el('span', { class: 'compare-speedup', text: speedup }),
  ]);
}

function headline(doc) {
  const pase = doc.strategies.pase;
  const speedup = pase.speedup;
  if (!Number.isFinite(speedup)) return null;
  const text = speedup > 1.0005 ? `PaSE is ${speedup.toFixed(2)}× faster than data parallelism`
    : 'PaSE matches data parallelism here: splitting only the batch is already best';
  return el('p', { class: 'compare-headline', text });
}

function notes(doc, reports) {
  const items = [];
  if (reports.some(([, r]) => r.in_enumeration === false)) {
    items.push('* uses configurations outside the enumeration PaSE searches (priced by the same cost model).');
  }
  if (!doc.strategies.expert) {
    items.push('No expert strategy here: only the paper\'s five networks have one.');
  }
  // The core's own findings, except the one the line above already says.
  for (const note of doc.notes ?? []) if (!/^no expert strategy/i.test(note)) items.push(note);
  return items.length ? el('ul', { class: 'compare-notes' }, items.map((text) => el('li', { text }))) : null;
}

/** Fills `container` with the comparison document `doc`. */
export function renderComparison(container, doc) {
  const reports = order.filter((name) => doc.strategies?.[name]).map((name) => [name, doc.strategies[name]]);
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

/** A one-line state instead of the chart: comparing, cancelled, failed. */
export function renderComparisonMessage(container, text, { error = false } = {}) {
  container.replaceChildren(el('p', { class: error ? 'placeholder compare-error' : 'placeholder', text }));
}
