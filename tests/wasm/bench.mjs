#!/usr/bin/env node
// Planning time of the WebAssembly module next to the native CLI, for every
// built-in network. Prints a Markdown table; asserts nothing (timings depend on
// the machine).
//
//   node tests/wasm/bench.mjs [--devices 16] [--runs 5] [--threads 1] [--models alexnet,...]
//                             [--preset h100] [--site build-wasm/site] [--cli build/pase]
//
// --models takes the paper's networks (the default) and the language models
// of `pase models`; --preset plans on a GPU preset (its nodes and memory cap,
// core/docs/cluster.md) in both, as `pase plan --preset` and a request's
// "preset" do.
//
// Both run the search on `--threads` threads (the request's "threads", the
// CLI's --threads): one in the single-threaded module pase.js; more in the
// threaded module pase-mt.js, whose threads are worker_threads here (at most
// 8, and at most the CPUs: the module refuses more).
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
const paperModels = ['alexnet', 'resnet101', 'inception3', 'rnnlm', 'transformer'];
const allModels = [...paperModels, 'gpt2', 'llama3-8b', 'llama3-70b', 'mixtral-8x7b', 'gpt3-175b'];
const options = { devices: 16, runs: 5, threads: 1, models: paperModels.join(','), preset: '', site: 'build-wasm/site', cli: 'build/pase' };
const usage = 'usage: node tests/wasm/bench.mjs [--devices N] [--runs N] [--threads N] [--models LIST] [--preset NAME] [--site DIR] [--cli PATH]';
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const name = args[i].replace(/^--/, '');
  if (!(name in options) || i + 1 >= args.length) {
    console.error(usage);
    process.exit(2);
  }
  options[name] = typeof options[name] === 'number' ? Number(args[++i]) : args[++i];
}
for (const name of ['devices', 'runs', 'threads']) {
  if (!Number.isInteger(options[name]) || options[name] < 1) {
    console.error(`bench-wasm: --${name} must be a positive integer\n${usage}`);
    process.exit(2);
  }
}
const models = options.models.split(',');
for (const name of models) {
  if (!allModels.includes(name)) {
    console.error(`bench-wasm: unknown model '${name}' (known: ${allModels.join(', ')})`);
    process.exit(2);
  }
}
const threaded = options.threads > 1;
const moduleName = threaded ? 'pase-mt' : 'pase';
const siteDir = path.resolve(repo, options.site);
const cliPath = path.resolve(repo, options.cli);
for (const [what, file] of [['module', path.join(siteDir, `${moduleName}.js`)], ['native CLI', cliPath]]) {
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
    const out = execFileSync(cliPath, ['plan', '--model', model, '--procs', String(options.devices),
      '--threads', String(options.threads), '--format', 'json',
      ...(options.preset ? ['--preset', options.preset] : [])],
    { stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 << 20 });
    walls.push((performance.now() - start) / 1000);
    const doc = JSON.parse(out);
    checkThreads('native', model, doc);
    searches.push(doc.search.time_s);
    cost = doc.cost;
  }
  return { wall: median(walls), search: median(searches), cost };
}

function timeWasm(model) {
  // `pase` is bound below, after the native runs.
  const request = JSON.stringify({
    model, cluster: { devices: options.devices }, threads: options.threads,
    ...(options.preset ? { preset: options.preset } : {}),
  });
  const walls = [];
  const searches = [];
  let cost = NaN;
  for (let r = 0; r < options.runs; r++) {
    const start = performance.now();
    const doc = JSON.parse(pase.plan(request, undefined));
    walls.push((performance.now() - start) / 1000);
    if (doc.error) throw new Error(`${model}: ${doc.error.where}: ${doc.error.message}`);
    checkThreads('module', model, doc);
    searches.push(doc.search.time_s);
    cost = doc.cost;
  }
  return { wall: median(walls), search: median(searches), cost };
}

function checkThreads(what, model, doc) {
  if (doc.search.threads !== options.threads) {
    throw new Error(`${what}, ${model}: searched on ${doc.search.threads} threads, not ${options.threads}`);
  }
}

// Native runs first: spawning a process from a Node that holds a WebAssembly
// memory reservation is measurably slower, which would be charged to the CLI.
const native = new Map();
for (const name of models) {
  // Warm-up: the first run may wait on the disk.
  execFileSync(cliPath, ['plan', '--model', name, '--procs', '1', '--format', 'json'], { stdio: 'ignore' });
  native.set(name, timeNative(name));
}

const loadStart = performance.now();
const createModule = createRequire(import.meta.url)(path.join(siteDir, `${moduleName}.js`));
const pase = await createModule({ wasmBinary: readFileSync(path.join(siteDir, `${moduleName}.wasm`)) });
const loadSeconds = (performance.now() - loadStart) / 1000;

const threadsText = options.threads === 1 ? 'one thread' : `${options.threads} threads`;
const presetText = options.preset ? ` (preset ${options.preset})` : '';
console.log(`Planning at ${options.devices} devices${presetText} on ${threadsText}, median of ${options.runs} runs; ` +
  `module ${moduleName}.js ${pase.version()} loaded in ${ms(loadSeconds)} ms; Node ${process.version}.\n`);
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
// The threaded module's workers would keep Node running.
if (threaded) pase.PThread.terminateAllThreads();
