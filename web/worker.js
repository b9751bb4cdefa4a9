/* The planner worker: the one place where the WebAssembly module lives.
 *
 * A classic worker (not a module worker) because pase.js and pase-mt.js are
 * classic -sMODULARIZE builds that define the globals createPase() and
 * createPaseThreaded().
 *
 * Two modules, one chosen here. On a cross-origin isolated page (served with
 * Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy:
 * require-corp), SharedArrayBuffer exists and the threaded module pase-mt.js
 * runs the search on every core (at most 8), its threads being workers of
 * this worker. Elsewhere, or when the threaded module fails to load, pase.js
 * runs it on one thread. The `mode` action says which, and why.
 *
 * Protocol (planner-client.js is the other side):
 *   in:  {id, action, payload}
 *   out: {id, result} | {id, error: {message, where, missing_dims?}}
 *     | {id, progress, phase, secondsLeft, note, gap} (the request's fraction done, never lower
 *       than before; what runs now; the time left, null until it is estimated; a note on
 *       a long search ahead, '' when none)
 * Long work is cancelled by terminating this worker, which ends its thread
 * workers too; it keeps no state that would need cleaning up. A plan on a
 * cross-origin isolated page is stopped instead, through the stop flag
 * (shareStopFlag below), and answers with the best plan found.
 */
'use strict';

const printErr = (text) => console.warn('[pase]', text);

/**
 * pase-mt.js, instantiated; rejects when its script, its .wasm or one of its
 * thread workers fails to load. Emscripten reports a thread worker's failure
 * by throwing from that worker's onerror handler, which reaches this scope's
 * error event: caught there while loading, and the workers already started
 * are ended.
 */
function loadThreaded() {
  return new Promise((resolve, reject) => {
    const moduleArg = {
      printErr,
      // A classic worker has no document.currentScript, so the thread
      // workers are told where the module's script is.
      mainScriptUrlOrBlob: new URL('pase-mt.js', self.location.href).href,
    };
    const onError = (event) => {
      event.preventDefault();
      fail(new Error(event.message || 'a thread worker failed to load'));
    };
    const fail = (e) => {
      self.removeEventListener('error', onError);
      try {
        moduleArg.PThread?.terminateAllThreads();
      } catch {
        // Nothing was started.
      }
      reject(e);
    };
    self.addEventListener('error', onError);
    try {
      importScripts('pase-mt.js');
    } catch (e) {
      fail(e);
      return;
    }
    createPaseThreaded(moduleArg).then((pase) => {
      self.removeEventListener('error', onError);
      resolve(pase);
    }, fail);
  });
}

/** pase.js, instantiated. */
function loadSingle() {
  importScripts('pase.js');
  // Without printErr, Emscripten prints aborts only to the console.
  return createPase({ printErr });
}

const errorText = (e) => (e && e.message ? e.message : String(e));

/**
 * The module and the mode {threads, threaded, isolated, text}: threads, what
 * a plan uses by default; text, a line for the page.
 */
async function load() {
  const isolated = self.crossOriginIsolated === true && typeof SharedArrayBuffer === 'function';
  let why = 'the page is not cross-origin isolated';
  if (isolated) {
    try {
      const pase = await loadThreaded();
      const threads = pase.defaultThreads();
      const text = threads > 1 ? `Search on ${threads} threads` : 'Search on one thread: the browser reports one core';
      return { pase, mode: { threads, threaded: true, isolated, text } };
    } catch (e) {
      why = `the threaded module failed to load (${errorText(e)})`;
      printErr(`one thread: ${why}`);
    }
  }
  const pase = await loadSingle();
  return { pase, mode: { threads: 1, threaded: false, isolated, text: `Search on one thread: ${why}` } };
}

// Loaded once; every request waits for it. A failure is kept and reported
// to each request, so the page shows it in its error box.
const ready = load();
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

// The stop flag the client shares on a cross-origin isolated page
// (planner-client.js, stop()): an Int32Array over a SharedArrayBuffer whose
// entry 0 holds the id of the plan to stop. The plan's progress reads it and
// answers the module true for a stop: the search ends as at a time limit,
// with the best plan found (the bindings' plan()).
let stopFlag = null;

const actions = {
  // payload: the request document as JSON text, passed through untouched so
  // the core sees exactly what the user gave.
  plan: (pase, payload, progress, mode, id) =>
    pase.plan(payload, (...report) => {
      progress(...report);
      return stopFlag !== null && Atomics.load(stopFlag, 0) === id;
    }),
  // payload: a SharedArrayBuffer of 4 bytes, the stop flag above.
  shareStopFlag: (pase, payload) => {
    stopFlag = new Int32Array(payload);
    return 'true';
  },
  evaluate: (pase, payload) => pase.evaluate(payload),
  // payload: a layouts request (json_api.hpp, layouts_json()): the ranked layouts.
  layouts: (pase, payload, progress) => pase.layouts(payload, (fraction) => progress(fraction, 'ranking layouts')),
  // payload: a plan request; the size of its search, not run (estimate_json()).
  estimate: (pase, payload) => pase.estimate(payload),
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
  // {threads, threaded, isolated, text}: see load().
  mode: (pase, payload, progress, mode) => JSON.stringify(mode),
};

self.onmessage = async (event) => {
  const { id, action, payload } = event.data;
  let pase, mode;
  try {
    ({ pase, mode } = await ready);
  } catch (e) {
    self.postMessage({ id, error: { message: `the planner module failed to load: ${errorText(e)}`, where: 'module' } });
    return;
  }
  const run = actions[action];
  if (!run) {
    self.postMessage({ id, error: { message: `unknown action '${action}'`, where: 'action' } });
    return;
  }
  try {
    const progress = (fraction, phase = '', secondsLeft = null, note = '', gap = null) =>
      self.postMessage({ id, progress: fraction, phase, secondsLeft, note, gap });
    const text = run(pase, payload, progress, mode, id);
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
    self.postMessage({ id, error: { message: `the planner module stopped: ${errorText(e)}`, where: 'module' } });
  }
};
