// The page says why a file the user just chose was not taken, and Plan then
// plans the graph it shows: a plan is on display (attention_block.json), a
// bad file is chosen and refused: the error box shows the file's error with
// its field, the status line says the file was not taken, and a note above
// the plan says it is of attention_block.json, not of the bad file. Plan,
// pressed with the error on display, plans attention_block.json (the error
// gives way to the plan); so does closing the error and pressing Plan. A
// click that waits for the file's check says why nothing was planned
// (tests/web/consistency.test.mjs). For a bad graph JSON, a bad ONNX model
// and a bad config.json; also a model waiting for its dynamic dimensions.
//
//   node --test tests/web/refused-file.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser. Without a
// browser the tests are skipped, except under CI (CI=true).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { browserSkip, openPaperSetup, useSite } from './browser.mjs';
import { repo } from '../wasm/load-module.mjs';
import { dynamicOnnxModel, onnxPath } from '../wasm/onnx-fixtures.mjs';

const skip = browserSkip;
const timeout = 180_000;
const site = useSite();
const attentionPath = path.join(repo, 'examples/graphs/attention_block.json');
const invalidDir = path.join(repo, 'tests/invalid');

// A Conv whose filter has 4 input channels, on a 3-channel image.
const badConv = {
  format: 'pase-graph/1',
  inputs: { image: [8, 3, 32, 32] },
  layers: [{ name: 'conv1', op: 'Conv', inputs: ['image'], filter: [16, 4, 3, 3], pad: 1 }],
};

// Each bad file, and the error the module gives for it (checked against the
// module under Node in the first test): the field and the message.
const badFiles = [
  {
    what: 'a bad graph JSON',
    file: { name: 'bad-conv.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(badConv)) },
    title: 'Invalid graph file bad-conv.json',
    where: 'layers[0].filter',
    message: 'channel 4 does not match input 3',
    verb: 'loaded',
  },
  {
    what: 'a bad ONNX model',
    file: { name: 'opset_too_old.onnx', mimeType: 'application/octet-stream', buffer: readFileSync(path.join(invalidDir, 'models/opset_too_old.onnx')) },
    title: 'Could not import opset_too_old.onnx',
    where: 'opset',
    message: 'opset 9 is too old',
    verb: 'imported',
  },
  {
    what: 'a bad config.json',
    file: { name: 'config.json', mimeType: 'application/json', buffer: readFileSync(path.join(invalidDir, 'configs/negative_hidden.json')) },
    title: 'Could not import config.json',
    where: 'hidden_size',
    message: 'must be a positive integer, not -4096',
    verb: 'imported',
  },
];

const status = (page) => page.textContent('#status');

/** Waits until a plan whose title starts with `title` is on display, its status line says so and the page is idle. */
async function waitForPlanOf(page, title, label) {
  await page.waitForFunction(([t, l]) => document.getElementById('plan-title').textContent.startsWith(t)
    && document.getElementById('status').textContent.startsWith(`Planned ${l}`)
    && !document.body.classList.contains('planning'), [title, label], { timeout: 60_000 });
}

/** What the page shows about the refused file: the error box, the status line, the note on the plan. */
function shown(page) {
  return page.evaluate(() => ({
    errorVisible: !document.getElementById('error').hidden,
    title: document.getElementById('error-title').textContent,
    where: document.querySelector('#error-message code')?.textContent ?? '',
    message: document.getElementById('error-message').textContent,
    status: document.getElementById('status').textContent,
    planning: document.body.classList.contains('planning'),
    planTitle: document.getElementById('plan-title').textContent,
    noteVisible: !document.getElementById('plan-of').hidden,
    note: document.getElementById('plan-of').textContent,
    dimmed: document.body.classList.contains('other-graph'),
    select: document.getElementById('model-select').value,
  }));
}

/** Asserts that the page says why `bad` was not taken, and that the plan on display is attention_block.json's. */
async function assertRefused(page, bad) {
  const name = bad.file.name;
  const notTaken = `${name} was not ${bad.verb}.`;
  await page.waitForFunction((text) => document.getElementById('status').textContent === text, notTaken, { timeout: 30_000 });
  const s = await shown(page);
  assert.equal(s.errorVisible, true, `${bad.what}: the error box is shown`);
  assert.equal(s.title, bad.title, bad.what);
  assert.equal(s.where, bad.where, `${bad.what}: ${s.message}`);
  assert.ok(s.message.startsWith(`${bad.where}: `) && s.message.includes(bad.message), `${bad.what}: ${JSON.stringify(s.message)}`);
  assert.equal(s.planning, false, `${bad.what}: nothing is planned`);
  // The plan shown is still attention_block.json's, and says so.
  assert.equal(s.planTitle, 'attention-block on 8 devices', bad.what);
  assert.equal(s.noteVisible, true, `${bad.what}: the note on the plan is shown`);
  assert.equal(s.note, `This plan is of attention_block.json, not of ${name}, which was not ${bad.verb}.`);
  assert.equal(s.dimmed, true, `${bad.what}: the plan is dimmed`);
  // The source is still the graph before the file.
  assert.equal(s.select, 'upload', bad.what);
}

test('refused file: the expected errors are the module\'s own', { skip }, () => {
  // The graph: validate(), as the page checks an upload.
  const answer = JSON.parse(site.pase.validate(JSON.stringify(badConv)));
  assert.equal(answer.error?.where, badFiles[0].where, JSON.stringify(answer));
  assert.ok(answer.error.message.includes(badFiles[0].message), answer.error.message);
  // The model files: the corpus cases that tests/wasm/ checks against the importer.
  const onnxCase = JSON.parse(readFileSync(path.join(invalidDir, 'models/cases.json'), 'utf8')).cases
    .find((c) => c.file === badFiles[1].file.name);
  assert.deepEqual([onnxCase.where, onnxCase.message.startsWith(badFiles[1].message)], [badFiles[1].where, true]);
  const configCase = JSON.parse(readFileSync(path.join(invalidDir, 'configs/cases.json'), 'utf8')).cases
    .find((c) => c.file === 'negative_hidden.json');
  assert.deepEqual([configCase.where, configCase.message], [badFiles[2].where, badFiles[2].message]);
});

for (const bad of badFiles) {
  test(`refused file: ${bad.what} chosen after a plan says why; Plan then plans the graph shown`, { skip, timeout }, async () => {
    const { page, problems, close } = await openPaperSetup(site.browser, site.url);
    // The sequence of the report: the Transformer, then attention_block.json, planned.
    await page.selectOption('#model-select', 'transformer');
    await page.setInputFiles('#graph-file', attentionPath);
    await page.waitForFunction(() => document.getElementById('status').textContent === 'Loaded attention_block.json. Press Plan to plan it.',
      null, { timeout: 30_000 });
    await page.click('#plan-button');
    await waitForPlanOf(page, 'attention-block on 8 devices', 'attention_block.json');
    assert.equal(await page.isVisible('#plan-of'), false, 'no note on a plan of the graph chosen');

    // The bad file: refused, said why.
    await page.setInputFiles('#graph-file', bad.file);
    await assertRefused(page, bad);
    await page.screenshot({ path: path.join(repo, 'test-results', `page-refused-${path.extname(bad.file.name).slice(1)}-${bad.verb}.png`) });

    // Plan with the error on display: it plans attention_block.json, and the
    // error and the note give way to the plan.
    await page.click('#plan-button');
    await waitForPlanOf(page, 'attention-block on 8 devices', 'attention_block.json');
    assert.equal(await page.isVisible('#error'), false, `${bad.what}: the error gave way to the plan`);
    assert.equal(await page.isVisible('#plan-of'), false);
    assert.equal(await page.evaluate(() => document.body.classList.contains('other-graph')), false);

    // Chosen again and the error closed: the plan is of the graph chosen
    // again, and Plan plans it.
    await page.setInputFiles('#graph-file', bad.file);
    await assertRefused(page, bad);
    await page.click('#error-close');
    assert.equal(await page.isVisible('#plan-of'), false);
    assert.equal(await page.evaluate(() => document.body.classList.contains('other-graph')), false);
    await page.click('#plan-button');
    await waitForPlanOf(page, 'attention-block on 8 devices', 'attention_block.json');
    assert.equal(await page.isVisible('#error'), false);
    assert.deepEqual(problems, []);
    await close();
  });
}

test('refused file: a model waiting for its dynamic dimensions is asked for, not the graph before it planned', { skip, timeout }, async () => {
  const model = dynamicOnnxModel();
  const { page, problems, close } = await openPaperSetup(site.browser, site.url);
  await page.click('#plan-button');
  await waitForPlanOf(page, 'AlexNet on 8 devices', 'AlexNet');

  await page.setInputFiles('#graph-file', onnxPath(model.file));
  await page.click('#plan-button');
  await page.waitForSelector('#dims-form:not([hidden]) form', { timeout: 60_000 });
  const asked = `${model.file} has dynamic dimensions: give their sizes to import it, or cancel to plan AlexNet.`;
  await page.waitForFunction((text) => document.getElementById('status').textContent === text, asked, { timeout: 30_000 });
  // Again, once the form is open.
  await page.click('#plan-button');
  assert.equal(await status(page), asked);
  assert.equal(await page.evaluate(() => document.body.classList.contains('planning')), false);
  assert.equal(await page.textContent('#plan-title'), 'AlexNet on 8 devices');
  assert.equal(await page.textContent('#plan-of'), `This plan is of AlexNet, not of ${model.file}, which waits for the sizes of its dynamic dimensions.`);

  // Cancelling the form gives the file up: Plan plans AlexNet again.
  await page.click('#dims-form button[type="button"]');
  assert.equal(await page.isVisible('#plan-of'), false);
  await page.fill('#devices', '4');
  await page.click('#plan-button');
  await waitForPlanOf(page, 'AlexNet on 4 devices', 'AlexNet');
  assert.deepEqual(problems, []);
  await close();
});
