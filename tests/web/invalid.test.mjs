// The page on the invalid-input corpus (tests/invalid/cases.json): the cases
// marked "page" are uploaded as files, or typed into the cluster fields, and
// the error box must show the case's message and place. A handful of
// representative cases; tests/wasm/invalid.test.mjs runs all of them against
// the module.
//
//   node --test tests/web/invalid.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser. Without a
// browser the tests are skipped, except under CI (CI=true).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { caseBytes, loadCases } from '../invalid/corpus.mjs';
import { browserSkip, openPaperSetup, startSiteAndBrowser } from './browser.mjs';


const skip = browserSkip;
const timeout = 120_000;
const cases = loadCases().filter((c) => c.page);
// The form field of each cluster value in a case's "page" object.
const fieldIds = {
  devices: '#devices', tflops: '#tflops', bandwidth: '#bandwidth', memory: '#memory', gpusPerNode: '#gpus-per-node',
  paramBytes: '#param-bytes',
};

let server;
let baseUrl;
let browser;

before(async () => {
  if (skip) return;
  ({ server, url: baseUrl, browser } = await startSiteAndBrowser());
});

after(async () => {
  await browser?.close();
  server?.close();
});

/** A page in a fresh context, ready to plan; `problems` collects console and page errors. */
// AlexNet on the paper's flat ring (Paper setup), what these tests start from.
const openPage = () => openPaperSetup(browser, baseUrl);

/** The visible error box: title, the `where` in its <code> ('' if none) and the whole message. */
async function shownError(page) {
  await page.waitForSelector('#error', { state: 'visible', timeout: 30_000 });
  return page.evaluate(() => ({
    title: document.getElementById('error-title').textContent,
    where: document.querySelector('#error-message code')?.textContent ?? '',
    message: document.getElementById('error-message').textContent,
  }));
}

test('page: each representative invalid file shows its message and place', { skip, timeout }, async () => {
  const files = cases.filter((c) => c.file || c.generate);
  assert.ok(files.length >= 5, 'the manifest marks a handful of page cases');
  const { page, problems, close } = await openPage();
  for (const c of files) {
    const name = `${c.name}.json`;
    if (await page.isVisible('#error')) await page.click('#error-close');
    await page.setInputFiles('#graph-file', { name, mimeType: 'application/json', buffer: caseBytes(c) });
    await page.waitForFunction((title) => {
      const box = document.getElementById('error');
      return !box.hidden && document.getElementById('error-title').textContent.includes(title);
    }, name, { timeout: 30_000 });
    const shown = await shownError(page);
    // Graph errors are shown against the file's own fields (no "graph." prefix).
    assert.equal(shown.title, `Invalid graph file ${name}`, c.name);
    assert.equal(shown.where, c.where, `${c.name}: ${shown.message}`);
    assert.ok(shown.message.includes(c.message), `${c.name}: ${JSON.stringify(shown.message)} lacks ${JSON.stringify(c.message)}`);
    // The bad file did not become the graph.
    assert.notEqual(await page.inputValue('#model-select'), 'upload', c.name);
  }
  assert.deepEqual(problems, []);
  await close();
});

test('page: invalid cluster values show the field and mark it', { skip, timeout }, async () => {
  const requests = cases.filter((c) => c.request);
  assert.ok(requests.length >= 3, 'the manifest marks cluster cases for the page');
  const { page, problems, close } = await openPage();
  const defaults = Object.fromEntries(await Promise.all(
    Object.entries(fieldIds).map(async ([key, id]) => [key, await page.inputValue(id)])));
  for (const c of requests) {
    if (await page.isVisible('#error')) await page.click('#error-close');
    for (const [key, value] of Object.entries(c.page)) {
      // The training's byte counts are folded away in a <details>.
      await page.$eval(fieldIds[key], (input) => input.closest('details')?.setAttribute('open', ''));
      await page.fill(fieldIds[key], value);
    }
    await page.click('#plan-button');
    const shown = await shownError(page);
    assert.equal(shown.where, c.where, `${c.name}: ${shown.message}`);
    assert.ok(shown.message.includes(c.message), `${c.name}: ${JSON.stringify(shown.message)} lacks ${JSON.stringify(c.message)}`);
    for (const key of Object.keys(c.page)) {
      assert.equal(await page.getAttribute(fieldIds[key], 'aria-invalid'), 'true', `${c.name}: ${key} is marked`);
      await page.fill(fieldIds[key], defaults[key]);
    }
  }
  // With the values restored the page plans again.
  await page.click('#error-close');
  await page.click('#plan-button');
  await page.waitForFunction(() => Number.isFinite(Number(document.getElementById('total-cost').dataset.exact)), null, { timeout: 60_000 });
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});
