// web/format.js: the numbers the page shows.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatBytes, formatCost, formatCostUnit, formatSeconds, formatShare, formatCount, formatParameters } from '../../web/format.js';

test('format: non-finite values show a dash', () => {
  assert.equal(formatCost(NaN), '—');
  assert.equal(formatSeconds(Infinity), '—');
  assert.equal(formatCount(undefined), '—');
});

test('format: costs get SI prefixes with three digits', () => {
  assert.equal(formatCost(0), '0');
  assert.equal(formatCost(512), '512');
  assert.equal(formatCost(97098296512), '97.1 G');
  assert.equal(formatCost(1.244e12), '1.24 T');
});

test('format: a cost with its unit is rounded to three digits', () => {
  assert.equal(formatCostUnit(97098296512), '97.1 GFLOP-eq');
  assert.equal(formatCostUnit(4.329954770944e12), '4.33 TFLOP-eq');
  assert.equal(formatCostUnit(12345), '12.3 kFLOP-eq');
  assert.equal(formatCostUnit(512), '512 FLOP-eq');
  assert.equal(formatCostUnit(0), '0 FLOP-eq');
  assert.equal(formatCostUnit(NaN), '—');
});

test('format: seconds pick a readable unit', () => {
  assert.equal(formatSeconds(0.0097098), '9.71 ms');
  assert.equal(formatSeconds(2.5), '2.50 s');
  assert.equal(formatSeconds(4.2e-5), '42.0 µs');
  assert.equal(formatSeconds(0), '0 s');
});

test('format: tiny shares are not shown as zero', () => {
  assert.equal(formatShare(0), '0%');
  assert.equal(formatShare(0.0004), '<0.1%');
  assert.equal(formatShare(0.4213), '42.1%');
  assert.equal(formatCount(1234567), '1,234,567');
});

test('format: parameter counts as people write them', () => {
  assert.equal(formatParameters(124439808), '124M');
  assert.equal(formatParameters(8030261248), '8.03B');
  assert.equal(formatParameters(70553706496), '70.6B');
  assert.equal(formatParameters(174604259328), '175B');
  assert.equal(formatParameters(62466080), '62.5M');
  assert.equal(formatParameters(1000000000), '1B');
  assert.equal(formatParameters(999999), '1M');
  assert.equal(formatParameters(999), '999');
  assert.equal(formatParameters(1234), '1.23k');
  assert.equal(formatParameters(512), '512');
  assert.equal(formatParameters(0), '0');
  assert.equal(formatParameters(NaN), '—');
});

test('format: bytes in binary units, as the CLI prints them', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(256), '256 B');
  assert.equal(formatBytes(1023), '1023 B');
  assert.equal(formatBytes(1024), '1.0 KiB');
  assert.equal(formatBytes(294912), '288.0 KiB');
  assert.equal(formatBytes(9.4 * 2 ** 20), '9.4 MiB');
  assert.equal(formatBytes(2 ** 30), '1.0 GiB');
  assert.equal(formatBytes(137.7 * 2 ** 30), '137.7 GiB');
  assert.equal(formatBytes(3 * 2 ** 40), '3.0 TiB');
  assert.equal(formatBytes(NaN), '—');
});
