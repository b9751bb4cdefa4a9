// The committed ONNX fixtures (tests/data/onnx/) and what their manifest says
// about them (tests/onnx/README.md), for the module's and the page's import
// tests. Every fixture's data input is named "input".
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repo } from './load-module.mjs';

export const onnxDir = path.join(repo, 'tests/data/onnx');

/** The manifest's fixtures: [{name, file, expected_parameters, dynamic_dims?: [name, ...], ...}]. */
export function onnxModels() {
  return JSON.parse(readFileSync(path.join(onnxDir, 'manifest.json'), 'utf8')).fixtures;
}

/** The manifest entry of `file`. */
export function onnxModel(file) {
  const model = onnxModels().find((m) => m.file === file);
  assert.ok(model, `tests/data/onnx/manifest.json has no entry for ${file}`);
  return model;
}

/** The first fixture with a dynamic dimension. */
export function dynamicOnnxModel() {
  const model = onnxModels().find((m) => m.dynamic_dims?.length);
  assert.ok(model, 'tests/data/onnx/manifest.json lists no model with a dynamic dimension');
  return model;
}

export function onnxPath(file) {
  return path.join(onnxDir, file);
}

/** A fixture's bytes as a Uint8Array. */
export function onnxBytes(file) {
  const buffer = readFileSync(onnxPath(file));
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}
