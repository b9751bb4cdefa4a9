// Request/response calls to the planner worker (worker.js).
//
// Each call() gets a fresh id and a promise; the worker answers with
// {id, result}, {id, error} or, while planning, {id, progress, phase,
// secondsLeft, note, gap} (onProgress(fraction, {phase, secondsLeft, note,
// gap}): gap, the proven gap of the best plan so far, or null). The actions
// are those of worker.js: plan, evaluate and estimate (a request's JSON text), compare
// (the same plus an optional "mcmc" object; no progress), validate (a graph
// document's JSON text), models, presets, version, mode (the module the
// worker runs: {threads, threaded, isolated, text}), exportModel ({name,
// batch, seq}) and importModel ({file, options}: a File, ONNX or
// config.json, read by the worker in slices).
// There is no way to interrupt WebAssembly that is busy computing, so
// restart() terminates the worker and starts a new one; calls still in flight
// reject with a PlannerError of kind 'cancelled'. On a cross-origin isolated
// page a plan can be stopped instead (canStop, stop()): the client shares a
// flag in a SharedArrayBuffer with the worker (its shareStopFlag action), the
// plan's progress reads it, and the search ends as at a time limit, its call
// resolving with the best plan found ("stopped": "cancelled").

export class PlannerError extends Error {
  /**
   * @param {string} message what is wrong
   * @param {string} where field path into the request ("cluster.devices"), or ''
   * @param {'input'|'module'|'cancelled'} kind
   * @param {{name: string, input: string}[]} [missingDims] an import's dynamic
   *   dimensions without a size (the error document's missing_dims)
   */
  constructor(message, where = '', kind = 'input', missingDims = undefined) {
    super(message);
    this.name = 'PlannerError';
    this.where = where;
    this.kind = kind;
    this.missingDims = missingDims;
  }
}

// The actions whose payload is a JSON document (worker.js passes it to the
// module as text).
const documentActions = new Set(['plan', 'evaluate', 'estimate', 'compare', 'layouts', 'validate']);

export class PlannerClient {
  #workerUrl;
  #worker = null;
  #nextId = 1;
  #pending = new Map(); // id -> {resolve, reject, onProgress, action}
  #stopFlag = null; // Int32Array over a SharedArrayBuffer, or null

  /**
   * @param {string|URL} [workerUrl] the worker script, worker.js; left out,
   *   the one next to this file (the page's own, or the npm package's)
   */
  constructor(workerUrl = new URL('worker.js', import.meta.url)) {
    this.#workerUrl = workerUrl;
    this.#start();
  }

  /** Number of calls not yet answered. */
  get pendingCount() {
    return this.#pending.size;
  }

  /**
   * Sends one request. Resolves with the parsed result document; rejects with
   * a PlannerError carrying the module's {message, where}. The request of an
   * action that takes a document (plan, evaluate, estimate, compare, layouts,
   * validate) is its JSON text, or an object, sent as its JSON text.
   */
  call(action, payload, { onProgress } = {}) {
    if (documentActions.has(action) && payload !== null && typeof payload === 'object') payload = JSON.stringify(payload);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress, action });
      this.#worker.postMessage({ id, action, payload });
    });
  }

  /** Whether stop() can end a plan with its best found (a cross-origin
   *  isolated page); else only restart() ends it. */
  get canStop() {
    return this.#stopFlag !== null;
  }

  /** Stops the latest plan in flight as a time limit would: its call
   *  resolves with the best plan found. False when none can be stopped. */
  stop() {
    if (!this.#stopFlag) return false;
    const plans = [...this.#pending].filter(([, entry]) => entry.action === 'plan').map(([id]) => id);
    if (plans.length === 0) return false;
    Atomics.store(this.#stopFlag, 0, Math.max(...plans));
    return true;
  }

  /** Abandons all calls in flight and starts a fresh worker. */
  restart() {
    this.#worker.terminate();
    this.#failAll(new PlannerError('cancelled', '', 'cancelled'));
    this.#start();
  }

  #start() {
    const worker = new Worker(this.#workerUrl);
    // Messages or errors from a worker that has been replaced are late
    // answers to abandoned calls: ignore them.
    worker.onmessage = (event) => {
      if (worker === this.#worker) this.#receive(event.data);
    };
    worker.onerror = (event) => {
      if (worker !== this.#worker) return;
      event.preventDefault();
      const detail = event.message ? `: ${event.message}` : '';
      this.#failAll(new PlannerError(`the planner worker failed${detail}`, 'module', 'module'));
    };
    this.#worker = worker;
    // A flag of its own per worker: a stop never reaches a later worker.
    this.#stopFlag = null;
    if (globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer === 'function') {
      const shared = new SharedArrayBuffer(4);
      this.#stopFlag = new Int32Array(shared);
      worker.postMessage({ id: 0, action: 'shareStopFlag', payload: shared });
    }
  }

  #receive(message) {
    const entry = this.#pending.get(message.id);
    if (!entry) return;
    if ('progress' in message) {
      entry.onProgress?.(message.progress, {
        phase: message.phase ?? '',
        secondsLeft: message.secondsLeft ?? null,
        note: message.note ?? '',
        gap: message.gap ?? null,
      });
      return;
    }
    this.#pending.delete(message.id);
    if ('error' in message) {
      const { message: text = 'unknown error', where = '', missing_dims: missingDims } = message.error ?? {};
      entry.reject(new PlannerError(text, where, where === 'module' ? 'module' : 'input', missingDims));
    } else {
      entry.resolve(message.result);
    }
  }

  #failAll(error) {
    const entries = [...this.#pending.values()];
    this.#pending.clear();
    for (const entry of entries) entry.reject(error);
  }
}
