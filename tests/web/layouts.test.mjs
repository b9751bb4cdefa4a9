// The Layouts card (core/docs/layouts.md): a language model's plan ranks the
// layouts Megatron-LM and torchtitan run, with a token budget's days and
// cost, a pasted layout placed in the ranking (a malformed one an error
// naming the field), and the chosen layout exported.
//
//   node --test tests/web/layouts.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser. Without a
// browser the tests are skipped, except under CI (CI=true).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSkip, openSitePage, planModel, useSite, waitForCost } from './browser.mjs';

const skip = browserSkip;
const timeout = 180_000;
const site = useSite();

/** GPT-2 at batch 8 x 256 on a node of 8 H100, planned, and its layouts ranked. */
async function planGpt2(page) {
  await planModel(page, { model: 'gpt2', batch: 8, seq: 256, preset: 'h100' });
  await page.waitForFunction(() => /layouts priced/.test(document.getElementById('layouts-status').textContent), null, { timeout: 60_000 });
}

const rows = (page) => page.evaluate(() => [...document.querySelectorAll('#layouts-table tbody tr')]
  .map((tr) => ({ rank: Number(tr.dataset.rank), layout: tr.dataset.layout, cells: [...tr.cells].map((td) => td.textContent) })));

test('layouts: a language model\'s plan ranks the layouts the engines run, as the module does', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, site.url);
  await planGpt2(page);
  assert.equal(await page.isVisible('#layouts-card'), true);
  const ranked = await rows(page);
  // The module's own ranking of the same request.
  const expected = JSON.parse(site.pase.layouts(JSON.stringify({
    model: 'gpt2', batch: 8, seq: 256, preset: 'h100', cluster: { devices: 8 }, cost_model: 'practice', top: 10,
  })));
  assert.ok(expected.ranked.length > 0);
  assert.deepEqual(ranked.map((r) => r.layout), expected.ranked.map((e) => e.layout));
  assert.deepEqual(ranked.map((r) => r.rank), expected.ranked.map((e) => e.rank));
  // Each row: its step, MFU, memory with its margin, parts and engines.
  assert.match(ranked[0].cells[5], /GiB, [\d.]+ GiB free/);
  assert.match(ranked[0].cells[6], /^compute .* · recomputation .* · exposed communication .* · bubble /);
  assert.match(ranked[0].cells[7], /runs on Megatron-LM|no engine runs it/);
  assert.match(await page.textContent('#layouts-status'), /[\d,]+ layouts priced in .*refused/);
  // No budget: no days and cost.
  assert.equal(await page.isVisible('#layouts-table td.budget'), false);
  // The price defaults to the preset's; a token budget adds days and cost.
  const price = site.pase && JSON.parse(site.pase.presets()).find((p) => p.id === 'h100').gpu_hour_usd;
  assert.equal(await page.getAttribute('#layout-price', 'placeholder'), `${price} (preset)`);
  await page.fill('#layout-tokens', '1B');
  const before = await page.textContent('#layouts-status');
  await page.click('#layouts-button');
  await page.waitForFunction(() => document.querySelector('#layouts-table td.budget')?.textContent !== '', null, { timeout: 60_000 });
  const priced = JSON.parse(site.pase.layouts(JSON.stringify({
    model: 'gpt2', batch: 8, seq: 256, preset: 'h100', cluster: { devices: 8 }, cost_model: 'practice', top: 10, tokens: 1e9,
  })));
  const budget = (await rows(page))[0].cells[8];
  assert.equal(budget, `${priced.ranked[0].days.toPrecision(3)} days, $${Math.round(priced.ranked[0].cost).toLocaleString('en-US')}`);
  assert.ok(before.length > 0);
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('layouts: a pasted layout is placed in the ranking; a malformed one is an error naming the field', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, site.url);
  await planGpt2(page);
  // Megatron-LM arguments with a bad degree: the error names the flag.
  await page.fill('#layout-paste', 'torchrun pretrain_gpt.py --tensor-model-parallel-size 8x --pipeline-model-parallel-size 1');
  await page.click('#layout-place');
  await page.waitForSelector('#error', { state: 'visible', timeout: 30_000 });
  assert.equal(await page.textContent('#error-message code'), 'layout.megatron:--tensor-model-parallel-size');
  assert.match(await page.textContent('#error-message'), /'8x' is not a positive integer/);
  assert.equal(await page.getAttribute('#layout-paste', 'aria-invalid'), 'true');
  // The ranking stays.
  assert.ok((await rows(page)).length > 0);
  await page.click('#error-close');

  // The last ranked layout, pasted as its text: placed where the module places it.
  const last = (await rows(page)).at(-1);
  await page.fill('#layout-paste', last.layout);
  await page.click('#layout-place');
  await page.waitForSelector('#layout-given', { state: 'visible', timeout: 60_000 });
  const expected = JSON.parse(site.pase.layouts(JSON.stringify({
    model: 'gpt2', batch: 8, seq: 256, preset: 'h100', cluster: { devices: 8 }, cost_model: 'practice', top: 10, layout: last.layout,
  }))).given;
  const given = await page.textContent('#layout-given');
  const place = expected.rank === 1 ? 'ranks first' : `ranks ${expected.rank}`;
  assert.ok(given.startsWith(`Your layout ${last.layout} ${place};`), given);
  assert.ok(given.includes(expected.versus_best), given);
  assert.match(given, /Engines: /);
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('layouts: the Export menu\'s Megatron-LM file is of the layout chosen in the ranking', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, site.url);
  await planGpt2(page);
  const ranked = await rows(page);
  // The first layout Megatron-LM runs, other than the first row: chosen.
  const pick = ranked.slice(1).find((r) => /runs on Megatron-LM/.test(r.cells[7]));
  assert.ok(pick, 'a second layout that Megatron-LM runs');
  await page.click(`#layouts-table tbody tr[data-layout="${pick.layout}"] button.choose`);
  assert.equal(await page.textContent(`#layouts-table tbody tr[data-layout="${pick.layout}"] button.choose`), 'Exported');
  await page.selectOption('#export-target', 'megatron');
  await Promise.all([page.waitForEvent('download'), page.click('#export-button')]);
  await page.waitForSelector('#export-preview', { state: 'visible' });
  assert.match(await page.textContent('#export-note'), new RegExp(`Layout: ${pick.layout.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.`));
  const [tp, pp] = [/tp=(\d+)/, /pp=(\d+)/].map((re) => pick.layout.match(re)[1]);
  const text = await page.textContent('#export-text');
  assert.match(text, new RegExp(`--tensor-model-parallel-size ${tp} `));
  assert.match(text, new RegExp(`--pipeline-model-parallel-size ${pp} `));
  assert.deepEqual(problems, []);
  await close();
});

test('layouts: a language model\'s plan shows the best layout first, then the per-layer plan beside it', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, site.url);
  // ZeRO is searched unless chosen: the request leaves it out.
  assert.equal(await page.inputValue('#zero'), 'auto');
  await planGpt2(page);
  assert.equal(await page.isVisible('#answers'), true);
  const shown = await page.evaluate(() => ({
    layout: document.querySelector('#answers .best-answer code').textContent,
    heads: [...document.querySelectorAll('#answers h3')].map((h) => h.textContent),
    gain: document.querySelector('#answers .answer-gain').textContent,
    // The answers come before the plan's own results.
    first: Boolean(document.getElementById('answers').compareDocumentPosition(document.getElementById('summary-table') ?? document.body) & Node.DOCUMENT_POSITION_FOLLOWING),
  }));
  const expected = JSON.parse(site.pase.layouts(JSON.stringify({
    model: 'gpt2', batch: 8, seq: 256, preset: 'h100', cluster: { devices: 8 }, cost_model: 'practice', top: 1,
  })));
  assert.equal(shown.layout, expected.ranked[0].layout);
  assert.deepEqual(shown.heads, ['Best layout (what Megatron-LM and torchtitan run)', 'Per-layer plan (what JAX/GSPMD runs)']);
  assert.match(shown.gain, /a step: (gains nothing over the best layout|.* faster than the best layout)\.$/);
  assert.equal(shown.first, true);
  // A network that is not a language model has one answer.
  await page.selectOption('#model-select', 'alexnet');
  await page.click('#plan-button');
  await waitForCost(page);
  await page.waitForFunction(() => document.getElementById('answers').hidden, null, { timeout: 60_000 });
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('layouts: a time limit keeps the best layout and says how far the per-layer plan may be from the best', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, site.url);
  await page.evaluate(() => { document.getElementById('search-details').open = true; });
  // A limit reached at once: the per-layer search stops before its first
  // plan, and the best layout stands with the bound of the search's floors.
  // (A pipeline set by hand, which the best layout does not run: else the
  // floors prove the layout best before any search, and nothing stops.)
  await page.fill('#time-limit', '0.000001');
  await page.fill('#stages', '2');
  await page.fill('#microbatches', '4');
  await planGpt2(page);
  const stopped = await page.textContent('#answers .answer-stopped');
  assert.match(stopped, /^Stopped at the time limit in the per-layer plan at ZeRO \d.*: the best found, at most \d+\.\d% slower than the best possible \(no plan under .* a step\)\./);
  assert.match(await page.textContent('#answers .answer-gain'), /gains nothing over the best layout/);
  // The shared link carries the limit.
  assert.match(page.url(), /[?&#]tlimit=0\.000001/);
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('layouts: a gap accepted is sent, carried by the link, and a bad one marks its field', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, site.url);
  await page.evaluate(() => { document.getElementById('search-details').open = true; });
  await page.fill('#max-gap', '5');
  await planGpt2(page);
  // Proven within 5% at most: the answer says no more than that.
  const gain = await page.textContent('#answers');
  const slower = gain.match(/at most (\d+\.\d)% slower than the best possible/);
  if (slower) assert.ok(Number(slower[1]) <= 5, gain);
  assert.match(page.url(), /[?&#]gap=5(&|$)/);
  assert.equal(await page.isVisible('#error'), false);
  // Out of range: the core refuses it at max_gap, and the field is marked.
  await page.fill('#max-gap', '150');
  await page.click('#plan-button');
  await page.waitForSelector('#error', { state: 'visible', timeout: 60_000 });
  assert.match(await page.textContent('#error'), /max_gap/);
  assert.equal(await page.getAttribute('#max-gap', 'aria-invalid'), 'true');
  assert.deepEqual(problems, []);
  await close();
});

test('layouts: Cancel stops the per-layer search and keeps the best layout, with its gap', { skip, timeout: 240_000 }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, site.url);
  await page.evaluate(() => { document.getElementById('search-details').open = true; });
  // Llama 3 8B at 512 x 8192 on 1,024 H100 with no time limit, and a
  // pipeline set by hand that the best layout does not run (4 stages of 8
  // micro-batches): its per-layer search has no incumbent and runs for
  // minutes on this page.
  await page.fill('#time-limit', '0');
  await page.fill('#stages', '4');
  await page.fill('#microbatches', '8');
  await page.selectOption('#preset', 'h100');
  await page.fill('#devices', '1024');
  await page.selectOption('#model-select', 'llama3-8b');
  await page.fill('#batch', '512');
  await page.fill('#seq', '8192');
  await page.click('#plan-button');
  const asked = await page.waitForSelector('#long-search', { state: 'visible', timeout: 15_000 }).then(() => true, () => false);
  if (asked) await page.click('#long-search-go');
  await page.waitForFunction(() => /per-layer plan/.test(document.getElementById('status').textContent), null, { timeout: 120_000 });
  // The page is cross-origin isolated (serve.mjs): Cancel stops the search
  // instead of dropping the worker, and the best found comes back.
  await page.click('#cancel-button');
  await page.waitForFunction(() => /^Stopped planning/.test(document.getElementById('status').textContent), null, { timeout: 60_000 })
    .catch(async (e) => assert.fail(`${e.message}; the status: ${await page.textContent('#status')}`));
  assert.match(await page.textContent('#status'), /the best plan found is shown\.$/);
  const stopped = await page.textContent('#answers .answer-stopped');
  assert.match(stopped, /^Cancelled in the per-layer plan at ZeRO \d.*: the best found, (at most \d+\.\d% slower than the best possible|with no bound proven)/);
  assert.match(await page.textContent('#answers .best-answer code'), /^tp=\d+ pp=\d+ dp=\d+/);
  assert.equal(await page.isVisible('#error'), false);
  assert.equal(await page.isDisabled('#cancel-button'), true);
  assert.deepEqual(problems, []);
  await close();
});
