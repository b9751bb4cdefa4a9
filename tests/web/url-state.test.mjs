// web/url-state.js under Node: links carry the page state, uploaded graphs
// survive the round trip through the URL fragment.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readState, writeState, encodeText, decodeText, maxGraphFragment } from '../../web/url-state.js';

const base = 'http://127.0.0.1:8080/';

test('url-state: an empty URL names nothing to plan', async () => {
  const state = await readState(base);
  assert.equal(state.source, null);
  assert.equal(state.hasPlanState, false);
  assert.equal(state.devices, null);
  assert.equal(state.embed, false);
});

test('url-state: malformed and empty numbers keep the page defaults', async () => {
  const state = await readState(`${base}?model=alexnet&devices=eight&tflops=&bw=16`);
  assert.equal(state.devices, null);
  assert.equal(state.tflops, null);
  assert.equal(state.bandwidth, 16);
});

test('url-state: a model, its cluster and embed round-trip', async () => {
  const written = await writeState(`${base}?old=1#x`, {
    source: { kind: 'model', name: 'resnet101', batch: 64 }, devices: 16, tflops: 15.7, bandwidth: 150, order: 'bfs', embed: true,
  });
  assert.equal(written.href, `${base}?model=resnet101&batch=64&devices=16&tflops=15.7&bw=150&order=bfs&embed=1`);
  const state = await readState(written.href);
  assert.deepEqual(state.source, { kind: 'model', name: 'resnet101', batch: 64, seq: null });
  assert.equal(state.devices, 16);
  assert.equal(state.order, 'bfs');
  assert.equal(state.embed, true);
  assert.equal(state.hasPlanState, true);
});

test('url-state: the default order is left out of the link', async () => {
  const { href } = await writeState(base, { source: { kind: 'example', name: 'small_cnn' }, devices: 8, order: 'genseq' });
  assert.equal(href, `${base}?example=small_cnn&devices=8`);
});

test('url-state: an uploaded graph travels in the fragment, byte for byte', async () => {
  const text = readFileSync(new URL('../../examples/graphs/small_cnn.json', import.meta.url), 'utf8');
  const { href, graphShared } = await writeState(base, { source: { kind: 'upload', fileName: 'my net.json', text }, devices: 4 });
  assert.equal(graphShared, true);
  const url = new URL(href);
  assert.equal(url.searchParams.get('graph'), 'my net.json');
  assert.ok(url.hash.length < text.length, 'compressed');
  const state = await readState(href);
  assert.deepEqual(state.source, { kind: 'upload', fileName: 'my net.json', text });
});

test('url-state: a graph too large for a link is left out and says so', async () => {
  // Random-looking text does not compress below the limit.
  let text = '';
  let x = 1;
  while (text.length < 3 * maxGraphFragment) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    text += x.toString(36);
  }
  const { href, graphShared } = await writeState(base, { source: { kind: 'upload', fileName: 'big.json', text }, devices: 4 });
  assert.equal(graphShared, false);
  assert.equal(new URL(href).hash, '');
  assert.equal(new URL(href).searchParams.get('devices'), '4');
});

test('url-state: text encoding round-trips non-ASCII', async () => {
  const text = '{"name": "Größe ÷ 8 — 模型"}';
  assert.equal(await decodeText(await encodeText(text)), text);
  assert.match(await encodeText(text), /^[zu][A-Za-z0-9_-]*$/);
});

test('url-state: a language model keeps its sequence length', async () => {
  const written = await writeState(base, {
    source: { kind: 'model', name: 'llama3-8b', batch: 4, seq: 256 }, devices: 8,
  });
  assert.equal(written.href, `${base}?model=llama3-8b&batch=4&seq=256&devices=8`);
  assert.deepEqual((await readState(written.href)).source, { kind: 'model', name: 'llama3-8b', batch: 4, seq: 256 });
  // Without one (a CNN), none is written or read.
  const { href } = await writeState(base, { source: { kind: 'model', name: 'alexnet', batch: 128, seq: null } });
  assert.equal(href, `${base}?model=alexnet&batch=128`);
  assert.equal((await readState(`${base}?model=gpt2&seq=abc`)).source.seq, null);
});
