// The one place errors appear: the #error box above the results, kept in
// the window when it is shown (#reveal).
//
// A planner error names the request field it came from (`where`); the box
// shows that field and marks the form control it belongs to, so a bad
// cluster value is pointed at where it was typed.

import { el } from './views/dom.js';

// Messages of the core's size guards (memory limit, configuration count, a
// failed allocation): the graph is too big, not wrong.
const tooBig = /more than the limit|more than \d+ configurations|out of memory/;

/** `where` read from inside the request field `prefix`: ('graph.layers[2]', 'graph') -> 'layers[2]'. */
function relativeTo(where, prefix) {
  if (!prefix) return where;
  if (where === prefix) return '';
  return where.startsWith(`${prefix}.`) ? where.slice(prefix.length + 1) : where;
}

export class ErrorBox {
  #ui;
  #controls;
  #shown = null; // {title, message, where} on display, or null

  /**
   * @param {{box: HTMLElement, title: HTMLElement, message: HTMLElement, close: HTMLElement}} ui
   * @param {Record<string, HTMLElement>} controls request field ("cluster.devices") -> its form control
   */
  constructor(ui, controls) {
    this.#ui = ui;
    // A Map: `where` may be any field name of a user's file ("constructor").
    this.#controls = new Map(Object.entries(controls));
    ui.close.addEventListener('click', () => this.clear());
  }

  /** Shows `message` under `title`; `where` names the offending field, if any. */
  show(title, message, where = '') {
    const ui = this.#ui;
    this.#shown = { title, message, where };
    ui.title.textContent = title;
    ui.message.replaceChildren(...(where ? [el('code', { text: where }), ': '] : []), message);
    ui.box.hidden = false;
    const control = this.#controls.get(where);
    control?.setAttribute('aria-invalid', 'true');
    // A control folded away (the training's byte counts) is shown.
    const details = control?.closest('details');
    if (details) details.open = true;
    this.#reveal();
  }

  /**
   * Brings the box into the window when it is not there: where the user is
   * (at the Plan button, say, far down the page), not only at the top of the
   * results. Beside the inputs the box is sticky (style.css) and already in
   * view; on a narrow screen the results are below the inputs, and the page
   * scrolls it to the middle of the window, clear of the Run panel held at
   * the window's bottom.
   */
  #reveal() {
    const box = this.#ui.box;
    const rect = box.getBoundingClientRect();
    const height = window.innerHeight || document.documentElement.clientHeight;
    if (rect.top < 0 || rect.bottom > height) box.scrollIntoView({ block: 'center' });
  }

  /** The error on display, {title, message, where} as show() got them (to show it again), or null. */
  get shown() {
    return this.#shown;
  }

  clear() {
    this.#shown = null;
    this.#ui.box.hidden = true;
    this.#ui.message.textContent = '';
    for (const control of this.#controls.values()) control.removeAttribute('aria-invalid');
  }

  /**
   * Shows a PlannerError (planner-client.js). With `file`, the error is about
   * that graph file: it is reported against the file's own fields, read from
   * inside the request field `under` ('graph' for a plan request; '' for
   * validate, whose errors are already the file's).
   */
  showPlannerError(error, { file, under = '' } = {}) {
    if (error.kind === 'module') {
      this.show('The planner module failed', error.message);
      return;
    }
    let { where } = error;
    let title = 'The plan request was refused';
    if (file) {
      title = `Invalid graph file ${file}`;
      where = relativeTo(where, under);
    } else if (tooBig.test(error.message)) {
      // The memory guard's `where` (max_memory) is the search options' table
      // limit, marked; other guards name no control of the page, and the
      // message itself says what to change.
      title = 'The graph is too big to plan';
      if (!this.#controls.has(where)) where = '';
    }
    this.show(title, error.message, where);
  }
}
