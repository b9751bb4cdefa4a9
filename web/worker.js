/* The planner worker: the one place where the WebAssembly module lives.
 *
 * A classic worker (not a module worker) because pase.js is a classic
 * -sMODULARIZE build that defines the global createPase().
 *
 * Protocol (planner-client.js is the other side):
 *   in:  {id, action, payload}
 *   out: {id, result} | {id, error: {message, where, missing_dims?}} | {id, progress}
 * Long work is cancelled by terminating this worker; it keeps no state that
 * would need cleaning up.
 */
'use strict';

let loadError = null;
try {
  importScripts('pase.js');
} catch (e) {
  loadError = e;
}

// Instantiated once; every request waits for it. A failure is kept and
// reported to each request, so the page shows it in its error box.
const ready = loadError
  ? Promise.reject(loadError)
  : createPase({
      // Without this, Emscripten prints aborts only to the console.
      printErr: (text) => console.warn('[pase]', text),
    });
ready.catch(() => {}); // reported per request below

/**
 * A File as the module's reader {size, read(offset, length)}: each read is a
 * slice read synchronously (FileReaderSync, workers only), so a model file of
 * any size is never in memory whole, only the windows the importer asks for.
 * A read that fails (the file changed or went away since it was chosen) is
 * kept in `failure` and rethrown; the module then reports the file as
 * unreadable.
 */
function fileSource(file) {
  const reader = new FileReaderSync();
  const source = {
    size: file.size,
    failure: null,
    read(offset, length) {
      try {
        return new Uint8Array(reader.readAsArrayBuffer(file.slice(offset, offset + length)));
      } catch (e) {
        source.failure = e;
        throw e;
      }
    },
  };
  return source;
}

/** payload: {file: File, options: the import options object}. */
function importModel(pase, { file, options }) {
  const source = fileSource(file);
  const text = pase.importModel(source, JSON.stringify(options ?? {}));
  if (!source.failure || !JSON.parse(text).error) return text;
  // The module can only say that a read failed; the browser says why.
  const reason = source.failure.message || source.failure.name || String(source.failure);
  return JSON.stringify({ error: { message: `${file.name} could not be read (${reason}); choose it again`, where: '' } });
}

const actions = {
  // payload: the request document as JSON text, passed through untouched so
  // the core sees exactly what the user gave.
  plan: (pase, payload, progress) => pase.plan(payload, progress),
  evaluate: (pase, payload) => pase.evaluate(payload),
  // payload: a plan request plus an optional "mcmc" object (compare.hpp).
  compare: (pase, payload) => pase.compare(payload),
  // payload: a pase-graph/1 document as JSON text; the answer is a summary
  // {ok, name, layers, vertices, edges, parameters}, or an error whose `where` is the
  // document's own field ("layers[2].filter").
  validate: (pase, payload) => pase.validate(payload),
  models: (pase) => pase.models(),
  // The GPU presets of the core (presets_to_json()): [{id, name, tflops,
  // memory_gib, gpus_per_node, intra_node_gbps, bandwidth_gbps}, ...].
  presets: (pase) => pase.presets(),
  // payload: {name, batch?, seq?}; 0 or absent: the network's default.
  exportModel: (pase, payload) => pase.exportModel(String(payload.name), Number(payload.batch ?? 0), Number(payload.seq ?? 0)),
  // payload: {file, options}, the file an ONNX model or a Hugging Face
  // config.json; the answer is import_model_json()'s document {graph,
  // parameters, layers, format, dynamic_dims, layer_outputs; for a config
  // also config, batch, seq}, or an error with the missing dynamic
  // dimensions (missing_dims) when sizes are needed.
  importModel,
  // version() is plain text, not JSON.
  version: (pase) => JSON.stringify(pase.version()),
};

self.onmessage = async (event) => {
  const { id, action, payload } = event.data;
  let pase;
  try {
    pase = await ready;
  } catch (e) {
    const detail = e && e.message ? e.message : String(e);
    self.postMessage({ id, error: { message: `the planner module failed to load: ${detail}`, where: 'module' } });
    return;
  }
  const run = actions[action];
  if (!run) {
    self.postMessage({ id, error: { message: `unknown action '${action}'`, where: 'action' } });
    return;
  }
  try {
    const text = run(pase, payload, (fraction) => self.postMessage({ id, progress: fraction }));
    const doc = JSON.parse(text);
    if (doc && typeof doc === 'object' && !Array.isArray(doc) && doc.error) {
      // An import's error may list the dynamic dimensions it needs.
      self.postMessage({ id, error: doc.missing_dims ? { ...doc.error, missing_dims: doc.missing_dims } : doc.error });
    } else {
      self.postMessage({ id, result: doc });
    }
  } catch (e) {
    // Only an abort of the module lands here (the bindings return errors as
    // documents); after an abort the module is unusable, so say so.
    const detail = e && e.message ? e.message : String(e);
    self.postMessage({ id, error: { message: `the planner module stopped: ${detail}`, where: 'module' } });
  }
};
