// The threaded module (build-wasm/site/pase-mt.js) under Node 20, whose
// threads are worker_threads: it plans on every CPU (at most 8) and finds
// exactly what the single-threaded module finds, with progress.
//
//   node --test tests/wasm/threads.test.mjs
//
// On a machine with one CPU the module has no thread to start, and the tests
// that need two are skipped.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpus } from 'node:os';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadModule, loadThreadedModule, repo } from './load-module.mjs';

// What std::thread::hardware_concurrency() reads under Node (Emscripten's
// emscripten_num_logical_cores()), clamped to the module's 8.
const expectedThreads = Math.min(cpus().length, 8);
const multiSkip = expectedThreads >= 2 ? false : 'one CPU: the threaded module runs one thread';

let threaded;
let single;

before(async () => {
  single = await loadModule();
  threaded = await loadThreadedModule();
});

after(() => {
  threaded?.PThread.terminateAllThreads();
});

function plan(pase, request, onProgress) {
  return JSON.parse(pase.plan(JSON.stringify(request), onProgress));
}

function assertSamePlan(a, b, what) {
  assert.equal(a.error, undefined, `${what}: ${JSON.stringify(a.error)}`);
  assert.equal(b.error, undefined, `${what}: ${JSON.stringify(b.error)}`);
  assert.equal(a.cost, b.cost, `${what}: the same cost to the bit`);
  assert.deepEqual(a.vertices.map((v) => v.config), b.vertices.map((v) => v.config), `${what}: the same configurations`);
}

test('threads: a request for more threads than the module has is an error naming the field', () => {
  const doc = plan(threaded, { model: 'alexnet', cluster: { devices: 8 }, threads: expectedThreads + 1 });
  assert.equal(doc.error?.where, 'threads', JSON.stringify(doc));
  assert.match(doc.error.message, new RegExp(`at most ${expectedThreads}\\b`));
  // The single-threaded module has one.
  assert.equal(plan(single, { model: 'alexnet', cluster: { devices: 8 }, threads: 2 }).error?.where, 'threads');
});

// The files of tests/invalid/ that are no ONNX model (an image, a
// checkpoint, safetensors, a ZIP, text) and the config without model_type.
// Their refusal does not go through an exception, which the threaded module
// would not catch by type (core/src/model/onnx/onnx_sniff.cpp): it used to
// answer "internal error" where the single-threaded module named the file.
test('threads: a file that is no model gets the single-threaded module\'s message, from bytes and from a reader', () => {
  const invalid = path.join(repo, 'tests/invalid');
  const files = JSON.parse(readFileSync(path.join(invalid, 'models/cases.json'), 'utf8')).cases
    .filter((c) => c.message.startsWith('not an ONNX model: the file is '))
    .map((c) => ({ ...c, file: `models/${c.file}` }));
  assert.ok(files.some((c) => c.name === 'png_image') && files.length >= 6, files.map((c) => c.name).join(', '));
  files.push({ name: 'no_model_type', file: 'configs/no_model_type.json', where: 'model_type', message: 'this looks like a Hugging Face config.json' });
  for (const c of files) {
    const buffer = readFileSync(path.join(invalid, c.file));
    const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    const reader = { size: bytes.length, read: (offset, length) => bytes.slice(offset, offset + length) };
    const expected = JSON.parse(single.importModel(bytes, '{}')).error;
    assert.ok(expected?.message.includes(c.message), `${c.name}: ${JSON.stringify(expected)}`);
    for (const source of [bytes, reader]) {
      const error = JSON.parse(threaded.importModel(source, '{}')).error;
      assert.deepEqual(error, { message: expected.message, where: c.where }, c.name);
    }
  }
});

test('threads: the single-threaded module runs one thread, the threaded one every CPU up to 8', () => {
  assert.equal(single.defaultThreads(), 1);
  assert.equal(threaded.defaultThreads(), expectedThreads);
  assert.equal(threaded.version(), single.version());
});

test('threads: the transformer at 32 devices on every thread is the single-threaded plan', { skip: multiSkip }, () => {
  const request = { model: 'transformer', cluster: { devices: 32 } };
  const fractions = [];
  const many = plan(threaded, request, (f) => fractions.push(f));
  assert.equal(many.search.threads, expectedThreads, 'a request without threads uses them all');
  const one = plan(single, request);
  assert.equal(one.search.threads, 1);
  assertSamePlan(many, one, 'threaded vs single');
  // Progress still comes from the calling thread while helpers work.
  assert.ok(fractions.length >= 2, 'several progress reports');
  assert.ok(fractions.every((f, i) => f >= 0 && f <= 1 && (i === 0 || f >= fractions[i - 1])), 'monotone in [0, 1]');
  assert.equal(fractions.at(-1), 1);
  // One thread in the threaded module: the same again.
  const oneThread = plan(threaded, { ...request, threads: 1 });
  assert.equal(oneThread.search.threads, 1);
  assertSamePlan(oneThread, one, 'threaded module on one thread vs single');
});

test('threads: plans one after another reuse the workers started with the module', { skip: multiSkip }, () => {
  // Every large step of a search starts its helpers and joins them (the
  // transformer at 16 devices has steps of over 2^20 pairs, the size from
  // which a step is split). The workers must come back to the pool each
  // time: one cannot start while plan() blocks, so a pool that ran dry would
  // fail the next thread (PTHREAD_POOL_SIZE_STRICT=2).
  const pool = threaded.PThread.unusedWorkers.length;
  assert.equal(pool, expectedThreads - 1, 'one worker per CPU but the calling thread');
  const request = { model: 'transformer', cluster: { devices: 16 } };
  const first = plan(threaded, request);
  for (let i = 0; i < 3; i++) assertSamePlan(plan(threaded, request), first, `run ${i + 2}`);
  assertSamePlan(first, plan(single, request), 'threaded vs single');
  assert.equal(first.search.threads, expectedThreads);
  assert.equal(threaded.PThread.unusedWorkers.length, pool, 'every worker back in the pool');
  assert.equal(threaded.PThread.runningWorkers.length, 0);
});
