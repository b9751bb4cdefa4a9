// Files taken in as the graph source (source.js): a file chosen with the
// file input or dropped anywhere on the page is read and, if it is a valid
// pase-graph/1 document, made the source; a model file (an ONNX model, or a
// Hugging Face config.json of a language model) is imported by the module
// instead (in the worker, which reads the file in slices: no size limit for
// ONNX). Every refusal is shown in the error box and the status line and
// leaves the source as it was, and is kept as the source's `refused` choice
// until the next choice (or until the error is closed): Plan then shows the
// file's error again rather than plan the graph before it (planning.js).
// Choosing a file stops at once whatever runs on the graph before it (its
// plan, comparison and sweep), so that nothing about that graph lands on the
// status line after the file's own outcome.
//
// This module owns the file input, the drop target and the form asking for
// an ONNX model's dynamic dimensions, and imports an imported model again
// when its batch or sequence length field changes. What is chosen (the
// current source, the count of choices, the pending one) stays the
// GraphSource's: it is reached through the hooks.

import { fileKind, importName, jsonKind, sniffBytes } from './model-file.js';
import { parametersText, renderDimsForm } from './views/imported.js';

// Graph documents beyond this are refused before reading: the benchmark
// networks export to well under 1 MB, so anything this large is not a graph
// worth planning here. ONNX files have no limit: they are never read whole
// (an imported ResNet-50 is a graph document of about 10 kB).
export const maxFileBytes = 32 * 1024 * 1024;

/**
 * The batch size a graph document sets: the leading dimension of its first
 * input (as for an imported model, core/docs/import.md), or null when the
 * document has no input with a positive integer there.
 * @param {string} text a pase-graph/1 document that validate() accepted
 */
export function graphBatch(text) {
  try {
    const first = Object.values(JSON.parse(text)?.inputs ?? {})[0];
    const batch = Array.isArray(first) ? first[0] : null;
    return Number.isInteger(batch) && batch > 0 ? batch : null;
  } catch {
    return null;
  }
}

export class FileIntake {
  #ui;
  #hooks;

  /**
   * @param {{batch: HTMLInputElement, seq: HTMLInputElement, fileInput: HTMLInputElement,
   *          dropzone: HTMLElement, dimsForm: HTMLElement}} ui
   * @param {object} hooks
   * @param {Promise<boolean>} hooks.ready resolves once the module answered (false: it failed)
   * @param {(text: string) => Promise<object>} hooks.validate the module's check of a graph
   *   document; rejects with a PlannerError whose `where` is the file's own field
   * @param {(file: File, options: object) => Promise<object>} hooks.importModel the module's
   *   import of a model file, ONNX or config.json (json_api.hpp, import_model_json); rejects
   *   with a PlannerError, whose `missingDims` lists the dynamic dimensions to ask for
   * @param {import('./error-box.js').ErrorBox} hooks.errors
   * @param {(text: string) => void} hooks.setStatus
   * @param {() => void} hooks.onNewGraph a file was chosen: work on the old graph is moot
   * @param {() => void} hooks.onImported a model file was imported and is the source: plan it
   * @param {() => import('./source.js').Source|null} hooks.current the current source
   * @param {() => number} hooks.newChoice counts a new choice and returns its number
   * @param {(choice: number) => boolean} hooks.isLatest whether no newer choice came since `choice`
   * @param {(name: string, work: Promise<string>) => Promise<string>} hooks.track makes `work`
   *   the pending choice `name`, and resolves to its outcome
   * @param {(upload: object) => void} hooks.loaded the file's graph is the source now:
   *   {fileName, text, batch} for a graph document, {fileName, text, imported} for an import
   * @param {(refused: import('./source.js').Refused|null) => void} hooks.setRefused records
   *   the latest choice as refused (null: forgets it)
   */
  constructor(ui, hooks) {
    this.#ui = ui;
    this.#hooks = hooks;
  }

  /** Listens to the batch and sequence fields, the file input and drops on the window. */
  wire() {
    const ui = this.#ui;
    // An imported model's batch is the leading dimension of its first input
    // (a config's sequences per step), its sequence length a config's tokens
    // per sequence: a new value imports the file again with it (the CLI's
    // --batch and --seq). The other size stays as it was.
    for (const [field, size] of [[ui.batch, 'batch'], [ui.seq, 'seq']]) {
      field.addEventListener('change', () => {
        const imported = this.#hooks.current()?.imported;
        const value = Number(field.value);
        if (!imported || (size === 'seq' && !imported.config)) return;
        if (!Number.isInteger(value) || value < 1 || value === imported[size]) return;
        const { kind, dims, batch, seq } = imported;
        const choice = this.#hooks.newChoice();
        this.#hooks.track(imported.file.name,
          this.#importModel(imported.file, choice, { kind, dims, batch, seq, [size]: value }));
      });
    }
    ui.fileInput.addEventListener('change', () => {
      this.accept(ui.fileInput.files?.[0]);
      ui.fileInput.value = ''; // choosing the same file again must fire again
    });
    // The whole window accepts drops, so a near miss does not make the browser
    // navigate away to the dropped file.
    let depth = 0;
    window.addEventListener('dragenter', (event) => {
      if (!event.dataTransfer?.types.includes('Files')) return;
      depth++;
      ui.dropzone.classList.add('active');
    });
    window.addEventListener('dragleave', () => {
      if (--depth <= 0) {
        depth = 0;
        ui.dropzone.classList.remove('active');
      }
    });
    window.addEventListener('dragover', (event) => event.preventDefault());
    window.addEventListener('drop', (event) => {
      event.preventDefault();
      depth = 0;
      ui.dropzone.classList.remove('active');
      this.accept(event.dataTransfer?.files?.[0]);
    });
  }

  /**
   * Checks a file and, if it is a valid graph, makes it the source; a model
   * file (ONNX, or a JSON document that is a Hugging Face config) is
   * imported instead. Every refusal is shown in the error box and the status
   * line ("x.json was not loaded.") and leaves the source as it was, and
   * the file is the source's `refused` choice until the next one. Until it
   * is done the file is the source's pending choice (GraphSource's
   * `pending`). Resolves to the outcome (see #pending in source.js).
   */
  async accept(file) {
    if (!file) return 'refused';
    // A file dropped while the module loads is checked once it is there.
    if (!(await this.#hooks.ready)) return 'refused';
    const choice = this.#hooks.newChoice();
    return this.#hooks.track(file.name, this.#accept(file, choice));
  }

  /**
   * Ends the choice of `name`, which did not become the source: the status
   * line says it was not `verb` ('loaded', 'imported'; `detail` adds why)
   * and, with the error that says why (by default the one the error box was
   * just given), the source keeps it as its `refused` choice. Returns the
   * outcome 'refused'.
   */
  #refused(name, verb, { detail = '', error = this.#hooks.errors.shown } = {}) {
    this.#hooks.setStatus(`${name} was not ${verb}${detail}.`);
    if (error) this.#hooks.setRefused({ name, verb, error, asked: false });
    return 'refused';
  }

  async #accept(file, choice) {
    const { errors, setStatus } = this.#hooks;
    errors.clear();
    this.closeDimsForm();
    // The graph before it is left at once: a plan of it still running would
    // otherwise land after this file's refusal, as if Plan had planned it.
    this.#hooks.onNewGraph();
    const refuse = (title, message) => {
      errors.show(title, message);
      return this.#refused(file.name, 'loaded');
    };
    setStatus(`Reading ${file.name}…`);
    let prefix;
    try {
      prefix = new Uint8Array(await file.slice(0, sniffBytes).arrayBuffer());
    } catch (e) {
      return this.#hooks.isLatest(choice) ? refuse(`Could not read ${file.name}`, e.message) : 'superseded';
    }
    if (!this.#hooks.isLatest(choice)) return 'superseded';
    if (fileKind(file.name, prefix) === 'onnx') return this.#importModel(file, choice, { kind: 'onnx' });
    if (file.size > maxFileBytes) {
      return refuse('Graph file too big', `${file.name} is ${(file.size / 2 ** 20).toFixed(1)} MiB; the limit is ${maxFileBytes / 2 ** 20} MiB`);
    }
    let text;
    try {
      text = await file.text();
    } catch (e) {
      return this.#hooks.isLatest(choice) ? refuse(`Could not read ${file.name}`, e.message) : 'superseded';
    }
    if (!this.#hooks.isLatest(choice)) return 'superseded';
    let document;
    try {
      document = JSON.parse(text);
    } catch (e) {
      return refuse(`Invalid graph file ${file.name}`, `not valid JSON: ${e.message}`);
    }
    if (jsonKind(document) === 'config') {
      // The module is given the text just parsed (decoded as UTF-8, without a
      // byte order mark, which the importer would not take for JSON).
      return this.#importModel(new File([text], file.name, { type: 'application/json' }), choice, { kind: 'config' });
    }
    setStatus(`Checking ${file.name}…`);
    try {
      await this.#hooks.validate(text);
    } catch (e) {
      if (!this.#hooks.isLatest(choice)) return 'superseded';
      if (e.kind === 'cancelled') {
        // Only a newer choice cancels a check (onNewGraph stops plans, not
        // checks); say so rather than leave "Checking" on the status line.
        return this.#refused(file.name, 'loaded', { detail: ': the check was cancelled', error: null });
      }
      errors.showPlannerError(e, { file: file.name });
      return this.#refused(file.name, 'loaded');
    }
    if (!this.#hooks.isLatest(choice)) return 'superseded';
    this.#hooks.loaded({ fileName: file.name, text, batch: graphBatch(text) });
    setStatus(`Loaded ${file.name}. Press Plan to plan it.`);
    return 'loaded';
  }

  /**
   * Imports the model file `file`, an ONNX model or a Hugging Face config
   * (`kind`), with the sizes `dims` ({name: size}) for an ONNX model's
   * dynamic dimensions. Sizes still missing are asked for in the dims form,
   * which imports again with them; any other refusal is shown in the error
   * box. The imported graph becomes the source like an uploaded one, unless
   * another choice (isLatest(choice) no longer holds) came meanwhile, and is
   * planned. `batch`, when given, sets the first input's leading dimension
   * (a config's sequences per step), `seq` a config's sequence length. The
   * graph is named after the file, as in the CLI; a config.json after its
   * model type (importName()). Resolves to the outcome (see #pending in
   * source.js).
   */
  async #importModel(file, choice, { kind = 'onnx', dims = {}, batch = 0, seq = 0 } = {}) {
    const { errors, setStatus } = this.#hooks;
    this.#hooks.onNewGraph();
    setStatus(`Importing ${file.name}…`);
    const options = {};
    const name = importName(file.name, kind);
    if (name) options.name = name;
    if (Object.keys(dims).length) options.dims = dims;
    if (batch > 0) options.batch = batch;
    if (seq > 0) options.seq = seq;
    let result;
    try {
      result = await this.#hooks.importModel(file, options);
    } catch (e) {
      if (!this.#hooks.isLatest(choice)) return 'superseded';
      if (e.kind === 'cancelled') return this.#refused(file.name, 'imported', { detail: ': the import was cancelled', error: null });
      if (e.missingDims?.length) {
        this.#askDims(file, e.missingDims, dims, batch);
        setStatus(`${file.name} has dynamic dimensions: give their sizes to import it.`);
        // Not yet refused, but not the source either: Plan asks for the sizes.
        this.#hooks.setRefused({ name: file.name, verb: 'imported', error: null, asked: true });
        return 'asked';
      }
      if (e.kind === 'module') errors.showPlannerError(e);
      else errors.show(`Could not import ${file.name}`, e.message, e.where);
      return this.#refused(file.name, 'imported');
    }
    if (!this.#hooks.isLatest(choice)) return 'superseded';
    const imported = {
      parameters: result.parameters,
      layers: result.graph.layers.map((layer, i) => ({ name: layer.name, op: layer.op, outputs: result.layer_outputs?.[i] ?? [] })),
      dynamicDims: result.dynamic_dims ?? [],
      // A config's hyper-parameters (format "hf-config"), else null.
      config: result.config ?? null,
      // What importing again (another batch or sequence length) needs.
      file,
      kind,
      dims,
      batch: result.batch ?? Object.values(result.graph.inputs ?? {})[0]?.[0] ?? null,
      seq: result.seq ?? null,
    };
    // The graph is planned as a graph document like any upload's (and
    // travels in a shared link the same way).
    this.#hooks.loaded({ fileName: file.name, text: JSON.stringify(result.graph), imported });
    setStatus(`Imported ${file.name}: ${parametersText(result.parameters)}, ${result.layers} layers.`);
    // Dropping a model asks for its plan (core/docs/plan-your-model.md).
    this.#hooks.onImported();
    return 'imported';
  }

  #askDims(file, missing, given, batch) {
    const { dimsForm } = this.#ui;
    renderDimsForm(dimsForm, {
      fileName: file.name,
      missing,
      values: given,
      onSubmit: (values) => {
        this.closeDimsForm();
        const choice = this.#hooks.newChoice();
        this.#hooks.track(file.name, this.#importModel(file, choice, { kind: 'onnx', dims: { ...given, ...values }, batch }));
      },
      onCancel: () => {
        this.closeDimsForm();
        // The user gave the file up: Plan plans the source again.
        this.#hooks.setRefused(null);
        this.#hooks.setStatus(`${file.name} was not imported.`);
      },
    });
  }

  /** Closes the form of dynamic dimensions (a new choice leaves it). */
  closeDimsForm() {
    this.#ui.dimsForm.hidden = true;
    this.#ui.dimsForm.replaceChildren();
  }
}
