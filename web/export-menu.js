// The Export menu (core/docs/export.md): the plan on display as a JAX
// program, Megatron-LM arguments or torchtitan TOML, downloaded as a file
// and shown in the preview (export-preview.js) with Copy and Download.
// The module evaluates the plan's strategy again with "emit" (an evaluation
// is quick) on the request the form makes now, with the recomputation the
// plan chose; the note under the menu says what the export leaves out and,
// for Megatron-LM and torchtitan, whether the plan is uniform across the
// decoder blocks, and if not which layers differ and the nearest uniform
// layout's step time beside the plan's.

import { download, ExportPreview } from './export-preview.js';
import { formatSeconds } from './format.js';
import { el } from './views/dom.js';

export class ExportMenu {
  #ui;
  #hooks;
  #preview;
  #busy = false;

  /**
   * @param {{select: HTMLSelectElement, button: HTMLButtonElement, note: HTMLElement,
   *          preview: object}} ui  preview: ExportPreview's elements
   * @param {{client: () => object, plan: () => object|null, layout?: () => string|null,
   *          requestText: () => string, errors: {show: Function}}} hooks
   *   layout: the layout text the engines' files are of, null: the plan's
   */
  constructor(ui, hooks) {
    this.#ui = ui;
    this.#hooks = hooks;
    this.#preview = new ExportPreview(ui.preview);
    ui.button.addEventListener('click', () => this.export(ui.select.value));
  }

  /** Enables the menu for a plan on display; the preview of an earlier plan's export goes. */
  enable(on) {
    this.#ui.button.disabled = !on || this.#busy;
    this.#ui.select.disabled = !on;
    this.#preview.hide();
    if (!on) this.#showNote([]);
  }

  /**
   * The request that evaluates the plan on display with `target` emitted; for
   * Megatron-LM and torchtitan, the layout chosen among the ranked ones
   * (layouts.js) where there is one, since the engines run a layout.
   */
  request(target) {
    const plan = this.#hooks.plan();
    const request = JSON.parse(this.#hooks.requestText());
    delete request.pipeline;
    delete request.layout;
    request.emit = [target];
    const layout = target === 'jax' ? null : this.#hooks.layout?.();
    if (layout) {
      request.layout = layout;
      return JSON.stringify(request);
    }
    request.strategy = plan;
    const t = plan.training ?? {};
    if (t.recompute) {
      request.training = { ...request.training, recompute: t.recompute };
      if (t.recompute_blocks !== undefined) {
        request.training.recompute_blocks = t.recompute_blocks;
        request.training.recompute_rest = t.recompute_rest;
      }
    }
    return JSON.stringify(request);
  }

  async export(target) {
    if (!this.#hooks.plan() || this.#busy) return;
    this.#busy = true;
    this.#ui.button.disabled = true;
    this.#preview.hide();
    this.#showNote([`Exporting as ${this.#ui.select.selectedOptions[0]?.textContent ?? target}…`]);
    try {
      const result = await this.#hooks.client().call('evaluate', this.request(target));
      if (result.error) {
        this.#showNote([]);
        this.#hooks.errors.show('The plan could not be exported', result.error.message, result.error.where);
        return;
      }
      const exported = result.exports[0];
      if (exported.error) {
        this.#showNote([]);
        this.#hooks.errors.show('The plan could not be exported', exported.error.message, exported.error.where);
        return;
      }
      download(exported.file, exported.text);
      this.#preview.show(exported.file, exported.text);
      this.#showNote(noteLines(exported));
    } catch (e) {
      this.#showNote([]);
      this.#hooks.errors.show('The plan could not be exported', String(e.message ?? e), '');
    } finally {
      this.#busy = false;
      this.#ui.button.disabled = !this.#hooks.plan();
    }
  }

  #showNote(lines) {
    const { note } = this.#ui;
    note.replaceChildren(...lines.map((line) => el('p', {}, line)));
    note.hidden = lines.length === 0;
  }
}

/** What the note under the menu says about an export. */
export function noteLines(exported) {
  const lines = [`Downloaded ${exported.file}.`];
  if (exported.uniform === false) {
    lines.push(`The plan is not uniform across the decoder blocks as ${exported.to === 'megatron' ? 'Megatron-LM' : 'torchtitan'} `
      + `expresses it: this is the nearest uniform layout, ${exported.layout}, predicted ${formatSeconds(exported.layout_step_time_s)} `
      + `per step against the plan's ${formatSeconds(exported.plan_step_time_s)}. The layers that differ:`);
    for (const d of exported.differences) lines.push(`• ${d}`);
  } else if (exported.layout) {
    lines.push(`Layout: ${exported.layout}.`);
  }
  for (const n of exported.notes ?? []) lines.push(n);
  return lines;
}
