// The layout search on the page (core/docs/layouts.md): the ranked layouts
// that Megatron-LM and torchtitan run as a table, the fastest that do not
// fit with how much over, a user's layout placed in the ranking, and, in a
// plan of a language model, the best layout beside the per-layer plan.
// Every figure is the module's; this file only words it.

import { formatBytes, formatCount, formatSeconds, formatShare } from '../format.js';
import { el } from './dom.js';

const engineNames = { megatron: 'Megatron-LM', torchtitan: 'torchtitan' };

/** "compute 1.20 s · recomputation 0 s · exposed communication 310 ms · bubble 0 s" */
export function partsText(parts) {
  return `compute ${formatSeconds(parts.compute_s)} · recomputation ${formatSeconds(parts.recompute_s)}`
    + ` · exposed communication ${formatSeconds(parts.communication_s)} · bubble ${formatSeconds(parts.bubble_s)}`;
}

/** "71.2 GiB, 5.1 GiB free" or, over the cap, "80.3 GiB, 3.3 GiB over"; without a cap the bytes alone. */
export function memoryText(memory) {
  const used = formatBytes(memory.per_device_bytes);
  if (!(memory.capacity_bytes > 0)) return used;
  const margin = memory.margin_bytes;
  return margin >= 0 ? `${used}, ${formatBytes(margin)} free` : `${used}, ${formatBytes(-margin)} over`;
}

/** Which engines run a layout, and for each that refuses it the rule it breaks. */
export function enginesText(engines) {
  const accepted = [];
  const refused = [];
  for (const [id, verdict] of Object.entries(engines ?? {})) {
    const name = engineNames[id] ?? id;
    if (verdict.accepted) accepted.push(name);
    else refused.push(`${name} refuses: ${verdict.rule}`);
  }
  return [accepted.length ? `runs on ${accepted.join(' and ')}` : 'no engine runs it', ...refused].join('; ');
}

function enginesTitle(engines) {
  return Object.entries(engines ?? {}).filter(([, v]) => !v.accepted)
    .map(([id, v]) => `${engineNames[id] ?? id}: ${v.message}${v.source ? ` (${v.source})` : ''}`).join('\n');
}

/** "12.3 days, $45,600" of an entry priced with a token budget; '' without one. */
export function budgetText(entry) {
  if (!(entry.days > 0)) return '';
  const days = `${entry.days.toPrecision(3)} days`;
  return entry.cost > 0 ? `${days}, $${formatCount(entry.cost)}` : days;
}

/**
 * Fills `table` with the ranked layouts: rank, layout, step, MFU, tokens/s,
 * memory and margin, the step's parts, the engines and, with a token budget,
 * days and cost. `chosen` is the layout text the exports use; `onChoose`
 * is called with an entry when its row's button is pressed.
 */
export function renderRankedTable(table, entries, { chosen = '', onChoose } = {}) {
  const priced = entries.some((e) => e.days > 0);
  table.classList.toggle('priced', priced);
  const rows = entries.map((e) => el('tr', { dataset: { rank: e.rank, layout: e.layout }, class: e.layout === chosen ? 'chosen' : null }, [
    el('td', { class: 'num', text: e.rank }),
    el('td', { class: 'layout-text' }, el('code', { text: e.layout })),
    el('td', { class: 'num step', text: formatSeconds(e.step_time_s) }),
    el('td', { class: 'num mfu', text: formatShare(e.mfu) }),
    el('td', { class: 'num tokens', text: formatCount(e.tokens_per_s) }),
    el('td', { class: 'num memory', text: memoryText(e.memory) }),
    el('td', { class: 'parts', text: partsText(e.parts) }),
    el('td', { class: 'engines', text: enginesText(e.engines), title: enginesTitle(e.engines) || null }),
    el('td', { class: 'num budget', text: budgetText(e) }),
    el('td', {}, el('button', {
      type: 'button',
      class: 'link choose',
      text: e.layout === chosen ? 'Exported' : 'Export this',
      disabled: e.layout === chosen,
      title: 'The Export menu\'s Megatron-LM and torchtitan files are of this layout',
      onclick: () => onChoose?.(e),
    })),
  ]));
  table.tBodies[0].replaceChildren(...rows);
}

/** Fills `table` with the fastest layouts that do not fit: how much over the cap each is. */
export function renderOverTable(table, entries) {
  const rows = entries.map((e) => el('tr', { dataset: { layout: e.layout } }, [
    el('td', { class: 'layout-text' }, el('code', { text: e.layout })),
    el('td', { class: 'num step', text: formatSeconds(e.step_time_s) }),
    el('td', { class: 'num memory', text: formatBytes(e.memory.per_device_bytes) }),
    el('td', { class: 'num over', text: formatBytes(-(e.memory.margin_bytes ?? 0)) }),
    el('td', { class: 'engines', text: enginesText(e.engines), title: enginesTitle(e.engines) || null }),
  ]));
  table.tBodies[0].replaceChildren(...rows);
}

/** What a user's layout is worth: its place in the ranking and why it loses to the first. */
export function givenLines(given, ranked) {
  const best = ranked[0];
  const place = !given.memory.fits
    ? `does not fit: ${memoryText(given.memory)}`
    : given.rank === 1 ? 'ranks first' : `ranks ${formatCount(given.rank)}`;
  const lines = [`Your layout ${given.layout} ${place}; predicted ${formatSeconds(given.step_time_s)} a step, `
    + `MFU ${formatShare(given.mfu)}, ${partsText(given.parts)}.`];
  if (given.versus_best) lines.push(given.versus_best);
  else if (best && given.layout === best.layout) lines.push('It is the best layout.');
  lines.push(`Engines: ${enginesText(given.engines)}.`);
  return lines;
}

/** The search's own figures: "2,310 layouts priced in 84 ms, 1,002 over the memory cap, 540 refused (...)". */
export function searchLine(result) {
  const why = (result.refused_why ?? []).map((r) => `${r.why}: ${formatCount(r.count)}`).join(', ');
  return `${formatCount(result.priced)} layouts priced in ${formatSeconds(result.seconds)}, `
    + `${formatCount(result.ruled_out)} of them over the memory cap; ${formatCount(result.refused)} refused`
    + `${why ? ` (${why})` : ''}.`;
}

/**
 * The two answers of a plan of a language model: first the best layout
 * (what Megatron-LM and torchtitan run), then the per-layer plan, what
 * JAX/GSPMD runs, with its gain over the best layout or that it gains
 * nothing. Hides `container` for a plan without a best layout. With the
 * Layouts card's `ranking` of the same request and a token budget, the days
 * and cost of both: the ranking's for the best layout, and the per-layer
 * plan's in proportion to its step (the tokens of a step are the same).
 */
/** A search stopped by its time limit (or cancelled): the best found, and how far from the best it may be. */
function stoppedText(perLayer) {
  const why = perLayer.stopped === 'cancelled' ? 'Cancelled' : 'Stopped at the time limit';
  const gap = perLayer.gap === null || perLayer.gap === undefined
    ? 'with no bound proven'
    : `at most ${(100 * perLayer.gap).toFixed(1)}% slower than the best possible (no plan under ${formatSeconds(perLayer.lower_bound_s)} a step)`;
  return `${why} in ${perLayer.stopped_in}: the best found, ${gap}. A longer Time limit may find a faster plan.`;
}

export function renderAnswers(container, plan, ranking = null) {
  const best = plan?.best_layout;
  const perLayer = plan?.per_layer;
  const priced = ranking?.ranked?.find((e) => e.layout === best?.layout && e.days > 0);
  const scaled = (entry, step) => ({ days: entry.days * step / entry.step_time_s, cost: entry.cost * step / entry.step_time_s });
  container.hidden = !best;
  if (!best) {
    container.replaceChildren();
    return;
  }
  const rows = [el('div', { class: 'answer best-answer' }, [
    el('h3', { text: 'Best layout (what Megatron-LM and torchtitan run)' }),
    el('p', {}, [el('code', { class: 'answer-layout', text: best.layout })]),
    el('p', { class: 'answer-figures', text: `${formatSeconds(best.step_time_s)} a step, MFU ${formatShare(best.mfu)}, `
      + `${formatCount(best.tokens_per_s)} tokens/s, ${memoryText(best.memory)}${priced ? `; ${budgetText(priced)}` : ''}` }),
    el('p', { class: 'hint', text: `${partsText(best.parts)}; ${enginesText(best.engines)}` }),
  ])];
  if (perLayer) {
    const gains = perLayer.gain_s > 0;
    const slower = perLayer.gain_s < 0;
    const differs = perLayer.differs_at ?? [];
    const step = `${formatSeconds(perLayer.step_time_s)} a step`;
    const hand = (perLayer.set_by_hand ?? []).join(' and ');
    const budget = priced ? ` ${budgetText(scaled(priced, perLayer.step_time_s))}.` : '';
    rows.push(el('div', { class: 'answer per-layer-answer' }, [
      el('h3', { text: 'Per-layer plan (what JAX/GSPMD runs)' }),
      el('p', {
        class: 'answer-gain',
        text: (gains
          ? `${step}: ${formatSeconds(perLayer.gain_s)} (${formatShare(perLayer.gain_fraction)}) faster than the best layout.`
          : slower
            ? `${step}: ${formatSeconds(-perLayer.gain_s)} (${formatShare(-perLayer.gain_fraction)}) slower than the best layout, with ${hand} set by hand.`
            : `${step}: gains nothing over the best layout.`) + budget,
      }),
      (gains || slower) && differs.length
        ? el('p', { class: 'hint answer-differs' }, [`It differs from the layout at: ${differs.join('; ')}.`])
        : null,
      perLayer.stopped ? el('p', { class: 'answer-stopped', text: stoppedText(perLayer) }) : null,
      // Ended within the gap accepted (Max gap): what it left unsearched.
      !perLayer.stopped && perLayer.gap > 0
        ? el('p', { class: 'answer-gap', text: `Within the gap accepted: at most ${(100 * perLayer.gap).toFixed(1)}% slower than the best possible (no plan under ${formatSeconds(perLayer.lower_bound_s)} a step).` })
        : null,
      el('p', { class: 'hint', text: perLayer.layout_wins ? 'The rest of the results below is the best layout\'s own plan.' : 'The rest of the results below is this plan\'s.' }),
    ]));
  }
  container.replaceChildren(...rows);
}
