// Issue 47, point 3: the memory card labels every part (the working buffers
// too) and they add up to its total; the capacity is the GPU's, on the form,
// the card and the comparison alike, with the framework's reserve and the
// headroom shown as parts of it; the headroom is a field of the page that
// changes the plan and travels in the link.
//
//   node --test tests/web/memory-margin.test.mjs
//
// PASE_SITE overrides the site folder, PASE_CHROMIUM the browser. Without a
// browser the tests are skipped, except under CI (CI=true).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertClose, browserSkip, openSitePage, useSite, waitForCost, waitForPlan } from './browser.mjs';

const skip = browserSkip;
const timeout = 240_000;
const GiB = 2 ** 30;
const site = useSite();

function planned(request) {
  const doc = JSON.parse(site.pase.plan(JSON.stringify(request)));
  assert.equal(doc.error, undefined, JSON.stringify(doc.error));
  return doc;
}

/** The memory card as drawn: the bar's parts, the reserve and headroom, the legend, the headline. */
const memoryCard = (page) => page.$eval('#memory-chart', (chart) => ({
  total: Number(chart.querySelector('.memory-bar').dataset.total),
  // The card's own bar, not the bars of a pipeline's stages under it.
  parts: [...chart.querySelectorAll('.memory-bar .memory-seg')].filter((s) => !s.closest('.stage-memory-list'))
    .map((s) => ({ part: s.dataset.part, bytes: Number(s.dataset.bytes) })),
  kept: [...chart.querySelectorAll('.memory-kept-seg')].filter((s) => !s.closest('.stage-memory-list'))
    .map((s) => ({ part: s.dataset.part, bytes: Number(s.dataset.bytes) })),
  capacityLine: Number(chart.querySelector('.memory-cap')?.dataset.capacity),
  legend: [...chart.querySelectorAll('.memory-legend li')].map((li) => ({
    part: li.dataset.part,
    label: li.querySelector('.legend-label').textContent,
    value: li.querySelector('.legend-value').textContent,
  })),
  headline: chart.querySelector('.memory-headline').textContent,
}));

test('memory card: every part labelled and adding up to the total; one capacity, the GPU\'s, with the reserve and the headroom in it', { skip, timeout }, async () => {
  // The first screen: Llama 3 8B on one node of 8 H100 (80 GiB each), the practice model.
  const { page, problems, close } = await openSitePage(site.browser, site.url);
  assert.equal(await page.inputValue('#memory'), '80');
  assert.equal(await page.inputValue('#headroom'), '10', 'the default margin, as the module\'s');
  await page.click('#plan-button');
  await waitForPlan(page, { timeout: 180_000 });
  const card = await memoryCard(page);

  // Each part of the bar has a label in the legend, the working buffers among them, and they add up.
  assert.deepEqual(card.parts.map((p) => p.part), ['params', 'grads', 'optimizer', 'activations', 'working']);
  assert.ok(card.parts.find((p) => p.part === 'working').bytes > 0, 'the practice model counts working buffers');
  const sum = card.parts.reduce((s, p) => s + p.bytes, 0);
  assert.ok(Math.abs(sum - card.total) <= 1e-9 * card.total, `parts ${sum} != total ${card.total}`);
  const labels = Object.fromEntries(card.legend.map((l) => [l.part, l.label]));
  for (const p of card.parts) assert.ok(labels[p.part], `part ${p.part} has a label`);
  assert.equal(labels.working, 'Working buffers');

  // One capacity: the GPU's 80 GiB, the reserve and the headroom (10% of it) parts of it, the line where they start.
  assert.deepEqual(card.kept.map((k) => k.part), ['headroom', 'reserved']);
  const kept = Object.fromEntries(card.kept.map((k) => [k.part, k.bytes]));
  assertClose(kept.headroom, 0.1 * 80 * GiB, 'headroom');
  assert.ok(kept.reserved > 0);
  assertClose(card.capacityLine, 80 * GiB - kept.reserved - kept.headroom, 'the plan\'s limit');
  assert.ok(card.total <= card.capacityLine, 'the plan fits within the margin');
  assert.equal(card.legend.find((l) => l.part === 'capacity').value, '80 GiB');
  assert.deepEqual(['headroom', 'reserved', 'capacity'].map((p) => labels[p]), ['Headroom', 'Reserved (framework)', 'Capacity']);
  assert.match(card.headline, / of 80 GiB per GPU: fits$/);

  // The comparison says the same capacity, never the 77 GiB that was the memory less the reserve.
  await page.waitForSelector('#comparison .compare-row', { timeout: 120_000 });
  const comparison = await page.textContent('#comparison');
  assert.match(comparison, /80 GiB/);
  const cardText = await page.textContent('#memory-chart');
  for (const text of [comparison, cardText]) assert.doesNotMatch(text, /\b77 GiB/);
  assert.deepEqual(problems, []);
  await close();
});

test('memory card: the headroom field changes the plan, is in the link, and a bad one names its field', { skip, timeout }, async () => {
  // GPT-2 on 8 H100 whose memory less the reserve holds the plan without a cap with 2% to spare.
  const base = { model: 'gpt2', batch: 8, seq: 256, preset: 'h100', cost_model: 'practice' };
  // A cap that binds nothing (a request cannot lift the preset's memory): the plan without one.
  const free = planned({ ...base, cluster: { devices: 8, memory_gib: 1e6, headroom: 0 } });
  const reserve = free.memory.reserved_bytes / GiB;
  const memory = Math.ceil(((1.02 * free.memory.per_device_bytes) / GiB + reserve) * 1000) / 1000;
  const atDefault = planned({ ...base, cluster: { devices: 8, memory_gib: memory } });
  const atZero = planned({ ...base, cluster: { devices: 8, memory_gib: memory, headroom: 0 } });
  assert.equal(atZero.cost, free.cost, 'without a margin the plan without a cap fits');
  assert.ok(atDefault.cost > atZero.cost, 'the default margin asks for a dearer plan');

  const { page, problems, close } = await openSitePage(site.browser, site.url);
  await page.selectOption('#model-select', 'gpt2');
  await page.fill('#batch', '8');
  await page.fill('#seq', '256');
  await page.fill('#memory', String(memory));
  await page.click('#plan-button');
  const cost = await waitForCost(page);
  assertClose(cost, atDefault.cost, 'the default headroom, as the module\'s');
  assert.equal(new URL(page.url()).searchParams.get('hr'), '10');

  await page.fill('#headroom', '0');
  await page.click('#plan-button');
  const bare = await waitForCost(page, String(cost));
  assertClose(bare, atZero.cost, 'no headroom');
  const url = new URL(page.url());
  assert.equal(url.searchParams.get('hr'), '0');
  const card = await memoryCard(page);
  assert.deepEqual(card.kept.map((k) => k.part), ['reserved'], 'no headroom segment at 0');

  // The link opens with the field as it was and plans the same.
  const shared = await openSitePage(site.browser, site.url + url.search, { ready: false });
  await waitForPlan(shared.page);
  assert.equal(await shared.page.inputValue('#headroom'), '0');
  assertClose(Number(await shared.page.getAttribute('#total-cost', 'data-exact')), bare, 'shared link');
  await shared.close();

  // A margin of 150% is refused, naming the field and marking it.
  await page.fill('#headroom', '150');
  await page.click('#plan-button');
  await page.waitForSelector('#error', { state: 'visible', timeout: 30_000 });
  assert.equal(await page.textContent('#error-message code'), 'cluster.headroom');
  assert.match(await page.textContent('#error-message'), /must be a fraction of the memory/);
  assert.equal(await page.getAttribute('#headroom', 'aria-invalid'), 'true');

  // The paper model has no margin: the field is off.
  await page.selectOption('#cost-model', 'paper');
  assert.equal(await page.isDisabled('#headroom'), true);
  assert.deepEqual(problems, []);
  await close();
});
