#!/usr/bin/env node
// Planning time of the WebAssembly module next to the native CLI, for every
// built-in network. Prints a Markdown table; asserts nothing (timings depend on
// the machine).
//
//   node tests/wasm/bench.mjs [--devices 16] [--runs 5] [--site build-wasm/site] [--cli build/pase]
//
// "plan" is the whole request (parse, build the network, search, write JSON):
// for the CLI, the wall time of the process; for the module, the time of one
// plan() call in this Node process. "search" is the time_s that plan() itself
// reports (the dynamic program only), the fairest comparison of the two
// compilers. Each figure is the median of the runs.

import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const options = { devices: 16, runs: 5, site: 'build-wasm/site', cli: 'build/pase' };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const name = args[i].replace(/^--/, '');
  if (!(name in options) || i + 1 >= args.length) {
    console.error('usage: node tests/wasm/bench.mjs [--devices N] [--runs N] [--site DIR] [--cli PATH]');
    process.exit(2);
  }
  options[name] = typeof options[name] === 'number' ? Number(args[++i]) : args[++i];
}
const siteDir = path.resolve(repo, options.site);
const cliPath = path.resolve(repo, options.cli);
for (const [what, file] of [['module', path.join(siteDir, 'pase.js')], ['native CLI', cliPath]]) {
  if (!existsSync(file)) {
    console.error(`bench-wasm: ${what} not found at ${file}`);
    process.exit(1);
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (s) => (s * 1000).toFixed(s < 0.01 ? 2 : 1);

function timeNative(model) {
  const walls = [];
  const searches = [];
  let cost = NaN;
  for (let r = 0; r < options.runs; r++) {
    const start = performance.now();
    const out = execFileSync(cliPath, ['plan', '--model', model, '--procs', String(options.devices), '--format', 'json'],
      { stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 << 20 });
    walls.push((performance.now() - start) / 1000);
    const doc = JSON.parse(out);
    searches.push(doc.search.time_s);
    cost = doc.cost;
  }
  return { wall: median(walls), search: median(searches), cost };
}

function timeWasm(model) {
  // `pase` is bound below, after the native runs.
  const request = JSON.stringify({ model, cluster: { devices: options.devices } });
  const walls = [];
  const searches = [];
  let cost = NaN;
  for (let r = 0; r < options.runs; r++) {
    const start = performance.now();
    const doc = JSON.parse(pase.plan(request, undefined));
    walls.push((performance.now() - start) / 1000);
    if (doc.error) throw new Error(`${model}: ${doc.error.message}`);
    searches.push(doc.search.time_s);
    cost = doc.cost;
  }
  return { wall: median(walls), search: median(searches), cost };
}

const models = ['alexnet', 'resnet101', 'inception3', 'rnnlm', 'transformer'];

// Native runs first: spawning a process from a Node that holds a WebAssembly
// memory reservation is measurably slower, which would be charged to the CLI.
const native = new Map();
for (const name of models) {
  // Warm-up: the first run may wait on the disk.
  execFileSync(cliPath, ['plan', '--model', name, '--procs', '1', '--format', 'json'], { stdio: 'ignore' });
  native.set(name, timeNative(name));
}

const loadStart = performance.now();
const createPase = createRequire(import.meta.url)(path.join(siteDir, 'pase.js'));
const pase = await createPase({ wasmBinary: readFileSync(path.join(siteDir, 'pase.wasm')) });
const loadSeconds = (performance.now() - loadStart) / 1000;

console.log(`Planning at ${options.devices} devices, median of ${options.runs} runs; module ${pase.version()} loaded in ${ms(loadSeconds)} ms; Node ${process.version}.\n`);
console.log('| network | native plan (ms) | wasm plan (ms) | ratio | native search (ms) | wasm search (ms) | ratio | same cost |');
console.log('|---|---:|---:|---:|---:|---:|---:|:---:|');
for (const name of models) {
  timeWasm(name); // warm-up: the first call also tiers up the module's code
  const n = native.get(name);
  const w = timeWasm(name);
  const same = Math.abs(n.cost - w.cost) <= 1e-9 * Math.abs(n.cost) ? 'yes' : 'NO';
  console.log(`| ${name} | ${ms(n.wall)} | ${ms(w.wall)} | ${(w.wall / n.wall).toFixed(2)} | ` +
    `${ms(n.search)} | ${ms(w.search)} | ${(w.search / Math.max(n.search, 1e-9)).toFixed(2)} | ${same} |`);
}
