// Errors that say what is wrong, where the user looks: a PNG renamed
// model.onnx and a Hugging Face config without its model_type are refused
// with the module's own message (what the file looks like, what to do);
// Plan pressed while the error is shown plans the model the page shows; and
// an error is in the window of a user who scrolled down and pressed Plan,
// beside the inputs (1280 x 800) and below them (a narrow window).
//
//   node --test tests/web/error-box.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser. Without a
// browser the tests are skipped, except under CI (CI=true).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { browserSkip, openSitePage, useSite, waitForPlan } from './browser.mjs';
import { repo } from '../wasm/load-module.mjs';

const skip = browserSkip;
const timeout = 180_000;
const site = useSite();
const invalidDir = path.join(repo, 'tests/invalid');
const pngBytes = readFileSync(path.join(invalidDir, 'models/png_image.onnx'));
const noModelType = readFileSync(path.join(invalidDir, 'configs/no_model_type.json'));

/** The error box as the user sees it, once it is shown. */
async function shownError(page) {
  await page.waitForSelector('#error', { state: 'visible', timeout: 60_000 });
  return page.evaluate(() => ({
    title: document.getElementById('error-title').textContent,
    where: document.querySelector('#error-message code')?.textContent ?? '',
    message: document.getElementById('error-message').textContent,
  }));
}

/** Whether the whole error box is inside the window, and not under something else there. */
function errorInView(page) {
  return page.evaluate(() => {
    const box = document.getElementById('error');
    const rect = box.getBoundingClientRect();
    const inside = rect.height > 0 && rect.top >= 0 && rect.bottom <= window.innerHeight;
    const seen = [0.2, 0.5, 0.8].every((y) => box.contains(document.elementFromPoint(rect.left + rect.width / 2, rect.top + rect.height * y)));
    return inside && seen;
  });
}

test('error box: a PNG renamed model.onnx says what it is, as the module and the CLI do; Plan then plans', { skip, timeout }, async () => {
  const expected = JSON.parse(site.pase.importModel(new Uint8Array(pngBytes), '{}')).error;
  assert.match(expected.message, /^not an ONNX model: the file is a PNG image; give an ONNX model \(export it with torch\.onnx\.export\)/);
  const { page, problems, close } = await openSitePage(site.browser, site.url);
  const model = await page.inputValue('#model-select');
  const label = await page.evaluate(() => document.getElementById('model-select').selectedOptions[0].textContent);

  await page.setInputFiles('#graph-file', { name: 'model.onnx', mimeType: 'application/octet-stream', buffer: pngBytes });
  const shown = await shownError(page);
  assert.equal(shown.title, 'Could not import model.onnx');
  // The page runs the threaded module (the site is cross-origin isolated),
  // which answered "internal error" before.
  assert.equal(shown.message, expected.message);
  assert.doesNotMatch(shown.message, /internal error/);
  await page.waitForFunction(() => document.getElementById('status').textContent === 'model.onnx was not imported.');
  await page.screenshot({ path: path.join(repo, 'test-results', 'page-error-png.png') });

  // Plan with the error on display plans the model in the select; the
  // error gives way to its plan.
  await page.click('#plan-button');
  await waitForPlan(page, { timeout: 120_000 });
  assert.equal(await page.isVisible('#error'), false, 'the error gave way to the plan');
  assert.equal(await page.inputValue('#model-select'), model);
  assert.ok((await page.textContent('#status')).startsWith('Planned '), await page.textContent('#status'));
  assert.ok((await page.textContent('#plan-title')).length > 0 && label.length > 0);
  assert.deepEqual(problems, []);
  await close();
});

test('error box: a config.json without model_type says it looks like a config and what to add', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, site.url);
  await page.setInputFiles('#graph-file', { name: 'config.json', mimeType: 'application/json', buffer: noModelType });
  const shown = await shownError(page);
  assert.equal(shown.title, 'Could not import config.json');
  assert.equal(shown.where, 'model_type');
  assert.match(shown.message, /this looks like a Hugging Face config\.json \(it has hidden_size, /);
  assert.match(shown.message, /add "model_type": "llama" \(for LlamaForCausalLM; supported: llama, mistral, qwen2, gpt2, mixtral\)/);
  assert.doesNotMatch(shown.message, /unknown field/);
  assert.deepEqual(problems, []);
  await close();
});

// Beside the inputs (1280 x 800) the user scrolled down to the Plan button
// and the results' top, where the error box is, is above the window; on a
// narrow window the results follow the inputs, and a user at the top of
// the page presses the Plan button held at the window's bottom (style.css),
// the error box far below.
const layouts = [
  { viewport: { width: 1280, height: 800 }, where: 'scrolled down', scroll: 'bottom' },
  { viewport: { width: 760, height: 700 }, where: 'at the top of a narrow window', scroll: 'top' },
];

for (const { viewport, where, scroll } of layouts) {
  test(`error box: in the window of a user ${where} who pressed Plan (${viewport.width} x ${viewport.height})`, { skip, timeout }, async () => {
    const { page, problems, close } = await openSitePage(site.browser, site.url, { viewport });
    // A plan first, so that the results are long.
    await page.click('#plan-button');
    await waitForPlan(page, { timeout: 120_000 });
    // Then a value that the plan refuses, and Plan pressed from there.
    await page.fill('#devices', '0');
    if (scroll === 'bottom') {
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      await page.locator('#plan-button').scrollIntoViewIfNeeded();
      assert.ok(await page.evaluate(() => window.scrollY) > 0, 'the page is scrolled down');
    } else {
      await page.evaluate(() => window.scrollTo(0, 0));
    }
    const before = await page.evaluate(() => {
      const button = document.getElementById('plan-button').getBoundingClientRect();
      const box = document.getElementById('error').parentElement.getBoundingClientRect();
      return { buttonInView: button.top >= 0 && button.bottom <= window.innerHeight, resultsTop: box.top };
    });
    assert.equal(before.buttonInView, true, 'the Plan button is in the window');
    assert.ok(before.resultsTop < 0 || before.resultsTop > viewport.height, `the results' top is out of the window (${before.resultsTop})`);
    await page.click('#plan-button');
    const shown = await shownError(page);
    assert.equal(shown.where, 'cluster.devices', shown.message);
    assert.equal(await errorInView(page), true, 'the error box is in the window');
    await page.screenshot({ path: path.join(repo, 'test-results', `page-error-in-view-${viewport.width}.png`) });
    assert.deepEqual(problems, []);
    await close();
  });
}
