// web/views/split-kind.js: how a layer is split, from its dims and config.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitKind, batchDimIndex, describeSplits } from '../../web/views/split-kind.js';

const conv = (config) => ({ dims: ['b', 'c', 'h', 'w', 'r', 's', 'n'], sizes: [128, 3, 55, 55, 11, 11, 96], config });

test('split-kind: no dimension split is unsplit', () => {
  assert.equal(splitKind(conv([1, 1, 1, 1, 1, 1, 1])), 'unsplit');
  assert.equal(splitKind({ dims: ['b'], config: [] }), 'unsplit');
});

test('split-kind: the batch dimension is "b", wherever it is, else the first', () => {
  assert.equal(batchDimIndex({ dims: ['s', 'b', 'h'] }), 1);
  assert.equal(batchDimIndex({ dims: ['m', 'n', 'k'] }), 0);
});

test('split-kind: batch only, parameter only and hybrid', () => {
  assert.equal(splitKind(conv([8, 1, 1, 1, 1, 1, 1])), 'batch');
  assert.equal(splitKind(conv([1, 1, 1, 1, 1, 1, 8])), 'parameter');
  assert.equal(splitKind(conv([4, 1, 1, 1, 1, 1, 2])), 'hybrid');
  assert.equal(splitKind({ dims: ['s', 'b', 'e'], config: [1, 8, 1] }), 'batch');
});

test('split-kind: the description lists split dimensions only', () => {
  assert.equal(describeSplits(conv([4, 1, 1, 1, 1, 1, 2])), 'b÷4 · n÷2');
  assert.equal(describeSplits(conv([1, 1, 1, 1, 1, 1, 1])), 'unsplit');
});
