// Large graphs on the page (issue 14, point 2): repeated blocks collapsed in
// the graph (web/views/blocks.js) and expandable, labels, zoom and pan, the
// layer table filtered by summary group, and the phone layout, where the
// split column stays on screen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { browserSkip, openSitePage, useSite, waitForPlan } from './browser.mjs';
import { repo } from '../wasm/load-module.mjs';
import { findRepeatedBlocks } from '../../web/views/blocks.js';

const skip = browserSkip;
const timeout = 120_000;
const site = useSite();

function planOf(request) {
  const plan = JSON.parse(site.pase.plan(JSON.stringify(request)));
  assert.equal(plan.error, undefined, JSON.stringify(plan.error));
  return plan;
}

const viewBox = (page) => page.getAttribute('#graph svg.graph-svg', 'viewBox').then((text) => text.split(' ').map(Number));

// ---- The rule, under Node ---------------------------------------------------------

test('blocks: names without numbered prefixes, and edges against the vertex order, give no runs', () => {
  const v = (id, name, op = 'FC') => ({ id, name, op });
  // AlexNet-like: numbers end the names.
  assert.deepEqual(findRepeatedBlocks([v(0, 'conv1'), v(1, 'conv2'), v(2, 'fc1'), v(3, 'fc2')], [{ src: 0, dst: 1 }]), []);
  const blocks = [v(0, 'b1_x'), v(1, 'b1_y'), v(2, 'b2_x'), v(3, 'b2_y')];
  assert.equal(findRepeatedBlocks(blocks, [{ src: 0, dst: 1 }, { src: 1, dst: 2 }]).length, 1);
  assert.deepEqual(findRepeatedBlocks(blocks, [{ src: 2, dst: 1 }]), [], 'an edge backwards');
  // Blocks that differ (another op, another name) or skip a number are not a run.
  assert.deepEqual(findRepeatedBlocks([v(0, 'b1_x'), v(1, 'b1_y'), v(2, 'b2_x'), v(3, 'b2_y', 'Conv')], []), []);
  assert.deepEqual(findRepeatedBlocks([v(0, 'b1_x'), v(1, 'b1_y'), v(2, 'b2_x'), v(3, 'b2_z')], []), []);
  assert.deepEqual(findRepeatedBlocks([v(0, 'b1_x'), v(1, 'b1_y'), v(2, 'b3_x'), v(3, 'b3_y')], []), []);
  // Interleaved blocks are not contiguous.
  assert.deepEqual(findRepeatedBlocks([v(0, 'b1_x'), v(1, 'b2_x'), v(2, 'b1_y'), v(3, 'b2_y')], []), []);
});

test('blocks: the outer run wins, and inner runs are taken where the outer blocks differ', () => {
  const transformer = planOf({ model: 'transformer', cluster: { devices: 4 } });
  const runs = findRepeatedBlocks(transformer.vertices, transformer.edges);
  assert.deepEqual(runs.map((r) => [r.label, r.blocks, r.vertices.length]), [['enc1–enc6', 6, 72], ['dec1–dec6', 6, 126]]);
  for (const run of runs) {
    assert.deepEqual(run.vertices, run.vertices.map((_, i) => run.first + i));
    assert.ok(run.vertices.every((id) => transformer.vertices[id].name.startsWith(run.label.startsWith('enc') ? 'enc' : 'dec')));
  }
  // ResNet-101: layer1..layer4 differ in length, their bottlenecks 1.. do not.
  const resnet = planOf({ model: 'resnet101', cluster: { devices: 4 } });
  assert.deepEqual(findRepeatedBlocks(resnet.vertices, resnet.edges).map((r) => [r.label, r.name, r.blocks]), [
    ['layer1_1–2', 'layer1_1–layer1_2', 2], ['layer2_1–3', 'layer2_1–layer2_3', 3],
    ['layer3_1–22', 'layer3_1–layer3_22', 22], ['layer4_1–2', 'layer4_1–layer4_2', 2],
  ]);
  // An ONNX export's names: the short label is the last part of the path.
  const onnx = (block, part, op) => `/layer1/layer1.${block}/${part}/${op}`;
  const vertices = [];
  for (const block of [0, 1, 2]) {
    for (const [part, op] of [['conv1', 'Conv'], ['relu', 'Activation'], ['conv2', 'Conv']]) {
      vertices.push({ id: vertices.length, name: onnx(block, part, op), op });
    }
  }
  assert.deepEqual(findRepeatedBlocks(vertices, []).map((r) => [r.label, r.name, r.blocks, r.vertices.length]),
    [['layer1.0–2', '/layer1/layer1.0–/layer1/layer1.2', 3, 9]]);
});

test('graph: an ONNX path is printed as the two parts before its op, other names whole', async () => {
  // graph.js imports dom.js, which needs no document until it draws.
  const { pictureName } = await import('../../web/views/graph.js');
  assert.equal(pictureName('/layer1/layer1.0/conv1/Conv'), 'layer1.0/conv1');
  assert.equal(pictureName('/conv1/Conv'), '/conv1/Conv');
  assert.equal(pictureName('reshape1/ravel'), 'reshape1/ravel');
  assert.equal(pictureName('enc1_attn_qkv'), 'enc1_attn_qkv');
});

// ---- The graph ---------------------------------------------------------------------

test('large graphs: the Transformer\'s blocks are collapsed with labels, expand and collapse again', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, `${site.url}?model=transformer&devices=16`, { ready: false });
  await waitForPlan(page);
  // 204 layers: 2 input chains and heads around the 6 encoder and 6 decoder blocks.
  const blocks = await page.$$eval('#graph .node.block', (gs) => gs.map((g) => ({
    blocks: Number(g.dataset.blocks), layers: Number(g.dataset.layers), count: g.querySelector('.block-count').textContent,
    label: g.querySelector('text:not(.block-count)')?.textContent, expanded: g.getAttribute('aria-expanded'),
  })));
  assert.deepEqual(blocks, [
    { blocks: 6, layers: 72, count: '×6', label: 'enc1–enc6', expanded: 'false' },
    { blocks: 6, layers: 126, count: '×6', label: 'dec1–dec6', expanded: 'false' },
  ]);
  const drawn = await page.locator('#graph .node').count();
  assert.equal(drawn, 204 - 72 - 126 + 2);
  assert.match(await page.getAttribute('#graph svg.graph-svg', 'class'), /labelled/, 'few nodes: each carries its name');
  assert.equal(await page.locator('#graph .node[data-vertex] text').count(), drawn - 2);
  assert.match(await page.textContent('#graph .graph-count'), /204 layers drawn as 8 nodes/);
  await page.locator('#graph').screenshot({ path: path.join(repo, 'test-results', 'page-graph-collapsed.png') });

  // A summary row whose first layer is inside a block marks the block.
  const plan = planOf({ model: 'transformer', cluster: { devices: 16 } });
  const inEncoder = plan.summary.findIndex((g) => plan.vertices[g.vertices[0]].name.startsWith('enc1_'));
  assert.ok(inEncoder >= 0);
  await page.click(`#summary-table tbody tr[data-group="${inEncoder}"]`);
  await page.waitForSelector('#graph .node.block[data-block="0"].selected');

  // Enter on the encoder's box expands it in place, focusing its first layer.
  await page.focus('#graph .node.block[data-block="0"]');
  await page.keyboard.press('Enter');
  assert.equal(await page.locator('#graph .node[data-vertex]').count(), drawn - 2 + 72);
  assert.equal(await page.locator('#graph .node.block').count(), 1);
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.vertex), String(plan.vertices.find((v) => v.name.startsWith('enc1_')).id));
  // The selected layer is now its own node.
  assert.equal(await page.locator(`#graph .node.selected[data-vertex="${plan.summary[inEncoder].vertices[0]}"]`).count(), 1);
  // A click on the other box expands it: every layer is a node.
  await page.click('#graph .node.block');
  assert.equal(await page.locator('#graph .node[data-vertex]').count(), 204);
  assert.equal(await page.textContent('#graph .graph-expand'), 'Collapse repeated blocks');
  await page.click('#graph .graph-expand');
  assert.equal(await page.locator('#graph .node').count(), drawn);
  assert.equal(await page.textContent('#graph .graph-expand'), 'Expand all blocks');
  assert.deepEqual(problems, []);
  await close();
});

test('large graphs: the picture zooms and pans with the buttons, the keyboard, Ctrl+wheel and a drag', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, `${site.url}?model=resnet101&devices=8`, { ready: false });
  await waitForPlan(page);
  const [x0, y0, w0, h0] = await viewBox(page);
  assert.deepEqual([x0, y0], [0, 0]);
  assert.equal(await page.textContent('#graph .graph-zoom-level'), '100%');
  // At 100% a drag does nothing: the whole picture is in view.
  await page.click('#graph .graph-zoom-in');
  assert.equal(await page.textContent('#graph .graph-zoom-level'), '150%');
  const [, , w1, h1] = await viewBox(page);
  assert.ok(Math.abs(w1 - w0 / 1.5) < 1e-6 && Math.abs(h1 - h0 / 1.5) < 1e-6, `${w1} x ${h1}`);
  // Zoomed in about the centre.
  const [x1, y1] = await viewBox(page);
  assert.ok(Math.abs(x1 - (w0 - w1) / 2) < 1e-6 && Math.abs(y1 - (h0 - h1) / 2) < 1e-6);

  // A drag pans (the picture follows the pointer) and is no click.
  const box = await page.locator('#graph .graph-viewport').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + 40);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width / 2 - 30, box.y + 40, { steps: 4 });
  await page.mouse.move(box.x + box.width / 2 - 60, box.y + 40, { steps: 4 });
  await page.mouse.up();
  const [x2, y2] = await viewBox(page);
  assert.ok(x2 > x1, `dragged left, the view moves right: ${x1} -> ${x2}`);
  assert.equal(y2, y1);
  assert.equal(await page.locator('#strategy-table tr.selected').count(), 0, 'the drag selected nothing');

  // Keyboard: focused, - zooms out, the arrows pan, 0 fits.
  await page.focus('#graph .graph-viewport');
  await page.keyboard.press('+');
  assert.equal(await page.textContent('#graph .graph-zoom-level'), '225%');
  const [x3] = await viewBox(page);
  await page.keyboard.press('ArrowRight');
  const [x4] = await viewBox(page);
  assert.ok(x4 > x3, 'ArrowRight shows what is to the right');
  await page.keyboard.press('-');
  assert.equal(await page.textContent('#graph .graph-zoom-level'), '150%');
  await page.keyboard.press('0');
  assert.deepEqual(await viewBox(page), [0, 0, w0, h0]);

  // Ctrl+wheel (a trackpad's pinch) zooms about the pointer; never below 100%.
  await page.mouse.move(box.x + 20, box.y + 20);
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, -100);
  await page.keyboard.up('Control');
  await page.waitForFunction(() => document.querySelector('#graph .graph-zoom-level').textContent !== '100%');
  const zoomed = await viewBox(page);
  assert.ok(zoomed[2] < w0, 'zoomed in');
  await page.click('#graph .graph-zoom-out');
  await page.click('#graph .graph-zoom-out');
  await page.click('#graph .graph-zoom-out');
  assert.equal(await page.textContent('#graph .graph-zoom-level'), '100%');
  await page.click('#graph .graph-zoom-fit');
  assert.deepEqual(await viewBox(page), [0, 0, w0, h0]);

  // Expanded, its 245 layers are dots, named once zoomed in close.
  await page.click('#graph .graph-expand');
  assert.doesNotMatch(await page.getAttribute('#graph svg.graph-svg', 'class'), /labelled/);
  const name = page.locator('#graph .node[data-vertex="3"] .zoom-label');
  const shown = await name.textContent();
  assert.ok(shown.length >= 6 && 'layer1_0_conv1'.startsWith(shown.replace(/…$/, '')), shown);
  assert.equal(await name.isVisible(), false);
  await page.click('#graph .graph-zoom-in');
  assert.equal(await name.isVisible(), false, 'at 150%');
  await page.click('#graph .graph-zoom-in');
  await page.click('#graph .graph-zoom-in');
  assert.equal(await page.textContent('#graph .graph-zoom-level'), '338%');
  assert.equal(await name.isVisible(), true);
  assert.deepEqual(problems, []);
  await close();
});

// ---- The layer table -------------------------------------------------------------

test('large graphs: the layer table filters by summary group, and says how many it shows', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, `${site.url}?model=transformer&devices=16`, { ready: false });
  await waitForPlan(page);
  const plan = planOf({ model: 'transformer', cluster: { devices: 16 } });
  const visibleRows = () => page.$$eval('#strategy-table tbody tr', (trs) => trs.filter((tr) => !tr.hidden).map((tr) => Number(tr.dataset.vertex)));
  assert.equal((await visibleRows()).length, 204);
  assert.equal(await page.textContent('#filter-count'), '204 layers');
  assert.equal(await page.isVisible('#filter-clear'), false);
  // The select lists every group.
  const options = await page.$$eval('#layer-filter option', (os) => os.map((o) => o.textContent));
  assert.deepEqual(options, ['All layers', ...plan.summary.map((g) => `${g.op}: ${g.label} (${g.vertices.length})`)]);

  // A summary row filters the table to its group.
  const largest = plan.summary.reduce((best, g, i) => (g.vertices.length > plan.summary[best].vertices.length ? i : best), 0);
  await page.click(`#summary-table tbody tr[data-group="${largest}"]`);
  assert.deepEqual(await visibleRows(), plan.summary[largest].vertices);
  assert.equal(await page.textContent('#filter-count'), `Showing ${plan.summary[largest].vertices.length} of 204 layers`);
  assert.equal(await page.inputValue('#layer-filter'), String(largest));
  assert.equal(await page.locator('#summary-table tr.filtered').count(), 1);
  // Clear filter shows all again.
  await page.click('#filter-clear');
  assert.equal((await visibleRows()).length, 204);
  assert.equal(await page.locator('#summary-table tr.filtered').count(), 0);

  // The select does the same; a layer chosen in the graph outside the group clears it.
  const other = plan.summary.findIndex((g) => !g.vertices.includes(0));
  await page.selectOption('#layer-filter', String(other));
  assert.deepEqual(await visibleRows(), plan.summary[other].vertices);
  await page.click('#graph .node[data-vertex="0"]');
  assert.equal((await visibleRows()).length, 204);
  assert.equal(await page.inputValue('#layer-filter'), '');
  await page.waitForSelector('#strategy-table tr.selected#layer-0');
  assert.deepEqual(problems, []);
  await close();
});

// ---- Phones ------------------------------------------------------------------------

test('large graphs: at 390 px wide the split column is on screen, with no sideways scrolling', { skip, timeout }, async () => {
  const width = 390;
  const { page, problems, close } = await openSitePage(site.browser, `${site.url}?model=transformer&devices=16`,
    { ready: false, viewport: { width, height: 844 } });
  await waitForPlan(page);
  const overflow = await page.evaluate(() => ({
    page: document.documentElement.scrollWidth,
    // The tables on screen (the Layouts card's stay hidden for this model).
    tables: [...document.querySelectorAll('.table-wrap')].filter((w) => w.offsetParent !== null)
      .map((w) => w.scrollWidth - w.clientWidth),
  }));
  assert.ok(overflow.page <= width, `the page is ${overflow.page} px wide`);
  assert.deepEqual(overflow.tables, [0, 0], 'no table scrolls sideways');
  for (const selector of ['#strategy-table tbody tr td.dims', '#summary-table tbody tr td.split-label']) {
    const cells = page.locator(selector);
    const count = Math.min(await cells.count(), 12);
    assert.ok(count > 0, selector);
    for (let i = 0; i < count; i++) {
      const cell = cells.nth(i);
      await cell.scrollIntoViewIfNeeded();
      const box = await cell.boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= width, `${selector} #${i}: ${JSON.stringify(box)}`);
      assert.ok(box.width >= width / 2, `${selector} #${i} has room: ${box.width} px`);
    }
  }
  // The split chips wrap inside the cell.
  const chips = await page.$$eval('#strategy-table td.dims .dim', (spans) => spans.slice(0, 40).map((s) => s.getBoundingClientRect().right));
  assert.ok(chips.every((right) => right <= width), 'every chip on screen');
  await page.screenshot({ path: path.join(repo, 'test-results', 'page-mobile.png'), fullPage: false });
  assert.deepEqual(problems, []);
  await close();
});
