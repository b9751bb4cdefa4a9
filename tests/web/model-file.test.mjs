// web/model-file.js under Node: which files are imported as ONNX, the sizes
// the dims form offers, and how shapes and typed sizes are read and written.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultDimValue, fileKind, formatShape, parseDimValue, sniffBytes } from '../../web/model-file.js';
import { onnxBytes, onnxModels } from '../wasm/onnx-fixtures.mjs';

const bytes = (text) => new TextEncoder().encode(text);

test('model-file: JSON content is JSON whatever the name', () => {
  assert.equal(fileKind('graph.json', bytes('{"format": "pase-graph/1"}')), 'json');
  assert.equal(fileKind('model.onnx', bytes('{"format": "pase-graph/1"}')), 'json');
  assert.equal(fileKind('graph', bytes('\n\t  {')), 'json');
  assert.equal(fileKind('graph.txt', bytes('\r\n[1, 2]')), 'json');
  assert.equal(fileKind('bom.json', new Uint8Array([0xef, 0xbb, 0xbf, 0x7b])), 'json');
});

test('model-file: other content is ONNX by name, JSON by name, else ONNX', () => {
  assert.equal(fileKind('resnet50.onnx', new Uint8Array([0x08, 0x07, 0x12])), 'onnx');
  assert.equal(fileKind('RESNET50.ONNX', new Uint8Array([0x08])), 'onnx');
  assert.equal(fileKind('garbage.onnx', bytes('not a model')), 'onnx');
  // A broken graph document keeps its JSON error.
  assert.equal(fileKind('broken.json', bytes('not json')), 'json');
  assert.equal(fileKind('model.bin', new Uint8Array([0x08, 0x07])), 'onnx');
  assert.equal(fileKind('notes.txt', bytes('hello')), 'onnx');
  // Empty (or only white space): nothing for the importer; JSON says "empty".
  assert.equal(fileKind('empty', new Uint8Array()), 'json');
  assert.equal(fileKind('blank', bytes('   \n')), 'json');
  assert.equal(fileKind('empty.onnx', new Uint8Array()), 'onnx');
});

test('model-file: every ONNX fixture is ONNX by content alone', () => {
  for (const { file } of onnxModels()) {
    assert.equal(fileKind('unnamed', onnxBytes(file).subarray(0, sniffBytes)), 'onnx', file);
  }
});

test('model-file: the dims form offers 1 for a batch, 128 for a sequence, 224 for a side', () => {
  for (const name of ['batch', 'batch_size', 'Batch', 'N', 'bs', 'b']) assert.equal(defaultDimValue(name), 1, name);
  for (const name of ['sequence', 'seq_len', 'seq', 'tokens', 'length', 'time_steps']) assert.equal(defaultDimValue(name), 128, name);
  for (const name of ['height', 'width', 'H', 'w']) assert.equal(defaultDimValue(name), 224, name);
  for (const name of ['unk__42', 'dim_0', 'channels']) assert.equal(defaultDimValue(name), '', name);
});

test('model-file: shapes and typed sizes', () => {
  assert.equal(formatShape([8, 64, 112, 112]), '8×64×112×112');
  assert.equal(formatShape([1000]), '1000');
  assert.equal(formatShape([]), 'scalar');
  assert.equal(parseDimValue('8'), 8);
  assert.equal(parseDimValue(' 128 '), 128);
  for (const bad of ['', '0', '-1', '1.5', '1e3', 'eight', '9007199254740993', ' ']) assert.equal(parseDimValue(bad), null, bad);
});
