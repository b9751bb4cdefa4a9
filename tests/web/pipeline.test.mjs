// Pipelines on the page (core/docs/pipeline.md; web/pipeline-options.js,
// web/views/pipeline.js): the search options' stages, micro-batches and
// schedule, the request's "pipeline" only when they ask for one, the stage
// strip above the graph with each stage's devices, time, idle share and
// memory, the pipeline's bubble and label, the layer table's stages, the
// memory per stage, the link that carries the fields, and the module's
// errors pointed back at the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { browserSkip, useSite, waitForPlan } from './browser.mjs';
import { repo } from '../wasm/load-module.mjs';
import { parseCount, pipelineRequest } from '../../web/pipeline-options.js';
import { readState, writeState } from '../../web/url-state.js';

const skip = browserSkip;
const timeout = 150_000;
const site = useSite();
const base = 'http://127.0.0.1:8080/';

// ---- Without a browser --------------------------------------------------------------

test('pipeline: the count fields read a positive whole number or auto; empty is 1', () => {
  assert.deepEqual(parseCount(''), { value: 1 });
  assert.deepEqual(parseCount(' 4 '), { value: 4 });
  assert.deepEqual(parseCount('AUTO'), { value: 'auto' });
  for (const bad of ['0', '-2', '2.5', 'two', '1e3', '4 stages']) assert.ok(parseCount(bad).error, bad);
});

test('pipeline: the request has a pipeline only when the stages or micro-batches are not 1', () => {
  assert.equal(pipelineRequest({ stages: '1', microbatches: '', schedule: 'gpipe' }), null);
  assert.equal(pipelineRequest({ stages: '', microbatches: '', schedule: '1f1b' }), null);
  assert.deepEqual(pipelineRequest({ stages: '2', microbatches: '4', schedule: '1f1b' }), { stages: 2, microbatches: 4, schedule: '1f1b' });
  assert.deepEqual(pipelineRequest({ stages: 'auto', microbatches: '1', schedule: 'gpipe' }), { stages: 'auto', microbatches: 1, schedule: 'gpipe' });
  // Not valid: none (the page refuses it before planning).
  assert.equal(pipelineRequest({ stages: 'x', microbatches: '4', schedule: '1f1b' }), null);
});

test('pipeline: the link carries the pipeline fields; the defaults are left out', async () => {
  const source = { kind: 'model', name: 'rnnlm', batch: 64, seq: 256 };
  const { href } = await writeState(base, { source, devices: 8, pipeline: { stages: '2', microbatches: 'auto', schedule: 'gpipe' } });
  assert.equal(href, `${base}?model=rnnlm&batch=64&seq=256&devices=8&stages=2&mb=auto&sched=gpipe`);
  assert.deepEqual((await readState(href)).pipeline, { stages: '2', microbatches: 'auto', schedule: 'gpipe' });
  const plain = await writeState(base, { source, devices: 8, pipeline: { stages: '1', microbatches: null, schedule: '1f1b' } });
  assert.equal(plain.href, `${base}?model=rnnlm&batch=64&seq=256&devices=8`);
  assert.deepEqual((await readState(plain.href)).pipeline, { stages: null, microbatches: null, schedule: null });
});

// ---- The page --------------------------------------------------------------------------

/**
 * A page in a fresh context that records what it sends to its workers
 * (`window.sentPlans`: the plan requests, parsed) and every status line
 * (`window.statuses`); `problems` collects console and page errors.
 */
async function recordingPage(query = '', { viewport } = {}) {
  const context = await site.browser.newContext({ viewport: viewport ?? { width: 1400, height: 1000 } });
  await context.addInitScript(() => {
    window.sentPlans = [];
    window.statuses = [];
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function record(message, ...rest) {
      if (message?.action === 'plan') window.sentPlans.push(JSON.parse(message.payload));
      return post.call(this, message, ...rest);
    };
    document.addEventListener('DOMContentLoaded', () => {
      const status = document.getElementById('status');
      new MutationObserver(() => window.statuses.push(status.textContent)).observe(status, { childList: true, characterData: true, subtree: true });
    });
  });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.goto(site.url + query);
  if (!query) {
    // Without a link: Paper setup, AlexNet on the paper's flat ring, what these tests start from.
    await page.waitForSelector('#plan-button:not([disabled])', { timeout: 30_000 });
    await page.click('#paper-setup');
  }
  return { page, problems, close: () => context.close() };
}

/** The module's own answer to `request`, under Node. */
function planned(request) {
  const doc = JSON.parse(site.pase.plan(JSON.stringify(request)));
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  return doc;
}

const strip = (page) => page.$$eval('#stage-strip .stage-seg', (segs) => segs.map((s) => ({
  stage: Number(s.dataset.stage),
  firstDevice: Number(s.dataset.firstDevice),
  devices: Number(s.dataset.devices),
  layers: Number(s.dataset.layers),
  busy: Number(s.dataset.busy),
  deviceText: s.querySelector('.stage-devices').textContent,
  time: s.querySelector('.stage-time').textContent,
  memory: Number(s.querySelector('.stage-memory').dataset.bytes),
  width: s.getBoundingClientRect().width,
})));

test('pipeline: 2 stages of 4 micro-batches on 8 devices: the strip, the bubble, the stages in the table and the memory', { skip, timeout }, async () => {
  const { page, problems, close } = await recordingPage();
  await page.waitForSelector('#plan-button:not([disabled])', { timeout: 30_000 });
  await page.selectOption('#model-select', 'rnnlm');
  await page.fill('#devices', '8');
  await page.click('#search-details summary');
  await page.fill('#stages', '2');
  await page.fill('#microbatches', '4');
  await page.click('#plan-button');
  await waitForPlan(page, { timeout: 90_000 });

  const request = { model: 'rnnlm', batch: 64, seq: 256, cluster: { devices: 8 }, pipeline: { stages: 2, microbatches: 4, schedule: '1f1b' } };
  const sent = await page.evaluate(() => window.sentPlans);
  assert.equal(sent.length, 1);
  assert.deepEqual(sent[0].pipeline, request.pipeline);
  const expected = planned(request);
  assert.equal(Number(await page.getAttribute('#total-cost', 'data-exact')), expected.cost);

  // The headline names the pipeline.
  assert.equal(await page.textContent('#pipeline-label'), 'pipeline x2 (4 micro-batches, 1F1B)');
  assert.equal(await page.isVisible('#pipeline-label'), true);
  assert.match(await page.textContent('#step-note'), /^per training step of 4 micro-batches of 16, bubble \d+\.\d%/);

  // The strip: one segment per stage, on devices 0-3 and 4-7, with the bubble.
  assert.equal(await page.isVisible('#stage-strip'), true);
  const segs = await strip(page);
  assert.equal(segs.length, 2);
  assert.deepEqual(segs.map((s) => [s.firstDevice, s.devices, s.deviceText]), [[0, 4, 'GPUs 0–3'], [4, 4, 'GPUs 4–7']]);
  expected.pipeline.stage.forEach((stage, i) => {
    assert.equal(segs[i].layers, stage.layers);
    assert.equal(segs[i].busy, stage.busy_share);
    assert.equal(segs[i].memory, stage.memory_bytes);
    assert.match(segs[i].time, / per micro-batch$/);
  });
  assert.ok(segs[1].width > segs[0].width, 'the stage of 3 layers is wider than the stage of 1');
  const bubble = Number(await page.getAttribute('#stage-strip .stage-bubble', 'data-bubble'));
  assert.equal(bubble, expected.pipeline.bubble);
  assert.ok(bubble > 0 && bubble < 1);
  assert.match(await page.textContent('#stage-strip .stage-bubble'), /^bubble \d+\.\d%$/);
  // The graph's stage is above it.
  const stripBox = await page.locator('#stage-strip').boundingBox();
  const graphBox = await page.locator('#graph').boundingBox();
  assert.ok(stripBox.y + stripBox.height <= graphBox.y, 'the strip is above the graph');
  assert.deepEqual(await page.$$eval('#graph .node[data-vertex]', (ns) => ns.map((n) => Number(n.dataset.stage))), expected.pipeline.stage_of);

  // The layer table: each layer's stage.
  assert.equal(await page.isVisible('#strategy-table th.stage-col'), true);
  const stages = await page.$$eval('#strategy-table tbody tr', (rows) => rows.map((r) => Number(r.querySelector('td.stage-col').dataset.stage)));
  assert.deepEqual(stages, expected.pipeline.stage_of);
  assert.equal(await page.textContent('#strategy-table tbody tr:last-child td.stage-col'), 'stage 1');

  // The memory per stage; the bar is the largest stage's.
  const rows = await page.$$eval('#memory-chart .stage-memory-row', (rs) => rs.map((r) => Number(r.dataset.bytes)));
  assert.deepEqual(rows, expected.pipeline.stage.map((s) => s.memory_bytes));
  assert.match(await page.textContent('#memory-chart .memory-headline'), /per GPU in the largest stage \(stage \d\), no memory cap$/);

  // A stage's segment shows its layers in the table.
  await page.click('#stage-strip .stage-seg[data-stage="1"]');
  assert.equal(await page.textContent('#filter-count'), `Showing ${expected.pipeline.stage[1].layers} of 4 layers`);
  assert.equal(await page.inputValue('#layer-filter'), 'stage-1');

  // The comparison sets the pipeline above the baselines, which have none.
  await page.waitForSelector('#comparison .compare-row[data-strategy="pipeline"]', { timeout: 60_000 });
  assert.match(await page.textContent('#comparison .compare-row[data-strategy="pipeline"] .compare-name'), /pipeline x2/);
  assert.equal(await page.textContent('#comparison .compare-row[data-strategy="pase"] .compare-name'), 'PaSE, no pipeline');

  // The link carries the fields.
  assert.match(page.url(), /&stages=2&mb=4(&|$)/);
  await page.locator('.graph-card').screenshot({ path: path.join(repo, 'test-results', 'page-pipeline-strip.png') });
  await page.locator('.memory-card').screenshot({ path: path.join(repo, 'test-results', 'page-pipeline-memory.png') });

  // Back to 1 and 1: the next plan has no pipeline, and the page shows none.
  await page.fill('#stages', '1');
  await page.fill('#microbatches', '');
  await page.click('#plan-button');
  await page.waitForSelector('#stage-strip', { state: 'hidden', timeout: 60_000 });
  await waitForPlan(page, { timeout: 90_000 });
  assert.equal((await page.evaluate(() => window.sentPlans)).at(-1).pipeline, undefined);
  assert.equal(await page.locator('#strategy-table .stage-col').count(), 0);
  assert.equal(await page.locator('#graph .node[data-stage]').count(), 0);
  assert.equal(await page.isVisible('#pipeline-label'), false);
  assert.doesNotMatch(page.url(), /stages=|mb=/);
  assert.deepEqual(problems, []);
  await close();
});

test('pipeline: a link with the fields restores them and plans the pipeline; progress names the stage plans', { skip, timeout }, async () => {
  const { page, problems, close } = await recordingPage('?example=mlp_residual&devices=8&mem=80&stages=2&mb=4&sched=gpipe');
  await waitForPlan(page, { timeout: 90_000 });
  assert.equal(await page.inputValue('#stages'), '2');
  assert.equal(await page.inputValue('#microbatches'), '4');
  assert.equal(await page.inputValue('#schedule'), 'gpipe');
  assert.equal(await page.evaluate(() => document.getElementById('search-details').open), true);
  assert.equal(await page.textContent('#pipeline-label'), 'pipeline x2 (4 micro-batches, GPipe)');
  const sent = await page.evaluate(() => window.sentPlans);
  assert.deepEqual(sent.map((r) => r.pipeline), [{ stages: 2, microbatches: 4, schedule: 'gpipe' }]);
  const segs = await strip(page);
  assert.deepEqual(segs.map((s) => s.deviceText), ['GPUs 0–3', 'GPUs 4–7']);
  // Under a memory cap each stage says whether it fits.
  assert.deepEqual(await page.$$eval('#stage-strip .stage-memory', (ms) => ms.map((m) => m.dataset.fits)), ['true', 'true']);
  assert.deepEqual(await page.$$eval('#memory-chart .stage-memory-row .legend-share', (ts) => ts.map((t) => t.textContent)), ['fits', 'fits']);
  const statuses = await page.evaluate(() => window.statuses);
  const progress = statuses.filter((s) => /\d+%/.test(s) && s.startsWith('Planning'));
  assert.ok(progress.length > 0, `progress shown: ${statuses.join(' | ')}`);
  // First the floors of the (stages, micro-batches) pairs, then the stage plans.
  assert.ok(progress.every((s) => /\d+%, (\w+ recomputation: )?pipeline: (lower bounds of the stage and micro-batch counts|stage plans)/.test(s)), progress.join(' | '));
  assert.ok(progress.some((s) => /pipeline: stage plans/.test(s)), progress.join(' | '));
  // The link is written back as it was read.
  assert.match(page.url(), /&stages=2&mb=4&sched=gpipe/);
  assert.deepEqual(problems, []);
  await close();
});

test('pipeline: stages that do not divide the devices are the module\'s error, at the field', { skip, timeout }, async () => {
  const { page, problems, close } = await recordingPage('?model=alexnet&devices=8&stages=3');
  await page.waitForSelector('#error', { state: 'visible', timeout: 60_000 });
  assert.equal(await page.textContent('#error-message code'), 'pipeline.stages');
  assert.match(await page.textContent('#error-message'), /3 stages do not divide the 8 devices/);
  assert.equal(await page.getAttribute('#stages', 'aria-invalid'), 'true');
  assert.equal(await page.evaluate(() => document.getElementById('search-details').open), true);
  assert.equal(await page.textContent('#status'), 'Planning failed.');
  // Editing the field clears the mark.
  await page.fill('#stages', '4');
  assert.equal(await page.getAttribute('#stages', 'aria-invalid'), null);

  // Not a count: refused by the page, without asking the module.
  await page.fill('#microbatches', 'four');
  assert.equal(await page.getAttribute('#microbatches', 'aria-invalid'), 'true', 'marked while typed');
  const before = (await page.evaluate(() => window.sentPlans)).length;
  await page.click('#plan-button');
  await page.waitForSelector('#error', { state: 'visible' });
  assert.equal(await page.textContent('#error-message code'), 'pipeline.microbatches');
  assert.match(await page.textContent('#error-message'), /positive whole number or "auto"/);
  assert.equal((await page.evaluate(() => window.sentPlans)).length, before, 'nothing was sent');
  assert.deepEqual(problems, []);
  await close();
});

test('pipeline: when no pipeline fits the memory per GPU, the page says so and what would lower it', { skip, timeout }, async () => {
  const { page, problems, close } = await recordingPage('?model=rnnlm&devices=8&stages=2&mb=4&mem=1');
  await page.waitForSelector('#no-fit', { state: 'visible', timeout: 60_000 });
  assert.equal(await page.textContent('#no-fit-title'), 'Does not fit in 1 GiB per GPU');
  assert.match(await page.textContent('#no-fit-need'), /^No pipeline of the stage and micro-batch counts asked for fits/);
  assert.match(await page.textContent('#no-fit-hint'), /more pipeline stages or micro-batches/);
  assert.equal(await page.getAttribute('#memory', 'aria-invalid'), 'true');
  assert.deepEqual(problems, []);
  await close();
});

test('pipeline: 1 stage and 1 micro-batch send no pipeline, and the page looks as before', { skip, timeout }, async () => {
  const { page, problems, close } = await recordingPage();
  await page.waitForSelector('#plan-button:not([disabled])', { timeout: 30_000 });
  await page.selectOption('#model-select', 'rnnlm');
  await page.fill('#devices', '8');
  await page.click('#search-details summary');
  await page.fill('#stages', '1');
  await page.fill('#microbatches', '1');
  await page.selectOption('#schedule', 'gpipe');
  await page.click('#plan-button');
  await waitForPlan(page, { timeout: 90_000 });
  const sent = await page.evaluate(() => window.sentPlans);
  assert.equal(sent.length, 1);
  assert.equal('pipeline' in sent[0], false);
  const expected = planned({ model: 'rnnlm', batch: 64, seq: 256, cluster: { devices: 8 } });
  assert.equal(Number(await page.getAttribute('#total-cost', 'data-exact')), expected.cost);
  assert.equal(await page.isVisible('#stage-strip'), false);
  assert.equal(await page.isVisible('#pipeline-label'), false);
  assert.equal(await page.locator('#strategy-table .stage-col').count(), 0, 'no stage column');
  assert.equal(await page.$$eval('#strategy-table thead th', (ths) => ths.at(-1).textContent), 'Memory');
  assert.equal(await page.locator('#memory-chart .stage-memory-row').count(), 0);
  assert.equal(await page.locator('#graph .node[data-stage]').count(), 0);
  assert.equal(await page.textContent('#step-note'), 'per training step, at the peak 10 TFLOP/s per device, no overlap of communication with compute');
  await page.waitForSelector('#comparison .compare-row[data-strategy="pase"]', { timeout: 60_000 });
  assert.equal(await page.locator('#comparison .compare-row[data-strategy="pipeline"]').count(), 0);
  assert.equal(await page.textContent('#comparison .compare-row[data-strategy="pase"] .compare-name'), 'PaSE');
  // The schedule alone is kept in the link, not sent.
  assert.doesNotMatch(page.url(), /stages=|mb=/);
  assert.deepEqual(problems, []);
  await close();
});

test('pipeline: at 390 px wide the strip fits the screen, with no sideways scrolling', { skip, timeout }, async () => {
  const width = 390;
  const { page, problems, close } = await recordingPage('?model=rnnlm&devices=8&stages=2&mb=4', { viewport: { width, height: 844 } });
  await waitForPlan(page, { timeout: 90_000 });
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth) <= width);
  for (const seg of await page.locator('#stage-strip .stage-seg').all()) {
    await seg.scrollIntoViewIfNeeded();
    const box = await seg.boundingBox();
    assert.ok(box.x >= 0 && box.x + box.width <= width, JSON.stringify(box));
  }
  // The tables on screen (the Layouts card's stay hidden for this model).
  assert.deepEqual(await page.$$eval('.table-wrap', (ws) => ws.filter((w) => w.offsetParent !== null)
    .map((w) => w.scrollWidth - w.clientWidth)), [0, 0]);
  await page.locator('#stage-strip').screenshot({ path: path.join(repo, 'test-results', 'page-pipeline-mobile.png') });
  assert.deepEqual(problems, []);
  await close();
});
