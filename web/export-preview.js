// The latest export's text under the results (core/docs/export.md): the file
// as the download saves it, in a scrollable monospace block, with Copy and
// Download. The text is set as text, never as HTML: it carries layer and
// graph names from user files. Copy writes it with the asynchronous
// clipboard; where the clipboard is refused (no permission, an insecure
// origin), it selects the whole text instead, for the user to copy by hand.

import { el } from './views/dom.js';

// How long the Copy button says "Copied" before it reads "Copy" again.
const copiedMs = 2000;

export class ExportPreview {
  #ui;
  #file = '';
  #text = '';
  #timer = 0;

  /**
   * @param {{box: HTMLElement, title: HTMLElement, text: HTMLElement, copy: HTMLButtonElement,
   *          download: HTMLButtonElement, status: HTMLElement}} ui
   */
  constructor(ui) {
    this.#ui = ui;
    ui.copy.addEventListener('click', () => this.copy());
    ui.download.addEventListener('click', () => download(this.#file, this.#text));
  }

  /** Shows `text`, the contents of the file named `file`. */
  show(file, text) {
    const ui = this.#ui;
    this.#file = file;
    this.#text = text;
    ui.title.textContent = file;
    ui.text.textContent = text;
    ui.text.scrollTop = 0;
    this.#setCopied(false, '');
    ui.box.hidden = false;
  }

  /** Hides the preview (a new plan is on display: the export was of the old one). */
  hide() {
    this.#ui.box.hidden = true;
    this.#setCopied(false, '');
  }

  /** Puts the text on the clipboard, or selects it when the clipboard is refused. */
  async copy() {
    try {
      await navigator.clipboard.writeText(this.#text);
      this.#setCopied(true, `Copied ${this.#file} to the clipboard.`);
    } catch {
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.selectAllChildren(this.#ui.text);
      this.#ui.text.focus();
      this.#setCopied(false, 'The clipboard was refused: the text is selected, press Ctrl+C (⌘C) to copy it.');
    }
  }

  #setCopied(copied, message) {
    const { copy, status } = this.#ui;
    clearTimeout(this.#timer);
    copy.textContent = copied ? 'Copied' : 'Copy';
    copy.classList.toggle('copied', copied);
    status.textContent = message;
    if (copied) {
      this.#timer = setTimeout(() => {
        copy.textContent = 'Copy';
        copy.classList.remove('copied');
      }, copiedMs);
    }
  }
}

/** Saves `text` as the file `name` (a download the browser names `name`). */
export function download(name, text) {
  const blob = new Blob([text], { type: 'text/plain' });
  const url = URL.createObjectURL(blob);
  const link = el('a', { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
