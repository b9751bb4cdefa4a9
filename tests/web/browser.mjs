// Serves the built site on 127.0.0.1 and starts Debian's Chromium headless
// (never a downloaded browser), with a fresh temporary profile and nothing
// reaching the network. PASE_CHROMIUM overrides the browser path.
import assert from 'node:assert/strict';
import { before, after } from 'node:test';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { loadModule, repo, siteDir } from '../wasm/load-module.mjs';

export const chromiumPath = process.env.PASE_CHROMIUM ?? '/usr/bin/chromium';

// Under CI (CI set to anything but "", "0" or "false"; .ci/run sets CI=true) a
// missing browser fails the page tests; elsewhere it skips them.
export const underCI = !['', '0', 'false'].includes((process.env.CI ?? '').toLowerCase());

// The `skip` option of every browser test: false, or why they are skipped.
export const browserSkip =
  existsSync(chromiumPath) || underCI ? false : `no browser at ${chromiumPath} (install chromium or set PASE_CHROMIUM)`;

export async function startSiteAndBrowser() {
  assert.ok(
    existsSync(chromiumPath),
    `no browser at ${chromiumPath}: install Debian's chromium (bash .ci/setup) or set PASE_CHROMIUM` +
      (underCI ? ` (CI=${process.env.CI}: the browser tests fail instead of skipping)` : ''),
  );
  assert.ok(existsSync(path.join(siteDir, 'index.html')), `${siteDir}/index.html not found: build the site first`);
  const { chromium } = await import('playwright-core');
  const { server, url } = await startServer(siteDir);
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  return { server, url, browser };
}

/**
 * `url` in a fresh browser context; `problems` collects console errors and
 * page errors. With `ready` it waits until the page can plan (the module
 * loaded); `permissions` are granted to the context (['clipboard-read',
 * 'clipboard-write'] for a test of Copy).
 */
export async function openSitePage(browser, url, { viewport = { width: 1400, height: 1000 }, ready = true, permissions = [] } = {}) {
  const context = await browser.newContext({ viewport, acceptDownloads: true, permissions });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  await page.goto(url);
  if (ready) await page.waitForSelector('#plan-button:not([disabled])', { timeout: 30_000 });
  return { page, problems, close: () => context.close() };
}

/**
 * openSitePage, then **Paper setup** pressed: AlexNet at batch 128 on the
 * paper's flat ring of 8 devices with the paper's cost model, which the
 * page opened on before its first screen became Llama 3 8B on an H100 node.
 */
export async function openPaperSetup(browser, url, options) {
  const opened = await openSitePage(browser, url, options);
  await opened.page.click('#paper-setup');
  return opened;
}

/** Waits until `page` shows a plan and none is in flight. */
export async function waitForPlan(page, { timeout = 60_000 } = {}) {
  await page.waitForFunction(() => document.body.classList.contains('has-plan') && !document.body.classList.contains('planning'),
    null, { timeout });
}

/** Asserts that `actual` is `expected` to 1e-9 relative; `what` names it in the message. */
export function assertClose(actual, expected, what) {
  assert.ok(Math.abs(actual - expected) <= 1e-9 * Math.abs(expected), `${what}: ${actual} != ${expected}`);
}

/**
 * Registers the hooks of a page test file: before its tests, the site, the
 * browser and the module under Node (for expected results) start and
 * test-results/ exists; after them, all stop. The returned object's `url`,
 * `browser` and `pase` are set once the `before` hook ran (not when skipped).
 */
export function useSite() {
  const site = { server: null, url: '', browser: null, pase: null };
  before(async () => {
    if (browserSkip) return;
    Object.assign(site, await startSiteAndBrowser());
    site.pase = await loadModule();
    mkdirSync(path.join(repo, 'test-results'), { recursive: true });
  });
  after(async () => {
    await site.browser?.close();
    site.server?.close();
  });
  return site;
}

/** The plan's exact cost once #total-cost shows one other than `previous`. */
/** Plans a built-in network on the page: its batch and sequence, a preset (e.g. 'h100'); returns the cost shown (waitForCost()). */
export async function planModel(page, { model, batch, seq, preset }) {
  await page.selectOption('#model-select', model);
  if (batch !== undefined) await page.fill('#batch', String(batch));
  if (seq !== undefined) await page.fill('#seq', String(seq));
  if (preset !== undefined) await page.selectOption('#preset', preset);
  await page.click('#plan-button');
  return waitForCost(page);
}

export async function waitForCost(page, previous = '—') {
  await page.waitForFunction((old) => {
    const text = document.getElementById('total-cost').dataset.exact;
    return text !== old && Number.isFinite(Number(text));
  }, previous, { timeout: 90_000 });
  return Number(await page.getAttribute('#total-cost', 'data-exact'));
}
