// Issue 47, as a new user meets the page: the first screen (a current LLM on
// one H100 node, the paper's setup one click away, Plan on a laptop's first
// screen), a copied link that plans the same numbers, and a comparison that
// never measures against a strategy that does not fit.
//
//   node --test tests/web/first-ten-minutes.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser. Without a
// browser the tests are skipped, except under CI (CI=true).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertClose, browserSkip, openSitePage, useSite, waitForCost, waitForPlan } from './browser.mjs';

const skip = browserSkip;
const timeout = 240_000;
const site = useSite();
const laptop = { width: 1280, height: 800 };

function planned(request) {
  const doc = JSON.parse(site.pase.plan(JSON.stringify(request)));
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  return doc;
}

const fields = (page) => page.evaluate(() => Object.fromEntries(
  ['model-select', 'batch', 'seq', 'preset', 'nodes', 'gpus-per-node', 'devices', 'tflops', 'bandwidth', 'memory',
    'cost-model', 'rates'].map((id) => [id, document.getElementById(id).value])));

/** The comparison's rows once it is shown. */
async function comparisonRows(page) {
  await page.waitForSelector('#comparison .compare-row', { timeout: 120_000 });
  return page.$$eval('#comparison .compare-row', (items) => items.map((item) => ({
    strategy: item.dataset.strategy,
    fits: item.dataset.fits,
    reference: item.dataset.reference,
    name: item.querySelector('.compare-name').textContent,
    speedup: item.querySelector('.compare-speedup').textContent,
  })));
}

test('first screen: Llama 3 8B on one node of 8 H100 with the practice model, Plan in view at 1280 x 800', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, site.url, { viewport: laptop });
  assert.deepEqual(await fields(page), {
    'model-select': 'llama3-8b', batch: '32', seq: '8192', preset: 'h100', nodes: '1', 'gpus-per-node': '8', devices: '8',
    tflops: '989', bandwidth: '50', memory: '80', 'cost-model': 'practice', rates: 'h100',
  });
  // Plan is on the first screen, not below the fold.
  assert.equal(await page.evaluate(() => window.scrollY), 0);
  const box = await page.locator('#plan-button').boundingBox();
  assert.ok(box && box.y >= 0 && box.x >= 0 && box.y + box.height <= laptop.height && box.x + box.width <= laptop.width,
    `Plan at ${JSON.stringify(box)}`);
  await page.click('#plan-button');
  const cost = await waitForCost(page);
  // The same request as `pase plan --model llama3-8b --preset h100` (8 devices, the model's batch and sequence).
  assertClose(cost, planned({ model: 'llama3-8b', preset: 'h100', cluster: { devices: 8 } }).cost, 'the first screen plans as the preset does');
  assert.match(await page.textContent('#step-note'), /practice cost model/);
  assert.deepEqual(problems, []);
  await close();
});

test('first screen: the paper\'s setup is one click away, and an old link opens what it says', { skip, timeout }, async () => {
  const paper = { 'model-select': 'alexnet', batch: '128', preset: 'paper', 'gpus-per-node': '', devices: '8', tflops: '10', bandwidth: '16', memory: '', 'cost-model': 'paper' };
  const pick = (all) => Object.fromEntries(Object.keys(paper).map((k) => [k, all[k]]));
  const expected = planned({ model: 'alexnet', batch: 128, cluster: { devices: 8 } });

  const { page, problems, close } = await openSitePage(site.browser, site.url, { viewport: laptop });
  await page.click('#paper-setup');
  assert.deepEqual(pick(await fields(page)), paper);
  assert.equal(await page.isVisible('#rates'), false, 'the paper model has no practice rates');
  await page.click('#plan-button');
  assertClose(await waitForCost(page), expected.cost, 'the paper setup plans the paper\'s AlexNet');
  assert.deepEqual(problems, []);
  await close();

  // A link from before the first screen changed: AlexNet on the flat ring, planned on load.
  const old = await openSitePage(site.browser, `${site.url}?model=alexnet&batch=128&devices=8&tflops=10&bw=16`, { viewport: laptop, ready: false });
  await waitForPlan(old.page);
  assert.deepEqual(pick(await fields(old.page)), paper);
  assertClose(Number(await old.page.getAttribute('#total-cost', 'data-exact')), expected.cost, 'the old link plans as it did');
  assert.deepEqual(old.problems, []);
  await old.close();
});

test('shared link: Copy link opens a page that plans the same step time and MFU, the rates shown', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, `${site.url}?model=llama3-8b&devices=16`, { ready: false });
  await waitForPlan(page);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  // Two nodes of 8 H100: the preset brings the GPU kind's practice rates.
  await page.selectOption('#preset', 'h100');
  assert.equal(await page.inputValue('#devices'), '16');
  assert.equal(await page.inputValue('#nodes'), '2');
  assert.equal(await page.isVisible('#rates'), true, 'the rates are on the page');
  assert.equal(await page.inputValue('#rates'), 'h100');
  assert.match(await page.textContent('#rates-text'), /Products at 72% of the peak .* 3 GiB reserved/);
  const before = await page.getAttribute('#total-cost', 'data-exact');
  await page.click('#plan-button');
  await waitForCost(page, before);
  const shown = { step: await page.textContent('#step-time'), note: await page.textContent('#step-note'), cost: await page.getAttribute('#total-cost', 'data-exact') };
  assert.match(shown.note, /MFU \d+\.\d%/);

  await page.click('#share-button');
  await page.waitForFunction(() => /copied/.test(document.getElementById('status').textContent));
  const link = await page.evaluate(() => navigator.clipboard.readText());
  assert.equal(new URL(link).searchParams.get('rates'), 'h100', link);

  const again = await openSitePage(site.browser, link, { ready: false });
  await waitForPlan(again.page);
  assert.equal(await again.page.inputValue('#rates'), 'h100', 'the link restores the rates');
  assert.equal(await again.page.textContent('#rates-text'), await page.textContent('#rates-text'));
  assert.deepEqual({
    step: await again.page.textContent('#step-time'),
    note: await again.page.textContent('#step-note'),
    cost: await again.page.getAttribute('#total-cost', 'data-exact'),
  }, shown, 'the same numbers to the last digit');
  assert.deepEqual(again.problems, []);
  await again.close();

  // The generic rates plan other numbers, and a link with no rates plans the generic ones, as it always did.
  await page.selectOption('#rates', '');
  await page.click('#plan-button');
  const generic = await waitForCost(page, shown.cost);
  assert.notEqual(String(generic), shown.cost);
  assert.equal(new URL(page.url()).searchParams.get('rates'), null);
  assert.deepEqual(problems, []);
  await close();
});

test('shared link: rates naming no GPU kind are refused with the field', { skip, timeout }, async () => {
  const { page, close } = await openSitePage(site.browser, `${site.url}?model=gpt2&batch=8&seq=256&devices=8&gpn=8&intra=450&bw=50&tflops=989&cm=practice&membw=3350&rates=h999`, { ready: false });
  await page.waitForSelector('#error', { state: 'visible', timeout: 60_000 });
  assert.equal(await page.textContent('#error-message code'), 'cluster.device');
  assert.match(await page.textContent('#error-message'), /no GPU kind 'h999' has practice rates; choose one of .*h100.*, or the generic rates/);
  assert.equal(await page.getAttribute('#rates', 'aria-invalid'), 'true');
  await page.selectOption('#rates', 'h100');
  assert.equal(await page.getAttribute('#rates', 'aria-invalid'), null);
  await page.click('#plan-button');
  await waitForCost(page);
  await close();
});

test('comparison: a strategy that does not fit is marked and never the reference; the page writes its own text', { skip, timeout }, async () => {
  // The first screen: data parallelism keeps every parameter's 16 bytes on each GPU and does not fit.
  const { page, problems, close } = await openSitePage(site.browser, site.url);
  await page.click('#plan-button');
  const rows = await comparisonRows(page);
  const dp = rows.find((r) => r.strategy === 'data_parallel');
  assert.equal(dp.fits, 'false');
  assert.equal(dp.speedup, 'does not fit');
  assert.equal(dp.reference, 'false');
  const reference = rows.filter((r) => r.reference === 'true');
  assert.equal(reference.length, 1, JSON.stringify(rows));
  assert.equal(reference[0].fits, 'true');
  assert.equal(reference[0].speedup, '1× (reference)');
  for (const r of rows.filter((x) => x.fits === 'false')) assert.equal(r.speedup, 'does not fit', r.strategy);
  const text = await page.textContent('#comparison');
  assert.doesNotMatch(text, /data_parallel|\bpase\b|% less than|costs \d/, 'no note of the core\'s reaches the page');
  assert.match(text, /Data parallelism would take .* per step, less than PaSE's plan, but needs .* per GPU, more than the 80 GiB/);
  assert.doesNotMatch(await page.textContent('#comparison .compare-headline'), /faster than data parallelism/);
  assert.deepEqual(problems, []);
  await close();
});

test('comparison: with searched stages and micro-batches every row\'s label says what differs', { skip, timeout }, async () => {
  // Two H100 nodes: auto finds gradient accumulation without a pipeline, beside the comparison's one micro-batch.
  const query = '?model=llama3-8b&devices=16&tflops=989&bw=50&gpn=8&intra=450&mem=80&cm=practice&membw=3350&rates=h100&stages=auto&mb=auto';
  const { page, problems, close } = await openSitePage(site.browser, site.url + query, { ready: false });
  await waitForPlan(page, { timeout: 180_000 });
  const rows = await comparisonRows(page);
  const names = rows.map((r) => r.name);
  assert.equal(new Set(names).size, names.length, `labels: ${names.join(' | ')}`);
  const piped = rows.find((r) => r.strategy === 'pipeline');
  assert.ok(piped, 'the plan shown has its own row');
  assert.match(piped.name, /^PaSE, (pipeline x\d+, )?\d+ micro-batch(es)?$/);
  const pase = rows.find((r) => r.strategy === 'pase');
  assert.equal(pase.name, /pipeline x/.test(piped.name) ? 'PaSE, no pipeline' : 'PaSE, 1 micro-batch');
  assert.doesNotMatch(await page.textContent('#comparison'), /data_parallel|% less than/);
  assert.deepEqual(problems, []);
  await close();
});
