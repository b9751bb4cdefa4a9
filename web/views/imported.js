// An imported model in the Network panel: its parameter count, a config's
// hyper-parameters and its layers (op and output shape of each), and the
// form that asks for the sizes of the dynamic dimensions a model file leaves
// open.

import { formatCount } from '../format.js';
import { configSummary, defaultDimValue, formatShape, parseDimValue } from '../model-file.js';
import { el } from './dom.js';

// Larger models list their first layers only: the list is an overview, and
// thousands of rows would slow the panel down.
const maxListedLayers = 2000;

/**
 * @typedef {{parameters: number, layers: {name: string, op: string, outputs: number[][]}[],
 *            dynamicDims: {name: string, input: string, value: number}[],
 *            config: object|null, batch: number|null, seq: number|null}} Imported
 *   `config`: the hyper-parameters of an imported Hugging Face config (the
 *   import result's "config"), null for an ONNX model
 */

/** "25,557,032 parameters" */
export function parametersText(count) {
  return `${formatCount(count)} parameter${count === 1 ? '' : 's'}`;
}

/**
 * The summary of the model imported from `fileName` into `container`: the
 * parameter count, a config's hyper-parameters and the sizes it was imported
 * at, the dynamic dimensions' values and the layer list.
 * @param {HTMLElement} container
 * @param {string} fileName
 * @param {Imported} imported
 */
export function renderImported(container, fileName, imported) {
  const { layers, dynamicDims, config } = imported;
  const listed = layers.slice(0, maxListedLayers);
  const items = listed.map((layer, i) => el('li', { dataset: { layer: i } }, [
    el('span', { class: 'imported-layer-name', text: layer.name, title: layer.name }),
    el('span', { class: 'imported-layer-op', text: `${layer.op} → ${layer.outputs.map(formatShape).join(', ')}` }),
  ]));
  // In one el() call, which skips the null of a model without dynamic
  // dimensions (replaceChildren() would write it out as text).
  container.replaceChildren(el('div', {}, [
    el('p', { class: 'imported-title' }, [el('strong', { text: fileName })]),
    el('p', { class: 'imported-parameters', text: parametersText(imported.parameters) }),
    config
      ? el('dl', { class: 'imported-config' }, configSummary(config).map(([label, value]) => [
        el('dt', { text: label }), el('dd', { text: value }),
      ]))
      : null,
    config
      ? el('p', { class: 'hint imported-sizes', text: `Planned for ${formatCount(imported.batch)} sequence${imported.batch === 1 ? '' : 's'} of ${formatCount(imported.seq)} tokens per step.` })
      : null,
    dynamicDims.length
      ? el('p', { class: 'hint imported-dims', text: dynamicDims.map((d) => `${d.name} = ${d.value}`).join(', ') })
      : null,
    el('details', { class: 'imported-layers' }, [
      el('summary', { text: `${formatCount(layers.length)} layer${layers.length === 1 ? '' : 's'}` }),
      el('ol', {}, items),
      layers.length > listed.length
        ? el('p', { class: 'hint', text: `… and ${formatCount(layers.length - listed.length)} more` })
        : null,
    ]),
  ]));
  container.hidden = false;
}

/**
 * Asks for the sizes of the dynamic dimensions `missing` of `fileName`, one
 * number field per dimension labelled with its name and input. `values`
 * holds sizes given before (by name), shown again. `onSubmit(dims)` receives
 * {name: size} for every field once all are positive whole numbers;
 * `onCancel()` when the user gives up.
 */
export function renderDimsForm(container, { fileName, missing, values = {}, onSubmit, onCancel }) {
  const fields = missing.map((dim, i) => {
    const id = `dim-${i}`;
    const input = el('input', {
      id,
      type: 'number',
      min: 1,
      step: 1,
      inputmode: 'numeric',
      required: true,
      value: values[dim.name] ?? defaultDimValue(dim.name),
      dataset: { dim: dim.name },
    });
    input.addEventListener('input', () => input.removeAttribute('aria-invalid'));
    return {
      dim,
      input,
      nodes: [
        el('label', { for: id }, [el('code', { text: dim.name }), el('span', { class: 'muted', text: ` of input ${dim.input}` })]),
        input,
      ],
    };
  });
  const submit = (event) => {
    event.preventDefault();
    const dims = {};
    let firstBad = null;
    for (const { dim, input } of fields) {
      const value = parseDimValue(input.value);
      if (value === null) {
        input.setAttribute('aria-invalid', 'true');
        firstBad ??= input;
      } else {
        dims[dim.name] = value;
      }
    }
    if (firstBad) {
      firstBad.focus();
      return;
    }
    onSubmit(dims);
  };
  // novalidate: the fields are checked above, marked like the other fields
  // of the page, rather than by the browser's bubbles.
  const form = el('form', { class: 'dims-form', novalidate: true, 'aria-label': `Dynamic dimensions of ${fileName}`, onsubmit: submit }, [
    el('p', { class: 'hint' }, [
      el('strong', { text: fileName }),
      ` leaves ${missing.length === 1 ? 'a size' : 'sizes'} open. Give ${missing.length === 1 ? 'it' : 'them'} to import the model.`,
    ]),
    fields.map((f) => f.nodes),
    el('div', { class: 'run-buttons' }, [
      el('button', { type: 'submit', class: 'primary', text: 'Import' }),
      el('button', { type: 'button', text: 'Cancel', onclick: onCancel }),
    ]),
  ]);
  container.replaceChildren(form);
  container.hidden = false;
  fields[0]?.input.focus();
}
