// The page's two modes: served cross-origin isolated (tests/web/serve.mjs by
// default) its worker runs the threaded module on every core the browser
// reports (at most 8); served without the isolation headers, or when the
// threaded module cannot load, the single-threaded one. Either way the page
// says which (#search-mode), plans the same, shows progress and cancels.
//
//   node --test tests/web/threads.test.mjs
//
// Headless Chromium's navigator.hardwareConcurrency is the host's cores: on
// a machine with one, the isolated page runs one thread too, and the test
// that needs two is skipped.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { browserSkip, openPaperSetup, openSitePage, useSite } from './browser.mjs';
import { startServer } from './serve.mjs';
import { repo, siteDir } from '../wasm/load-module.mjs';

const skip = browserSkip;
const multiSkip = skip || (cpus().length >= 2 ? false : 'one core: the isolated page runs one thread');
const timeout = 180_000;
const resultsDir = path.join(repo, 'test-results');

const site = useSite(); // cross-origin isolated
let plain = { server: null, url: '' }; // the same site without the isolation headers

before(async () => {
  if (browserSkip) return;
  plain = await startServer(siteDir, { isolated: false });
});

after(() => {
  plain.server?.close();
});

// The exact total cost (#total-cost shows it rounded, with its unit).
async function waitForCost(page) {
  await page.waitForFunction(() => Number.isFinite(Number(document.getElementById('total-cost').dataset.exact)), null,
    { timeout: 120_000 });
  return Number(await page.getAttribute('#total-cost', 'data-exact'));
}

/** The plan on display, as the page's Download plan JSON saves it. */
async function downloadedPlan(page) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-button')]);
  return JSON.parse(readFileSync(await download.path(), 'utf8'));
}

/** The threads the threaded module starts with on this page: the browser's cores, at most 8. */
const browserThreads = (page) => page.evaluate(() => Math.min(navigator.hardwareConcurrency, 8));

// Transformer at 32 devices: steps of millions of pairs, split across threads.
const transformer32 = '?model=transformer&devices=32';

test('threads: an isolated page plans on every core, and the same plan as on one thread', { skip: multiSkip, timeout }, async () => {
  const isolated = await openSitePage(site.browser, site.url + transformer32);
  assert.equal(await isolated.page.evaluate(() => self.crossOriginIsolated), true, 'the server sends COOP and COEP');
  const threads = await browserThreads(isolated.page);
  assert.ok(threads >= 2, `the browser reports ${threads} cores on a machine with ${cpus().length}`);
  assert.equal(await isolated.page.textContent('#search-mode'), `Search on ${threads} threads`);
  const cost = await waitForCost(isolated.page);
  const saved = await downloadedPlan(isolated.page);
  assert.equal(saved.search.threads, threads, 'the plan ran on them');
  assert.equal(saved.cost, cost);
  await isolated.page.screenshot({ path: path.join(resultsDir, 'threads-isolated.png') });
  assert.deepEqual(isolated.problems, [], 'no console errors or CSP violations');
  await isolated.close();

  const single = await openSitePage(site.browser, plain.url + transformer32);
  assert.equal(await single.page.evaluate(() => self.crossOriginIsolated), false);
  assert.equal(await single.page.textContent('#search-mode'), 'Search on one thread: the page is not cross-origin isolated');
  const singleCost = await waitForCost(single.page);
  const singleSaved = await downloadedPlan(single.page);
  assert.equal(singleSaved.search.threads, 1);
  assert.equal(singleSaved.cost, saved.cost, 'the same cost to the bit');
  assert.deepEqual(singleSaved.vertices.map((v) => v.config), saved.vertices.map((v) => v.config), 'the same strategy');
  assert.equal(singleCost, cost);
  assert.deepEqual(single.problems, []);
  await single.close();
});

/** Starts the Transformer at 256 devices, waits for progress, cancels, then
 *  plans AlexNet. At 256 devices the plan takes seconds, so it is still in
 *  flight when Cancel is clicked (at 64 it took half a second, and could end
 *  between the progress seen and the click). */
async function progressCancelAndPlanAgain(page) {
  await page.selectOption('#model-select', 'transformer');
  await page.fill('#devices', '256');
  await page.click('#plan-button');
  await page.waitForFunction(() => {
    const value = document.getElementById('progress').value;
    return value > 0 && value < 1;
  }, null, { timeout: 60_000 });
  await page.click('#cancel-button');
  assert.match(await page.textContent('#status'), /cancelled/i);
  assert.equal(await page.textContent('#total-cost'), '—', 'no result from the cancelled plan');
  assert.equal(await page.isVisible('#error'), false, 'cancelling is not an error');
  await page.selectOption('#model-select', 'alexnet');
  await page.fill('#devices', '8');
  await page.click('#plan-button');
  const cost = await waitForCost(page);
  const expected = JSON.parse(site.pase.plan(JSON.stringify({ model: 'alexnet', cluster: { devices: 8 } }))).cost;
  assert.equal(cost, expected, 'the restarted worker plans');
}

test('threads: progress and cancel work in both modes', { skip, timeout }, async () => {
  for (const url of [site.url, plain.url]) {
    const { page, problems, close } = await openPaperSetup(site.browser, url);
    await progressCancelAndPlanAgain(page);
    assert.deepEqual(problems, [], url);
    await close();
  }
});

test('threads: cancelling ends the thread workers with the planner worker', { skip: multiSkip, timeout }, async () => {
  const { page, problems, close } = await openPaperSetup(site.browser, site.url);
  const threads = await browserThreads(page);
  // The planner worker and its pool: one worker per thread but the calling one.
  const workerUrls = () => page.workers().map((w) => path.basename(new URL(w.url()).pathname)).sort();
  const expected = ['worker.js', ...Array(threads - 1).fill('pase-mt.worker.js')].sort();
  assert.deepEqual(workerUrls(), expected);
  const before = page.workers();
  await progressCancelAndPlanAgain(page);
  // Playwright drops a worker from the list when the browser reports it gone:
  // at once on an idle machine, after more than 10 s on a loaded one (seen in
  // CI), so the wait is up to 60 s.
  for (let i = 0; i < 600 && before.some((w) => page.workers().includes(w)); i++) await page.waitForTimeout(100);
  assert.ok(before.every((w) => !page.workers().includes(w)), 'the old worker and its thread workers are gone');
  assert.deepEqual(workerUrls(), expected, 'a new worker and its thread workers');
  assert.deepEqual(problems, []);
  await close();
});

test('threads: when the threaded module fails to load, the page plans on one thread and says why', { skip, timeout }, async () => {
  const context = await site.browser.newContext();
  // The worker's request for the threaded module's .wasm fails.
  await context.route('**/pase-mt.wasm', (route) => route.abort());
  const page = await context.newPage();
  const problems = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  await page.goto(site.url);
  await page.waitForSelector('#plan-button:not([disabled])', { timeout: 60_000 });
  await page.click('#paper-setup');
  assert.match(await page.textContent('#search-mode'), /^Search on one thread: the threaded module failed to load \(.+\)$/);
  await page.selectOption('#model-select', 'alexnet');
  await page.fill('#devices', '8');
  await page.click('#plan-button');
  const expected = JSON.parse(site.pase.plan(JSON.stringify({ model: 'alexnet', cluster: { devices: 8 } }))).cost;
  assert.equal(await waitForCost(page), expected);
  assert.equal(await page.isVisible('#error'), false, 'falling back is not an error');
  // The browser reports the failed request; nothing else may go wrong.
  assert.deepEqual(problems.filter((p) => !/pase-mt\.wasm|Failed to load resource/.test(p)), []);
  await context.close();
});
