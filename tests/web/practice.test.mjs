// The practice cost model on the page (core/docs/practice-model.md): the
// Cluster panel's switch, the memory bandwidth a preset fills, recomputation,
// the request and the link, and the step note with the MFU.
//
//   node --test tests/web/practice.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser. Without a
// browser the tests are skipped, except under CI (CI=true).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertClose, browserSkip, openPaperSetup, openSitePage, useSite, waitForCost } from './browser.mjs';

const skip = browserSkip;
const timeout = 180_000;
const site = useSite();

const openPage = (query = '') => openSitePage(site.browser, site.url + query);
// AlexNet on the paper's flat ring with the paper's cost model, what the tests below start from.
const openPaperPage = () => openPaperSetup(site.browser, site.url);

function planned(request) {
  const doc = JSON.parse(site.pase.plan(JSON.stringify(request)));
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  return doc;
}

test('practice: the switch plans with the preset\'s memory bandwidth and rates, and says so with the MFU', { skip, timeout }, async () => {
  const { page, problems, close } = await openPaperPage();
  assert.equal(await page.isVisible('#memory-bandwidth'), false, 'the paper model needs no memory bandwidth');
  await page.selectOption('#model-select', 'gpt2');
  await page.fill('#batch', '8');
  await page.fill('#seq', '256');
  await page.selectOption('#preset', 'h100');
  assert.equal(await page.inputValue('#cost-model'), 'practice', 'a GPU preset switches to the practice model');
  await page.selectOption('#cost-model', 'practice');
  assert.equal(await page.inputValue('#memory-bandwidth'), '3350', 'the preset filled it');
  assert.equal(await page.inputValue('#recompute'), 'auto', 'the search chooses the recomputation unless told');
  await page.selectOption('#recompute', 'full');
  await page.click('#plan-button');
  const cost = await waitForCost(page);
  const expected = planned({
    model: 'gpt2', batch: 8, seq: 256, preset: 'h100', cluster: { devices: 8 }, cost_model: 'practice',
    training: { recompute: 'full' },
  });
  assertClose(cost, expected.cost, 'the page plans as the preset does');
  const note = await page.textContent('#step-note');
  assert.match(note, /practice cost model \(achieved rates, 3350 GB\/s memory, overlap\)/);
  assert.match(note, /MFU \d+\.\d%/);
  // The step's parts, recomputation among them.
  assert.equal(await page.isVisible('#step-parts'), true);
  const parts = await page.textContent('#step-parts');
  assert.match(parts, /^compute .+ · recomputation .+ · exposed communication .+ · pipeline bubble .+$/);
  assert.doesNotMatch(parts, /recomputation 0 /, 'full recomputation takes time');
  assert.match(parts, /; recomputing full$/);
  const url = new URL(page.url());
  assert.deepEqual(['cm', 'membw', 'rc'].map((k) => url.searchParams.get(k)), ['practice', '3350', 'full']);

  // The link opens on the same model and plans the same.
  const again = await openPage(url.search);
  assert.equal(await again.page.inputValue('#cost-model'), 'practice');
  assert.equal(await again.page.inputValue('#memory-bandwidth'), '3350');
  assert.equal(await again.page.inputValue('#recompute'), 'full');
  await again.close();

  // Back to the paper model: the note and the cost are the paper's again.
  await page.selectOption('#cost-model', 'paper');
  await page.click('#plan-button');
  const paper = await waitForCost(page, String(cost));
  assertClose(paper, planned({ model: 'gpt2', batch: 8, seq: 256, preset: 'h100', cluster: { devices: 8 }, cost_model: 'paper' }).cost, 'paper');
  assert.match(await page.textContent('#step-note'), /at the peak 989 TFLOP\/s per device/);
  assert.equal(await page.isVisible('#step-parts'), false, 'the paper model has no parts');
  assert.deepEqual(problems, []);
  await close();
});

test('practice: without a memory bandwidth the field is named and marked', { skip, timeout }, async () => {
  const { page, close } = await openPaperPage();
  await page.selectOption('#cost-model', 'practice');
  await page.fill('#memory-bandwidth', '');
  await page.click('#plan-button');
  await page.waitForSelector('#error', { state: 'visible', timeout: 30_000 });
  assert.equal(await page.textContent('#error-message code'), 'cluster.memory_gbps');
  assert.equal(await page.getAttribute('#memory-bandwidth', 'aria-invalid'), 'true');
  await page.fill('#memory-bandwidth', '900');
  assert.equal(await page.getAttribute('#memory-bandwidth', 'aria-invalid'), null);
  await page.click('#plan-button');
  await waitForCost(page);
  assert.equal(await page.isVisible('#error'), false);
  await close();
});
