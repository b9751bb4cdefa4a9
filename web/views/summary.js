// The plan in practitioner terms: one row per group of the plan result's
// `summary` (core/docs/formats.md, "Summary"): how many layers, their op, how
// they are split in words ("data parallel x32 (batch), tensor parallel x2
// (heads)") with the names of its first layers, the devices one of them
// works on, and their shares of the cost and of the memory per GPU. The groups come from the core, so the page says
// what the CLI says. Clicking a row (or Enter on it) calls onGroup with its
// index: the results filter the layer table to the group and select its
// first layer.

import { formatShare } from '../format.js';
import { el } from './dom.js';

function shareCell(fraction, what) {
  const width = Number.isFinite(fraction) ? Math.min(100, Math.max(0, 100 * fraction)) : 0;
  return el('td', { class: 'num share', dataset: { share: fraction } }, el('span', { class: 'share-cell', title: `${formatShare(fraction)} of the ${what}` }, [
    el('span', { class: 'share-track' }, el('span', { class: 'share-fill', style: { width: `${width}%` } })),
    el('span', { class: 'share-text', text: formatShare(fraction) }),
  ]));
}

/** The label, and under it "enc1_attn_qkv, enc1_attn_scores, +70 more" with every name in the title. */
function splitCell(group, names) {
  const all = group.vertices.map((id) => names.get(id) ?? `#${id}`);
  const shown = all.slice(0, 2).join(', ') + (all.length > 2 ? `, +${all.length - 2} more` : '');
  return el('td', { class: 'split-label' }, [
    el('span', { class: 'group-label', text: group.label }),
    el('span', { class: 'group-names', text: shown, title: all.join(', ') }),
  ]);
}

/**
 * Fills `table` (the #summary-table element) from `plan.summary`; a result
 * without one (a document saved by an older planner) leaves a one-row note.
 * @param {HTMLTableElement} table
 * @param {object} plan the plan-result document
 * @param {{onGroup?: (index: number) => void}} options
 */
export function renderSummary(table, plan, { onGroup } = {}) {
  const tbody = table.tBodies[0];
  if (!Array.isArray(plan.summary)) {
    tbody.replaceChildren(el('tr', {}, el('td', { colspan: 6, class: 'muted', text: 'This result has no summary.' })));
    return;
  }
  const names = new Map(plan.vertices.map((v) => [v.id, v.name]));
  const devices = plan.cluster?.devices;
  const rows = plan.summary.map((group, index) => el('tr', {
    dataset: { group: index, first: group.vertices[0] },
    tabindex: onGroup ? 0 : null,
    title: onGroup ? `Show these ${group.vertices.length} layers in the table` : null,
    onclick: onGroup ? () => onGroup(index) : null,
    onkeydown: onGroup ? (event) => { if (event.key === 'Enter') onGroup(index); } : null,
  }, [
    el('td', { class: 'num', text: group.vertices.length }),
    el('td', { class: 'op', text: group.op }),
    splitCell(group, names),
    el('td', {
      class: 'num',
      text: group.devices,
      title: Number.isFinite(devices) && group.devices < devices
        ? `each of these layers works on ${group.devices} of the ${devices} devices`
        : `each of these layers works on all ${group.devices} devices`,
    }),
    shareCell(group.cost_share, 'cost'),
    shareCell(group.memory_share, 'memory per GPU'),
  ]));
  tbody.replaceChildren(...rows);
}

/** Marks the summary row of group `index` as the table's filter (null: none). */
export function markSummaryGroup(table, index) {
  for (const row of table.tBodies[0].rows) row.classList.toggle('filtered', row.dataset.group === String(index));
}
