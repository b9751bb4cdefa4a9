// Where the built site is, and how the tests load its module under Node:
// `require` the classic factory and hand it the .wasm bytes (Node 20's fetch
// cannot read a file path).
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const siteDir = path.resolve(repo, process.env.PASE_SITE ?? 'build-wasm/site');

export async function loadModule() {
  const moduleJs = path.join(siteDir, 'pase.js');
  assert.ok(existsSync(moduleJs), `${moduleJs} not found: build it with emcmake cmake -S . -B build-wasm && cmake --build build-wasm`);
  const createPase = createRequire(import.meta.url)(moduleJs);
  return createPase({ wasmBinary: readFileSync(path.join(siteDir, 'pase.wasm')) });
}

/**
 * The threaded module (pase-mt.js) under Node, where its threads are
 * worker_threads started with it, one per CPU but the calling thread's (at
 * most 7). They keep Node running: end them with
 * `pase.PThread.terminateAllThreads()` when done.
 */
export async function loadThreadedModule() {
  const moduleJs = path.join(siteDir, 'pase-mt.js');
  assert.ok(existsSync(moduleJs), `${moduleJs} not found: build it with emcmake cmake -S . -B build-wasm && cmake --build build-wasm`);
  const createPaseThreaded = createRequire(import.meta.url)(moduleJs);
  return createPaseThreaded({ wasmBinary: readFileSync(path.join(siteDir, 'pase-mt.wasm')) });
}
