// The Cluster panel end to end (issue 12): the GPU presets come from the
// module, nodes x GPUs per node, memory per GPU, ZeRO and the training's
// bytes travel in the request and the URL, and the results show the memory
// per GPU, per layer and per strategy, or that nothing fits.
//
//   node --test tests/web/cluster.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser. Without a
// browser the tests are skipped, except under CI (CI=true).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { assertClose, browserSkip, openPaperSetup, openSitePage, useSite, waitForCost } from './browser.mjs';
import { repo } from '../wasm/load-module.mjs';
import { formatBytes } from '../../web/format.js';
import { planBound } from '../../web/views/bound.js';

const resultsDir = path.join(repo, 'test-results');
const skip = browserSkip;
const timeout = 180_000;
const GiB = 2 ** 30;

const site = useSite();

// ---- Helpers --------------------------------------------------------------------

const openPage = (query = '') => openSitePage(site.browser, site.url + query);
// AlexNet on the paper's flat ring, what the tests below start from.
const openPaperPage = () => openPaperSetup(site.browser, site.url);

function planned(request) {
  const doc = JSON.parse(site.pase.plan(JSON.stringify(request)));
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  return doc;
}

const h100 = () => JSON.parse(site.pase.presets()).find((p) => p.id === 'h100');

/** The fields a preset fills, as the page shows them. */
const clusterFields = (page) => page.evaluate(() => Object.fromEntries(
  ['preset', 'nodes', 'gpus-per-node', 'devices', 'tflops', 'memory', 'intra-bandwidth', 'bandwidth']
    .map((id) => [id, document.getElementById(id).value])));

/** The error box: the `where` in its <code> and the whole message. */
async function shownError(page) {
  await page.waitForSelector('#error', { state: 'visible', timeout: 30_000 });
  return page.evaluate(() => ({
    where: document.querySelector('#error-message code')?.textContent ?? '',
    message: document.getElementById('error-message').textContent,
  }));
}

// ---- Bad input first ------------------------------------------------------------

test('cluster: a negative memory, zero GPUs per node or negative bytes name their field', { skip, timeout }, async () => {
  const { page, problems, close } = await openPaperPage();
  const cases = [
    ['#memory', '-1', 'cluster.memory_gib', /must be a positive number, not -1/],
    ['#gpus-per-node', '0', 'cluster.gpus_per_node', /must be a positive integer, not 0/],
    ['#optimizer-bytes', '-4', 'training.optimizer_bytes', /must be a non-negative integer, not -4/],
  ];
  for (const [id, value, where, message] of cases) {
    const before = await page.inputValue(id);
    await page.$eval(id, (input) => input.closest('details')?.setAttribute('open', ''));
    await page.fill(id, value);
    await page.click('#plan-button');
    const shown = await shownError(page);
    assert.equal(shown.where, where, shown.message);
    assert.match(shown.message, message);
    assert.equal(await page.getAttribute(id, 'aria-invalid'), 'true', `${id} is marked`);
    assert.equal(await page.isVisible('#no-fit'), false, 'a bad value is not a plan that does not fit');
    assert.match(await page.textContent('#status'), /failed/i);
    await page.fill(id, before);
    assert.equal(await page.getAttribute(id, 'aria-invalid'), null, 'editing the field clears the mark');
  }
  // Folded away, the training's bytes are shown when one of them is wrong.
  await page.$eval('#training-details', (details) => { details.open = false; });
  await page.fill('#gpus-per-node', '8');
  await page.fill('#intra-bandwidth', '');
  await page.click('#plan-button');
  assert.equal((await shownError(page)).where, 'cluster.intra_node_gbps', 'nodes need their link speed');
  await page.fill('#gpus-per-node', '');
  await page.$eval('#param-bytes', (input) => { input.value = '-2'; });
  await page.click('#plan-button');
  assert.equal((await shownError(page)).where, 'training.param_bytes');
  assert.equal(await page.$eval('#training-details', (details) => details.open), true);
  await page.fill('#param-bytes', '2');
  await page.click('#plan-button');
  assertClose(await waitForCost(page), 97098296512, 'alexnet plans again, as in the paper');
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('cluster: a cap that nothing meets shows the least memory reachable and what lowers it', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage('?model=alexnet&devices=8');
  await waitForCost(page);
  await page.fill('#memory', '0.001');
  await page.click('#plan-button');
  await page.waitForSelector('#no-fit', { state: 'visible', timeout: 60_000 });
  // The module's own answer to the same request.
  const refused = JSON.parse(site.pase.plan(JSON.stringify({ model: 'alexnet', cluster: { devices: 8, memory_gib: 0.001 } })));
  assert.equal(refused.error.where, 'cluster.memory_gib');
  const least = Number(/least memory any strategy reaches is ([\d.e+-]+) GiB/.exec(refused.error.message)[1]);
  assert.ok(least > 0.001, `least ${least} GiB`);
  const text = await page.textContent('#no-fit');
  assert.match(text, /Does not fit in 0\.001 GiB per GPU/);
  assert.ok(text.includes(`The least memory any strategy reaches is ${formatBytes(least * GiB)} per GPU`), text);
  assert.ok(text.includes(refused.error.message), 'the planner\'s message itself');
  assert.match(text, /more devices \(now 8\)/);
  assert.match(text, /higher ZeRO stage \(now 0\)/);
  assert.equal(await page.isVisible('#error'), false, 'not shown as a mistake in the form');
  assert.equal(await page.getAttribute('#memory', 'aria-invalid'), 'true');
  assert.match(await page.textContent('#status'), /does not fit/);
  assert.equal(await page.evaluate(() => document.body.classList.contains('stale')), true, 'the plan before is dimmed');
  await page.locator('#no-fit').screenshot({ path: path.join(resultsDir, 'page-does-not-fit.png') });

  // At ZeRO 3 there is no higher stage to suggest; the least memory is the module's at ZeRO 3.
  await page.selectOption('#zero', '3');
  await page.click('#plan-button');
  await page.waitForFunction(() => /now 8\)/.test(document.getElementById('no-fit-hint').textContent)
    && !/ZeRO/.test(document.getElementById('no-fit-hint').textContent), null, { timeout: 60_000 });
  const sharded = JSON.parse(site.pase.plan(JSON.stringify({ model: 'alexnet', cluster: { devices: 8, memory_gib: 0.001 }, training: { zero: 3 } })));
  const leastSharded = Number(/reaches is ([\d.e+-]+) GiB/.exec(sharded.error.message)[1]);
  assert.ok(leastSharded <= least, `ZeRO 3 needs no more: ${leastSharded} <= ${least}`);
  assert.ok((await page.textContent('#no-fit-need')).includes(formatBytes(leastSharded * GiB)));

  // Enough memory: the plan is back and the state is gone.
  await page.fill('#memory', '1');
  await page.click('#plan-button');
  await page.waitForFunction(() => document.getElementById('no-fit').hidden && !document.body.classList.contains('stale'), null, { timeout: 60_000 });
  assert.equal(await page.getAttribute('#memory', 'aria-invalid'), null);
  assert.deepEqual(problems, []);
  await close();
});

// ---- Presets --------------------------------------------------------------------

test('cluster: the presets are the module\'s list after the paper\'s, and h100 fills the fields', { skip, timeout }, async () => {
  const { page, problems, close } = await openPaperPage();
  const list = JSON.parse(site.pase.presets());
  const options = await page.$$eval('#preset option', (items) => items.map((o) => o.value));
  assert.deepEqual(options, ['paper', ...list.map((p) => p.id), 'custom']);
  // The paper setup is the paper's flat ring without a cap.
  let fields = await clusterFields(page);
  assert.deepEqual([fields.preset, fields.tflops, fields.bandwidth, fields['gpus-per-node'], fields.memory], ['paper', '10', '16', '', '']);
  assert.equal(await page.isDisabled('#nodes'), true, 'no nodes on a flat ring');
  assert.equal(await page.isDisabled('#intra-bandwidth'), true);
  assert.match(await page.textContent('#topology'), /Flat ring: 8 devices/);

  const p = h100();
  await page.selectOption('#preset', 'h100');
  fields = await clusterFields(page);
  assert.deepEqual(fields, {
    preset: 'h100', nodes: '1', 'gpus-per-node': String(p.gpus_per_node), devices: '8', tflops: String(p.tflops),
    memory: String(p.memory_gib), 'intra-bandwidth': String(p.intra_node_gbps), bandwidth: String(p.bandwidth_gbps),
  });
  assert.equal(await page.textContent('label[for="bandwidth"]'), 'Inter-node GB/s');
  assert.match(await page.textContent('#topology'), /8 devices on one node of 8, 80 GiB per GPU/);

  // Editing any value the preset filled makes it Custom; the values back make it h100.
  for (const [id, value] of [['#memory', '40'], ['#intra-bandwidth', '300'], ['#gpus-per-node', '4'], ['#tflops', '900']]) {
    const before = await page.inputValue(id);
    await page.fill(id, value);
    assert.equal(await page.inputValue('#preset'), 'custom', `${id} edited`);
    await page.fill(id, before);
    assert.equal(await page.inputValue('#preset'), 'h100', `${id} restored`);
  }
  // Nodes x GPUs per node is the device count, both ways.
  await page.fill('#nodes', '3');
  assert.equal(await page.inputValue('#devices'), '24');
  await page.fill('#devices', '12');
  assert.equal(await page.inputValue('#nodes'), '2');
  assert.match(await page.textContent('#topology'), /12 devices as 2 nodes of 8, the last with 4/);
  assert.equal(await page.inputValue('#preset'), 'h100', 'the device count is not the preset\'s');
  // Back to the paper: a flat ring again, the devices kept.
  await page.selectOption('#preset', 'paper');
  fields = await clusterFields(page);
  assert.deepEqual([fields.tflops, fields.bandwidth, fields['gpus-per-node'], fields.nodes, fields.memory, fields.devices], ['10', '16', '', '', '', '12']);
  assert.deepEqual(problems, []);
  await close();
});

// ---- Results --------------------------------------------------------------------

test('cluster: a model on 2 nodes x 8 shows the memory bar against the cap and a memory column', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage();
  await page.selectOption('#model-select', 'rnnlm');
  await page.selectOption('#preset', 'h100');
  assert.equal(await page.inputValue('#cost-model'), 'practice', 'a GPU preset plans with the practice model');
  await page.selectOption('#cost-model', 'paper');
  await page.fill('#nodes', '2');
  assert.equal(await page.inputValue('#devices'), '16');
  await page.click('#plan-button');
  const cost = await waitForCost(page);
  const p = h100();
  const expected = planned({
    model: 'rnnlm',
    cluster: { devices: 16, tflops: p.tflops, bandwidth_gbps: p.bandwidth_gbps, gpus_per_node: 8, intra_node_gbps: p.intra_node_gbps, memory_gib: p.memory_gib },
    cost_model: 'paper',
  });
  assertClose(cost, expected.cost, 'rnnlm on 2 nodes x 8');
  assert.match(await page.textContent('#plan-note'), /2 nodes × 8 · 450 GB\/s inside nodes, 50 GB\/s between/);

  // The bar: four parts adding up to the total, against the capacity line.
  const m = expected.memory;
  const bar = await page.$eval('#memory-chart', (chart) => ({
    total: Number(chart.querySelector('.memory-bar').dataset.total),
    parts: [...chart.querySelectorAll('.memory-seg')].map((s) => [s.dataset.part, Number(s.dataset.bytes)]),
    capacity: Number(chart.querySelector('.memory-cap')?.dataset.capacity),
    barWidth: chart.querySelector('.memory-bar').getBoundingClientRect().width,
    trackWidth: chart.querySelector('.memory-track').getBoundingClientRect().width,
    headline: chart.querySelector('.memory-headline').textContent,
    text: chart.textContent,
  }));
  assertClose(bar.total, m.per_device_bytes, 'total');
  assert.deepEqual(bar.parts, [['params', m.params], ['grads', m.grads], ['optimizer', m.optimizer], ['activations', m.activations]]);
  assert.equal(bar.capacity, 80 * GiB);
  // Drawn to scale: 1.4 GiB of 80 is a short bar (to the pixel, at least 2).
  const scaled = Math.max(2, (bar.trackWidth * m.per_device_bytes) / (80 * GiB));
  assert.ok(Math.abs(bar.barWidth - scaled) <= 1, `bar ${bar.barWidth}px, expected ${scaled}px of ${bar.trackWidth}px`);
  assert.equal(bar.headline, `${formatBytes(m.per_device_bytes)} of 80 GiB per GPU: fits`);
  for (const bytes of [m.params, m.optimizer, m.activations]) assert.ok(bar.text.includes(formatBytes(bytes)), formatBytes(bytes));
  assert.match(bar.text, /2\+2\+12 bytes per parameter, 2 per activation, ZeRO 0/);
  // Whether the plan is proven the cheapest that fits: one sentence, under the headline, not in the memory card.
  assert.doesNotMatch(bar.text, /proven optimal/);
  assert.equal(await page.textContent('#plan-bound'), planBound(expected).text);
  assert.match(await page.textContent('#plan-bound'), expected.optimal ? /^Proven optimal: the cheapest strategy that fits in 80 GiB per GPU\.$/ : /^Not proven optimal: the search under the memory cap found this plan; every strategy that fits costs at least /);
  assert.equal(await page.getAttribute('#plan-bound', 'data-optimal'), String(expected.optimal));

  // The table's memory column: each layer's share, readable.
  const cells = await page.$$eval('#strategy-table td.memory', (tds) => tds.map((td) => [Number(td.dataset.bytes), td.textContent]));
  assert.deepEqual(cells, expected.vertices.map((v) => [v.memory_bytes, formatBytes(v.memory_bytes)]));
  assert.equal(await page.$$eval('#strategy-table thead th', (ths) => ths.at(-1).textContent), 'Memory');
  await page.locator('.memory-card').screenshot({ path: path.join(resultsDir, 'page-memory.png') });
  assert.deepEqual(problems, []);
  await close();
});

test('cluster: the comparison marks a baseline that does not fit (Llama 3 8B on 8 H100s)', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage('?model=llama3-8b&batch=8&seq=2048&devices=8');
  await waitForCost(page);
  await page.selectOption('#preset', 'h100');
  await page.selectOption('#cost-model', 'paper');
  await page.click('#plan-button');
  // Only the comparison under the cap has a strategy that does not fit.
  await page.waitForSelector('#comparison [data-strategy="data_parallel"][data-fits="false"]', { timeout: 120_000 });
  const rows = await page.$$eval('#comparison [data-strategy]', (items) => items.map((item) => ({
    strategy: item.dataset.strategy,
    fits: item.dataset.fits,
    bytes: Number(item.querySelector('.compare-memory').dataset.bytes),
    memory: item.querySelector('.compare-memory').textContent,
  })));
  const byName = Object.fromEntries(rows.map((r) => [r.strategy, r]));
  // Data parallelism keeps 8.03 billion parameters at 16 bytes each on every GPU: ~138 GiB.
  const dp = byName.data_parallel;
  assert.equal(dp.fits, 'false');
  assert.ok(dp.bytes > 80 * GiB && dp.bytes < 140 * GiB, `${dp.bytes / GiB} GiB`);
  assert.equal(dp.memory, `${formatBytes(dp.bytes)} per GPUdoes not fit in 80 GiB`);
  const pase_ = byName.pase;
  assert.equal(pase_.fits, 'true');
  assert.ok(pase_.bytes <= 80 * GiB);
  assert.equal(pase_.memory, `${formatBytes(pase_.bytes)} per GPU`);
  assert.equal(await page.locator('#comparison .compare-nofit').count(), rows.filter((r) => r.fits === 'false').length);
  // Nothing is measured against a strategy that does not fit: here only PaSE's plan fits, the reference.
  assert.match(await page.textContent('#comparison .compare-headline'), /^Data parallelism (and .+ )?do(es)? not fit in 80 GiB.* per GPU; PaSE's plan does$/);
  assert.equal(await page.textContent('#comparison [data-strategy="data_parallel"] .compare-speedup'), 'does not fit');
  assert.equal(await page.getAttribute('#comparison [data-strategy="pase"]', 'data-reference'), 'true');
  // The plan itself is PaSE's, under the cap.
  assertClose(Number(await page.$eval('#memory-chart .memory-bar', (b) => b.dataset.total)), pase_.bytes, 'the memory card is PaSE\'s');
  await page.locator('.compare-card').screenshot({ path: path.join(resultsDir, 'page-comparison-memory.png') });
  assert.deepEqual(problems, []);
  await close();
});

// ---- Links ----------------------------------------------------------------------

test('cluster: nodes, memory, ZeRO and the training bytes round-trip through the URL', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage();
  await page.selectOption('#model-select', 'gpt2');
  await page.fill('#batch', '8');
  await page.fill('#seq', '512');
  await page.selectOption('#preset', 'a100-40gb');
  await page.selectOption('#cost-model', 'paper');
  await page.fill('#nodes', '2');
  await page.fill('#memory', '24');
  await page.selectOption('#zero', '2');
  await page.click('#training-details summary');
  await page.fill('#optimizer-bytes', '8');
  await page.click('#plan-button');
  const cost = await waitForCost(page);
  const url = new URL(page.url());
  assert.deepEqual(Object.fromEntries(['devices', 'tflops', 'bw', 'gpn', 'intra', 'mem', 'zero', 'ob', 'pb'].map((k) => [k, url.searchParams.get(k)])),
    { devices: '16', tflops: '312', bw: '25', gpn: '8', intra: '300', mem: '24', zero: '2', ob: '8', pb: null });
  const expected = planned({
    model: 'gpt2', batch: 8, seq: 512,
    cluster: { devices: 16, tflops: 312, bandwidth_gbps: 25, gpus_per_node: 8, intra_node_gbps: 300, memory_gib: 24 },
    training: { zero: 2, optimizer_bytes: 8 },
    cost_model: 'paper',
  });
  assertClose(cost, expected.cost, 'gpt2 as the form says');

  // The link plans the same on load, with the same fields.
  const shared = await openPage(url.search);
  assertClose(await waitForCost(shared.page), cost, 'shared link');
  const fields = await clusterFields(shared.page);
  assert.deepEqual([fields.preset, fields.nodes, fields['gpus-per-node'], fields.devices, fields.memory], ['custom', '2', '8', '16', '24']);
  assert.equal(await shared.page.inputValue('#zero'), '2');
  assert.equal(await shared.page.inputValue('#optimizer-bytes'), '8');
  assert.equal(await shared.page.inputValue('#param-bytes'), '2');
  assertClose(Number(await shared.page.$eval('#memory-chart .memory-bar', (b) => b.dataset.total)), expected.memory.per_device_bytes, 'memory');
  await shared.close();
  assert.deepEqual(problems, []);
  await close();
});

test('cluster: a link from before the cluster editor plans exactly as before', { skip, timeout }, async () => {
  // The paper's settings: the golden AlexNet optimum of the prototype.
  const { page, problems, close } = await openPage('?model=alexnet&batch=128&devices=8&tflops=10&bw=16');
  assertClose(await waitForCost(page), 97098296512, 'alexnet at 8 devices');
  assert.equal(await page.inputValue('#preset'), 'paper');
  assert.equal(await page.inputValue('#gpus-per-node'), '');
  assert.equal(await page.inputValue('#memory'), '');
  assert.equal(await page.textContent('#plan-note').then((t) => t.startsWith('16 GB/s links')), true);
  assert.match(await page.textContent('#memory-chart .memory-headline'), /per GPU, no memory cap/);
  assert.equal(await page.locator('#memory-chart .memory-cap').count(), 0, 'no capacity line without a cap');
  // The URL the page writes back is the old one.
  assert.equal(new URL(page.url()).search, '?model=alexnet&batch=128&devices=8&tflops=10&bw=16');
  await close();

  // A link made with an old GPU entry (989 TFLOP/s, 450 GB/s on one flat ring)
  // keeps its flat ring: the numbers are no preset of today's list.
  const old = await openPage('?model=rnnlm&devices=4&tflops=989&bw=450');
  assertClose(await waitForCost(old.page), planned({ model: 'rnnlm', cluster: { devices: 4, tflops: 989, bandwidth_gbps: 450 } }).cost, 'rnnlm, flat');
  assert.equal(await old.page.inputValue('#preset'), 'custom');
  assert.equal(await old.page.isDisabled('#nodes'), true);
  assert.deepEqual(old.problems, []);
  await old.close();
  assert.deepEqual(problems, []);
});
