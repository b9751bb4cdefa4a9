// What the page says stays in step with what it does (issue 14, point 4):
// the batch field of a graph file, the status line after a refused file and
// after another choice, the preset labels, the names in the plan title, the
// table's "b÷N" hint, and Plan pressed while a file is still being checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { browserSkip, openPaperSetup, openSitePage, useSite } from './browser.mjs';
import { repo } from '../wasm/load-module.mjs';

const skip = browserSkip;
const timeout = 120_000;
const site = useSite();
const attentionPath = path.join(repo, 'examples/graphs/attention_block.json');

const status = (page) => page.textContent('#status');

/** Waits until a plan whose title starts with `title` is on display and the page is idle. */
async function waitForTitle(page, title) {
  await page.waitForFunction((t) => document.getElementById('plan-title').textContent.startsWith(t)
    && !document.body.classList.contains('planning'), title, { timeout: 60_000 });
}

/**
 * A page whose worker requests of the action `validate` can be held back:
 * `hold()` keeps them from reaching the worker, `release()` sends them
 * (resolving to how many were held). So a check can be kept in flight for as
 * long as a test needs, deterministically.
 */
async function openHoldingPage() {
  const context = await site.browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.addInitScript(() => {
    const send = Worker.prototype.postMessage;
    const held = [];
    let holding = false;
    Worker.prototype.postMessage = function (data, ...rest) {
      if (holding && data?.action === 'validate') {
        held.push(() => send.call(this, data, ...rest));
        return undefined;
      }
      return send.call(this, data, ...rest);
    };
    window.paseTest = {
      hold: () => { holding = true; },
      heldCount: () => held.length,
      release: () => {
        holding = false;
        const sends = held.splice(0);
        for (const s of sends) s();
        return sends.length;
      },
    };
  });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  await page.goto(site.url);
  await page.waitForSelector('#plan-button:not([disabled])', { timeout: 30_000 });
  // AlexNet on the paper's flat ring, what these tests start from.
  await page.click('#paper-setup');
  return { page, problems, close: () => context.close() };
}

test('consistency: a graph file\'s batch shows in the greyed field, not the previous model\'s', { skip, timeout }, async () => {
  const { page, problems, close } = await openPaperSetup(site.browser, site.url);
  await page.selectOption('#model-select', 'transformer');
  assert.equal(await page.inputValue('#batch'), '64');
  await page.setInputFiles('#graph-file', attentionPath);
  await page.waitForFunction(() => document.getElementById('model-select').value === 'upload');
  assert.equal(await page.isDisabled('#batch'), true);
  // examples/graphs/attention_block.json: "inputs": {"x": [32, 128, 512]}.
  assert.equal(JSON.parse(readFileSync(attentionPath, 'utf8')).inputs.x[0], 32);
  assert.equal(await page.inputValue('#batch'), '32');
  // An example graph likewise; a built-in network gets its own default back.
  await page.selectOption('#model-select', 'example:small_cnn');
  await page.waitForFunction(() => /small_cnn\.json chosen/.test(document.getElementById('status').textContent));
  const smallCnn = JSON.parse(readFileSync(path.join(repo, 'examples/graphs/small_cnn.json'), 'utf8'));
  assert.equal(await page.inputValue('#batch'), String(Object.values(smallCnn.inputs)[0][0]));
  await page.selectOption('#model-select', 'transformer');
  assert.equal(await page.inputValue('#batch'), '64');
  assert.deepEqual(problems, []);
  await close();
});

test('consistency: a refused file says so on the status line, and another choice replaces that', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, `${site.url}?model=alexnet&devices=8`);
  await waitForTitle(page, 'AlexNet on 8 devices');
  await page.waitForFunction(() => /^Planned AlexNet/.test(document.getElementById('status').textContent), null, { timeout: 60_000 });

  // Not JSON: refused before the module sees it.
  await page.setInputFiles('#graph-file', { name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{"format": ') });
  await page.waitForSelector('#error', { state: 'visible' });
  assert.equal(await status(page), 'broken.json was not loaded.');
  // Valid JSON, invalid graph: refused by the module's check.
  const graph = JSON.parse(readFileSync(attentionPath, 'utf8'));
  graph.layers[2].inputs = ['heads:0', 'nowhere'];
  await page.setInputFiles('#graph-file', { name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(graph)) });
  await page.waitForFunction(() => document.getElementById('status').textContent === 'bad.json was not loaded.', null, { timeout: 30_000 });

  // Choosing another model: the status is about that choice now.
  await page.selectOption('#model-select', 'rnnlm');
  assert.equal(await status(page), 'RNN language model chosen. Press Plan to plan it.');
  assert.deepEqual(problems, []);
  await close();
});

test('consistency: every preset label shows whole in the preset menu', { skip, timeout }, async () => {
  const { page, problems, close } = await openPaperSetup(site.browser, site.url);
  const fits = await page.$eval('#preset', (select) => {
    const style = getComputedStyle(select);
    const context = document.createElement('canvas').getContext('2d');
    context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    // The room for the text: the box less its padding and the arrow (about 24px).
    const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 24;
    return [...select.options].map((o) => ({ text: o.textContent, width: context.measureText(o.textContent).width, room, title: o.title }));
  });
  assert.ok(fits.length >= 10, `${fits.length} presets`);
  for (const f of fits) {
    assert.ok(f.width <= f.room, `"${f.text}" is ${f.width.toFixed(0)}px wide, the menu shows ${f.room.toFixed(0)}px`);
    if (f.text !== 'Custom') assert.ok(f.title.length > f.text.length, `"${f.text}" has its details in its tooltip`);
  }
  // The chosen preset's details are the select's tooltip.
  await page.selectOption('#preset', 'h100');
  assert.match(await page.getAttribute('#preset', 'title'), /^H100 SXM: 989 TFLOP\/s, 80 GiB, 8 per node/);
  assert.deepEqual(problems, []);
  await close();
});

test('consistency: the plan title names a built-in network as the status line does', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, `${site.url}?model=resnet101&devices=8`);
  await waitForTitle(page, 'ResNet-101 on 8 devices');
  await page.waitForFunction(() => /^Planned ResNet-101/.test(document.getElementById('status').textContent), null, { timeout: 60_000 });
  assert.equal(await page.textContent('#plan-title'), 'ResNet-101 on 8 devices');
  assert.doesNotMatch(await page.textContent('#plan-title'), /resnet101/);
  assert.deepEqual(problems, []);
  await close();
});

test('consistency: the table\'s b÷N hint follows the device count', { skip, timeout }, async () => {
  const { page, problems, close } = await openPaperSetup(site.browser, site.url);
  const hint = () => page.textContent('#split-hint');
  assert.match(await hint(), /b÷8 means the batch is split 8 ways/);
  // Before any plan, the form's count.
  await page.fill('#devices', '16');
  assert.match(await hint(), /b÷16 means the batch is split 16 ways/);
  await page.fill('#devices', '1');
  assert.match(await hint(), /on one device nothing is split/);
  // Once planned, the plan's count (the table is that plan's) ...
  await page.fill('#devices', '4');
  await page.click('#plan-button');
  await waitForTitle(page, 'AlexNet on 4 devices');
  assert.match(await hint(), /b÷4 means the batch is split 4 ways/);
  // ... also when the form changes afterwards, until the next plan.
  await page.fill('#devices', '32');
  assert.match(await hint(), /b÷4 /);
  await page.click('#plan-button');
  await waitForTitle(page, 'AlexNet on 32 devices');
  assert.match(await hint(), /b÷32 means the batch is split 32 ways/);
  assert.deepEqual(problems, []);
  await close();
});

test('consistency: Plan pressed while a file is checked plans that file once it is in', { skip, timeout }, async () => {
  const { page, problems, close } = await openHoldingPage();
  await page.click('#plan-button');
  await waitForTitle(page, 'AlexNet on 8 devices');

  await page.evaluate(() => window.paseTest.hold());
  await page.setInputFiles('#graph-file', attentionPath);
  await page.waitForFunction(() => window.paseTest.heldCount() === 1);
  assert.equal(await status(page), 'Checking attention_block.json…');
  await page.click('#plan-button');
  await page.waitForFunction(() => document.getElementById('status').textContent === 'Checking attention_block.json before planning it…');
  // Nothing was planned meanwhile: the previous graph's plan stays.
  assert.equal(await page.textContent('#plan-title'), 'AlexNet on 8 devices');
  assert.equal(await page.evaluate(() => window.paseTest.release()), 1);

  await waitForTitle(page, 'attention-block on 8 devices');
  const expected = JSON.parse(site.pase.plan(JSON.stringify({ graph: JSON.parse(readFileSync(attentionPath, 'utf8')), cluster: { devices: 8 } })));
  assert.equal(await page.locator('#strategy-table tbody tr').count(), expected.vertices.length);
  assert.match(await status(page), /^Planned attention_block\.json/);
  assert.equal(await page.inputValue('#model-select'), 'upload');
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(problems, []);
  await close();
});

test('consistency: Plan pressed while a bad file is checked says why nothing was planned', { skip, timeout }, async () => {
  const { page, problems, close } = await openHoldingPage();
  await page.click('#plan-button');
  await waitForTitle(page, 'AlexNet on 8 devices');

  const graph = JSON.parse(readFileSync(attentionPath, 'utf8'));
  graph.layers[2].inputs = ['heads:0', 'nowhere'];
  await page.evaluate(() => window.paseTest.hold());
  await page.setInputFiles('#graph-file', { name: 'bad-input.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(graph)) });
  await page.waitForFunction(() => window.paseTest.heldCount() === 1);
  await page.click('#plan-button');
  await page.waitForFunction(() => /before planning it/.test(document.getElementById('status').textContent));
  await page.evaluate(() => window.paseTest.release());

  await page.waitForFunction(() => document.getElementById('status').textContent
    === 'bad-input.json was not loaded, so nothing was planned. Press Plan to plan AlexNet.', null, { timeout: 30_000 });
  assert.match(await page.textContent('#error'), /bad-input\.json/);
  assert.match(await page.textContent('#error'), /layers\[2\]/);
  // The previous graph was not planned in its place, and is still the one chosen.
  assert.equal(await page.textContent('#plan-title'), 'AlexNet on 8 devices');
  assert.equal(await page.evaluate(() => document.body.classList.contains('planning')), false);
  assert.equal(await page.inputValue('#model-select'), 'alexnet');
  assert.deepEqual(problems, []);
  await close();
});
