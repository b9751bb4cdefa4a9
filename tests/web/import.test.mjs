// The page imports ONNX models end to end: headless Debian Chromium driven by
// playwright-core against build-wasm/site/, with the committed fixtures of
// tests/data/onnx/. A model file is chosen like a graph file; the worker
// reads it in slices and imports it; the page shows its parameters and
// layers, asks for its dynamic dimensions, and plans the imported graph.
//
//   node --test tests/web/import.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser; without a
// browser the tests are skipped, except under CI (CI=true).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assertClose, browserSkip, openPaperSetup, startSiteAndBrowser } from './browser.mjs';
import { loadModule, repo } from '../wasm/load-module.mjs';
import { dynamicOnnxModel, onnxBytes, onnxModel, onnxPath } from '../wasm/onnx-fixtures.mjs';

const resultsDir = path.join(repo, 'test-results');
const skip = browserSkip;
const timeout = 120_000;

let server;
let baseUrl;
let browser;
let pase; // the module under Node, for the expected imports and costs
let scratch; // large generated files

before(async () => {
  if (skip) return;
  ({ server, url: baseUrl, browser } = await startSiteAndBrowser());
  pase = await loadModule();
  scratch = mkdtempSync(path.join(os.tmpdir(), 'pase-import-'));
});

after(async () => {
  await browser?.close();
  server?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

// ---- Helpers --------------------------------------------------------------------

/** A page in a fresh context, ready to plan; `problems` collects console and page errors. */
// AlexNet on the paper's flat ring (Paper setup), what these tests start from.
const openPage = () => openPaperSetup(browser, baseUrl);

/** The module's import of `bytes` under Node: what the page must show and plan. */
function imported(bytes, options = {}) {
  const doc = JSON.parse(pase.importModel(bytes, JSON.stringify(options)));
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  return doc;
}

function expectedCost(graph, devices) {
  const doc = JSON.parse(pase.plan(JSON.stringify({ graph, cluster: { devices } })));
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  return doc.cost;
}

/** The cost on display once a plan is shown. */
async function waitForCost(page) {
  await page.waitForFunction(() => Number.isFinite(Number(document.getElementById('total-cost').dataset.exact)), null, { timeout: 60_000 });
  return Number(await page.getAttribute('#total-cost', 'data-exact'));
}

async function planAndWait(page, devices) {
  await page.fill('#devices', String(devices));
  await page.click('#plan-button');
  return waitForCost(page);
}

/** Plans again at `devices` (a plan is on display) and waits for its result. */
async function replanAndWait(page, devices) {
  await page.fill('#devices', String(devices));
  await page.click('#plan-button');
  await page.waitForFunction((n) => !document.body.classList.contains('stale') &&
    document.getElementById('plan-title').textContent.endsWith(` on ${n} devices`), devices, { timeout: 60_000 });
  return Number(await page.getAttribute('#total-cost', 'data-exact'));
}

// The page's default cluster: an imported model is planned on it at once.
const defaultDevices = 8;

const count = (n) => n.toLocaleString('en-US');
const literally = (text) => new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));

/** Waits for the imported model's summary and checks it against `doc`. */
async function assertImportedShown(page, fileName, doc) {
  await page.waitForSelector('#imported:not([hidden])', { timeout: 60_000 });
  const text = await page.textContent('#imported');
  assert.match(text, literally(fileName));
  assert.ok(text.includes(`${count(doc.parameters)} parameters`), `"${count(doc.parameters)} parameters" in ${JSON.stringify(text)}`);
  assert.equal(await page.locator('#imported li').count(), Math.min(doc.layers, 2000));
  assert.equal(await page.inputValue('#model-select'), 'upload');
  assert.match(await page.textContent('#model-select option[value="upload"]'), literally(`Imported: ${fileName}`));
  // "Imported name.onnx: ...", then "Planning name.onnx…" and "Planned name.onnx ...".
  assert.match(await page.textContent('#status'), literally(fileName));
}

// ---- Bad files first ------------------------------------------------------------

test('import: a garbage file shows what is wrong, and the page stays usable', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage();
  for (const [name, buffer] of [
    ['garbage.onnx', Buffer.from('this is not a model at all, just text')],
    ['weights.bin', Buffer.from([0xff, 0xfe, 0x00, 0x13, 0x37, 0x42, 0x99, 0x01])], // not JSON: the importer decides
    ['half.onnx', Buffer.from(onnxBytes('resnet50.onnx').subarray(0, 9000))],
  ]) {
    await page.setInputFiles('#graph-file', { name, mimeType: 'application/octet-stream', buffer });
    await page.waitForFunction((n) => document.getElementById('error').textContent.includes(n), name, { timeout: 30_000 });
    const text = await page.textContent('#error');
    assert.match(text, /Could not import/, `${name}: ${text}`);
    assert.match(await page.textContent('#status'), /was not imported/);
    assert.equal(await page.isHidden('#imported'), true);
    assert.equal(await page.inputValue('#model-select'), 'alexnet', 'the previous source stays');
  }
  await page.screenshot({ path: path.join(resultsDir, 'page-import-garbage.png') });
  // A graph file that is broken JSON is still reported as JSON.
  await page.setInputFiles('#graph-file', { name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{"format": ') });
  await page.waitForFunction(() => document.getElementById('error').textContent.includes('broken.json'));
  assert.match(await page.textContent('#error'), /not valid JSON/);
  // The page still plans, once the refused file's error is closed (Plan
  // pressed with it on display plans too: tests/web/refused-file.test.mjs).
  await page.click('#error-close');
  const cost = await planAndWait(page, 8);
  assert.ok(cost > 0);
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

// ---- Imports --------------------------------------------------------------------

test('import: an ONNX file shows its parameters and layers, then plans', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage();
  const doc = imported(onnxBytes('resnet50.onnx'));
  assert.equal(doc.parameters, onnxModel('resnet50.onnx').expected_parameters);
  await page.setInputFiles('#graph-file', onnxPath('resnet50.onnx'));
  await assertImportedShown(page, 'resnet50.onnx', doc);
  // The layer list names each layer with its op and output shape.
  const first = await page.textContent('#imported li:first-child');
  assert.ok(first.includes(doc.graph.layers[0].name) && first.includes(doc.graph.layers[0].op), first);
  assert.ok(first.includes(doc.layer_outputs[0][0].join('×')), first);
  // The batch field shows the first input's leading dimension (see the next test).
  assert.equal(await page.isDisabled('#batch'), false);
  assert.equal(await page.inputValue('#batch'), String(Object.values(doc.graph.inputs)[0][0]));

  // The import is planned at once, on the cluster of the form.
  const cost = await waitForCost(page);
  assertClose(cost, expectedCost(doc.graph, defaultDevices), 'resnet50.onnx');
  const planned = JSON.parse(pase.plan(JSON.stringify({ graph: doc.graph, cluster: { devices: defaultDevices } })));
  assert.equal(await page.locator('#strategy-table tbody tr').count(), planned.vertices.length);
  // Every layer is drawn, as a node or inside a collapsed run of ResNet's blocks.
  const inBlocks = await page.$$eval('#graph svg .node.block', (gs) => gs.map((g) => Number(g.dataset.layers)));
  assert.ok(inBlocks.length > 0, 'the repeated bottlenecks are collapsed');
  assert.equal(await page.locator('#graph svg .node[data-vertex]').count() + inBlocks.reduce((a, b) => a + b, 0), planned.vertices.length);
  // The plan result carries the graph's parameters, shown in the summary.
  assert.equal(planned.parameters, doc.parameters);
  assert.ok((await page.textContent('#plan-note')).includes(`${count(doc.parameters)} parameters`));
  // Planned again on another cluster, like any graph.
  assertClose(await replanAndWait(page, 4), expectedCost(doc.graph, 4), 'resnet50.onnx at 4 devices');
  await page.screenshot({ path: path.join(resultsDir, 'page-import-onnx.png'), fullPage: true });

  // Another model leaves the imported graph; choosing it again brings its summary back.
  await page.selectOption('#model-select', 'alexnet');
  assert.equal(await page.isHidden('#imported'), true);
  await page.selectOption('#model-select', 'upload');
  assert.equal(await page.isVisible('#imported'), true);
  assert.deepEqual(problems, []);
  await close();
});

test('import: the batch field imports the model again at that batch; the graph is named after the file', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage();
  await page.setInputFiles('#graph-file', onnxPath('resnet50.onnx'));
  await waitForCost(page);
  assert.ok((await page.textContent('#plan-title')).startsWith('resnet50 on '));
  const doc = imported(onnxBytes('resnet50.onnx'), { batch: 16 });
  assert.deepEqual(Object.values(doc.graph.inputs)[0], [16, 3, 224, 224]);
  const want = expectedCost(doc.graph, defaultDevices);
  await page.fill('#batch', '16');
  await page.press('#batch', 'Tab');
  await page.waitForFunction((w) => Math.abs(Number(document.getElementById('total-cost').dataset.exact) - w) <= 1e-6 * w,
    want, { timeout: 60_000 });
  assert.equal(await page.inputValue('#batch'), '16');
  assert.ok((await page.textContent('#imported')).includes('25,530,472'));
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('import: ONNX is recognised by its content, whatever its name', { skip, timeout }, async () => {
  const { page, problems, close } = await openPage();
  const bytes = onnxBytes('mobilenet_v2.onnx');
  const doc = imported(bytes);
  await page.setInputFiles('#graph-file', { name: 'mobilenet.model', mimeType: 'application/octet-stream', buffer: Buffer.from(bytes) });
  await assertImportedShown(page, 'mobilenet.model', doc);
  assert.deepEqual(problems, []);
  await close();
});

test('import: a file beyond the 32 MiB limit of graph documents imports in slices', { skip, timeout }, async () => {
  // resnet50.onnx followed by a 40 MB field the ModelProto does not know
  // (field 1000, length-delimited), which a reader skips by its length.
  const bytes = onnxBytes('resnet50.onnx');
  const padding = 40 * 1024 * 1024;
  const varint = (n) => {
    const out = [];
    for (; n >= 0x80; n = Math.floor(n / 0x80)) out.push((n % 0x80) | 0x80);
    out.push(n);
    return out;
  };
  const header = Buffer.from([...varint((1000 << 3) | 2), ...varint(padding)]);
  const file = path.join(scratch, 'resnet50-padded.onnx');
  writeFileSync(file, Buffer.concat([Buffer.from(bytes), header, Buffer.alloc(padding)]));
  const doc = imported(onnxBytes('resnet50.onnx'));

  const { page, problems, close } = await openPage();
  await page.setInputFiles('#graph-file', file);
  await assertImportedShown(page, 'resnet50-padded.onnx', doc);
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('import: a dynamic dimension is asked for in a form, then the model plans', { skip, timeout }, async () => {
  const model = dynamicOnnxModel();
  const bytes = onnxBytes(model.file);
  const { page, problems, close } = await openPage();
  await page.setInputFiles('#graph-file', onnxPath(model.file));
  await page.waitForSelector('#dims-form:not([hidden]) form', { timeout: 60_000 });
  assert.equal(await page.isVisible('#error'), false, 'a question, not an error');
  // One field per dimension, labelled with its name and its input.
  const inputs = page.locator('#dims-form input[type="number"]');
  assert.equal(await inputs.count(), model.dynamic_dims.length);
  for (let i = 0; i < model.dynamic_dims.length; i++) {
    const name = model.dynamic_dims[i];
    const label = await page.textContent(`#dims-form label[for="dim-${i}"]`);
    assert.ok(label.includes(name) && label.includes('input'), label);
    if (/batch/i.test(name)) assert.equal(await inputs.nth(i).inputValue(), '1', 'a batch starts at 1');
  }
  await page.screenshot({ path: path.join(resultsDir, 'page-import-dims.png') });

  // A size that is not a positive whole number is marked, not sent.
  await inputs.nth(0).fill('0');
  await page.click('#dims-form button[type="submit"]');
  assert.equal(await inputs.nth(0).getAttribute('aria-invalid'), 'true');
  assert.equal(await page.isHidden('#imported'), true);

  const dims = {};
  for (let i = 0; i < model.dynamic_dims.length; i++) {
    dims[model.dynamic_dims[i]] = 2;
    await inputs.nth(i).fill('2');
  }
  await page.click('#dims-form button[type="submit"]');
  const doc = imported(bytes, { dims });
  await assertImportedShown(page, model.file, doc);
  assert.equal(await page.isHidden('#dims-form'), true);
  const shown = await page.textContent('#imported');
  for (const name of Object.keys(dims)) assert.ok(shown.includes(`${name} = 2`), shown);

  assertClose(await waitForCost(page), expectedCost(doc.graph, defaultDevices), model.file);
  assert.deepEqual(problems, []);
  await close();
});

test('import: cancelling the dims form keeps the previous graph', { skip, timeout }, async () => {
  const model = dynamicOnnxModel();
  const { page, problems, close } = await openPage();
  await page.setInputFiles('#graph-file', onnxPath(model.file));
  await page.waitForSelector('#dims-form:not([hidden]) form', { timeout: 60_000 });
  await page.click('#dims-form button[type="button"]');
  assert.equal(await page.isHidden('#dims-form'), true);
  assert.equal(await page.inputValue('#model-select'), 'alexnet');
  assert.match(await page.textContent('#status'), /was not imported/);
  assert.deepEqual(problems, []);
  await close();
});
