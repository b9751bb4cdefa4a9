// importModel(source, optionsJson) of the built module: the committed ONNX
// fixtures (tests/data/onnx/) from bytes and through a reader {size, read},
// the imported graph planned with plan(), and every kind of bad input as an
// error document, after which the module keeps working.
//
//   node --test tests/wasm/import.test.mjs
//
// PASE_SITE overrides the site folder (default build-wasm/site).

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadModule, repo } from './load-module.mjs';
import { dynamicOnnxModel, onnxBytes, onnxModel, onnxModels } from './onnx-fixtures.mjs';

let pase;

before(async () => {
  pase = await loadModule();
});

// ---- Helpers --------------------------------------------------------------------

function importModel(...args) {
  return JSON.parse(pase.importModel(...args));
}

/** A reader over `bytes` that records its reads: [[offset, length], ...]. */
function reader(bytes, reads = []) {
  return {
    size: bytes.length,
    read(offset, length) {
      reads.push([offset, length]);
      return bytes.subarray(offset, offset + length);
    },
  };
}

/** An error document (with missing_dims when `missing`) whose `where` is `where`. */
function assertError(doc, where, { missing = false } = {}) {
  assert.ok(doc && typeof doc === 'object' && doc.error, `expected an error document, got ${JSON.stringify(doc).slice(0, 200)}`);
  assert.deepEqual(Object.keys(doc), missing ? ['error', 'missing_dims'] : ['error']);
  assert.equal(typeof doc.error.message, 'string');
  assert.ok(doc.error.message.length > 0, 'the message must say what is wrong');
  assert.ok(doc.error.message.length < 1000, 'a message, not a dump of the input');
  if (where instanceof RegExp) assert.match(doc.error.where, where);
  else if (where !== undefined) assert.equal(doc.error.where, where);
}

function assertImported(doc, file) {
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  assert.deepEqual(Object.keys(doc), ['graph', 'parameters', 'layers', 'format', 'dynamic_dims', 'layer_outputs']);
  assert.equal(doc.format, 'onnx');
  assert.equal(doc.graph.format, 'pase-graph/1');
  assert.equal(doc.layers, doc.graph.layers.length);
  assert.equal(doc.layer_outputs.length, doc.layers);
  assert.ok(Number.isSafeInteger(doc.parameters) && doc.parameters >= 0);
  assert.equal(doc.parameters, onnxModel(file).expected_parameters, `${file}: parameters`);
  assert.equal(doc.graph.parameters, doc.parameters);
}

// ---- Bad input first: error documents, never an exception --------------------------

test('importModel: garbage, empty and JSON bytes are refused', () => {
  for (const bytes of [new Uint8Array(), new TextEncoder().encode('garbage, not a model'), new Uint8Array(4096).fill(0xff),
    new TextEncoder().encode('{"format": "pase-graph/1", "layers": []}')]) {
    assertError(importModel(bytes));
  }
});

test('importModel: a truncated file is refused', () => {
  const bytes = onnxBytes('resnet50.onnx');
  for (const keep of [1, 16, bytes.length >> 2, bytes.length >> 1, bytes.length - 1]) {
    assertError(importModel(bytes.subarray(0, keep)), undefined);
    assertError(importModel(reader(bytes.subarray(0, keep))), undefined);
  }
});

test('importModel: bad options name the option, before the file is read', () => {
  const garbage = new Uint8Array([1, 2, 3]);
  assertError(importModel(garbage, '{'), 'options');
  assertError(importModel(garbage, '[8]'), 'options');
  assertError(importModel(garbage, JSON.stringify({ dim: { batch: 8 } })), 'dim');
  assertError(importModel(garbage, JSON.stringify({ dims: { batch: 0 } })), 'dims.batch');
  assertError(importModel(garbage, JSON.stringify({ dims: { batch: 1.5 } })), 'dims.batch');
  assertError(importModel(garbage, JSON.stringify({ dims: [8] })), 'dims');
  assertError(importModel(garbage, JSON.stringify({ batch: -1 })), 'batch');
  assertError(importModel(garbage, JSON.stringify({ name: '' })), 'name');
  // Options must be JSON text, not an object.
  assertError(importModel(garbage, { dims: { batch: 8 } }), 'options');
  assertError(importModel(garbage, 8), 'options');
});

test('importModel: a source that is neither bytes nor a reader is refused', () => {
  for (const source of [undefined, null, 42, 'model.onnx', [1, 2, 3], {}, { size: 10 }, { read: () => new Uint8Array() }]) {
    assertError(importModel(source), /^source/);
  }
  for (const size of [-1, 1.5, NaN, Infinity, '10', 2 ** 60]) {
    assertError(importModel({ size, read: () => new Uint8Array() }), 'source.size');
  }
});

// Every case of tests/invalid/<kind>/cases.json (tests/invalid/README.md),
// from bytes and from a reader, with the case's seq when it has one.
function checkCorpus(kind) {
  const dir = path.join(repo, 'tests/invalid', kind);
  const { cases } = JSON.parse(readFileSync(path.join(dir, 'cases.json'), 'utf8'));
  assert.ok(cases.length >= 10);
  for (const c of cases) {
    const buffer = readFileSync(path.join(dir, c.file));
    const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    const options = c.seq ? JSON.stringify({ seq: c.seq }) : '{}';
    for (const source of [bytes, reader(bytes)]) {
      const doc = importModel(source, options);
      // A dynamic dimension without a size also lists what to ask for.
      assertError(doc, c.where, { missing: c.where.startsWith('dims.') });
      assert.ok(doc.error.message.includes(c.message), `${c.name}: ${JSON.stringify(doc.error.message)} lacks ${JSON.stringify(c.message)}`);
    }
  }
}

test('importModel: every invalid model of tests/invalid/models is refused with its place and message', () => {
  checkCorpus('models');
});

test('importModel: every config of tests/invalid/configs is refused with its place and message', () => {
  checkCorpus('configs');
});

test('importModel: a reader that throws or returns the wrong bytes fails the import, not the module', () => {
  const bytes = onnxBytes('resnet50.onnx');
  const bad = [
    () => { throw new Error('the file changed on disk'); },
    () => 'not bytes',
    () => null,
    (offset, length) => bytes.subarray(offset, offset + length - 1), // short
    (offset, length) => new Uint8Array(length + 1), // long
    (offset, length) => new Int8Array(length),
  ];
  for (const read of bad) assertError(importModel({ size: bytes.length, read }), undefined);
  // A size larger than the file: the reads past its end fail.
  assertError(importModel({ size: bytes.length * 2, read: (o, l) => bytes.subarray(o, o + l) }));
  assertImported(importModel(bytes), 'resnet50.onnx');
});

// ---- Imports --------------------------------------------------------------------

test('importModel: resnet50 from bytes imports to a graph that plans', () => {
  const doc = importModel(onnxBytes('resnet50.onnx'));
  assertImported(doc, 'resnet50.onnx');
  assert.deepEqual(doc.dynamic_dims, []);
  const planned = JSON.parse(pase.plan(JSON.stringify({ graph: doc.graph, cluster: { devices: 4 } })));
  assert.equal(planned.error, undefined, JSON.stringify(planned.error));
  assert.ok(planned.cost > 0);
  // The graph is what validate() accepts too (the page's check of a graph file).
  const summary = JSON.parse(pase.validate(JSON.stringify(doc.graph)));
  assert.equal(summary.layers, doc.layers);
});

test('importModel: a reader gives what the bytes give, reading inside the file', () => {
  for (const { file } of onnxModels().filter((m) => !m.dynamic_dims?.length)) {
    const bytes = onnxBytes(file);
    const reads = [];
    const fromReader = importModel(reader(bytes, reads));
    assertImported(fromReader, file);
    assert.deepEqual(fromReader, importModel(bytes), `${file}: reader and bytes agree`);
    assert.ok(reads.length > 0);
    for (const [offset, length] of reads) {
      assert.ok(Number.isSafeInteger(offset) && Number.isSafeInteger(length) && offset >= 0 && offset + length <= bytes.length,
        `${file}: read(${offset}, ${length}) inside ${bytes.length} bytes`);
    }
  }
});

test('importModel: a 550 MB file through a reader reads a few windows, not the file', () => {
  // resnet50.onnx followed by 550 MB of a field the ModelProto does not know
  // (field 1000, length-delimited: what weights look like to the reader),
  // made up on the fly: the file is never in memory.
  const bytes = onnxBytes('resnet50.onnx');
  const padding = 550 * 1024 * 1024;
  const varint = (n) => {
    const out = [];
    for (; n >= 0x80; n = Math.floor(n / 0x80)) out.push((n % 0x80) | 0x80);
    out.push(n);
    return out;
  };
  const head = new Uint8Array([...bytes, ...varint((1000 << 3) | 2), ...varint(padding)]);
  const size = head.length + padding;
  let read = 0;
  const source = {
    size,
    read(offset, length) {
      assert.ok(offset >= 0 && offset + length <= size, `read(${offset}, ${length}) inside ${size} bytes`);
      read += length;
      const out = new Uint8Array(length);
      if (offset < head.length) out.set(head.subarray(offset, Math.min(head.length, offset + length)));
      return out;
    },
  };
  const doc = importModel(source);
  assertImported(doc, 'resnet50.onnx');
  assert.equal(doc.parameters, importModel(bytes).parameters);
  assert.ok(read < 1024 * 1024, `${read} bytes read of ${size}`);
});

test('importModel: an ArrayBuffer, a reader returning ArrayBuffers, and no options', () => {
  const bytes = onnxBytes('mobilenet_v2.onnx');
  const expected = importModel(bytes, '{}');
  assertImported(expected, 'mobilenet_v2.onnx');
  assert.deepEqual(importModel(bytes.slice().buffer), expected);
  assert.deepEqual(importModel({ size: bytes.length, read: (o, l) => bytes.slice(o, o + l).buffer }), expected);
  assert.deepEqual(importModel(bytes), expected, 'one argument');
  assert.deepEqual(importModel(bytes, undefined), expected);
  assert.deepEqual(importModel(bytes, ''), expected);
  assert.equal(importModel(bytes, JSON.stringify({ name: 'my-model' })).graph.name, 'my-model');
});

// ---- Dynamic dimensions ---------------------------------------------------------

test('importModel: a missing dynamic dimension lists every one left open', () => {
  const model = dynamicOnnxModel();
  const bytes = onnxBytes(model.file);
  const doc = importModel(bytes);
  assertError(doc, `dims.${model.dynamic_dims[0]}`, { missing: true });
  assert.deepEqual(doc.missing_dims, model.dynamic_dims.map((name) => ({ name, input: 'input' })));
  // The same through a reader.
  assert.deepEqual(importModel(reader(bytes)), doc);
});

test('importModel: dims give the dynamic dimensions their values, and the graph plans', () => {
  const model = dynamicOnnxModel();
  const bytes = onnxBytes(model.file);
  const dims = Object.fromEntries(model.dynamic_dims.map((name) => [name, 4]));
  const doc = importModel(reader(bytes), JSON.stringify({ dims }));
  assertImported(doc, model.file);
  assert.deepEqual(doc.dynamic_dims, model.dynamic_dims.map((name) => ({ name, input: 'input', value: 4 })));
  assert.equal(doc.graph.inputs.input[0], 4);
  const planned = JSON.parse(pase.plan(JSON.stringify({ graph: doc.graph, cluster: { devices: 2 } })));
  assert.equal(planned.error, undefined, JSON.stringify(planned.error));
});

test('importModel: the module still plans after every kind of error', () => {
  const doc = JSON.parse(pase.plan(JSON.stringify({ model: 'alexnet', cluster: { devices: 8 } })));
  assert.equal(doc.error, undefined);
  assert.ok(doc.cost > 0);
});
