// Language models on the page end to end: a Hugging Face config.json
// (examples/hf/) dropped or chosen is imported, its parameter count and
// hyper-parameters shown, its batch and sequence length set, and planned;
// the built-in language models are listed with their parameter counts and
// plan at the sequence length of the form; a bad config is reported with
// its field. Headless Debian Chromium driven by playwright-core against
// build-wasm/site/.
//
//   node --test tests/web/llm.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser; without a
// browser the tests are skipped, except under CI (CI=true).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { browserSkip, openPaperSetup, openSitePage, useSite } from './browser.mjs';
import { repo } from '../wasm/load-module.mjs';
import { formatParameters } from '../../web/format.js';

const resultsDir = path.join(repo, 'test-results');
const hfDir = path.join(repo, 'examples/hf');
const skip = browserSkip;
const timeout = 180_000;
const llms = ['gpt2', 'llama3-8b', 'llama3-70b', 'mixtral-8x7b', 'gpt3-175b'];

const site = useSite();

// ---- Helpers --------------------------------------------------------------------

/** A page in a fresh context, ready to plan; `problems` collects console and page errors. */
const openPage = (query = '') => openSitePage(site.browser, site.url + query);
// AlexNet on the paper's flat ring, what the tests without a link start from.
const openPaperPage = () => openPaperSetup(site.browser, site.url);

function configText(model) {
  return readFileSync(path.join(hfDir, model, 'config.json'), 'utf8');
}

/** The module's import of a config under Node: what the page must show and plan. */
function imported(text, options = {}) {
  const doc = JSON.parse(site.pase.importModel(new TextEncoder().encode(text), JSON.stringify(options)));
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  return doc;
}

function expectedCost(request) {
  const doc = JSON.parse(site.pase.plan(JSON.stringify(request)));
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  return doc.cost;
}

/** Waits until the cost on display is `want` (to 1e-9 relative) and no plan is in flight. */
async function waitForCostOf(page, want) {
  await page.waitForFunction((w) => !document.body.classList.contains('planning') &&
    Math.abs(Number(document.getElementById('total-cost').dataset.exact) - w) <= 1e-9 * w, want, { timeout: 90_000 });
}

/** Drops a file on the page as a user would: a drop event carrying it. */
async function dropFile(page, name, text) {
  const dataTransfer = await page.evaluateHandle(([fileName, content]) => {
    const transfer = new DataTransfer();
    transfer.items.add(new File([content], fileName, { type: 'application/json' }));
    return transfer;
  }, [name, text]);
  await page.dispatchEvent('#dropzone', 'dragenter', { dataTransfer });
  await page.dispatchEvent('#dropzone', 'drop', { dataTransfer });
}

/** Types `value` into a field and leaves it, as a user does (fires change). */
async function setField(page, selector, value) {
  await page.fill(selector, String(value));
  await page.press(selector, 'Tab');
}

// ---- A bad config first -----------------------------------------------------------

test('llm: a bad config.json shows the field in the error box, and the page keeps its graph', { skip, timeout }, async () => {
  const { page, problems, close } = await openPaperPage();
  const llama = JSON.parse(configText('Meta-Llama-3-8B'));
  for (const [config, where, message] of [
    [{ ...llama, model_type: 'bert' }, 'model_type', /bert/],
    [{ ...llama, hidden_size: -4096 }, 'hidden_size', /positive/],
  ]) {
    await page.setInputFiles('#graph-file', { name: 'config.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(config)) });
    await page.waitForFunction((w) => !document.getElementById('error').hidden &&
      document.getElementById('error-message').textContent.startsWith(w), where, { timeout: 30_000 });
    assert.match(await page.textContent('#error-title'), /Could not import config\.json/);
    assert.equal(await page.textContent('#error-message code'), where);
    assert.match(await page.textContent('#error-message'), message);
    assert.match(await page.textContent('#status'), /was not imported/);
    assert.equal(await page.isHidden('#imported'), true);
    assert.equal(await page.inputValue('#model-select'), 'alexnet', 'the previous source stays');
  }
  await page.screenshot({ path: path.join(resultsDir, 'page-llm-bad-config.png') });

  // A good config, then a sequence longer than GPT-2's position table: the
  // error names the field, which is marked; the imported graph stays.
  await page.setInputFiles('#graph-file', { name: 'config.json', mimeType: 'application/json', buffer: Buffer.from(configText('gpt2')) });
  await page.waitForSelector('#imported:not([hidden])', { timeout: 60_000 });
  await setField(page, '#seq', 4096);
  await page.waitForFunction(() => !document.getElementById('error').hidden, null, { timeout: 30_000 });
  assert.equal(await page.textContent('#error-message code'), 'seq');
  assert.equal(await page.getAttribute('#seq', 'aria-invalid'), 'true');
  assert.equal(await page.inputValue('#model-select'), 'upload');
  assert.ok((await page.textContent('#imported')).includes('124,439,808 parameters'));
  assert.deepEqual(problems, []);
  await close();
});

// ---- Imports ----------------------------------------------------------------------

test('llm: a dropped config.json shows 8,030,261,248 parameters, then plans at batch 4 and seq 256 on 8 devices', { skip, timeout }, async () => {
  const text = configText('Meta-Llama-3-8B');
  const { page, problems, close } = await openPaperPage();
  await dropFile(page, 'config.json', text);
  await page.waitForSelector('#imported:not([hidden])', { timeout: 60_000 });
  assert.equal(await page.isVisible('#error'), false);

  // The parameter count, prominently, and the config's summary.
  assert.equal(await page.textContent('#imported .imported-parameters'), '8,030,261,248 parameters');
  const summary = Object.fromEntries(await page.$$eval('#imported .imported-config dt',
    (terms) => terms.map((dt) => [dt.textContent, dt.nextElementSibling.textContent])));
  assert.equal(summary['Model type'], 'llama');
  assert.equal(summary.Layers, '32');
  assert.equal(summary['Hidden size'], '4,096');
  assert.equal(summary['Attention heads'], '32 (8 KV)');
  assert.equal(summary.Experts, undefined, 'a dense model has no experts row');
  assert.equal(await page.inputValue('#model-select'), 'upload');
  assert.match(await page.textContent('#model-select option[value="upload"]'), /Imported: config\.json/);

  // The sizes the import used: batch 32 and the model's 8192-token context.
  const defaults = imported(text);
  assert.equal(await page.inputValue('#batch'), String(defaults.batch));
  assert.equal(await page.isVisible('#seq'), true);
  assert.equal(await page.inputValue('#seq'), String(defaults.seq));
  // It is planned at once, named after its model type (the file is config.json).
  await waitForCostOf(page, expectedCost({ graph: defaults.graph, cluster: { devices: 8 } }));
  assert.ok((await page.textContent('#plan-title')).startsWith('llama on '));

  // Batch 4, then sequence length 256: each imports the config again and plans.
  await setField(page, '#batch', 4);
  await waitForCostOf(page, expectedCost({ graph: imported(text, { batch: 4, seq: defaults.seq }).graph, cluster: { devices: 8 } }));
  await setField(page, '#seq', 256);
  const doc = imported(text, { batch: 4, seq: 256 });
  assert.deepEqual(doc.graph.inputs.tokens, [4, 256]);
  const cost = expectedCost({ graph: doc.graph, cluster: { devices: 8 } });
  await waitForCostOf(page, cost);
  assert.equal(await page.inputValue('#batch'), '4');
  assert.equal(await page.inputValue('#seq'), '256');
  assert.match(await page.textContent('#imported .imported-sizes'), /4 sequences of 256 tokens/);
  assert.ok((await page.textContent('#plan-title')).endsWith(' on 8 devices'));
  assert.ok((await page.textContent('#plan-note')).includes('8,030,261,248 parameters'));
  assert.equal(await page.locator('#strategy-table tbody tr').count(),
    JSON.parse(site.pase.plan(JSON.stringify({ graph: doc.graph, cluster: { devices: 8 } }))).vertices.length);
  // The same plan as the built-in llama3-8b at these sizes.
  assert.equal(cost, expectedCost({ model: 'llama3-8b', batch: 4, seq: 256, cluster: { devices: 8 } }));
  await page.screenshot({ path: path.join(resultsDir, 'page-llm-config.png'), fullPage: true });

  // Another model leaves the config (and its sequence field); choosing it again brings both back.
  await page.selectOption('#model-select', 'alexnet');
  assert.equal(await page.isHidden('#imported'), true);
  assert.equal(await page.isHidden('#seq-field'), true);
  await page.selectOption('#model-select', 'upload');
  assert.equal(await page.isVisible('#imported'), true);
  assert.equal(await page.inputValue('#seq'), '256');
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('llm: a config chosen under its own name is named after the file; a byte order mark is no matter', { skip, timeout }, async () => {
  const text = configText('gpt2');
  const { page, problems, close } = await openPaperPage();
  const bom = Buffer.from([0xef, 0xbb, 0xbf]);
  await page.setInputFiles('#graph-file', { name: 'gpt2-small.json', mimeType: 'application/json', buffer: Buffer.concat([bom, Buffer.from(text)]) });
  await page.waitForSelector('#imported:not([hidden])', { timeout: 60_000 });
  assert.equal(await page.textContent('#imported .imported-parameters'), '124,439,808 parameters');
  const doc = imported(text, { name: 'gpt2-small' });
  await waitForCostOf(page, expectedCost({ graph: doc.graph, cluster: { devices: 8 } }));
  assert.ok((await page.textContent('#plan-title')).startsWith('gpt2-small on '));
  assert.equal(await page.inputValue('#seq'), '1024');
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

// ---- Built-in language models -----------------------------------------------------------

test('llm: the built-in language models are listed with their parameter counts and plan at the form\'s sequence length', { skip, timeout }, async () => {
  const models = JSON.parse(site.pase.models());
  const { page, problems, close } = await openPaperPage();
  const options = await page.$$eval('#model-select optgroup[label="Language models"] option', (list) => list.map((o) => [o.value, o.textContent]));
  assert.deepEqual(options.map(([value]) => value), llms);
  for (const [value, label] of options) {
    const info = models.find((m) => m.name === value);
    assert.ok(label.includes(`${formatParameters(info.parameters)} parameters`), label);
  }
  assert.ok(options.find(([value]) => value === 'llama3-8b')[1].includes('8.03B parameters'));
  // The paper's networks keep their group.
  assert.equal(await page.locator('#model-select optgroup[label="Benchmark networks"] option[value="llama3-8b"]').count(), 0);
  // AlexNet has no sequence length.
  assert.equal(await page.isHidden('#seq-field'), true);

  await page.selectOption('#model-select', 'llama3-8b');
  assert.equal(await page.isVisible('#seq'), true);
  assert.equal(await page.inputValue('#batch'), '32');
  assert.equal(await page.inputValue('#seq'), '8192');
  assert.match(await page.textContent('#model-description'), /8,030,261,248 parameters/);
  await page.fill('#batch', '2');
  await page.fill('#seq', '128');
  await page.fill('#devices', '8');
  await page.click('#plan-button');
  await waitForCostOf(page, expectedCost({ model: 'llama3-8b', batch: 2, seq: 128, cluster: { devices: 8 } }));
  assert.ok((await page.textContent('#plan-title')).startsWith('Llama 3 8B on 8 devices'));
  // The link carries the sequence length.
  await page.waitForFunction(() => new URL(location.href).searchParams.get('seq') === '128');
  assert.equal(new URL(page.url()).searchParams.get('model'), 'llama3-8b');
  await page.screenshot({ path: path.join(resultsDir, 'page-llm-builtin.png'), fullPage: true });

  // A network without a sequence hides the field and sends none.
  await page.selectOption('#model-select', 'alexnet');
  assert.equal(await page.isHidden('#seq-field'), true);
  await page.click('#plan-button');
  await waitForCostOf(page, expectedCost({ model: 'alexnet', cluster: { devices: 8 } }));
  assert.equal(new URL(page.url()).searchParams.get('seq'), null);
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('llm: a shared link with a sequence length plans on load; a bad one names the field', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage('?model=gpt2&batch=2&seq=64&devices=4');
  await waitForCostOf(page, expectedCost({ model: 'gpt2', batch: 2, seq: 64, cluster: { devices: 4 } }));
  assert.equal(await page.inputValue('#seq'), '64');
  // GPT-2's 50,257 tokens planned as Megatron-LM pads them (core/docs/llm.md).
  assert.match(await page.textContent('#plan-note'), /vocabulary padded from 50,257 to 50,304 rows \(a multiple of 128/);
  assert.deepEqual(problems, []);
  await close();

  const bad = await openPage('?model=gpt2&batch=2&seq=4096&devices=4');
  await bad.page.waitForFunction(() => !document.getElementById('error').hidden, null, { timeout: 60_000 });
  assert.equal(await bad.page.textContent('#error-message code'), 'seq');
  assert.equal(await bad.page.getAttribute('#seq', 'aria-invalid'), 'true');
  assert.deepEqual(bad.problems, []);
  await bad.close();
});
