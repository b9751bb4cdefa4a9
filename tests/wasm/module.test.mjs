// The built WebAssembly module (build-wasm/site/pase.js) under Node:
// bad inputs come back as error documents, and plans equal the native CLI's.
//
//   node --test tests/wasm/
//
// PASE_SITE overrides the site folder (default build-wasm/site), PASE_CLI the
// native CLI (default build/pase). Without the CLI the comparisons are skipped,
// except under CI (CI=true), where a missing CLI is a failure.

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { loadModule, repo, siteDir } from './load-module.mjs';
import { onnxBytes, onnxModel } from './onnx-fixtures.mjs';

const cliPath = path.resolve(repo, process.env.PASE_CLI ?? 'build/pase');
const examplesDir = path.join(repo, 'examples/graphs');
const examples = readdirSync(examplesDir).filter((f) => f.endsWith('.json')).sort();
const benchmarkModels = ['alexnet', 'resnet101', 'inception3', 'rnnlm', 'transformer'];

const haveCli = existsSync(cliPath);
const cliSkip = haveCli || process.env.CI ? false : `native CLI not found at ${cliPath} (build it or set PASE_CLI)`;

/** @type {{plan: Function, evaluate: Function, estimate: Function, compare: Function, validate: Function, models: Function, presets: Function, exportModel: Function, version: Function}} */
let pase;

before(async () => {
  pase = await loadModule();
});

// ---- Helpers --------------------------------------------------------------------

function plan(request, onProgress) {
  const text = typeof request === 'string' ? request : JSON.stringify(request);
  return JSON.parse(pase.plan(text, onProgress));
}

function compare(request) {
  return JSON.parse(pase.compare(typeof request === 'string' ? request : JSON.stringify(request)));
}

// The page's budget: a fixed number of MCMC proposals and no time limit, so
// the result does not depend on the machine.
const pageMcmc = { iterations: 20000, time_limit_s: 0 };

function cli(args) {
  assert.ok(haveCli, `native CLI not found at ${cliPath}`);
  // stderr carries the CLI's progress lines; only the JSON on stdout matters.
  const out = execFileSync(cliPath, [...args, '--format', 'json'], { stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 << 20 });
  // The CLI's result keeps the flags it was made with (its "source", for
  // `pase emit`); a request's result has none.
  const doc = JSON.parse(out);
  if (args[0] === 'plan') {
    // Its graph and cluster flags, as given.
    assert.ok(doc.source.args.every((a) => args.includes(a)), JSON.stringify(doc.source));
    assert.ok(doc.source.args.includes(args[2]), 'the model or graph');
  }
  delete doc.source;
  return doc;
}

/** An error document whose `where` is `where` (a string or a RegExp). */
function assertError(doc, where) {
  assert.ok(doc && typeof doc === 'object' && doc.error, `expected an error document, got ${JSON.stringify(doc).slice(0, 200)}`);
  assert.deepEqual(Object.keys(doc), ['error']);
  assert.equal(typeof doc.error.message, 'string');
  assert.ok(doc.error.message.length > 0, 'the message must say what is wrong');
  assert.equal(typeof doc.error.where, 'string');
  if (where instanceof RegExp) assert.match(doc.error.where, where);
  else if (where !== undefined) assert.equal(doc.error.where, where);
}

/** Deep equality with numbers equal to 1e-9 relative; search.time_s and search.threads ignored. */
function assertSamePlan(actual, expected, at = 'plan') {
  if (typeof expected === 'number') {
    assert.equal(typeof actual, 'number', `${at}: expected a number`);
    const scale = Math.max(Math.abs(expected), Number.MIN_VALUE);
    assert.ok(Math.abs(actual - expected) <= 1e-9 * scale, `${at}: ${actual} != ${expected}`);
    return;
  }
  if (expected === null || typeof expected !== 'object') {
    assert.equal(actual, expected, at);
    return;
  }
  assert.equal(Array.isArray(actual), Array.isArray(expected), `${at}: array vs object`);
  // The search's time and threads are how it ran (the CLI takes every core,
  // pase.js one thread), not what it found.
  const compared = (k) => !(at === 'plan.search' && (k === 'time_s' || k === 'threads'));
  const keys = Object.keys(expected).filter(compared);
  if (!Array.isArray(expected)) {
    assert.deepEqual(Object.keys(actual).filter(compared).sort(), [...keys].sort(), `${at}: fields`);
  } else {
    assert.equal(actual.length, expected.length, `${at}: length`);
  }
  for (const k of keys) assertSamePlan(actual[k], expected[k], Array.isArray(expected) ? `${at}[${k}]` : `${at}.${k}`);
}

// ---- Bad input: error documents, never an abort ------------------------------------

test('errors: empty and malformed JSON', () => {
  assertError(plan(''), '');
  assertError(plan('{"model": "alexnet",'), '');
  assertError(plan('not json at all'));
  assertError(JSON.parse(pase.evaluate('{')));
});

test('errors: a request that is not an object', () => {
  assertError(plan('[]'));
  assertError(plan('42'));
  assertError(plan('null'));
});

test('errors: unknown model names the model field', () => {
  const doc = plan({ model: 'lenet', cluster: { devices: 8 } });
  assertError(doc, 'model');
  assert.match(doc.error.message, /lenet/);
});

test('errors: zero, negative and fractional devices name cluster.devices', () => {
  for (const devices of [0, -4, 2.5, 'eight', null]) {
    assertError(plan({ model: 'alexnet', cluster: { devices } }), 'cluster.devices');
  }
});

test('errors: non-positive throughput and bandwidth name their fields', () => {
  assertError(plan({ model: 'alexnet', cluster: { tflops: 0 } }), 'cluster.tflops');
  assertError(plan({ model: 'alexnet', cluster: { bandwidth_gbps: -1 } }), 'cluster.bandwidth_gbps');
});

test('errors: unknown request field and unknown order', () => {
  assertError(plan({ model: 'alexnet', devices: 8 }), 'devices');
  assertError(plan({ model: 'alexnet', order: 'dfs' }), 'order');
});

test('errors: an invalid graph names the layer and field', () => {
  const graph = JSON.parse(readFileSync(path.join(examplesDir, 'small_cnn.json'), 'utf8'));
  const i = graph.layers.findIndex((l) => l.op === 'Conv' && l.name !== graph.layers[0].name);
  graph.layers[i].filter[1] += 1; // input channels no longer match
  assertError(plan({ graph, cluster: { devices: 8 } }), `graph.layers[${i}].filter`);

  const typo = JSON.parse(readFileSync(path.join(examplesDir, 'mlp_residual.json'), 'utf8'));
  typo.layers[0].unit = typo.layers[0].units; // a typo must not be ignored
  assertError(plan({ graph: typo, cluster: { devices: 8 } }), /^graph\.layers\[0\]/);

  assertError(plan({ graph: { format: 'pase-graph/9', inputs: {}, layers: [] } }), /^graph/);
  assertError(plan({ graph: 'small_cnn.json' }), /^graph/);
});

test('errors: a plan over the memory limit is refused, not attempted', () => {
  // BFS on the transformer has dependent sets of dozens of vertices: held to
  // the exact search, the memory guard must refuse it up front (an attempt
  // would abort or hang the module). The auto search plans it bounded
  // instead ('bounded: ...' below).
  const doc = plan({ model: 'transformer', cluster: { devices: 64 }, order: 'bfs', search: 'exact' });
  assertError(doc, 'max_memory');
  assert.match(doc.error.message, /limit/);
  assert.match(doc.error.message, /bounded search/, 'the refusal names the way out');
  // Even the configurations over the limit: refused whatever the search.
  for (const search of ['exact', 'auto', 'bounded']) {
    assertError(plan({ model: 'alexnet', cluster: { devices: 8 }, max_memory: 1, search }), 'max_memory');
  }
  assertError(plan({ model: 'alexnet', cluster: { devices: 8 }, search: 'optimal' }), 'search');
});

test('errors: with the memory guard off, an impossible plan still ends in an error document', () => {
  // max_memory 0 lifts the guard: the allocation itself must fail cleanly
  // (a C++ exception caught at the API edge), not abort the module.
  assertError(plan({ model: 'transformer', cluster: { devices: 64 }, order: 'bfs', max_memory: 0, search: 'exact' }));
});

test('errors: evaluate without or with a malformed strategy', () => {
  assertError(JSON.parse(pase.evaluate(JSON.stringify({ model: 'alexnet' }))), 'strategy');
  assertError(JSON.parse(pase.evaluate(JSON.stringify({ model: 'alexnet', strategy: [[1]] }))), /^strategy/);
});

test('errors: plan, estimate and compare refuse a layout or a strategy, which evaluate prices', () => {
  const layout = { model: 'gpt2', batch: 8, seq: 64, preset: 'h100', cluster: { devices: 4 }, layout: 'tp=2 pp=1 dp=2 mbs=4 gbs=8' };
  const strategy = { model: 'alexnet', strategy: [[1]] };
  for (const entry of [(r) => plan(r), (r) => JSON.parse(pase.estimate(JSON.stringify(r))), (r) => compare(r)]) {
    assertError(entry(layout), 'layout');
    assertError(entry(strategy), 'strategy');
  }
  assert.equal(JSON.parse(pase.evaluate(JSON.stringify(layout))).error, undefined);
});

test('errors: exportModel with an unknown name or a bad batch', () => {
  assertError(JSON.parse(pase.exportModel('lenet', 0)), 'model');
  assertError(JSON.parse(pase.exportModel('alexnet', -1)), 'batch');
  for (const batch of [1.5, NaN, Infinity, 1e300]) assertError(JSON.parse(pase.exportModel('alexnet', batch)), 'batch');
});

test('errors: compare with a bad request gives an error document', () => {
  assertError(compare(''), '');
  assertError(compare('{"model": "alexnet",'), '');
  assertError(compare('[]'));
  assertError(compare({ model: 'lenet', cluster: { devices: 8 } }), 'model');
  assertError(compare({ model: 'alexnet', cluster: { devices: 0 } }), 'cluster.devices');
  assertError(compare({ model: 'alexnet', strategy: [[1]] }), 'strategy');
  assertError(compare({ model: 'alexnet', mcmc: { iterations: -1 } }), 'mcmc.iterations');
  assertError(compare({ model: 'alexnet', mcmc: { steps: 10 } }), /^mcmc/);
  assertError(compare({ model: 'alexnet', mcmc: 5 }), /^mcmc/);
});

test('errors: validate names the field of the graph document itself', () => {
  const graph = JSON.parse(readFileSync(path.join(examplesDir, 'small_cnn.json'), 'utf8'));
  const i = graph.layers.findIndex((l) => l.op === 'Conv' && l.name !== graph.layers[0].name);
  graph.layers[i].filter[1] += 1;
  // Not under "graph" as in a plan request: the document is the graph.
  const doc = JSON.parse(pase.validate(JSON.stringify(graph)));
  assertError(doc, `layers[${i}].filter`);
  assert.equal(doc.error.message, plan({ graph, cluster: { devices: 1 } }).error.message, 'the message a plan gives');
  assertError(JSON.parse(pase.validate('')), '');
  assertError(JSON.parse(pase.validate('{"format": "pase-graph/1", "layers": [')), '');
  assertError(JSON.parse(pase.validate('[]')), '');
  assertError(JSON.parse(pase.validate('{"format": "pase-graph/1", "layers": [], "constructor": 1}')), 'constructor');
  assertError(JSON.parse(pase.validate(JSON.stringify({ ...graph, layers: [] }))), 'layers');
});

test('errors: the module still plans after every kind of error', () => {
  const doc = plan({ model: 'alexnet', cluster: { devices: 8 } });
  assert.equal(doc.error, undefined);
  assert.ok(doc.cost > 0);
});

// ---- The API surface --------------------------------------------------------------

test('version: the project version of CMakeLists.txt', () => {
  const cmake = readFileSync(path.join(repo, 'CMakeLists.txt'), 'utf8');
  const [, expected] = cmake.match(/project\([^)]*VERSION\s+([0-9.]+)/);
  assert.equal(pase.version(), expected);
});

test('models: the five benchmark networks in the order of core/docs/models.md, then the language models', () => {
  const models = JSON.parse(pase.models());
  // The language models (llm: true) are tested in llm.test.mjs.
  assert.deepEqual(models.filter((m) => !m.llm).map((m) => m.name), benchmarkModels);
  assert.deepEqual(models.slice(0, benchmarkModels.length).map((m) => m.name), benchmarkModels);
  for (const m of models) {
    assert.ok(m.default_batch > 0 && m.vertices > 0 && m.edges > 0, m.name);
    assert.ok(Number.isInteger(m.parameters) && m.parameters > 0, m.name);
    assert.equal(typeof m.description, 'string');
  }
});

test('presets: the GPU presets of core/docs/cluster.md, each one a request\'s "preset" accepts', () => {
  const presets = JSON.parse(pase.presets());
  assert.ok(Array.isArray(presets) && presets.length > 0);
  // The documented table: the ids in order, and the numbers of one row.
  const doc = readFileSync(path.join(repo, 'core/docs/cluster.md'), 'utf8');
  const documented = [...doc.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual(presets.map((p) => p.id), documented);
  // The documented price of a GPU-hour, the table's last column, is the preset's.
  const prices = [...doc.matchAll(/^\| `([a-z0-9-]+)` \|.*\| ([0-9.]+) \|$/gm)].map((m) => [m[1], Number(m[2])]);
  assert.deepEqual(prices, presets.map((p) => [p.id, p.gpu_hour_usd]));
  assert.deepEqual(presets.find((p) => p.id === 'h100'), {
    id: 'h100', name: 'H100 SXM', tflops: 989, memory_gib: 80, gpus_per_node: 8, intra_node_gbps: 450, bandwidth_gbps: 50,
    memory_gbps: 3350, fp8_tflops: 1979, gpu_hour_usd: 2.99,
    practice: {
      matmul_efficiency: 0.72, matmul_half: 128, attention_efficiency: 0.5, memory_efficiency: 0.8,
      latency_intra_us: 6, latency_inter_us: 12, overlap: 0.8, link_efficiency: 1, reserved_gib: 3,
    },
  });
  for (const p of presets) {
    assert.deepEqual(Object.keys(p), ['id', 'name', 'tflops', 'memory_gib', 'gpus_per_node', 'intra_node_gbps', 'bandwidth_gbps',
      'memory_gbps', 'fp8_tflops', 'gpu_hour_usd', 'practice'], p.id);
    assert.ok(p.memory_gbps > 0, p.id);
    assert.ok(p.gpu_hour_usd > 0, p.id);
    // The preset fills exactly these cluster fields of a plan.
    const { cluster } = plan({ model: 'alexnet', preset: p.id, cluster: { devices: 4 }, cost_model: 'paper' });
    assert.deepEqual(cluster, {
      devices: 4, tflops: p.tflops, bandwidth_gbps: p.bandwidth_gbps, gpus_per_node: p.gpus_per_node,
      intra_node_gbps: p.intra_node_gbps, memory_gib: p.memory_gib,
    }, p.id);
  }
  assertError(plan({ model: 'alexnet', preset: 'h900' }), 'preset');
  // The practice cost model: the preset's memory bandwidth, named in the result.
  const practice = plan({ model: 'gpt2', batch: 8, preset: 'h100', cluster: { devices: 8 }, cost_model: 'practice' });
  assert.equal(practice.error, undefined, JSON.stringify(practice.error));
  assert.equal(practice.cluster.cost_model, 'practice');
  assert.equal(practice.cluster.memory_gbps, 3350);
  assertError(plan({ model: 'gpt2', cost_model: 'practice' }), 'cluster.memory_gbps');
  assertError(plan({ model: 'gpt2', cost_model: 'fast' }), 'cost_model');
});

test('presets: h100 on 16 devices plans two nodes under 80 GiB, as the page sends it field by field', () => {
  const h100 = JSON.parse(pase.presets()).find((p) => p.id === 'h100');
  const byPreset = plan({ model: 'rnnlm', preset: 'h100', cluster: { devices: 16 }, cost_model: 'paper' });
  assert.equal(byPreset.error, undefined, JSON.stringify(byPreset.error));
  assert.equal(byPreset.cluster.gpus_per_node, 8);
  assert.equal(Math.ceil(byPreset.cluster.devices / byPreset.cluster.gpus_per_node), 2, 'two nodes');
  const m = byPreset.memory;
  assert.equal(m.capacity_bytes, 80 * 2 ** 30);
  assert.equal(m.fits, true);
  assert.ok(m.per_device_bytes > 0 && m.per_device_bytes <= m.capacity_bytes);
  assertSamePlan(m.params + m.grads + m.optimizer + m.activations, m.per_device_bytes, 'memory by kind');
  assertSamePlan(byPreset.vertices.reduce((sum, v) => sum + v.memory_bytes, 0), m.per_device_bytes, 'memory by layer');
  assert.equal(m.optimal, true, 'under the cap the plan of least cost fits, so it is optimal');
  // The page sends the preset's values as cluster fields, not the preset.
  const byFields = plan({
    model: 'rnnlm',
    cluster: { devices: 16, tflops: h100.tflops, bandwidth_gbps: h100.bandwidth_gbps, gpus_per_node: h100.gpus_per_node,
      intra_node_gbps: h100.intra_node_gbps, memory_gib: h100.memory_gib },
    training: { param_bytes: 2, grad_bytes: 2, optimizer_bytes: 12, activation_bytes: 2, zero: 0 },
    cost_model: 'paper',
  });
  assertSamePlan(byFields, byPreset);
  // Nodes change the costs: the same machine as one flat network plans otherwise.
  const flat = plan({ model: 'rnnlm', cluster: { devices: 16, tflops: h100.tflops, bandwidth_gbps: h100.bandwidth_gbps } });
  assert.notEqual(flat.cost, byPreset.cost);
});

test('plan: progress is optional, and when given rises to 1', () => {
  const request = JSON.stringify({ model: 'inception3', cluster: { devices: 8 } });
  const fractions = [];
  const withProgress = JSON.parse(pase.plan(request, (f) => fractions.push(f)));
  assert.ok(fractions.length >= 2, 'several progress reports');
  assert.ok(fractions.every((f, i) => f >= 0 && f <= 1 && (i === 0 || f >= fractions[i - 1])), 'monotone in [0, 1]');
  assert.equal(fractions.at(-1), 1);
  assertSamePlan(JSON.parse(pase.plan(request, undefined)), withProgress);
  assertSamePlan(JSON.parse(pase.plan(request, null)), withProgress);
  assertSamePlan(JSON.parse(pase.plan(request)), withProgress);
});

test('plan: progress over many searches never goes back, and names its phase and the time left', () => {
  // GPT-2 on 16 H100 under 6 GiB: the recomputation chosen, several searches
  // under the cap, each of which ran its own 0 to 1 before (core/docs/architecture.md, "Progress").
  // ZeRO 0 and one micro-batch set by hand: the per-layer plan searched as
  // asked, not from the best layout (core/docs/layouts.md, "Both answers").
  const request = JSON.stringify({ model: 'gpt2', batch: 32, preset: 'h100', cluster: { devices: 16, memory_gib: 6 },
    training: { zero: 0 }, pipeline: { stages: 1, microbatches: 1 } });
  const seen = [];
  const doc = JSON.parse(pase.plan(request, (fraction, phase, secondsLeft) => seen.push({ fraction, phase, secondsLeft })));
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  assert.ok(doc.search.searches >= 4, `searches: ${doc.search.searches}`);
  assert.ok(seen.length >= 4, 'several progress reports');
  assert.ok(seen.every((r, i) => r.fraction >= 0 && r.fraction <= 1 && (i === 0 || r.fraction >= seen[i - 1].fraction)),
    seen.map((r) => r.fraction.toFixed(3)).join(' '));
  assert.equal(seen.at(-1).fraction, 1);
  assert.ok(seen.every((r) => typeof r.phase === 'string' && r.phase.length > 0), 'every report names its phase');
  assert.ok(seen.some((r) => /search \d+ under the memory cap/.test(r.phase)), [...new Set(seen.map((r) => r.phase))].join(' | '));
  assert.ok(seen.every((r) => r.secondsLeft === null || (Number.isFinite(r.secondsLeft) && r.secondsLeft >= 0)));
  assert.ok(seen.some((r) => r.secondsLeft > 0), 'a time left estimated');
  assert.equal(seen.at(-1).secondsLeft, 0);
});

test('plan: alexnet at 8 devices reaches the golden optimum of the PaSE prototype', () => {
  // tests/data/golden/alexnet_p8.json: optimal_cost at 10 TFLOP/s, 16 GB/s, batch 128.
  const doc = plan({ model: 'alexnet', cluster: { devices: 8, tflops: 10, bandwidth_gbps: 16 } });
  assert.ok(Math.abs(doc.cost - 97098296512) <= 1e-9 * 97098296512, `cost ${doc.cost}`);
  const parts = doc.breakdown.compute + doc.breakdown.comm + doc.breakdown.redistribution;
  assert.ok(Math.abs(parts - doc.cost) <= 1e-9 * doc.cost, 'the breakdown adds up to the cost');
  assert.equal(doc.parameters, 62466080, 'the filters and FC weights');
});

test('plan: the summary groups every layer once, with shares adding up to 1', () => {
  const doc = plan({ model: 'transformer', cluster: { devices: 8 } });
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  assert.ok(Array.isArray(doc.summary) && doc.summary.length > 0 && doc.summary.length <= 16, `${doc.summary?.length} groups`);
  const ids = doc.summary.flatMap((g) => g.vertices).sort((a, b) => a - b);
  assert.deepEqual(ids, doc.vertices.map((v) => v.id));
  const sum = (key) => doc.summary.reduce((total, g) => total + g[key], 0);
  assert.ok(Math.abs(sum('cost_share') - 1) < 1e-12, `cost shares add up to ${sum('cost_share')}`);
  assert.ok(Math.abs(sum('memory_share') - 1) < 1e-12, `memory shares add up to ${sum('memory_share')}`);
  assert.ok(Math.abs(sum('cost') - doc.cost) <= 1e-9 * doc.cost);
  for (const g of doc.summary) {
    assert.equal(typeof g.label, 'string');
    assert.equal(g.devices, Object.values(g.degrees).reduce((p, d) => p * d, 1));
    for (const id of g.vertices) assert.equal(doc.vertices[id].op, g.op);
  }
});

test('errors: estimate answers a bad request with the error document plan gives', () => {
  for (const request of ['{', '{"model": "nope"}', '{"model": "alexnet", "cluster": {"devices": 0}}', '{"model": "alexnet", "max_memory": -1}']) {
    const estimate = JSON.parse(pase.estimate(request));
    assert.ok(estimate.error, request);
    assert.deepEqual(estimate.error, JSON.parse(pase.plan(request)).error, request);
  }
});

test('estimate: the pairs of the search the plan runs, with the request\'s table limit and cap', () => {
  const request = { model: 'transformer', cluster: { devices: 8, memory_gib: 80 }, pow2_only: true, max_memory: 2 ** 31 };
  const estimate = JSON.parse(pase.estimate(JSON.stringify(request)));
  const plan = JSON.parse(pase.plan(JSON.stringify(request)));
  assert.equal(plan.error, undefined);
  assert.equal(estimate.search.pairs, plan.search.pairs);
  assert.equal(estimate.search.peak_bytes, plan.search.peak_bytes);
  assert.equal(estimate.search.configurations, plan.search.configurations);
  assert.deepEqual([estimate.graph, estimate.vertices, estimate.devices, estimate.memory_capped, estimate.max_memory],
    ['transformer', 204, 8, true, 2 ** 31]);
  // Without pow2_only there are more configurations to search.
  const all = JSON.parse(pase.estimate(JSON.stringify({ model: 'transformer', cluster: { devices: 24 } })));
  const pow2 = JSON.parse(pase.estimate(JSON.stringify({ model: 'transformer', cluster: { devices: 24 }, pow2_only: true })));
  assert.ok(pow2.search.configurations < all.search.configurations);
  assert.equal(all.memory_capped, false);
  assert.equal(all.max_memory, 4 * 2 ** 30, 'the default table limit');
});

// ---- The bounded search (core/docs/bounded-search.md) ------------------------------

/**
 * The checks every plan result's worth fields pass: lower_bound <= cost,
 * gap_percent = 100 (cost - lower_bound) / lower_bound (null for a bound of
 * 0), and optimal exactly when the cost meets the bound (a gap of 0 to
 * 1e-12 relative, the core's tolerance).
 */
function assertBound(doc, what) {
  assert.equal(doc.error, undefined, `${what}: ${JSON.stringify(doc.error)}`);
  assert.equal(typeof doc.optimal, 'boolean', `${what}: optimal`);
  assert.ok(Number.isFinite(doc.lower_bound) && doc.lower_bound >= 0, `${what}: lower_bound ${doc.lower_bound}`);
  assert.ok(doc.lower_bound <= doc.cost * (1 + 1e-12), `${what}: bound ${doc.lower_bound} > cost ${doc.cost}`);
  if (doc.lower_bound > 0) {
    const gap = (100 * (doc.cost - doc.lower_bound)) / doc.lower_bound;
    assert.ok(Math.abs(doc.gap_percent - Math.max(0, gap)) <= 1e-9 * Math.max(1, gap), `${what}: gap ${doc.gap_percent} != ${gap}`);
  } else {
    assert.equal(doc.gap_percent, null, `${what}: no gap over a bound of 0`);
  }
  // Optimal: the cost meets the bound; not: a gap remains.
  if (doc.optimal) assert.ok(doc.gap_percent <= 1e-9, `${what}: optimal with a gap of ${doc.gap_percent}%`);
  else assert.ok(doc.gap_percent === null || doc.gap_percent > 0, `${what}: not optimal with no gap`);
  // Top-level keys in the order of core/docs/formats.md: the worth after the cost and the step time.
  const keys = Object.keys(doc);
  assert.deepEqual(keys.slice(keys.indexOf('cost'), keys.indexOf('cost') + 5), ['cost', 'step_time_s', 'optimal', 'lower_bound', 'gap_percent']);
}

/** The search fields of a bounded plan, against the exact search's need and the table limit. */
function assertBoundedSearch(search, limit = 4 * 2 ** 30) {
  assert.equal(search.method, 'bounded');
  assert.ok(Number.isInteger(search.rounds) && search.rounds >= 1, `rounds ${search.rounds}`);
  assert.ok(Number.isInteger(search.fixed_vertices) && search.fixed_vertices >= 0, `fixed_vertices ${search.fixed_vertices}`);
  assert.ok(search.exact_peak_bytes > limit, `the exact search needs ${search.exact_peak_bytes} bytes, within the limit`);
  assert.ok(search.peak_bytes <= limit, `a round's tables ${search.peak_bytes} bytes`);
}

test('plan: an exact plan is proven optimal, its bound its cost', () => {
  const doc = plan({ model: 'alexnet', cluster: { devices: 8 } });
  assertBound(doc, 'alexnet');
  assert.deepEqual([doc.optimal, doc.lower_bound, doc.gap_percent, doc.search.method], [true, doc.cost, 0, 'exact']);
  for (const key of ['rounds', 'fixed_vertices', 'exact_peak_bytes']) assert.equal(doc.search[key], undefined, key);
  // Under a memory cap too small for the cheapest strategy: the cap's bound, not proven.
  const capped = plan({ model: 'rnnlm', cluster: { devices: 16, memory_gib: 1 } });
  assertBound(capped, 'rnnlm capped');
  assert.equal(capped.search.method, 'exact');
  assert.deepEqual([capped.optimal, capped.lower_bound], [capped.memory.optimal, capped.memory.lower_bound]);
});

test('bounded: the transformer at 64 devices in bfs order plans with the bounded search, within its bound', () => {
  const request = { model: 'transformer', cluster: { devices: 64 }, order: 'bfs' };
  const doc = plan(request);
  assertBound(doc, 'transformer bfs');
  assertBoundedSearch(doc.search);
  assert.equal(doc.search.order, 'bfs');
  assert.equal(doc.vertices.length, 204);
  // auto is the default: the same plan when named.
  assert.equal(plan({ ...request, search: 'auto' }).cost, doc.cost);
  // Its strategy costs what the plan says.
  const evaluated = JSON.parse(pase.evaluate(JSON.stringify({ ...request, strategy: doc })));
  assertSamePlan(evaluated.cost, doc.cost, 'evaluated cost');
  // No strategy costs less than the bound: not the genseq order's exact optimum either.
  const exact = plan({ model: 'transformer', cluster: { devices: 64 } });
  assert.equal(exact.search.method, 'exact');
  assert.ok(doc.lower_bound <= exact.cost * (1 + 1e-12), `bound ${doc.lower_bound} > optimum ${exact.cost}`);
  assert.ok(exact.cost <= doc.cost * (1 + 1e-12), 'the bounded plan cannot beat the optimum');

  // The estimate says bounded, with the budget and the exact search's need.
  const estimate = JSON.parse(pase.estimate(JSON.stringify(request)));
  assert.equal(estimate.search.method, 'bounded');
  assert.ok(Number.isInteger(estimate.search.rounds) && estimate.search.rounds >= doc.search.rounds);
  assert.equal(estimate.search.exact_peak_bytes, doc.search.exact_peak_bytes);
  assert.ok(estimate.search.pairs >= doc.search.pairs, `budget ${estimate.search.pairs} < pairs searched ${doc.search.pairs}`);
  assert.ok(estimate.search.peak_bytes <= estimate.max_memory);
  // Held to the exact search, the estimate is the exact one's: over the limit.
  const exactEstimate = JSON.parse(pase.estimate(JSON.stringify({ ...request, search: 'exact' })));
  assert.equal(exactEstimate.search.method, 'exact');
  assert.equal(exactEstimate.search.rounds, undefined);
  assert.equal(exactEstimate.search.peak_bytes, doc.search.exact_peak_bytes);
  assert.ok(exactEstimate.search.peak_bytes > exactEstimate.max_memory);
});

test('bounded: the nested U-Net plans bounded, with a gap, where the exact search needs petabytes', () => {
  const text = readFileSync(path.join(examplesDir, 'unet_nested.json'), 'utf8');
  const cluster = { devices: 256, gpus_per_node: 8, bandwidth_gbps: 50, intra_node_gbps: 400 };
  const doc = plan(`{"graph": ${text}, "cluster": ${JSON.stringify(cluster)}, "cost_model": "paper"}`);
  assertBound(doc, 'unet_nested');
  assertBoundedSearch(doc.search);
  assert.ok(doc.search.exact_peak_bytes > 200 * 2 ** 30, `the exact search needs ${doc.search.exact_peak_bytes} bytes`);
  assert.equal(doc.optimal, false);
  assert.ok(doc.gap_percent > 0 && doc.gap_percent < 50, `gap ${doc.gap_percent}%`);
  // bounded by name: the same search.
  assert.equal(plan(`{"graph": ${text}, "cluster": ${JSON.stringify(cluster)}, "cost_model": "paper", "search": "bounded"}`).cost, doc.cost);
  // Held to the exact search: refused, at the table limit.
  const refused = plan(`{"graph": ${text}, "cluster": ${JSON.stringify(cluster)}, "cost_model": "paper", "search": "exact"}`);
  assertError(refused, 'max_memory');
  assert.match(refused.error.message, /more than the limit/);
});

test('bounded: the DenseNet-121 ONNX fixture imports and plans at 8 devices', () => {
  const imported = JSON.parse(pase.importModel(onnxBytes('densenet121.onnx')));
  assert.equal(imported.error, undefined, JSON.stringify(imported.error));
  assert.equal(imported.parameters, onnxModel('densenet121.onnx').expected_parameters);
  assert.deepEqual(imported.dynamic_dims, []);
  const request = { graph: imported.graph, cluster: { devices: 8 } };
  // Dense blocks: the exact search would need about 10^20 bytes of tables.
  const estimate = JSON.parse(pase.estimate(JSON.stringify(request)));
  assert.equal(estimate.search.method, 'bounded');
  assert.ok(estimate.search.max_dependent_set >= 20, `largest dependent set ${estimate.search.max_dependent_set}`);
  const doc = plan(request);
  assertBound(doc, 'densenet121');
  assertBoundedSearch(doc.search);
  assert.equal(doc.search.exact_peak_bytes, estimate.search.exact_peak_bytes);
  assert.equal(doc.vertices.length, imported.layers + 1, 'the layers and the graph input');
  assert.equal(doc.parameters, imported.parameters);
});

test('compare: alexnet at 8 devices prices every strategy against the plan', () => {
  const request = { model: 'alexnet', cluster: { devices: 8 } };
  const planned = plan(request);
  const doc = compare({ ...request, mcmc: pageMcmc });
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  const { strategies } = doc;
  assert.deepEqual(Object.keys(strategies).sort(), ['data_parallel', 'expert', 'mcmc', 'pase']);
  assert.equal(doc.expert_kind, 'owt');
  assertSamePlan(strategies.pase.cost, planned.cost, 'pase cost');
  // The golden data-parallel cost of AlexNet at 8 devices (batch 128, 10 TFLOP/s, 16 GB/s).
  assertSamePlan(strategies.data_parallel.cost, 601108833248, 'data_parallel cost');
  for (const [name, s] of Object.entries(strategies)) {
    assert.equal(s.strategy, name);
    assert.ok(strategies.pase.cost <= s.cost * (1 + 1e-12), `pase ${strategies.pase.cost} > ${name} ${s.cost}`);
    assert.ok(s.step_time_s > 0, name);
    assertSamePlan(s.speedup, strategies.data_parallel.cost / s.cost, `${name} speedup`);
  }
  assert.equal(strategies.mcmc.mcmc.iterations <= pageMcmc.iterations, true);
  // No time limit: the same request gives the same search, proposal by proposal.
  const again = compare({ ...request, mcmc: pageMcmc });
  assert.equal(again.strategies.mcmc.cost, strategies.mcmc.cost);
  assert.deepEqual({ ...again.strategies.mcmc.mcmc, time_s: 0 }, { ...strategies.mcmc.mcmc, time_s: 0 });
});

test('compare: a custom graph has no expert strategy and says so', () => {
  const text = readFileSync(path.join(examplesDir, 'small_cnn.json'), 'utf8');
  const doc = compare(`{"graph": ${text}, "cluster": {"devices": 8}, "mcmc": ${JSON.stringify(pageMcmc)}}`);
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  assert.equal(doc.expert_kind, 'none');
  assert.equal(doc.strategies.expert, undefined);
  assert.ok(doc.notes.some((note) => /no expert strategy/.test(note)), JSON.stringify(doc.notes));
  assertSamePlan(doc.strategies.pase.cost, plan(`{"graph": ${text}, "cluster": {"devices": 8}}`).cost, 'pase cost');
});

test('evaluate: the strategy of a plan costs what the plan said', () => {
  const planned = plan({ model: 'resnet101', cluster: { devices: 8 } });
  const evaluated = JSON.parse(pase.evaluate(JSON.stringify({ model: 'resnet101', cluster: { devices: 8 }, strategy: planned })));
  assert.equal(evaluated.error, undefined);
  assert.ok(Math.abs(evaluated.cost - planned.cost) <= 1e-9 * planned.cost);
});

test('exportModel: the exported document plans exactly like the built-in network', () => {
  const exported = pase.exportModel('alexnet', 64);
  assert.equal(JSON.parse(exported).format, 'pase-graph/1');
  assert.equal(JSON.parse(pase.exportModel('alexnet')).inputs.image[0], 128, 'the default batch');
  const fromFile = plan(`{"graph": ${exported}, "cluster": {"devices": 8}}`);
  const builtIn = plan({ model: 'alexnet', batch: 64, cluster: { devices: 8 } });
  assertSamePlan(fromFile, builtIn);
});

test('validate: every example graph and exported network, summarised', () => {
  for (const file of examples) {
    const text = readFileSync(path.join(examplesDir, file), 'utf8');
    const doc = JSON.parse(pase.validate(text));
    const planned = plan(`{"graph": ${text}, "cluster": {"devices": 1}}`);
    assert.deepEqual(doc, {
      ok: true,
      name: JSON.parse(text).name ?? '',
      layers: JSON.parse(text).layers.length,
      vertices: planned.vertices.length,
      edges: planned.edges.length,
      parameters: planned.parameters,
    }, file);
  }
  const models = JSON.parse(pase.models());
  for (const m of models) {
    const doc = JSON.parse(pase.validate(pase.exportModel(m.name)));
    assert.equal(doc.ok, true, m.name);
    assert.equal(doc.name, m.name);
    assert.equal(doc.vertices, m.vertices, m.name);
    assert.equal(doc.edges, m.edges, m.name);
  }
});

// ---- Same results as the native CLI -------------------------------------------------

for (const model of benchmarkModels) {
  test(`native: ${model} at 8 devices equals the CLI's plan`, { skip: cliSkip }, () => {
    assertSamePlan(plan({ model, cluster: { devices: 8 } }), cli(['plan', '--model', model, '--procs', '8']));
  });
}

test('native: presets() is the list `pase presets --format json` prints', { skip: cliSkip }, () => {
  assert.ok(haveCli, `native CLI not found at ${cliPath}`);
  const text = execFileSync(cliPath, ['presets', '--format', 'json'], { encoding: 'utf8' });
  assert.equal(pase.presets(), text, 'the same document, byte for byte');
  assert.deepEqual(JSON.parse(pase.presets()), JSON.parse(text));
});

test('native: rnnlm on 16 devices of the h100 preset with ZeRO 1 equals the CLI', { skip: cliSkip }, () => {
  const wasm = plan({ model: 'rnnlm', preset: 'h100', cluster: { devices: 16 }, training: { zero: 1 } });
  const native = cli(['plan', '--model', 'rnnlm', '--procs', '16', '--preset', 'h100', '--zero', '1']);
  assertSamePlan(wasm, native);
  assert.equal(wasm.cluster.gpus_per_node, 8);
  assert.equal(wasm.training.zero, 1);
});

test('native: alexnet at 6 devices, 25 TFLOP/s, 100 GB/s, batch 96 equals the CLI', { skip: cliSkip }, () => {
  const wasm = plan({ model: 'alexnet', batch: 96, cluster: { devices: 6, tflops: 25, bandwidth_gbps: 100 } });
  const native = cli(['plan', '--model', 'alexnet', '--batch', '96', '--procs', '6', '--flops', '25', '--bandwidth', '100']);
  assertSamePlan(wasm, native);
});

test('native: the nested U-Net\'s bounded plan equals the CLI\'s', { skip: cliSkip }, () => {
  const file = path.join(examplesDir, 'unet_nested.json');
  const wasm = plan(`{"graph": ${readFileSync(file, 'utf8')}, "cluster": {"devices": 256, "gpus_per_node": 8, "bandwidth_gbps": 50, "intra_node_gbps": 400}, "cost_model": "paper"}`);
  const native = cli(['plan', '--graph', file, '--procs', '256', '--gpus-per-node', '8', '--bandwidth', '50', '--intra-bandwidth', '400',
    '--cost-model', 'paper']);
  assert.equal(native.search.method, 'bounded');
  assertSamePlan(wasm, native);
});

for (const model of ['alexnet', 'transformer']) {
  test(`native: ${model} compare at 8 devices equals the CLI's, MCMC included`, { skip: cliSkip }, () => {
    // The MCMC draws are derived from mt19937_64 by fixed formulas, so a fixed
    // budget reproduces across standard libraries (compare.hpp, DETERMINISM).
    const wasm = compare({ model, cluster: { devices: 8 }, mcmc: pageMcmc });
    const native = cli(['compare', '--model', model, '--procs', '8', '--mcmc-iterations', String(pageMcmc.iterations), '--mcmc-time', '0']);
    assert.deepEqual(Object.keys(wasm.strategies), Object.keys(native.strategies));
    for (const name of Object.keys(native.strategies)) {
      assertSamePlan(wasm.strategies[name].cost, native.strategies[name].cost, `${name} cost`);
      assert.deepEqual(wasm.strategies[name].vertices.map((v) => v.config), native.strategies[name].vertices.map((v) => v.config), `${name} configurations`);
    }
    const { time_s: _w, ...wasmStats } = wasm.strategies.mcmc.mcmc;
    const { time_s: _n, ...nativeStats } = native.strategies.mcmc.mcmc;
    assert.deepEqual(wasmStats, nativeStats);
  });
}

for (const file of examples) {
  test(`native: examples/graphs/${file} at 8 devices equals the CLI's plan`, { skip: cliSkip }, () => {
    const text = readFileSync(path.join(examplesDir, file), 'utf8');
    const wasm = plan(`{"graph": ${text}, "cluster": {"devices": 8}}`);
    assert.equal(wasm.error, undefined, JSON.stringify(wasm.error));
    assertSamePlan(wasm, cli(['plan', '--graph', path.join(examplesDir, file), '--procs', '8']));
  });
}
