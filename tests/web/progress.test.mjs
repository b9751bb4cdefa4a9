// The page's progress over a plan of several searches (core/docs/architecture.md,
// "Progress"): the bar never goes back, and the status line names the phase
// and the time left. Before, each search ran the bar from 0 again (Llama 3
// 8B's read 14%, 12%, 97%, 100%, 3%, ...).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSkip, useSite, waitForPlan } from './browser.mjs';

const skip = browserSkip;
const timeout = 150_000;
const site = useSite();

/**
 * `query` in a fresh context that records every value of the progress bar
 * (`window.bar`) and every status line (`window.statuses`).
 */
async function recordingPage(query) {
  const context = await site.browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.addInitScript(() => {
    window.bar = [];
    window.statuses = [];
    document.addEventListener('DOMContentLoaded', () => {
      const bar = document.getElementById('progress');
      new MutationObserver(() => window.bar.push(bar.value)).observe(bar, { attributes: true, attributeFilter: ['value'] });
      const status = document.getElementById('status');
      new MutationObserver(() => window.statuses.push(status.textContent)).observe(status, { childList: true, characterData: true, subtree: true });
    });
  });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.goto(site.url + query);
  return { page, problems, close: () => context.close() };
}

test('progress: over GPT-2 under a memory cap the bar only moves forward, with the phase and the time left', { skip, timeout }, async () => {
  const { page, problems, close } = await recordingPage('?model=gpt2&batch=32&devices=16');
  await waitForPlan(page, { timeout: 90_000 });
  // Two nodes of H100 with 6 GiB each, the practice model: the recomputation
  // chosen by the search, several searches under the cap.
  await page.selectOption('#preset', 'h100');
  await page.selectOption('#cost-model', 'practice');
  await page.fill('#memory', '6');
  await page.evaluate(() => { window.bar = []; window.statuses = []; });
  await page.click('#plan-button');
  await waitForPlan(page, { timeout: 120_000 });
  const bar = await page.evaluate(() => window.bar);
  const statuses = await page.evaluate(() => window.statuses);
  // The plan's bar: from its reset to 0 to its 1.
  const start = bar.lastIndexOf(0, bar.indexOf(1));
  const values = bar.slice(start, bar.indexOf(1) + 1);
  assert.ok(start >= 0 && values.length >= 4, `the bar moved: ${bar.join(' ')}`);
  for (let i = 1; i < values.length; ++i) assert.ok(values[i] >= values[i - 1], `the bar went back: ${values.join(' ')}`);
  assert.ok(values.some((v) => v > 0 && v < 1), values.join(' '));
  const progress = statuses.filter((s) => /^Planning .*\d+%/.test(s));
  assert.ok(progress.length >= 3, statuses.join(' | '));
  // Each search under the cap, or (a language model's per-layer plan, one
  // per ZeRO stage) each pipeline search, names its phase.
  assert.ok(progress.some((s) => /\d+%, .*(search \d+ under the memory cap|the per-layer plan at ZeRO \d: .*pipeline: )/.test(s)), progress.join(' | '));
  assert.ok(progress.some((s) => /recomputation/.test(s)), progress.join(' | '));
  assert.ok(progress.some((s) => /, (about \d+ (s|min|h)|under a second) left$/.test(s)), progress.join(' | '));
  // The percentages on the status line never go back either.
  const percents = progress.map((s) => Number(/(\d+)%/.exec(s)[1]));
  for (let i = 1; i < percents.length; ++i) assert.ok(percents[i] >= percents[i - 1], percents.join(' '));
  assert.deepEqual(problems, []);
  await close();
});
