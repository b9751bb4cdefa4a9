// The graph to plan: a built-in network (with the batch size field, and the
// sequence length field for a network with a sequence), an example graph
// shipped with the site, or a file the user uploads or drops anywhere on the
// page: a pase-graph/1 document, or a model file that the module imports to
// one (an ONNX model, or a Hugging Face config.json of a language model).
//
// This module owns the Model select, whether the batch and sequence fields
// apply, the hint under the select and the summary of an imported model; the
// file input, the drop target and the form asking for a model's dynamic
// dimensions are file-intake.js's. A graph document becomes the source only
// once it has passed the size check, JSON.parse and the module's validate();
// a model file once the module has imported it. Until then the previous
// source stays. A choice that fails is kept as `refused` until the next
// choice, so that Plan says why it failed rather than plan the source before
// it (planning.js).

import { el } from './views/dom.js';
import { formatCount, formatParameters } from './format.js';
import { FileIntake, graphBatch } from './file-intake.js';
import { renderImported } from './views/imported.js';

// The first screen's network, a current LLM; the PaSE paper's, one choice away (app.js).
export const defaultModel = 'llama3-8b';
export const paperModel = 'alexnet';
const uploadValue = 'upload';
const examplePrefix = 'example:';

/** "AlexNet: 5 conv + 3 FC layers" -> "AlexNet" */
function displayName(model) {
  return model.description?.split(':')[0] || model.name;
}

async function fetchExample(name) {
  const response = await fetch(`examples/${encodeURIComponent(name)}.json`);
  if (!response.ok) throw new Error(`examples/${name}.json: HTTP ${response.status}`);
  return response.text();
}

/**
 * A built-in network in the select: "AlexNet (alexnet)"; a language model
 * (`llm`, a group of their own) with its size instead, which is how such
 * models are told apart: "Llama 3 8B · 8.03B parameters".
 */
function modelOption(model) {
  const text = model.llm && Number.isFinite(model.parameters)
    ? `${displayName(model)} · ${formatParameters(model.parameters)} parameters`
    : `${displayName(model)} (${model.name})`;
  return el('option', { value: model.name, text });
}

/**
 * @typedef {{kind: 'model', name: string, batch?: number|null, seq?: number|null}
 *         | {kind: 'example', name: string, text: string}
 *         | {kind: 'upload', fileName: string, text: string,
 *            imported?: import('./views/imported.js').Imported}} Source
 *   an upload is a graph document, or one imported from a model file (`imported`)
 */

/**
 * @typedef {{name: string, verb: 'loaded'|'imported',
 *            error: {title: string, message: string, where: string}|null, asked: boolean}} Refused
 *   the latest choice, a file (or an example), which did not become the source: `name` is
 *   the file's; it was not `verb`, for the reason `error` (the error box's, to show again),
 *   or (`asked`) the form of dynamic dimensions waits for its sizes
 */

export class GraphSource {
  /** [{name, description, default_batch, default_seq, llm, parameters, ...}] from the module */
  models = [];
  /** file names under examples/, without ".json" */
  examples = [];
  /** @type {Source|null} what Plan plans */
  current = null;
  /** the last uploaded graph, kept selectable: {fileName, text, imported?} */
  upload = null;
  /**
   * @type {Refused|null} the latest choice, when it failed: Plan then says why
   * rather than plan `current`, the source before it. A new choice, or the
   * error box closed (forgetRefused()), forgets it.
   */
  refused = null;
  #ui;
  #hooks;
  /** @type {FileIntake} */
  #files;
  // Bumped by every new choice (a file, the select); a check or import that
  // answers after a newer choice is dropped.
  #choice = 0;
  // The choice being checked, read or imported, if any: {name, done}, where
  // `done` resolves (never rejects) to the outcome, 'loaded' (the choice is
  // the source now), 'imported' (likewise, and its plan has started),
  // 'refused' (the error box and the status say why), 'asked' (the form of
  // dynamic dimensions is open) or 'superseded' (a newer choice came).
  #pending = null;

  /**
   * @param {{select: HTMLSelectElement, description: HTMLElement, batch: HTMLInputElement,
   *          seq: HTMLInputElement, seqField: HTMLElement, fileInput: HTMLInputElement,
   *          dropzone: HTMLElement, imported: HTMLElement, dimsForm: HTMLElement}} ui
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
   * @param {() => void} hooks.onStale the results no longer answer the form
   * @param {(refused: Refused|null) => void} hooks.onRefused the latest choice failed
   *   (`refused`), or that is forgotten (null)
   * @param {() => void} hooks.onChange the source changed (the URL follows it)
   * @param {() => void} hooks.onImported a model file was imported and is the source: plan it
   *
   * The file input, the drop target and the dims form, and the hooks about
   * files (validate, importModel, onNewGraph, onImported), are the
   * FileIntake's (file-intake.js).
   */
  constructor(ui, hooks) {
    this.#ui = ui;
    this.#hooks = hooks;
    const { ready, validate, importModel, errors, setStatus, onNewGraph, onImported } = hooks;
    this.#files = new FileIntake(ui, {
      ready,
      validate,
      importModel,
      errors,
      setStatus,
      onNewGraph,
      onImported,
      current: () => this.current,
      newChoice: () => this.#newChoice(),
      isLatest: (choice) => choice === this.#choice,
      track: (name, work) => this.#track(name, work),
      loaded: (upload) => this.#loaded(upload),
      setRefused: (refused) => this.#setRefused(refused),
    });
  }

  /** Counts a new choice, which ends a refused one; returns its number. */
  #newChoice() {
    this.#setRefused(null);
    return ++this.#choice;
  }

  #setRefused(refused) {
    if (!refused && !this.refused) return;
    this.refused = refused;
    this.#hooks.onRefused(refused);
  }

  /**
   * The user closed the error box of a refused file: the refusal is seen,
   * and Plan plans the current source again. (A form of dynamic dimensions
   * still waiting stays: its Cancel gives the file up.)
   */
  forgetRefused() {
    if (this.refused && !this.refused.asked) this.#setRefused(null);
  }

  /**
   * The choice still being checked or imported ({name, done}, see #pending),
   * or null: Plan waits for it, so that a click plans what was just chosen.
   */
  get pending() {
    return this.#pending;
  }

  /** Tracks `work` (a promise of an outcome) as the pending choice `name`. */
  #track(name, work) {
    const entry = { name, done: work.catch(() => 'refused') };
    this.#pending = entry;
    entry.done.then(() => {
      if (this.#pending === entry) this.#pending = null;
    });
    return entry.done;
  }

  /** Listens to the select; the FileIntake to an import's batch and sequence fields, the file input and drops. */
  wire() {
    const ui = this.#ui;
    ui.select.addEventListener('change', () => this.#chooseFromSelect());
    this.#files.wire();
  }

  /** A file's graph (file-intake.js) is the source now, and the last upload. */
  #loaded(upload) {
    this.upload = upload;
    this.current = { kind: 'upload', ...this.upload };
    this.#fill();
    this.#hooks.onStale();
    this.#hooks.onChange();
  }

  modelInfo(name) {
    return this.models.find((m) => m.name === name);
  }

  /** How the status line names a source: "AlexNet", "small_cnn.json", "my-net.json". */
  label(source = this.current) {
    if (source.kind === 'model') return displayName(this.modelInfo(source.name) ?? source);
    if (source.kind === 'example') return `${source.name}.json`;
    return source.fileName;
  }

  /** Whether the current source is a built-in network with a sequence length (the seq field applies). */
  hasSeq(source = this.current) {
    return source?.kind === 'model' && this.modelInfo(source.name)?.default_seq != null;
  }

  /**
   * The request fields that name the graph, as JSON text. A graph file's text
   * is spliced in unchanged, so the module sees exactly the bytes the user
   * gave (and the CLI would). `batch` and `seq` are the fields' numbers, or
   * null; `seq` is sent only for a network that has a sequence length.
   */
  requestFields(batch, seq) {
    const source = this.current;
    if (source.kind !== 'model') return `"graph": ${source.text}\n`;
    let fields = `"model": ${JSON.stringify(source.name)}, "batch": ${JSON.stringify(batch)}`;
    if (this.hasSeq(source)) fields += `, "seq": ${JSON.stringify(seq)}`;
    return fields;
  }

  /** Fetches the list of example graphs; the page works without it. */
  async loadExamples() {
    try {
      const response = await fetch('examples/index.json');
      if (response.ok) this.examples = (await response.json()).map((f) => f.replace(/\.json$/, ''));
    } catch {
      this.examples = [];
    }
  }

  /**
   * Makes `saved` (a source read from the URL, or null) the current source,
   * once the models and examples are known, and fills the select.
   */
  async restore(saved) {
    let source = saved;
    if (source?.kind === 'model' && !this.modelInfo(source.name)) {
      // Left as is, the module reports the unknown name when planning.
      this.models.push({ name: source.name, description: '', default_batch: source.batch });
    }
    if (source?.kind === 'example') {
      try {
        source = { ...source, text: await fetchExample(source.name) };
      } catch (e) {
        this.#hooks.errors.show('Could not load the example', e.message);
        source = null;
      }
    }
    if (source?.kind === 'upload') this.upload = { fileName: source.fileName, text: source.text };
    this.current = source ?? { kind: 'model', name: defaultModel };
    if (this.current.kind === 'model') {
      const info = this.modelInfo(this.current.name);
      this.#ui.batch.value = saved?.batch ?? info?.default_batch ?? '';
      this.#ui.seq.value = this.hasSeq() ? saved?.seq ?? info.default_seq : '';
    }
    this.#fill();
  }

  /** Chooses the built-in network `name` with its default batch, as the select does. */
  chooseModel(name) {
    this.#ui.select.value = name;
    return this.#chooseFromSelect();
  }

  /** The select when the module failed to load. */
  showUnavailable() {
    this.#ui.select.replaceChildren(el('option', { text: 'Planner unavailable' }));
  }

  #fill() {
    const groups = [
      el('optgroup', { label: 'Benchmark networks' }, this.models.filter((m) => !m.llm).map(modelOption)),
    ];
    const llms = this.models.filter((m) => m.llm);
    if (llms.length) groups.push(el('optgroup', { label: 'Language models' }, llms.map(modelOption)));
    if (this.examples.length) {
      groups.push(el('optgroup', { label: 'Example graphs' },
        this.examples.map((name) => el('option', { value: examplePrefix + name, text: `${name}.json` }))));
    }
    if (this.upload) {
      groups.push(el('optgroup', { label: 'Your file' },
        el('option', { value: uploadValue, text: `${this.upload.imported ? 'Imported' : 'Uploaded'}: ${this.upload.fileName}` })));
    }
    this.#ui.select.replaceChildren(...groups);
    this.#sync();
  }

  /** Reflects the current source in the select, the batch and sequence fields and the hint. */
  #sync() {
    const source = this.current;
    const ui = this.#ui;
    if (!source) return;
    ui.select.value = source.kind === 'model' ? source.name
      : source.kind === 'example' ? examplePrefix + source.name : uploadValue;
    const isModel = source.kind === 'model';
    const imported = source.imported;
    const config = imported?.config;
    ui.batch.disabled = !isModel && !imported;
    ui.batch.title = isModel ? ''
      : config ? 'Sequences per training step: a new value imports the config again'
        : imported ? 'The leading dimension of the model\'s first input: a new value imports the model again'
          : 'A graph file sets its own batch size: the leading dimension of its first input';
    if (imported) {
      if (imported.batch) ui.batch.value = imported.batch;
    } else if (!isModel) {
      // The greyed field shows the file's batch, not the previous model's.
      if (source.batch === undefined) source.batch = graphBatch(source.text);
      ui.batch.value = source.batch ?? '';
    }
    // The sequence length: a built-in network's that has one, an imported config's.
    const seqApplies = this.hasSeq(source) || Boolean(config && imported.seq);
    ui.seqField.hidden = !seqApplies;
    ui.seq.disabled = !seqApplies;
    ui.seq.title = config ? 'Tokens per sequence: a new value imports the config again' : '';
    if (config) ui.seq.value = imported.seq;
    if (isModel) {
      const info = this.modelInfo(source.name);
      const parameters = Number.isFinite(info?.parameters) ? ` ${formatCount(info.parameters)} parameters.` : '';
      ui.description.textContent = info?.description ? `${info.description}.${parameters}` : '';
    } else if (source.kind === 'example') {
      ui.description.textContent = 'An example pase-graph/1 file shipped with the planner.';
    } else if (source.imported) {
      ui.description.textContent = `Planning the graph imported from ${source.fileName}. Choose another model to leave it.`;
    } else {
      ui.description.textContent = `Planning the graph in ${source.fileName}. Choose another model to leave it.`;
    }
    if (source.imported) renderImported(ui.imported, source.fileName, source.imported);
    else ui.imported.hidden = true;
  }

  /**
   * The select's new choice becomes the source; an example graph once it is
   * fetched (the pending choice until then). The status line says what is
   * chosen, replacing what it said about an earlier choice.
   */
  async #chooseFromSelect() {
    const ui = this.#ui;
    const value = ui.select.value;
    const choice = this.#newChoice();
    this.#files.closeDimsForm();
    this.#hooks.onStale();
    if (value === uploadValue && this.upload) {
      this.current = { kind: 'upload', ...this.upload };
    } else if (value.startsWith(examplePrefix)) {
      const name = value.slice(examplePrefix.length);
      const outcome = await this.#track(`${name}.json`, (async () => {
        let text;
        try {
          text = await fetchExample(name);
        } catch (e) {
          if (choice !== this.#choice) return 'superseded';
          this.#hooks.errors.show('Could not load the example', e.message);
          this.#hooks.setStatus(`${name}.json was not loaded.`);
          this.#setRefused({ name: `${name}.json`, verb: 'loaded', error: this.#hooks.errors.shown, asked: false });
          this.#sync();
          return 'refused';
        }
        if (choice !== this.#choice) return 'superseded';
        this.current = { kind: 'example', name, text };
        return 'loaded';
      })());
      if (outcome !== 'loaded') return;
    } else {
      this.current = { kind: 'model', name: value };
      const info = this.modelInfo(value);
      if (info) ui.batch.value = info.default_batch;
      ui.seq.value = info?.default_seq ?? '';
    }
    this.#sync();
    this.#hooks.onChange();
    this.#hooks.setStatus(`${this.label()} chosen. Press Plan to plan it.`);
  }
}
