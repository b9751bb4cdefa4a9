// The bounded search on the page (core/docs/bounded-search.md): a graph whose
// exact tables exceed the table limit is planned anyway, and the page says
// what the plan is worth under the headline (web/views/bound.js), in the
// same words as a plan under a memory cap; the Search select (auto, exact,
// bounded) goes in the request and the link, and exact gives the old
// refusal.
//
//   node --test tests/web/bounded-search.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser. Without a
// browser the page tests are skipped, except under CI (CI=true).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { browserSkip, openSitePage, useSite, waitForPlan } from './browser.mjs';
import { loadModule, repo } from '../wasm/load-module.mjs';
import { planBound } from '../../web/views/bound.js';
import { formatCostUnit, formatShare } from '../../web/format.js';

const skip = browserSkip;
const timeout = 180_000;
const site = useSite();
const resultsDir = path.join(repo, 'test-results');

const unetText = readFileSync(path.join(repo, 'examples/graphs/unet_nested.json'), 'utf8');
// Two nodes of 8: the nested U-Net's bounded plan has a gap there (about 7%).
const unetCluster = { devices: 256, gpus_per_node: 8, bandwidth_gbps: 50, intra_node_gbps: 400 };
const unetQuery = '?devices=256&gpn=8&intra=400&bw=50';

const planDoc = (pase, request) => JSON.parse(pase.plan(typeof request === 'string' ? request : JSON.stringify(request)));

// ---- The sentence, under Node -------------------------------------------------------

test('bound: an exact plan without a cap says nothing; a bounded one its bound and gap', async () => {
  const pase = await loadModule();
  assert.equal(planBound(planDoc(pase, { model: 'alexnet', cluster: { devices: 8 } })), null);

  const unet = planDoc(pase, `{"graph": ${unetText}, "cluster": ${JSON.stringify(unetCluster)}, "cost_model": "paper"}`);
  assert.equal(unet.optimal, false);
  const bound = planBound(unet);
  assert.deepEqual([bound.optimal, bound.method, bound.gap], [false, 'bounded', unet.gap_percent]);
  assert.equal(bound.text, `Not proven optimal: the bounded search (${unet.search.rounds} rounds) found this plan; `
    + `every strategy costs at least ${formatCostUnit(unet.lower_bound)}, this plan at most ${formatShare(unet.gap_percent / 100)} more.`);

  // Bounded, and proven optimal by its bound: the U-Net at 8 flat devices, or forced on AlexNet.
  const proven = planDoc(pase, { model: 'alexnet', cluster: { devices: 8 }, search: 'bounded' });
  assert.equal(proven.optimal, true);
  assert.match(planBound(proven).text, /^Proven optimal by the bounded search's bound \(1 round\): no strategy costs less\.$/);

  // A capped plan not proven: the same sentence, with the cap's words.
  const capped = planDoc(pase, { model: 'rnnlm', cluster: { devices: 16, memory_gib: 1 } });
  assert.equal(capped.optimal, false);
  assert.equal(planBound(capped).text, 'Not proven optimal: the search under the memory cap found this plan; '
    + `every strategy that fits costs at least ${formatCostUnit(capped.lower_bound)}, this plan at most ${formatShare(capped.gap_percent / 100)} more.`);
  const fits = planDoc(pase, { model: 'rnnlm', cluster: { devices: 16, memory_gib: 80 } });
  assert.equal(planBound(fits).text, 'Proven optimal: the cheapest strategy that fits in 80 GiB per GPU.');
});

test('bound: tiny gaps, a bound of 0 and results saved before the bounded search', () => {
  const doc = { cost: 100, optimal: false, lower_bound: 99.99999, gap_percent: 1e-5, search: { method: 'bounded', rounds: 3 }, memory: {} };
  assert.match(planBound(doc).text, /, this plan less than 0\.1% more\.$/);
  const none = planBound({ ...doc, lower_bound: 0, gap_percent: null });
  assert.equal(none.gap, null);
  assert.match(none.text, /^Not proven optimal: the bounded search \(3 rounds\) found this plan; no lower bound above 0 is known/);
  // Older results: no top-level worth; a capped one's memory report says it.
  const old = { cost: 110, search: {}, memory: { capacity_bytes: 2 ** 30, lower_bound: 100, optimal: false } };
  assert.equal(planBound(old).text, `Not proven optimal: the search under the memory cap found this plan; every strategy that fits costs at least ${formatCostUnit(100)}, this plan at most 10.0% more.`);
  assert.equal(planBound({ cost: 1, search: {}, memory: {} }), null);
});

// ---- On the page ----------------------------------------------------------------

/** A page whose plan requests are recorded in window.paseSent: [{action, payload}]. */
async function openRecordingPage(query = '') {
  const context = await site.browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.addInitScript(() => {
    const send = Worker.prototype.postMessage;
    window.paseSent = [];
    Worker.prototype.postMessage = function (data, ...rest) {
      if (data?.action) window.paseSent.push({ action: data.action, payload: data.payload });
      return send.call(this, data, ...rest);
    };
  });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  await page.goto(site.url + query);
  await page.waitForSelector('#plan-button:not([disabled])', { timeout: 30_000 });
  return { page, problems, close: () => context.close() };
}

const sentPlans = (page) => page.evaluate(() => window.paseSent.filter((m) => m.action === 'plan').map((m) => JSON.parse(m.payload)));

test('page: the nested U-Net plans bounded, and the page says it is not proven optimal, with its gap', { skip, timeout }, async () => {
  const { page, problems, close } = await openRecordingPage(unetQuery);
  assert.equal(await page.inputValue('#search'), 'auto');
  assert.equal(await page.isHidden('#plan-bound'), true, 'nothing to say before a plan');
  await page.selectOption('#model-select', 'example:unet_nested');
  await page.click('#plan-button');
  await waitForPlan(page);
  const expected = planDoc(site.pase, `{"graph": ${unetText}, "cluster": ${JSON.stringify(unetCluster)}, "cost_model": "paper"}`);
  assert.equal(expected.search.method, 'bounded');
  assert.equal(Number(await page.getAttribute('#total-cost', 'data-exact')), expected.cost);

  // One sentence, under the headline: the rounds, the bound and the gap.
  const note = await page.$eval('#plan-bound', (p) => ({ text: p.textContent, hidden: p.hidden, data: { ...p.dataset }, unproven: p.classList.contains('unproven') }));
  assert.equal(note.hidden, false);
  assert.equal(note.text, planBound(expected).text);
  assert.match(note.text, /^Not proven optimal: the bounded search \(\d+ rounds?\) found this plan; every strategy costs at least [\d.]+ [kMGTPE]?FLOP-eq, this plan at most \d+\.\d% more\.$/);
  assert.ok(note.text.includes(formatShare(expected.gap_percent / 100)));
  assert.deepEqual(note.data, { optimal: 'false', method: 'bounded', gap: String(expected.gap_percent) });
  assert.equal(note.unproven, true);
  // Not a second time in the memory card; the plan's line says how it searched.
  assert.doesNotMatch(await page.textContent('#memory-chart'), /proven/);
  assert.match(await page.textContent('#plan-note'), new RegExp(`\\(bounded search, ${expected.search.rounds} rounds?\\)$`));
  // auto is the default: not in the request, not in the link.
  const [request] = await sentPlans(page);
  assert.equal(request.search, undefined);
  assert.equal(new URL(page.url()).searchParams.get('search'), null);
  await page.screenshot({ path: path.join(resultsDir, 'page-bounded.png') });

  // Another plan, exact and without a cap: the note goes.
  await page.selectOption('#model-select', 'alexnet');
  await page.click('#plan-button');
  await page.waitForFunction(() => document.getElementById('plan-title').textContent.startsWith('AlexNet'), null, { timeout: 60_000 });
  await waitForPlan(page);
  assert.equal(await page.isHidden('#plan-bound'), true);
  assert.deepEqual(problems, []);
  await close();
});

test('page: the Search select set to exact on the nested U-Net gives the too-big error, and travels in the link', { skip, timeout }, async () => {
  const { page, problems, close } = await openRecordingPage(unetQuery);
  await page.selectOption('#model-select', 'example:unet_nested');
  await page.click('#search-details summary');
  await page.selectOption('#search', 'exact');
  assert.equal(new URL(page.url()).searchParams.get('search'), 'exact');
  await page.click('#plan-button');
  await page.waitForSelector('#error', { state: 'visible', timeout: 60_000 });
  const text = await page.textContent('#error');
  assert.match(text, /too big/);
  assert.match(text, /more than the limit/);
  assert.match(text, /bounded search/, 'the message names the way out');
  assert.equal(await page.getAttribute('#max-memory', 'aria-invalid'), 'true');
  assert.match(await page.textContent('#status'), /failed/i);
  assert.equal(await page.isVisible('#long-search'), false, 'a search the limit refuses is not announced');
  const requests = await sentPlans(page);
  assert.equal(requests.at(-1).search, 'exact');

  // The link restores the select, with the search options open, and plans
  // on load: refused again.
  const again = await openSitePage(site.browser, page.url());
  assert.equal(await again.page.inputValue('#search'), 'exact');
  assert.equal(await again.page.evaluate(() => document.getElementById('search-details').open), true);
  await again.page.waitForSelector('#error', { state: 'visible', timeout: 60_000 });
  assert.match(await again.page.textContent('#error'), /too big/);
  assert.deepEqual(again.problems, []);
  await again.close();

  // Bounded by name: planned, in the request, with the sentence.
  await page.selectOption('#search', 'bounded');
  await page.click('#plan-button');
  await waitForPlan(page);
  assert.equal((await sentPlans(page)).at(-1).search, 'bounded');
  assert.equal(await page.getAttribute('#plan-bound', 'data-method'), 'bounded');
  assert.match(await page.textContent('#plan-bound'), /^Not proven optimal: the bounded search/);
  assert.equal(new URL(page.url()).searchParams.get('search'), 'bounded');
  // Back to auto: left out of the link.
  await page.selectOption('#search', 'auto');
  await page.waitForFunction(() => !new URL(location.href).searchParams.has('search'), null, { timeout: 10_000 });
  assert.deepEqual(problems, []);
  await close();
});
