// The graph to plan: a built-in network (with the batch size field, and the
// sequence length field for a network with a sequence), an example graph
// shipped with the site, or a file the user uploads or drops anywhere on the
// page: a pase-graph/1 document, or a model file that the module imports to
// one (an ONNX model, or a Hugging Face config.json of a language model).
//
// This module owns the Model select, whether the batch and sequence fields
// apply, the hint under the select, the file input, the drop target, the
// summary of an imported model and the form asking for its dynamic
// dimensions. A graph document becomes the source only once it has passed
// the size check, JSON.parse and the module's validate(); a model file once
// the module has imported it (in the worker, which reads the file in slices:
// no size limit for ONNX). Until then the previous source stays.

import { el } from './views/dom.js';
import { formatCount, formatParameters } from './format.js';
import { fileKind, importName, jsonKind, sniffBytes } from './model-file.js';
import { parametersText, renderDimsForm, renderImported } from './views/imported.js';

export const defaultModel = 'alexnet';
// Graph documents beyond this are refused before reading: the benchmark
// networks export to well under 1 MB, so anything this large is not a graph
// worth planning here. ONNX files have no limit: they are never read whole
// (an imported ResNet-50 is a graph document of about 10 kB).
export const maxFileBytes = 32 * 1024 * 1024;
const uploadValue = 'upload';
const examplePrefix = 'example:';

/** "AlexNet: 5 conv + 3 FC layers" -> "AlexNet" */
function displayName(model) {
  return model.description?.split(':')[0] || model.name;
}

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

export class GraphSource {
  /** [{name, description, default_batch, default_seq, llm, parameters, ...}] from the module */
  models = [];
  /** file names under examples/, without ".json" */
  examples = [];
  /** @type {Source|null} what Plan plans */
  current = null;
  /** the last uploaded graph, kept selectable: {fileName, text, imported?} */
  upload = null;
  #ui;
  #hooks;
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
   * @param {() => void} hooks.onNewGraph a file is about to be checked: work on the old graph is moot
   * @param {() => void} hooks.onStale the results no longer answer the form
   * @param {() => void} hooks.onChange the source changed (the URL follows it)
   * @param {() => void} hooks.onImported a model file was imported and is the source: plan it
   */
  constructor(ui, hooks) {
    this.#ui = ui;
    this.#hooks = hooks;
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

  /** Listens to the select, the file input and drops on the window. */
  wire() {
    const ui = this.#ui;
    ui.select.addEventListener('change', () => this.#chooseFromSelect());
    // An imported model's batch is the leading dimension of its first input
    // (a config's sequences per step), its sequence length a config's tokens
    // per sequence: a new value imports the file again with it (the CLI's
    // --batch and --seq). The other size stays as it was.
    for (const [field, size] of [[ui.batch, 'batch'], [ui.seq, 'seq']]) {
      field.addEventListener('change', () => {
        const imported = this.current?.imported;
        const value = Number(field.value);
        if (!imported || (size === 'seq' && !imported.config)) return;
        if (!Number.isInteger(value) || value < 1 || value === imported[size]) return;
        const { kind, dims, batch, seq } = imported;
        const choice = ++this.#choice;
        this.#track(imported.file.name,
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

  /** The select when the module failed to load. */
  showUnavailable() {
    this.#ui.select.replaceChildren(el('option', { text: 'Planner unavailable' }));
  }

  /**
   * Checks a file and, if it is a valid graph, makes it the source; a model
   * file (ONNX, or a JSON document that is a Hugging Face config) is
   * imported instead. Every refusal is shown in the error box and the status
   * line ("x.json was not loaded.") and leaves the source as it was. Until
   * it is done the file is the pending choice (`pending`). Resolves to the
   * outcome (see #pending).
   */
  async accept(file) {
    if (!file) return 'refused';
    // A file dropped while the module loads is checked once it is there.
    if (!(await this.#hooks.ready)) return 'refused';
    const choice = ++this.#choice;
    return this.#track(file.name, this.#accept(file, choice));
  }

  async #accept(file, choice) {
    const { errors, setStatus } = this.#hooks;
    errors.clear();
    this.#closeDimsForm();
    const refuse = (title, message) => {
      errors.show(title, message);
      setStatus(`${file.name} was not loaded.`);
      return 'refused';
    };
    setStatus(`Reading ${file.name}…`);
    let prefix;
    try {
      prefix = new Uint8Array(await file.slice(0, sniffBytes).arrayBuffer());
    } catch (e) {
      return choice === this.#choice ? refuse(`Could not read ${file.name}`, e.message) : 'superseded';
    }
    if (choice !== this.#choice) return 'superseded';
    if (fileKind(file.name, prefix) === 'onnx') return this.#importModel(file, choice, { kind: 'onnx' });
    if (file.size > maxFileBytes) {
      return refuse('Graph file too big', `${file.name} is ${(file.size / 2 ** 20).toFixed(1)} MiB; the limit is ${maxFileBytes / 2 ** 20} MiB`);
    }
    let text;
    try {
      text = await file.text();
    } catch (e) {
      return choice === this.#choice ? refuse(`Could not read ${file.name}`, e.message) : 'superseded';
    }
    if (choice !== this.#choice) return 'superseded';
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
    this.#hooks.onNewGraph();
    setStatus(`Checking ${file.name}…`);
    try {
      await this.#hooks.validate(text);
    } catch (e) {
      if (choice !== this.#choice) return 'superseded';
      if (e.kind === 'cancelled') {
        // Only a newer choice cancels a check (onNewGraph stops plans, not
        // checks); say so rather than leave "Checking" on the status line.
        setStatus(`${file.name} was not loaded: the check was cancelled.`);
        return 'refused';
      }
      errors.showPlannerError(e, { file: file.name });
      setStatus(`${file.name} was not loaded.`);
      return 'refused';
    }
    if (choice !== this.#choice) return 'superseded';
    this.upload = { fileName: file.name, text, batch: graphBatch(text) };
    this.current = { kind: 'upload', ...this.upload };
    this.#fill();
    this.#hooks.onStale();
    this.#hooks.onChange();
    setStatus(`Loaded ${file.name}. Press Plan to plan it.`);
    return 'loaded';
  }

  /**
   * Imports the model file `file`, an ONNX model or a Hugging Face config
   * (`kind`), with the sizes `dims` ({name: size}) for an ONNX model's
   * dynamic dimensions. Sizes still missing are asked for in the dims form,
   * which imports again with them; any other refusal is shown in the error
   * box. The imported graph becomes the source like an uploaded one, unless
   * another choice (`#choice` is no longer `choice`) came meanwhile, and is
   * planned. `batch`, when given, sets the first input's leading dimension
   * (a config's sequences per step), `seq` a config's sequence length. The
   * graph is named after the file, as in the CLI; a config.json after its
   * model type (importName()). Resolves to the outcome (see #pending).
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
      if (choice !== this.#choice) return 'superseded';
      if (e.kind === 'cancelled') {
        setStatus(`${file.name} was not imported: the import was cancelled.`);
        return 'refused';
      }
      if (e.missingDims?.length) {
        this.#askDims(file, e.missingDims, dims, batch);
        setStatus(`${file.name} has dynamic dimensions: give their sizes to import it.`);
        return 'asked';
      }
      if (e.kind === 'module') errors.showPlannerError(e);
      else errors.show(`Could not import ${file.name}`, e.message, e.where);
      setStatus(`${file.name} was not imported.`);
      return 'refused';
    }
    if (choice !== this.#choice) return 'superseded';
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
    this.upload = { fileName: file.name, text: JSON.stringify(result.graph), imported };
    this.current = { kind: 'upload', ...this.upload };
    this.#fill();
    this.#hooks.onStale();
    this.#hooks.onChange();
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
        this.#closeDimsForm();
        const choice = ++this.#choice;
        this.#track(file.name, this.#importModel(file, choice, { kind: 'onnx', dims: { ...given, ...values }, batch }));
      },
      onCancel: () => {
        this.#closeDimsForm();
        this.#hooks.setStatus(`${file.name} was not imported.`);
      },
    });
  }

  #closeDimsForm() {
    this.#ui.dimsForm.hidden = true;
    this.#ui.dimsForm.replaceChildren();
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
    const choice = ++this.#choice;
    this.#closeDimsForm();
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
