// The plan summary on the page (core/docs/formats.md, "Summary"): the layers
// grouped by how they are split, above the per-layer table, exactly as the
// core's plan result gives them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { browserSkip, openSitePage, useSite, waitForPlan } from './browser.mjs';
import { repo } from '../wasm/load-module.mjs';

const skip = browserSkip;
const timeout = 120_000;
const site = useSite();

test('summary: the Transformer\'s blocks collapse into a few rows above the layer table', { skip, timeout }, async () => {
  const { page, problems, close } = await openSitePage(site.browser, `${site.url}?model=transformer&devices=16`, { ready: false });
  await waitForPlan(page);
  const expected = JSON.parse(site.pase.plan(JSON.stringify({ model: 'transformer', cluster: { devices: 16 } })));
  assert.equal(expected.error, undefined, JSON.stringify(expected.error));
  assert.ok(Array.isArray(expected.summary) && expected.summary.length > 0);

  const rows = await page.$$eval('#summary-table tbody tr', (trs) => trs.map((tr) => ({
    layers: Number(tr.cells[0].textContent),
    op: tr.cells[1].textContent,
    label: tr.cells[2].querySelector('.group-label').textContent,
    devices: Number(tr.cells[3].textContent),
    names: tr.cells[2].querySelector('.group-names').title,
  })));
  assert.ok(rows.length <= 16, `${rows.length} groups for 204 layers`);
  assert.equal(rows.length, expected.summary.length);
  const names = new Map(expected.vertices.map((v) => [v.id, v.name]));
  rows.forEach((row, i) => {
    const group = expected.summary[i];
    assert.equal(row.layers, group.vertices.length);
    assert.equal(row.op, group.op);
    assert.equal(row.label, group.label);
    assert.equal(row.devices, group.devices);
    assert.equal(row.names, group.vertices.map((id) => names.get(id)).join(', '));
  });
  // Every layer in exactly one row; the encoder's attention is one group.
  assert.equal(rows.reduce((sum, r) => sum + r.layers, 0), 204);
  const attention = rows.find((r) => r.names.split(', ').includes('enc1_attn_qkv'));
  for (let block = 2; block <= 6; block++) assert.ok(attention.names.split(', ').includes(`enc${block}_attn_qkv`), `enc${block}_attn_qkv`);
  assert.match(attention.label, /^data parallel x\d+ \(batch\)/);

  // Above the layer table.
  const summaryBox = await page.locator('.summary-card').boundingBox();
  const tableBox = await page.locator('.table-card').boundingBox();
  assert.ok(summaryBox.y + summaryBox.height <= tableBox.y, 'the summary comes before the layer table');

  // A row selects its first layer in the table.
  await page.click('#summary-table tbody tr:nth-child(3)');
  const first = expected.summary[2].vertices[0];
  await page.waitForSelector(`#strategy-table tr.selected#layer-${first}`, { timeout: 5_000 });
  await page.locator('.summary-card').screenshot({ path: path.join(repo, 'test-results', 'page-summary.png') });
  assert.deepEqual(problems, []);
  await close();
});
