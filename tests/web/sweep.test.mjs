// The device sweep on the page (issue 14, point 5; `pase compare --sweep`):
// PaSE's speedup over data parallelism at 1, 2, 4, ... devices, drawn as a
// small SVG chart, with progress, Cancel, the counts that do not fit marked,
// and a long sweep announced first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { browserSkip, openPaperSetup, useSite } from './browser.mjs';
import { repo } from '../wasm/load-module.mjs';
import { sweepCounts } from '../../web/sweep.js';

const skip = browserSkip;
const timeout = 180_000;
const site = useSite();

function compared(request) {
  const doc = JSON.parse(site.pase.compare(JSON.stringify({ ...request, mcmc: { iterations: 0 } })));
  return doc;
}

const points = (page) => page.$$eval('#sweep-chart .sweep-point', (cs) => cs.map((c) => ({
  devices: Number(c.dataset.devices), strategy: c.dataset.strategy, speedup: Number(c.dataset.speedup),
})));

async function waitForSweep(page) {
  await page.waitForFunction(() => /^(Swept|The sweep|Not swept)/.test(document.getElementById('sweep-status').textContent),
    null, { timeout: 120_000 });
}

test('sweep: the device counts are the powers of two below the cluster\'s, then its own', () => {
  assert.deepEqual(sweepCounts(1), [1]);
  assert.deepEqual(sweepCounts(8), [1, 2, 4, 8]);
  assert.deepEqual(sweepCounts(12), [1, 2, 4, 8, 12]);
  assert.deepEqual(sweepCounts(1024).length, 11);
  for (const bad of [0, -4, 2.5, null, NaN]) assert.deepEqual(sweepCounts(bad), [], String(bad));
});

test('sweep: AlexNet on 1 to 8 devices draws the speedups the module computes', { skip, timeout }, async () => {
  const { page, problems, close } = await openPaperSetup(site.browser, site.url);
  await page.selectOption('#model-select', 'alexnet');
  await page.fill('#devices', '8');
  assert.equal(await page.isEnabled('#sweep-button'), true, 'no plan needed first');
  await page.click('#sweep-button');
  await waitForSweep(page);
  assert.match(await page.textContent('#sweep-status'), /^Swept AlexNet over 1 to 8 devices in .+: PaSE 6\.19× data parallelism at 8 devices\.$/);
  const drawn = await points(page);
  const expected = [];
  for (const devices of [1, 2, 4, 8]) {
    const doc = compared({ model: 'alexnet', cluster: { devices } });
    assert.equal(doc.error, undefined, JSON.stringify(doc.error));
    assert.equal(doc.strategies.mcmc, undefined, 'no MCMC in a sweep');
    expected.push({ devices, strategy: 'pase', speedup: doc.strategies.pase.speedup });
    expected.push({ devices, strategy: 'expert', speedup: doc.strategies.expert.speedup });
  }
  const order = (a, b) => a.strategy.localeCompare(b.strategy) || a.devices - b.devices;
  assert.deepEqual(drawn.sort(order), expected.sort(order));
  // Rising with the devices, left to right.
  const xs = await page.$$eval('#sweep-chart .sweep-pase .sweep-point', (cs) => cs.map((c) => Number(c.getAttribute('cx'))));
  assert.ok(xs.every((x, i) => i === 0 || x > xs[i - 1]));
  assert.match(await page.getAttribute('#sweep-chart svg', 'aria-label'), /1: 1\.00×, 2: 2\.16×, 4: 3\.90×, 8: 6\.19×/);
  assert.equal(await page.isDisabled('#sweep-cancel'), true);
  assert.equal(await page.isEnabled('#sweep-button'), true);
  await page.locator('.sweep-card').screenshot({ path: path.join(repo, 'test-results', 'page-sweep.png') });
  assert.deepEqual(problems, []);
  await close();
});

test('sweep: counts where no strategy fits are marked, and where data parallelism does not, no speedup over it is drawn', { skip, timeout }, async () => {
  const { page, problems, close } = await openPaperSetup(site.browser, site.url);
  await page.selectOption('#model-select', 'alexnet');
  await page.fill('#devices', '8');
  await page.fill('#memory', '1');
  await page.click('#sweep-button');
  await waitForSweep(page);
  const docs = new Map([1, 2, 4, 8].map((d) => [d, compared({ model: 'alexnet', cluster: { devices: d, memory_gib: 1 } })]));
  const fits = (d) => !docs.get(d).error;
  const dataParallelFits = (d) => fits(d) && docs.get(d).strategies.data_parallel.memory.fits;
  const marked = await page.$$eval('#sweep-chart .sweep-nofit', (ts) => ts.map((t) => Number(t.dataset.devices)));
  assert.deepEqual(marked, [1, 2, 4, 8].filter((d) => !fits(d)));
  assert.ok(marked.length > 0 && marked.length < 4, `${marked}`);
  // Some count plans, but without data parallelism fitting: marked, not drawn.
  const noReference = await page.$$eval('#sweep-chart .sweep-nodp', (ts) => ts.map((t) => Number(t.dataset.devices)));
  assert.deepEqual(noReference, [1, 2, 4, 8].filter((d) => fits(d) && !dataParallelFits(d)));
  assert.ok(noReference.length > 0, 'a count where data parallelism does not fit');
  const drawn = [...new Set((await points(page)).map((p) => p.devices))];
  assert.deepEqual(drawn, [1, 2, 4, 8].filter(dataParallelFits));
  assert.ok(drawn.length > 0);
  assert.match(await page.textContent('#sweep-status'), /^Swept/);
  assert.deepEqual(problems, []);
  await close();
});

test('sweep: Cancel stops it, a new graph too, and a long sweep asks first', { skip, timeout }, async () => {
  const { page, problems, close } = await openPaperSetup(site.browser, site.url);
  // The Transformer up to 64 devices: seconds of comparisons.
  await page.selectOption('#model-select', 'transformer');
  await page.fill('#devices', '64');
  await page.click('#sweep-button');
  await page.waitForFunction(() => /\((3|4|5|6|7) of 7\)/.test(document.getElementById('sweep-status').textContent), null, { timeout: 60_000 });
  assert.equal(await page.isVisible('#sweep-progress'), true);
  assert.ok(await page.locator('#sweep-progress').evaluate((p) => p.value) > 0);
  assert.equal(await page.isDisabled('#sweep-button'), true);
  await page.click('#sweep-cancel');
  assert.equal(await page.textContent('#sweep-status'), 'Sweep cancelled.');
  assert.equal(await page.isEnabled('#sweep-button'), true);
  assert.equal(await page.isDisabled('#sweep-cancel'), true);
  const kept = await page.locator('#sweep-chart .sweep-pase .sweep-point').count();
  await page.waitForTimeout(500);
  assert.equal(await page.locator('#sweep-chart .sweep-pase .sweep-point').count(), kept, 'no late point from the old worker');

  // A new graph file stops a sweep.
  await page.click('#sweep-button');
  await page.waitForFunction(() => /of 7\)/.test(document.getElementById('sweep-status').textContent), null, { timeout: 60_000 });
  await page.setInputFiles('#graph-file', path.join(repo, 'examples/graphs/small_cnn.json'));
  await page.waitForFunction(() => document.getElementById('sweep-status').textContent === 'Sweep cancelled: a new graph was loaded.',
    null, { timeout: 30_000 });
  assert.equal(await page.isEnabled('#sweep-button'), true);

  // At 1024 devices the sweep is announced; Cancel leaves the chart empty.
  await page.selectOption('#model-select', 'transformer');
  await page.fill('#devices', '1024');
  await page.click('#sweep-button');
  await page.waitForSelector('#long-search', { state: 'visible', timeout: 60_000 }).catch(async (e) => {
    throw new Error(`${e.message}; sweep status: ${await page.textContent('#sweep-status')}; status: ${await page.textContent('#status')}`);
  });
  assert.match(await page.textContent('#long-search-text'), /^Sweeping Transformer over 1 to 1024 devices will take about/);
  assert.equal(await page.textContent('#long-search-go'), 'Sweep anyway');
  await page.click('#long-search-cancel');
  assert.match(await page.textContent('#sweep-status'), /^Not swept: it would take about/);
  assert.equal(await page.locator('#sweep-chart .sweep-point').count(), 0);
  assert.equal(await page.isEnabled('#sweep-button'), true);

  // The restarted worker sweeps again.
  await page.selectOption('#model-select', 'rnnlm');
  await page.fill('#devices', '4');
  await page.click('#sweep-button');
  await waitForSweep(page);
  assert.match(await page.textContent('#sweep-status'), /^Swept RNN language model over 1 to 4 devices/);
  assert.equal(await page.locator('#sweep-chart .sweep-pase .sweep-point').count(), 3);
  assert.deepEqual(problems, []);
  await close();
});
