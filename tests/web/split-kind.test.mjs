// web/views/split-kind.js: how a layer is split, from its config and the
// dimension kinds the core gives each vertex (`kinds`, parallel to `dims`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitKind, splitKindLabel, describeSplits } from '../../web/views/split-kind.js';

const conv = (config) => ({
  dims: ['b', 'c', 'h', 'w', 'r', 's', 'n'],
  kinds: ['batch', 'reduction', 'spatial', 'spatial', 'reduction', 'reduction', 'hidden'],
  sizes: [128, 3, 55, 55, 11, 11, 96],
  config,
});

test('split-kind: no dimension split is unsplit', () => {
  assert.equal(splitKind(conv([1, 1, 1, 1, 1, 1, 1])), 'unsplit');
  assert.equal(splitKind({ dims: ['b'], kinds: ['batch'], config: [] }), 'unsplit');
  assert.equal(splitKind({ dims: [], kinds: [], config: [] }), 'unsplit');
});

test('split-kind: batch only, parameter only and hybrid', () => {
  assert.equal(splitKind(conv([8, 1, 1, 1, 1, 1, 1])), 'batch');
  assert.equal(splitKind(conv([1, 1, 1, 1, 1, 1, 8])), 'parameter');
  assert.equal(splitKind(conv([1, 2, 2, 2, 1, 1, 1])), 'parameter', 'reduction and spatial splits are not batch');
  assert.equal(splitKind(conv([4, 1, 1, 1, 1, 1, 2])), 'hybrid');
});

test('split-kind: the batch is the dimension of kind "batch", whatever its name and place', () => {
  // An Einsum "sbe" whose batch is its second dimension, named "n".
  const einsum = (config) => ({ dims: ['s', 'n', 'e'], kinds: ['sequence', 'batch', 'hidden'], config });
  assert.equal(splitKind(einsum([1, 8, 1])), 'batch');
  assert.equal(splitKind(einsum([8, 1, 1])), 'parameter', 'the first dimension is not the batch');
  assert.equal(splitKind(einsum([2, 4, 1])), 'hybrid');
  // A dimension named "b" that is not the batch is split like any other.
  assert.equal(splitKind({ dims: ['b', 'k'], kinds: ['other', 'batch'], config: [4, 1] }), 'parameter');
});

test('split-kind: a vertex with two batch dimensions', () => {
  const v = (config) => ({ dims: ['x', 'y', 'h'], kinds: ['batch', 'batch', 'hidden'], config });
  assert.equal(splitKind(v([2, 4, 1])), 'batch');
  assert.equal(splitKind(v([1, 4, 2])), 'hybrid');
});

test('split-kind: a vertex without kinds counts every split as a parameter split', () => {
  assert.equal(splitKind({ dims: ['b', 'n'], config: [8, 1] }), 'parameter');
  assert.equal(splitKind({ dims: ['b', 'n'], config: [1, 1] }), 'unsplit');
});

test('split-kind: labels and the description of the split dimensions', () => {
  assert.equal(splitKindLabel('batch'), 'Batch only');
  assert.equal(splitKindLabel('hybrid'), 'Hybrid');
  assert.equal(describeSplits(conv([4, 1, 1, 1, 1, 1, 2])), 'b÷4 · n÷2');
  assert.equal(describeSplits(conv([1, 1, 1, 1, 1, 1, 1])), 'unsplit');
});
