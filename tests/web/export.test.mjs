// The Export menu (core/docs/export.md): the plan on display downloaded as a
// JAX program, Megatron-LM arguments or torchtitan TOML, with the note on
// what the export leaves out and the preview with Copy; and an export that
// cannot be made shown as an error naming the feature.
//
//   node --test tests/web/export.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser. Without a
// browser the tests are skipped, except under CI (CI=true).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { browserSkip, openSitePage, planModel, useSite, waitForCost } from './browser.mjs';

const skip = browserSkip;
const timeout = 180_000;
const site = useSite();

const openPage = (query = '') => openSitePage(site.browser, site.url + query);

/** GPT-2 at batch 8 x 256 on a node of 8 H100, planned. */
const planGpt2 = (page) => planModel(page, { model: 'gpt2', batch: 8, seq: 256, preset: 'h100' });

async function exported(page, target) {
  await page.selectOption('#export-target', target);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-button')]);
  return { name: download.suggestedFilename(), text: readFileSync(await download.path(), 'utf8') };
}

test('export: the plan on display as a JAX program and as Megatron-LM arguments', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage();
  assert.equal(await page.isDisabled('#export-button'), true, 'nothing to export before a plan');
  await planGpt2(page);
  assert.equal(await page.isDisabled('#export-button'), false);

  const jax = await exported(page, 'jax');
  assert.equal(jax.name, 'plan.py');
  // The per-layer plan on display (here the best layout's own, whose
  // pipeline runs each stage's mesh: 8 devices or fewer).
  const header = /^#!\/usr\/bin\/env python3\n# Training steps of gpt2 as PaSE Planner planned it on (\d+) devices/.exec(jax.text);
  assert.ok(header && Number(header[1]) <= 8, jax.text.slice(0, 200));
  // The program's data is the plan on display: its layers with their shardings.
  const data = JSON.parse(jax.text.slice(jax.text.indexOf('r"""') + 4, jax.text.indexOf('""")')));
  assert.equal(data.devices, Number(header[1]));
  assert.equal(data.cost_model, 'practice');
  const shown = await page.evaluate(() => document.querySelectorAll('#strategy-table tbody tr').length);
  assert.equal(data.variants.full.layers.length, shown);
  await page.waitForSelector('#export-note', { state: 'visible' });
  assert.match(await page.textContent('#export-note'), /Downloaded plan\.py\./);

  const megatron = await exported(page, 'megatron');
  assert.equal(megatron.name, 'megatron_args.sh');
  assert.match(megatron.text, /--tensor-model-parallel-size \d+/);
  assert.match(megatron.text, /--global-batch-size 8/);
  const note = await page.textContent('#export-note');
  assert.match(note, /Downloaded megatron_args\.sh\./);
  assert.match(note, /Layout: tp=\d+|not uniform across the decoder blocks/);
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('export: a network without decoder blocks has no Megatron-LM arguments, and says why', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage();
  await page.selectOption('#model-select', 'alexnet');
  await page.fill('#batch', '64');
  await page.click('#plan-button');
  await waitForCost(page);
  await page.selectOption('#export-target', 'torchtitan');
  await page.click('#export-button');
  await page.waitForSelector('#error', { state: 'visible', timeout: 30_000 });
  assert.match(await page.textContent('#error-title'), /could not be exported/);
  assert.equal(await page.textContent('#error-message code'), 'emit');
  // A JAX program of the same plan is made.
  await page.click('#error-close');
  const jax = await exported(page, 'jax');
  assert.match(jax.text, /"graph":"alexnet"/);
  assert.deepEqual(problems, []);
  await close();
});

test('export: a split no mesh expresses is refused, and Mesh splits only plans one that exports', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage();
  await page.selectOption('#model-select', 'gpt2');
  await page.fill('#batch', '3');
  await page.fill('#seq', '64');
  await page.selectOption('#preset', 'h100');
  await page.click('#plan-button');
  await waitForCost(page);
  // This plan splits lm_head's vocabulary (50304, GPT-2's padded to a multiple
  // of 128) 3 ways on 8 devices (the module's plan, checked here so that the
  // test fails loudly if the plan changes).
  const threeWay = await page.evaluate(() => [...document.querySelectorAll('#strategy-table .dim.split')]
    .some((dim) => /split 3 ways$/.test(dim.title)));
  assert.ok(threeWay, 'the plan has a split of 3');
  await page.selectOption('#export-target', 'jax');
  await page.click('#export-button');
  await page.waitForSelector('#error', { state: 'visible', timeout: 30_000 });
  // The first layer whose split no mesh expresses (a 3 or 6 way split) is named.
  assert.match(await page.textContent('#error-message'), /[36] ways on 8 devices.*Mesh splits only/s);
  await page.click('#error-close');

  await page.click('#search-details summary');
  await page.check('#mesh-only');
  assert.equal(new URL(page.url()).searchParams.get('mesh'), '1');
  const before = await page.getAttribute('#total-cost', 'data-exact');
  await page.click('#plan-button');
  await waitForCost(page, before);
  const jax = await exported(page, 'jax');
  assert.match(jax.text, /"graph":"gpt2"/);
  assert.deepEqual(problems, []);
  await close();
});


test('export: each export is previewed as the download saves it, and Copy puts it on the clipboard', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, site.url, { permissions: ['clipboard-read', 'clipboard-write'] });
  assert.equal(await page.isVisible('#export-preview'), false, 'no preview before an export');
  await planGpt2(page);
  for (const target of ['jax', 'megatron', 'torchtitan']) {
    const saved = await exported(page, target);
    await page.waitForSelector('#export-preview', { state: 'visible' });
    assert.equal(await page.textContent('#export-preview-title'), saved.name, target);
    // The preview is the file's text, as text: no element is made of it.
    assert.equal(await page.textContent('#export-text'), saved.text, target);
    assert.equal(await page.evaluate(() => document.getElementById('export-text').childElementCount), 0, target);
    assert.equal(await page.textContent('#export-copy'), 'Copy', target);
    await page.click('#export-copy');
    await page.waitForFunction(() => document.getElementById('export-copy').textContent === 'Copied');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), saved.text, target);
    assert.match(await page.textContent('#export-copy-status'), new RegExp(`Copied ${saved.name.replace('.', '\\.')} to the clipboard`));
    // The preview's Download saves the same file again.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-download')]);
    assert.equal(download.suggestedFilename(), saved.name, target);
    assert.equal(readFileSync(await download.path(), 'utf8'), saved.text, target);
  }
  // The "Copied" state passes.
  await page.waitForFunction(() => document.getElementById('export-copy').textContent === 'Copy', null, { timeout: 5_000 });
  // A new plan's preview is gone: the export was of the plan before.
  const before = await page.getAttribute('#total-cost', 'data-exact');
  await page.fill('#batch', '16');
  await page.click('#plan-button');
  await waitForCost(page, before);
  assert.equal(await page.isVisible('#export-preview'), false, 'the preview of the old plan is hidden');
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('export: Copy with the clipboard refused selects the text and says to copy it by hand', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage();
  await planGpt2(page);
  const saved = await exported(page, 'megatron');
  await page.waitForSelector('#export-preview', { state: 'visible' });
  // The clipboard refuses, as it does without the permission or on an insecure origin.
  await page.evaluate(() => {
    Object.defineProperty(navigator.clipboard, 'writeText', {
      configurable: true,
      value: () => Promise.reject(new DOMException('Write permission denied.', 'NotAllowedError')),
    });
  });
  await page.click('#export-copy');
  await page.waitForFunction(() => /refused/.test(document.getElementById('export-copy-status').textContent));
  assert.match(await page.textContent('#export-copy-status'), /clipboard was refused: the text is selected, press Ctrl\+C/);
  assert.equal(await page.textContent('#export-copy'), 'Copy', 'not marked copied');
  // The whole preview is selected (a selection's text drops the file's last line break).
  const selected = await page.evaluate(() => {
    const selection = window.getSelection();
    const text = document.getElementById('export-text');
    return { text: selection.toString(), inPreview: text.contains(selection.anchorNode) && text.contains(selection.focusNode) };
  });
  assert.equal(selected.inPreview, true);
  assert.equal(selected.text, saved.text.replace(/\n$/, ''));
  assert.deepEqual(problems, []);
  await close();
});
