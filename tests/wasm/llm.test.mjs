// Language models in the built module: importModel() of a Hugging Face
// config.json (examples/hf/), the built-in language models of models(), and
// "seq" in plan requests and exportModel(name, batch, seq).
//
//   node --test tests/wasm/llm.test.mjs
//
// PASE_SITE overrides the site folder (default build-wasm/site).

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadModule, repo } from './load-module.mjs';

const hfDir = path.join(repo, 'examples/hf');

// The parameter counts Hugging Face's model classes report
// (sum(p.numel() for p in model.parameters()), a tied table once), and
// GPT-3 175B's from its paper's shape: 96 layers of 12d^2 + 13d with
// d = 12288, a 50257-token table, 2048 learned positions and a final LayerNorm.
const hfParameters = {
  'Meta-Llama-3-8B': 8_030_261_248,
  'Mistral-7B-v0.1': 7_241_732_096,
  'Mixtral-8x7B-v0.1': 46_702_792_704,
  'Qwen2-7B': 7_615_616_512,
  'Qwen2-0.5B': 494_032_768,
  gpt2: 124_439_808,
};
const builtInLlms = {
  gpt2: { parameters: 124_439_808, default_seq: 1024 },
  'llama3-8b': { parameters: 8_030_261_248, default_seq: 8192 },
  'llama3-70b': { parameters: 70_553_706_496, default_seq: 8192 },
  'mixtral-8x7b': { parameters: 46_702_792_704, default_seq: 8192 },
  'gpt3-175b': { parameters: 174_604_259_328, default_seq: 2048 },
};
const paperModels = ['alexnet', 'resnet101', 'inception3', 'rnnlm', 'transformer'];

let pase;

before(async () => {
  pase = await loadModule();
});

// ---- Helpers --------------------------------------------------------------------

function configBytes(model) {
  const buffer = readFileSync(path.join(hfDir, model, 'config.json'));
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

function configJson(model) {
  return JSON.parse(readFileSync(path.join(hfDir, model, 'config.json'), 'utf8'));
}

const encode = (value) => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));

function importModel(source, options) {
  return JSON.parse(pase.importModel(source, options === undefined ? undefined : JSON.stringify(options)));
}

function plan(request) {
  return JSON.parse(pase.plan(JSON.stringify(request)));
}

function assertError(doc, where) {
  assert.ok(doc && typeof doc === 'object' && doc.error, `expected an error document, got ${JSON.stringify(doc).slice(0, 200)}`);
  assert.deepEqual(Object.keys(doc), ['error']);
  assert.equal(typeof doc.error.message, 'string');
  assert.ok(doc.error.message.length > 0 && doc.error.message.length < 1000, doc.error.message);
  assert.equal(doc.error.where, where, `where of ${JSON.stringify(doc.error)}`);
}

function assertConfigImport(doc) {
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  // vocab_padding only when the config's vocabulary is padded (core/docs/llm.md).
  assert.deepEqual(Object.keys(doc).filter((k) => k !== 'vocab_padding'),
    ['graph', 'parameters', 'layers', 'format', 'config', 'batch', 'seq', 'dynamic_dims', 'layer_outputs']);
  if (doc.vocab_padding) assert.equal(doc.vocab_padding.vocab_size, doc.config.vocab_size);
  assert.equal(doc.format, 'hf-config');
  assert.equal(doc.graph.format, 'pase-graph/1');
  assert.equal(doc.layers, doc.graph.layers.length);
  assert.equal(doc.layer_outputs.length, doc.layers);
  assert.equal(doc.graph.parameters, doc.parameters);
  assert.deepEqual(doc.dynamic_dims, []);
}

// ---- importModel of a config.json ----------------------------------------------------

test('llm import: Meta-Llama-3-8B config.json has 8,030,261,248 parameters and the default sizes', () => {
  const doc = importModel(configBytes('Meta-Llama-3-8B'));
  assertConfigImport(doc);
  assert.equal(doc.parameters, 8_030_261_248);
  assert.deepEqual(doc.config, {
    model_type: 'llama', vocab_size: 128256, hidden_size: 4096, num_layers: 32, num_heads: 32, num_kv_heads: 8,
    head_dim: 128, intermediate_size: 14336, max_positions: 8192, num_experts: 0, experts_per_token: 0, tied_embeddings: false,
  });
  // Batch 32 and the model's context (at most 8192) when the options give none.
  assert.equal(doc.batch, 32);
  assert.equal(doc.seq, 8192);
  assert.deepEqual(doc.graph.inputs.tokens, [32, 8192]);
  // Without a name option the graph is named after the model type.
  assert.equal(doc.graph.name, 'llama');
  assert.equal(importModel(configBytes('Meta-Llama-3-8B'), { name: 'Meta-Llama-3-8B' }).graph.name, 'Meta-Llama-3-8B');
});

test('llm import: batch 4 and seq 256 make the tokens input [4, 256], and the graph plans at 8 devices', () => {
  const doc = importModel(configBytes('Meta-Llama-3-8B'), { batch: 4, seq: 256 });
  assertConfigImport(doc);
  assert.equal(doc.batch, 4);
  assert.equal(doc.seq, 256);
  assert.deepEqual(doc.graph.inputs.tokens, [4, 256]);
  assert.equal(doc.parameters, 8_030_261_248, 'the sizes do not change the parameters');
  const planned = plan({ graph: doc.graph, cluster: { devices: 8 } });
  assert.equal(planned.error, undefined, JSON.stringify(planned.error));
  assert.ok(planned.cost > 0);
  assert.equal(planned.parameters, 8_030_261_248);
  assert.ok(planned.vertices.every((v) => v.config.reduce((a, b) => a * b, 1) <= 8), 'no layer uses more than 8 devices');
  // The imported config plans exactly like the built-in llama3-8b at the same sizes.
  const builtIn = plan({ model: 'llama3-8b', batch: 4, seq: 256, cluster: { devices: 8 } });
  assert.equal(builtIn.error, undefined, JSON.stringify(builtIn.error));
  assert.equal(planned.cost, builtIn.cost);
});

test('llm import: every example config imports with its Hugging Face parameter count, from bytes and from a reader', () => {
  for (const [model, parameters] of Object.entries(hfParameters)) {
    const bytes = configBytes(model);
    const doc = importModel(bytes, { batch: 1, seq: 64 });
    assertConfigImport(doc);
    assert.equal(doc.parameters, parameters, model);
    assert.equal(doc.config.model_type, configJson(model).model_type, model);
    const reads = [];
    const reader = { size: bytes.length, read: (o, l) => { reads.push([o, l]); return bytes.subarray(o, o + l); } };
    assert.deepEqual(importModel(reader, { batch: 1, seq: 64 }), doc, `${model}: reader and bytes agree`);
    assert.ok(reads.length > 0);
  }
  // Mixtral's experts are in the summary.
  const mixtral = importModel(configBytes('Mixtral-8x7B-v0.1'), { batch: 1, seq: 64 });
  assert.equal(mixtral.config.num_experts, 8);
  assert.equal(mixtral.config.experts_per_token, 2);
});

test('llm import: GPT-2\'s vocabulary is padded to 50304 rows, Llama 3\'s 128256 stays', () => {
  const gpt2 = importModel(configBytes('gpt2'), { batch: 1, seq: 64 });
  assertConfigImport(gpt2);
  assert.deepEqual([gpt2.vocab_padding.vocab_size, gpt2.vocab_padding.padded_vocab_size], [50257, 50304]);
  assert.equal(gpt2.graph.layers.find((l) => l.name === 'embed').vocab, 50304);
  const exact = importModel(configBytes('gpt2'), { batch: 1, seq: 64, vocab_padding: 1 });
  assert.equal(exact.vocab_padding, undefined);
  assert.equal(exact.graph.layers.find((l) => l.name === 'embed').vocab, 50257);
  assert.equal(importModel(configBytes('Meta-Llama-3-8B'), { batch: 1, seq: 64 }).vocab_padding, undefined);
  assert.equal(importModel(configBytes('gpt2'), { vocab_padding: 0 }).error.where, 'vocab_padding');
});

test('llm import: white space before the config', () => {
  const text = readFileSync(path.join(hfDir, 'gpt2/config.json'), 'utf8');
  assert.equal(importModel(encode(`\n\t  ${text}`), { seq: 16 }).parameters, 124_439_808);
});

// ---- Bad configs: the error names the field --------------------------------------

test('llm import: an unsupported model_type, bad sizes and bad options name their field', () => {
  const llama = configJson('Meta-Llama-3-8B');
  const cases = [
    [{ ...llama, model_type: 'bert' }, 'model_type'],
    [{ ...llama, hidden_size: -4096 }, 'hidden_size'],
    [{ ...llama, hidden_size: 0 }, 'hidden_size'],
    [{ ...llama, hidden_size: 40.5 }, 'hidden_size'],
    [{ ...llama, hidden_size: '4096' }, 'hidden_size'],
    [{ ...llama, num_hidden_layers: -1 }, 'num_hidden_layers'],
    [{ ...llama, vocab_size: 0 }, 'vocab_size'],
  ];
  for (const [config, where] of cases) {
    const doc = importModel(encode(config));
    assertError(doc, where);
  }
  const bert = importModel(encode({ ...llama, model_type: 'bert' }));
  assert.match(bert.error.message, /bert/);
  const negative = importModel(encode({ ...llama, hidden_size: -4096 }));
  assert.match(negative.error.message, /positive/);
  // Options: a config has no dynamic dimensions; sizes must be positive; a
  // sequence longer than GPT-2's learned position table is refused.
  assertError(importModel(configBytes('Meta-Llama-3-8B'), { dims: { batch: 2 } }), 'dims.batch');
  assertError(importModel(configBytes('Meta-Llama-3-8B'), { seq: 0 }), 'seq');
  assertError(importModel(configBytes('Meta-Llama-3-8B'), { batch: -1 }), 'batch');
  assertError(importModel(configBytes('gpt2'), { seq: 2048 }), 'seq');
  // A JSON document that is no config (and no graph) is refused too.
  assert.ok(importModel(encode('{"model_type": ')).error);
  assert.ok(importModel(encode({ hidden_size: 4096 })).error);
  // The module keeps working.
  assert.equal(importModel(configBytes('gpt2'), { batch: 1, seq: 16 }).parameters, 124_439_808);
});

// ---- The built-in language models -------------------------------------------------------

test('llm models: the paper networks, then the five language models with their parameter counts', () => {
  const models = JSON.parse(pase.models());
  assert.deepEqual(models.map((m) => m.name), [...paperModels, ...Object.keys(builtInLlms)]);
  for (const m of models) {
    assert.equal(typeof m.llm, 'boolean', m.name);
    assert.ok('default_seq' in m, m.name);
  }
  for (const m of models.filter((x) => paperModels.includes(x.name))) assert.equal(m.llm, false, m.name);
  for (const [name, expected] of Object.entries(builtInLlms)) {
    const m = models.find((x) => x.name === name);
    assert.equal(m.llm, true, name);
    assert.equal(m.parameters, expected.parameters, name);
    assert.equal(m.default_seq, expected.default_seq, name);
    assert.equal(m.default_batch, 32, name);
    assert.match(m.description, /\S: /, `${name}: "Display name: details"`);
  }
  // The CNNs have no sequence length.
  for (const name of ['alexnet', 'resnet101', 'inception3']) assert.equal(models.find((x) => x.name === name).default_seq, null, name);
});

test('llm plan: a request {"model": "gpt2", "batch": 4, "seq": 128} plans, like its exported graph', () => {
  const request = { model: 'gpt2', batch: 4, seq: 128, cluster: { devices: 8 } };
  const planned = plan(request);
  assert.equal(planned.error, undefined, JSON.stringify(planned.error));
  assert.ok(planned.cost > 0);
  assert.equal(planned.parameters, 124_439_808);
  const exported = pase.exportModel('gpt2', 4, 128);
  assert.deepEqual(JSON.parse(exported).inputs.tokens, [4, 128]);
  const fromFile = JSON.parse(pase.plan(`{"graph": ${exported}, "cluster": {"devices": 8}}`));
  assert.equal(fromFile.cost, planned.cost);
  // Another sequence length is another graph.
  const longer = plan({ ...request, seq: 256 });
  assert.ok(longer.cost > planned.cost, `${longer.cost} > ${planned.cost}`);
});

test('llm plan: seq is refused for a network without one and when it is not a positive whole number', () => {
  assertError(plan({ model: 'alexnet', seq: 128, cluster: { devices: 8 } }), 'seq');
  for (const seq of [0, -1, 1.5, 'long', null]) assertError(plan({ model: 'gpt2', seq, cluster: { devices: 8 } }), 'seq');
  assertError(plan({ model: 'gpt2', seq: 4096, cluster: { devices: 8 } }), 'seq');
});

test('llm evaluate: a Mixtral layout with ep above cp evaluates, ep on a dense model is refused at layout.ep', () => {
  // ep carved out of dp x cp (core/docs/practice-model.md, "Evaluating a layout").
  const evaluate = (model, layout) => JSON.parse(pase.evaluate(JSON.stringify({
    model, seq: 128, preset: 'h100', cluster: { devices: 16 }, cost_model: 'practice', layout,
  })));
  const memory = {};
  for (const ep of [1, 2, 4, 8]) {
    const doc = evaluate('mixtral-8x7b', `tp=2 pp=1 dp=8 ep=${ep} sp=on mbs=1 gbs=8`);
    assert.equal(doc.error, undefined, JSON.stringify(doc.error));
    assert.ok(doc.step_time_s > 0);
    memory[ep] = doc.memory.params;
  }
  assert.ok(memory[8] < memory[4] && memory[4] < memory[2] && memory[2] < memory[1], JSON.stringify(memory));
  const dense = evaluate('llama3-8b', 'tp=2 pp=1 dp=8 ep=2 mbs=1 gbs=8');
  assertError(dense, 'layout.ep');
  assert.match(dense.error.message, /has no experts/);
});

test('llm exportModel: name, batch and seq; the shorter forms keep the defaults', () => {
  assert.deepEqual(JSON.parse(pase.exportModel('gpt2')).inputs.tokens, [32, 1024]);
  assert.deepEqual(JSON.parse(pase.exportModel('gpt2', 2)).inputs.tokens, [2, 1024]);
  assert.deepEqual(JSON.parse(pase.exportModel('gpt2', 0, 64)).inputs.tokens, [32, 64]);
  assert.deepEqual(JSON.parse(pase.exportModel('llama3-8b', 1, 16)).inputs.tokens, [1, 16]);
  // The paper's sequence models take a sequence length too.
  assert.equal(JSON.parse(pase.exportModel('transformer', 8, 32)).format, 'pase-graph/1');
  assertError(JSON.parse(pase.exportModel('alexnet', 0, 16)), 'seq');
  for (const seq of [-1, 1.5, NaN, Infinity, 1e300]) assertError(JSON.parse(pase.exportModel('gpt2', 0, seq)), 'seq');
  assertError(JSON.parse(pase.exportModel('gpt2', 0, 2048)), 'seq');
  assertError(JSON.parse(pase.exportModel('lenet', 0, 16)), 'model');
});
