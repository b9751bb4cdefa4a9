// web/model-file.js under Node: which files are imported as ONNX or as a
// Hugging Face config, the name an import gives its graph, the sizes the dims
// form offers, how shapes and typed sizes are read and written, and how an
// imported config is summarised.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import {
  configSummary, defaultDimValue, fileKind, formatShape, importName, jsonKind, parseDimValue, sniffBytes,
} from '../../web/model-file.js';
import { repo } from '../wasm/load-module.mjs';
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
  // Binary content named .json (a PNG) goes to the importer, which names it.
  assert.equal(fileKind('graph.json', new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'onnx');
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

// ---- JSON documents: graph or Hugging Face config --------------------------------

const hfDir = path.join(repo, 'examples/hf');
const hfConfigs = readdirSync(hfDir).sort();

test('model-file: every example config.json is a config, and JSON by its first bytes', () => {
  assert.ok(hfConfigs.length >= 6, hfConfigs.join(', '));
  for (const model of hfConfigs) {
    const buffer = readFileSync(path.join(hfDir, model, 'config.json'));
    assert.equal(fileKind('config.json', buffer.subarray(0, sniffBytes)), 'json', model);
    assert.equal(jsonKind(JSON.parse(buffer.toString('utf8'))), 'config', model);
  }
});

test('model-file: graph documents and other JSON are graphs', () => {
  for (const file of readdirSync(path.join(repo, 'examples/graphs')).filter((f) => f.endsWith('.json'))) {
    assert.equal(jsonKind(JSON.parse(readFileSync(path.join(repo, 'examples/graphs', file), 'utf8'))), 'graph', file);
  }
  // A graph document that also says "model_type" is still a graph (it has layers).
  assert.equal(jsonKind({ format: 'pase-graph/1', model_type: 'llama', layers: [] }), 'graph');
  // Without a string model_type, only a field that every config has makes
  // a config (which the importer then refuses, saying what to add), unless
  // the document says its format.
  assert.equal(jsonKind({ model_type: null }), 'graph');
  assert.equal(jsonKind({ inputs: {} }), 'graph');
  assert.equal(jsonKind({ format: 'pase-graph/1', hidden_size: 4096 }), 'graph');
  assert.equal(jsonKind({ hidden_size: 4096 }), 'config');
  assert.equal(jsonKind({ model_type: 7, hidden_size: 4096 }), 'config');
  assert.equal(jsonKind({ architectures: ['LlamaForCausalLM'], num_attention_heads: 32 }), 'config');
  for (const value of [null, 42, 'llama', [], [{ model_type: 'llama' }]]) assert.equal(jsonKind(value), 'graph', JSON.stringify(value));
  // A string model_type is enough: the importer names what else is wrong
  // (an unsupported type, a missing size).
  assert.equal(jsonKind({ model_type: 'bert' }), 'config');
  assert.equal(jsonKind({ model_type: '' }), 'config');
  // Only the object's own field counts.
  assert.equal(jsonKind(JSON.parse('{"model_type": "llama", "__proto__": {"layers": []}}')), 'config');
});

test('model-file: an import is named after its file, a config.json after its model type', () => {
  assert.equal(importName('resnet50.onnx', 'onnx'), 'resnet50');
  assert.equal(importName('mobilenet.model', 'onnx'), 'mobilenet');
  assert.equal(importName('model', 'onnx'), 'model');
  assert.equal(importName('.onnx', 'onnx'), '.onnx');
  assert.equal(importName('config.onnx', 'onnx'), 'config', 'only a config file goes by its model type');
  assert.equal(importName('llama3-8b.json', 'config'), 'llama3-8b');
  assert.equal(importName('Meta-Llama-3-8B.config.json', 'config'), 'Meta-Llama-3-8B.config');
  for (const name of ['config.json', 'Config.JSON', 'config (1).json', 'config(2).json', 'config']) {
    assert.equal(importName(name, 'config'), null, name);
  }
  assert.equal(importName('configs.json', 'config'), 'configs');
});

test('model-file: a config summary names its sizes, heads and experts', () => {
  const llama = {
    model_type: 'llama', vocab_size: 128256, hidden_size: 4096, num_layers: 32, num_heads: 32, num_kv_heads: 8,
    head_dim: 128, intermediate_size: 14336, max_positions: 8192, num_experts: 0, experts_per_token: 0, tied_embeddings: false,
  };
  assert.deepEqual(configSummary(llama), [
    ['Model type', 'llama'],
    ['Layers', '32'],
    ['Hidden size', '4,096'],
    ['Attention heads', '32 (8 KV)'],
    ['MLP size', '14,336'],
    ['Vocabulary', '128,256'],
    ['Context', '8,192 tokens'],
  ]);
  // As many key-value heads as query heads: no "KV" note. Experts when there are some.
  const rows = new Map(configSummary({ ...llama, model_type: 'mixtral', num_kv_heads: 32, num_experts: 8, experts_per_token: 2 }));
  assert.equal(rows.get('Attention heads'), '32');
  assert.equal(rows.get('Experts'), '8 (top 2)');
  assert.equal(new Map(configSummary(llama)).has('Experts'), false);
});
