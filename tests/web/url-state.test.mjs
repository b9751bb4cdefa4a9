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

test('url-state: nodes, memory, ZeRO and the training bytes round-trip; defaults are left out', async () => {
  const written = await writeState(base, {
    source: { kind: 'model', name: 'gpt2', batch: 16, seq: 1024 },
    devices: 16, tflops: 989, bandwidth: 50, gpusPerNode: 8, intraBandwidth: 450, memory: 40,
    training: { paramBytes: 2, gradBytes: 4, optimizerBytes: 12, activationBytes: 2, zero: 3 },
  });
  assert.equal(written.href, `${base}?model=gpt2&batch=16&seq=1024&devices=16&tflops=989&bw=50&gpn=8&intra=450&mem=40&gb=4&zero=3`);
  const state = await readState(written.href);
  assert.equal(state.gpusPerNode, 8);
  assert.equal(state.intraBandwidth, 450);
  assert.equal(state.memory, 40);
  assert.deepEqual(state.training, { paramBytes: null, gradBytes: 4, optimizerBytes: null, activationBytes: null, zero: 3, recompute: null });
  assert.equal(state.costModel, null, 'the paper model is the default, not written');
  // ZeRO "auto" (searched) and the default bytes write nothing; ZeRO 0, set
  // by hand, is written.
  const { href } = await writeState(base, {
    source: { kind: 'model', name: 'gpt2', batch: 16, seq: 1024 }, devices: 8,
    training: { paramBytes: 2, gradBytes: 2, optimizerBytes: 12, activationBytes: 2, zero: 'auto' },
  });
  assert.equal(href, `${base}?model=gpt2&batch=16&seq=1024&devices=8`);
  const zero = await writeState(base, {
    source: { kind: 'model', name: 'gpt2', batch: 16, seq: 1024 }, devices: 8,
    training: { paramBytes: 2, gradBytes: 2, optimizerBytes: 12, activationBytes: 2, zero: 0 },
  });
  assert.equal(zero.href, `${base}?model=gpt2&batch=16&seq=1024&devices=8&zero=0`);
  assert.equal((await readState(zero.href)).training.zero, 0);
});

test('url-state: a link from before the cluster editor has no nodes, no cap and default training', async () => {
  const state = await readState(`${base}?model=alexnet&batch=128&devices=8&tflops=10&bw=16`);
  assert.equal(state.gpusPerNode, null);
  assert.equal(state.intraBandwidth, null);
  assert.equal(state.memory, null);
  assert.deepEqual(state.training, { paramBytes: null, gradBytes: null, optimizerBytes: null, activationBytes: null, zero: null, recompute: null });
  assert.equal(state.costModel, null);
  assert.equal(state.memoryBandwidth, null);
  assert.equal(state.bandwidth, 16);
  // Malformed values keep the defaults, like the older fields.
  const bad = await readState(`${base}?model=alexnet&gpn=eight&mem=&zero=x`);
  assert.equal(bad.gpusPerNode, null);
  assert.equal(bad.memory, null);
  assert.equal(bad.training.zero, null);
});

test('url-state: the practice cost model, its memory bandwidth and recomputation round-trip', async () => {
  const source = { kind: 'model', name: 'gpt2', batch: 8, seq: 256 };
  const written = await writeState(base, {
    source, devices: 8, costModel: 'practice', memoryBandwidth: 3350,
    training: { paramBytes: 2, gradBytes: 2, optimizerBytes: 12, activationBytes: 2, zero: 'auto', recompute: 'full' },
  });
  assert.equal(written.href, `${base}?model=gpt2&batch=8&seq=256&devices=8&cm=practice&membw=3350&rc=full`);
  const state = await readState(written.href);
  assert.equal(state.costModel, 'practice');
  assert.equal(state.memoryBandwidth, 3350);
  assert.equal(state.training.recompute, 'full');
  // The paper model writes none of them, whatever the fields hold.
  const paper = await writeState(base, {
    source, devices: 8, costModel: 'paper', memoryBandwidth: 3350,
    training: { paramBytes: 2, gradBytes: 2, optimizerBytes: 12, activationBytes: 2, zero: 'auto', recompute: 'full' },
  });
  assert.equal(paper.href, `${base}?model=gpt2&batch=8&seq=256&devices=8`);
  // The search's choice is the default: left out; "none" is stated.
  const searched = await writeState(base, {
    source, devices: 8, costModel: 'practice', memoryBandwidth: 3350,
    training: { paramBytes: 2, gradBytes: 2, optimizerBytes: 12, activationBytes: 2, zero: 'auto', recompute: 'auto' },
  });
  assert.equal(searched.href, `${base}?model=gpt2&batch=8&seq=256&devices=8&cm=practice&membw=3350`);
  const none = await writeState(base, {
    source, devices: 8, costModel: 'practice', memoryBandwidth: 3350,
    training: { paramBytes: 2, gradBytes: 2, optimizerBytes: 12, activationBytes: 2, zero: 'auto', recompute: 'none' },
  });
  assert.match(none.href, /&rc=none$/);
});

test('url-state: the search options round-trip; the defaults are left out', async () => {
  const source = { kind: 'model', name: 'transformer', batch: 64 };
  const { href } = await writeState(base, { source, devices: 64, pow2Only: true, maxMemory: 0.5 });
  assert.equal(href, `${base}?model=transformer&batch=64&devices=64&pow2=1&maxmem=0.5`);
  const state = await readState(href);
  assert.equal(state.pow2Only, true);
  assert.equal(state.maxMemory, 0.5);
  // 0 lifts the limit: kept, it is not the default.
  assert.match((await writeState(base, { source, maxMemory: 0 })).href, /maxmem=0$/);
  const plain = await writeState(base, { source, devices: 8, pow2Only: false, maxMemory: null });
  assert.equal(plain.href, `${base}?model=transformer&batch=64&devices=8`);
  const before = await readState(plain.href);
  assert.equal(before.pow2Only, false);
  assert.equal(before.maxMemory, null);
  assert.equal(before.search, null);
  // The search: exact or bounded kept, auto (the default) left out.
  const bounded = await writeState(base, { source, devices: 64, order: 'bfs', search: 'bounded' });
  assert.equal(bounded.href, `${base}?model=transformer&batch=64&devices=64&order=bfs&search=bounded`);
  assert.equal((await readState(bounded.href)).search, 'bounded');
  assert.equal((await writeState(base, { source, search: 'auto' })).href, `${base}?model=transformer&batch=64`);
});

test('url-state: the practice rates travel by their preset\'s id; a URL without parameters is bare', async () => {
  const { href } = await writeState(base, {
    source: { kind: 'model', name: 'llama3-8b', batch: 32, seq: 8192 }, devices: 16, costModel: 'practice', memoryBandwidth: 3350, rates: 'h100',
  });
  assert.equal(href, `${base}?model=llama3-8b&batch=32&seq=8192&devices=16&cm=practice&membw=3350&rates=h100`);
  const state = await readState(href);
  assert.equal(state.rates, 'h100');
  assert.equal(state.bare, false);
  // The paper model has no rates to carry; an old practice link has none and keeps the generic ones.
  assert.equal(new URL((await writeState(base, { source: { kind: 'model', name: 'gpt2' }, rates: 'h100' })).href).searchParams.get('rates'), null);
  assert.equal((await readState(`${base}?model=gpt2&cm=practice&membw=3350`)).rates, null);
  assert.equal((await readState(base)).bare, true);
  assert.equal((await readState(`${base}?devices=16`)).bare, false);
});
