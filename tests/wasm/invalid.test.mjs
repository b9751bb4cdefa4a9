// The invalid-input corpus (tests/invalid/cases.json) through the built
// WebAssembly module: every case comes back from plan() (and every graph case
// from validate(), the page's check of an upload, and from estimate(), the
// page's look before a long search) as an error document with
// its own `where` and message, and the module keeps working afterwards.
//
//   node --test tests/wasm/invalid.test.mjs
//
// PASE_SITE overrides the site folder (default build-wasm/site).

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { caseBytes, isUtf8, loadCases, moduleExpectation } from '../invalid/corpus.mjs';
import { loadModule } from './load-module.mjs';

const cases = loadCases();

let pase;

before(async () => {
  pase = await loadModule();
});

/** Checks one case; returns false when the module cannot be given it. */
function checkCase(c) {
  // Ill-formed UTF-8 cannot reach the module: a JavaScript string holds
  // UTF-16 and Embind passes it on as UTF-8.
  if (!isUtf8(caseBytes(c))) return false;
  const { request, where, message } = moduleExpectation(c);
  const text = pase.plan(request);
  let doc;
  assert.doesNotThrow(() => { doc = JSON.parse(text); }, `${c.name}: not JSON: ${text.slice(0, 200)}`);
  assert.ok(doc.error, `${c.name}: expected an error document, got ${text.slice(0, 200)}`);
  assert.deepEqual(Object.keys(doc), ['error'], c.name);
  assert.equal(doc.error.where, where, `${c.name}: where (message: ${doc.error.message.slice(0, 200)})`);
  assert.ok(doc.error.message.includes(message), `${c.name}: message ${JSON.stringify(doc.error.message.slice(0, 300))} lacks ${JSON.stringify(message)}`);
  assert.ok(doc.error.message.length < 1000, `${c.name}: a message, not a dump of the input`);
  return true;
}

test('invalid corpus: the manifest has graph, request and generated cases', () => {
  assert.ok(cases.length >= 150);
  assert.ok(cases.some((c) => c.file) && cases.some((c) => c.request) && cases.some((c) => c.generate));
});

test('invalid corpus: every graph file is refused with its place and message', () => {
  let checked = 0;
  for (const c of cases.filter((k) => k.file)) checked += checkCase(c) ? 1 : 0;
  assert.ok(checked >= 120, `${checked} graph cases checked`);
});

test('invalid corpus: every plan request and cluster is refused with its field and message', () => {
  const requests = cases.filter((c) => c.request);
  assert.ok(requests.length >= 25);
  for (const c of requests) assert.ok(checkCase(c), c.name);
});

test('invalid corpus: generated documents (too large, too deep, too many layers)', { timeout: 120_000 }, () => {
  for (const c of cases.filter((k) => k.generate)) assert.ok(checkCase(c), c.name);
});

test('invalid corpus: validate gives every graph case its place in the file', { timeout: 120_000 }, () => {
  // The page's check of an upload: the bare document, so `where` is the file's
  // own field (as load_graph() gives it), never under "graph". Graphs refused
  // only by plan() pass.
  let checked = 0;
  for (const c of cases.filter((k) => k.file || k.generate)) {
    const bytes = caseBytes(c);
    if (!isUtf8(bytes)) continue;
    const text = pase.validate(bytes.toString('utf8'));
    const doc = JSON.parse(text);
    if (c.plan) {
      assert.equal(doc.ok, true, `${c.name}: ${text.slice(0, 200)}`);
      continue;
    }
    assert.ok(doc.error, `${c.name}: expected an error document, got ${text.slice(0, 200)}`);
    assert.equal(doc.error.where, c.where, `${c.name}: where (message: ${doc.error.message.slice(0, 200)})`);
    assert.ok(doc.error.message.includes(c.message), `${c.name}: message ${JSON.stringify(doc.error.message.slice(0, 300))} lacks ${JSON.stringify(c.message)}`);
    checked++;
  }
  assert.ok(checked >= 120, `${checked} graph cases checked`);
});

test('invalid corpus: estimate refuses every case as plan does, but what only the search finds', { timeout: 120_000 }, () => {
  // estimate() does not search, so it cannot know that the tables are over
  // the limit (it reports their size instead) or that no strategy fits a
  // memory cap; every other refusal is the plan's, field and message.
  const searchOnly = [];
  let checked = 0;
  for (const c of cases.filter((k) => k.file || k.request || k.generate)) {
    if (!isUtf8(caseBytes(c))) continue;
    const { request } = moduleExpectation(c);
    const planned = JSON.parse(pase.plan(request));
    const estimate = JSON.parse(pase.estimate(request));
    checked++;
    if (estimate.error) {
      assert.deepEqual(estimate.error, planned.error, c.name);
      continue;
    }
    searchOnly.push(c.name);
    if (planned.error.where === 'max_memory') {
      assert.ok(estimate.search.peak_bytes > estimate.max_memory, `${c.name}: tables within the limit`);
    } else {
      assert.equal(planned.error.where, 'cluster.memory_gib', c.name);
      assert.equal(estimate.memory_capped, true, c.name);
    }
  }
  assert.ok(checked >= 150, `${checked} cases checked`);
  assert.ok(searchOnly.length >= 1 && searchOnly.length <= 3, `refused by the search only: ${searchOnly.join(', ')}`);
});

test('invalid corpus: the module still plans after every error', () => {
  const doc = JSON.parse(pase.plan(JSON.stringify({ model: 'alexnet', cluster: { devices: 8 } })));
  assert.equal(doc.error, undefined);
  assert.ok(doc.cost > 0);
});
