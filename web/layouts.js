// The Layouts card (core/docs/layouts.md): for a plan of a language model,
// the layout search of the module (its "layouts" action, layouts_json())
// on the form's request, in a worker of its own so that it runs beside the
// plan's comparison. It ranks again when Rank is pressed (a token budget or
// a price changed) and when a user's layout is pasted and placed; the
// layout chosen in the table is what the Export menu's Megatron-LM and
// torchtitan files are of (the best one until another is chosen).

import { renderOverTable, renderRankedTable, givenLines, searchLine } from './views/layouts.js';
import { el } from './views/dom.js';

const scales = { '': 1, k: 1e3, m: 1e6, b: 1e9, t: 1e12 };

/**
 * A token budget as typed: "15T", "1.5e13", "300B", "" (none). Returns the
 * count, null for none, or NaN when the text is not a count.
 */
export function parseTokens(text) {
  const t = text.trim();
  if (t === '') return null;
  const m = /^(\d+(?:\.\d*)?(?:e[+-]?\d+)?)\s*([kmbt]?)$/i.exec(t);
  return m ? Number(m[1]) * scales[m[2].toLowerCase()] : NaN;
}

export class LayoutRanking {
  #ui;
  #hooks;
  #client = null;
  #result = null; // the latest ranking on display, or null
  #chosen = null; // the ranked entry the exports are of, or null
  #runs = 0;      // ids of rankings; a later one supersedes an answer still in flight

  /**
   * @param {{card, tokens, price, rank, status, table, overBlock, over, paste, place, given}} ui
   * @param {{makeClient: () => object, requestText: (extra: object) => string,
   *          defaultPrice: () => number|null, errors: {show: Function},
   *          onRanked?: (result: object) => void}} hooks
   *   requestText: the form's plan request with `extra` fields added;
   *   onRanked: each ranking shown (its days and cost price the plan's answers too)
   */
  constructor(ui, hooks) {
    this.#ui = ui;
    this.#hooks = hooks;
    ui.rank.addEventListener('click', () => this.rank());
    ui.place.addEventListener('click', () => this.rank());
    for (const input of [ui.tokens, ui.price, ui.paste]) input.addEventListener('input', () => input.removeAttribute('aria-invalid'));
  }

  /** The ranked entry whose engine files the Export menu makes, or null. */
  get chosen() {
    return this.#chosen;
  }

  /** A plan is on display: rank the layouts of a language model, hide the card for any other network. */
  planShown(plan, isLanguageModel) {
    this.#ui.card.hidden = !isLanguageModel;
    this.#showPricePlaceholder();
    if (!isLanguageModel) {
      this.#cancel();
      this.#result = null;
      this.#chosen = null;
      return;
    }
    this.rank();
  }

  /** The price field's placeholder: the preset's price of a GPU-hour, which an empty field means. */
  #showPricePlaceholder() {
    const price = this.#hooks.defaultPrice();
    this.#ui.price.placeholder = price > 0 ? `${price} (preset)` : 'none';
  }

  /** The search's request fields beyond the plan request's, or an error {message, where}. */
  #fields() {
    const ui = this.#ui;
    const fields = { top: 10 };
    const tokens = parseTokens(ui.tokens.value);
    if (Number.isNaN(tokens)) {
      return { error: { message: `'${ui.tokens.value.trim()}' is not a token count (write 15T, 300B or 1.5e13)`, where: 'tokens' } };
    }
    if (tokens !== null) fields.tokens = tokens;
    const typed = ui.price.value.trim();
    // A number input's value is '' for text it cannot read, which badInput tells.
    if (ui.price.validity.badInput) return { error: { message: 'is not a number', where: 'gpu_hour_price' } };
    const price = typed === '' ? this.#hooks.defaultPrice() : Number(typed);
    if (price !== null && (typed !== '' || price > 0)) fields.gpu_hour_price = price;
    const pasted = ui.paste.value.trim();
    if (pasted !== '') fields.layout = pasted;
    return { fields };
  }

  /** Ranks the layouts of the form's request, with the budget, the price and the pasted layout. */
  async rank() {
    const ui = this.#ui;
    this.#showPricePlaceholder();
    const { fields, error } = this.#fields();
    if (error) {
      this.#showError(error);
      return;
    }
    this.#cancel();
    const run = ++this.#runs;
    ui.status.textContent = 'Ranking the layouts…';
    ui.rank.disabled = true;
    try {
      this.#client ??= this.#hooks.makeClient();
      const result = await this.#client.call('layouts', this.#hooks.requestText(fields));
      if (run !== this.#runs) return;
      this.#show(result, fields.layout !== undefined);
    } catch (e) {
      if (run !== this.#runs || e.kind === 'cancelled') return;
      this.#showError({ message: e.message, where: e.where ?? '' });
    } finally {
      if (run === this.#runs) ui.rank.disabled = false;
    }
  }

  #cancel() {
    if (this.#client?.pendingCount > 0) this.#client.restart();
  }

  #showError({ message, where }) {
    const ui = this.#ui;
    ui.status.textContent = 'The layouts could not be ranked: see the error above.';
    const control = where.startsWith('layout') ? ui.paste : where === 'tokens' ? ui.tokens
      : where === 'gpu_hour_price' ? ui.price : null;
    control?.setAttribute('aria-invalid', 'true');
    if (control === ui.paste) ui.given.replaceChildren();
    this.#hooks.errors.show('The layouts could not be ranked', message, where);
  }

  #show(result, withGiven) {
    const ui = this.#ui;
    this.#result = result;
    // The choice stays across a new ranking where the layout is still ranked.
    const kept = this.#chosen && result.ranked.find((e) => e.layout === this.#chosen.layout);
    this.#chosen = kept ?? result.ranked[0] ?? null;
    this.#renderRanked();
    ui.overBlock.hidden = result.over.length === 0;
    renderOverTable(ui.over, result.over);
    const given = withGiven && result.given ? givenLines(result.given, result.ranked) : [];
    ui.given.replaceChildren(...given.map((line) => el('p', { text: line })));
    ui.given.hidden = given.length === 0;
    ui.status.textContent = result.ranked.length ? searchLine(result)
      : `No layout fits the memory per GPU. ${searchLine(result)}`;
    this.#hooks.onRanked?.(result);
  }

  #renderRanked() {
    renderRankedTable(this.#ui.table, this.#result.ranked, {
      chosen: this.#chosen?.layout ?? '',
      onChoose: (entry) => {
        this.#chosen = entry;
        this.#renderRanked();
      },
    });
  }
}
