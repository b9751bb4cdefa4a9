// The search options' pipeline fields (core/docs/pipeline.md): the number
// of stages and of micro-batches, each a positive whole number or "auto"
// (the planner searches it), and the schedule, 1F1B or GPipe. 1 and 1 (or
// the fields left empty) is the plan without a pipeline, and then the
// request carries no "pipeline" at all; the schedule alone asks for none.
//
// The fields are checked lightly here (a positive whole number or "auto",
// marked while typed and refused before planning); whether the stages divide
// the devices and the micro-batches the batch is the module's to say, and it
// says so at pipeline.stages or pipeline.microbatches, which the error box
// points back to these fields.

/**
 * A count field's text read: {value: 1 (empty), a positive integer or
 * 'auto'} or {error: what is wrong}.
 * @param {string} text
 */
export function parseCount(text) {
  const t = String(text ?? '').trim().toLowerCase();
  if (t === '') return { value: 1 };
  if (t === 'auto') return { value: 'auto' };
  if (/^\d+$/.test(t) && Number(t) >= 1 && Number.isSafeInteger(Number(t))) return { value: Number(t) };
  return { error: `must be a positive whole number or "auto", not "${String(text).trim()}"` };
}

/**
 * The request's "pipeline" object for the fields' texts, or null when there
 * is none (stages and micro-batches both 1, or a field is not valid: the
 * check before planning says so).
 * @param {{stages: string, microbatches: string, schedule: string}} fields
 */
export function pipelineRequest({ stages, microbatches, schedule }) {
  const s = parseCount(stages);
  const m = parseCount(microbatches);
  if (s.error || m.error || (s.value === 1 && m.value === 1)) return null;
  return { stages: s.value, microbatches: m.value, schedule: schedule === 'gpipe' ? 'gpipe' : '1f1b' };
}

export class PipelineOptions {
  #ui;

  /**
   * @param {{stages: HTMLInputElement, microbatches: HTMLInputElement, schedule: HTMLSelectElement}} ui
   */
  constructor(ui) {
    this.#ui = ui;
  }

  /** The controls, by the request field an error names. */
  get controls() {
    return {
      pipeline: this.#ui.stages,
      'pipeline.stages': this.#ui.stages,
      'pipeline.microbatches': this.#ui.microbatches,
      'pipeline.schedule': this.#ui.schedule,
    };
  }

  get inputs() {
    return [this.#ui.stages, this.#ui.microbatches, this.#ui.schedule];
  }

  #fields() {
    return { stages: this.#ui.stages.value, microbatches: this.#ui.microbatches.value, schedule: this.#ui.schedule.value };
  }

  /** The request's "pipeline", or null: no pipeline. */
  request() {
    return pipelineRequest(this.#fields());
  }

  /** The first field that is not a count or "auto": {message, where}, else null. */
  check() {
    for (const [where, input] of [['pipeline.stages', this.#ui.stages], ['pipeline.microbatches', this.#ui.microbatches]]) {
      const { error } = parseCount(input.value);
      if (error) return { message: error, where };
    }
    return null;
  }

  /** For the URL (url-state.js): the fields as typed, null when empty or the default. */
  pageState() {
    const text = (input) => {
      const t = input.value.trim();
      return t === '' || t === '1' ? null : t;
    };
    return {
      stages: text(this.#ui.stages),
      microbatches: text(this.#ui.microbatches),
      schedule: this.#ui.schedule.value === 'gpipe' ? 'gpipe' : null,
    };
  }

  /** Fills the fields from a URL's state; returns whether it set any. */
  restore(saved) {
    if (!saved) return false;
    if (saved.stages != null) this.#ui.stages.value = String(saved.stages);
    if (saved.microbatches != null) this.#ui.microbatches.value = String(saved.microbatches);
    if (saved.schedule === 'gpipe' || saved.schedule === '1f1b') this.#ui.schedule.value = saved.schedule;
    this.#markInvalid();
    return saved.stages != null || saved.microbatches != null || saved.schedule != null;
  }

  /** Marks a count field that is neither a positive whole number nor "auto" as it is typed. */
  #markInvalid() {
    for (const input of [this.#ui.stages, this.#ui.microbatches]) {
      if (parseCount(input.value).error) input.setAttribute('aria-invalid', 'true');
      else input.removeAttribute('aria-invalid');
    }
  }

  /** `onChange` after every edit; `onEnter` on Enter in a count field. */
  wire(onChange, onEnter) {
    for (const input of this.inputs) {
      input.addEventListener(input === this.#ui.schedule ? 'change' : 'input', () => {
        input.removeAttribute('aria-invalid');
        this.#markInvalid();
        onChange();
      });
    }
    for (const input of [this.#ui.stages, this.#ui.microbatches]) {
      input.addEventListener('keydown', (event) => {
        if (event.key === 'Enter') onEnter();
      });
    }
  }
}
