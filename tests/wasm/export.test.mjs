// The module's exports (core/docs/export.md, "The JSON API, the module and
// the page"): a plan or evaluate request's "emit" gives the plan as a JAX
// program, Megatron-LM arguments or torchtitan TOML, as the CLI writes them.
//
//   node --test tests/wasm/export.test.mjs

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadModule, repo } from './load-module.mjs';

let pase;
before(async () => {
  pase = await loadModule();
});

const cli = path.join(repo, 'build', 'pase');

test('module export: a plan request with emit returns the JAX program and the Megatron-LM arguments', () => {
  const result = JSON.parse(pase.plan(JSON.stringify({
    model: 'llama3-8b', batch: 8, seq: 256, preset: 'h100', cluster: { devices: 8 },
    emit: ['jax', 'megatron'],
  })));
  assert.equal(result.error, undefined, JSON.stringify(result.error));
  assert.equal(result.exports.length, 2);
  const [jax, megatron] = result.exports;
  assert.equal(jax.to, 'jax');
  assert.equal(jax.file, 'plan.py');
  assert.match(jax.text, /^#!\/usr\/bin\/env python3\n/);
  const data = JSON.parse(jax.text.slice(jax.text.indexOf('r"""') + 4, jax.text.indexOf('""")')));
  assert.equal(data.devices, 8);
  assert.equal(data.variants.full.layers.length, result.vertices.length);
  // emit jax plans among the splits a mesh expresses: every split's product divides 8.
  for (const v of result.vertices) assert.equal(8 % v.config.reduce((a, b) => a * b, 1), 0, v.name);
  assert.equal(megatron.to, 'megatron');
  assert.equal(megatron.file, 'megatron_args.sh');
  assert.equal(typeof megatron.uniform, 'boolean');
  assert.match(megatron.text, /--tensor-model-parallel-size \d+ \\\n/);
});

test('module export: the same program as the native CLI', { skip: !existsSync(cli) && !process.env.CI }, () => {
  const request = { model: 'gpt2', batch: 8, seq: 64, cluster: { devices: 4 }, emit: 'jax' };
  const module = JSON.parse(pase.plan(JSON.stringify(request))).exports[0].text;
  const native = execFileSync(cli, ['plan', '--model', 'gpt2', '--batch', '8', '--seq', '64', '--procs', '4', '--emit', 'jax'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  assert.equal(module, native);
});

test('module export: errors name emit, a CNN has no Megatron-LM arguments, a split of 3 on 8 devices no mesh', () => {
  const bad = JSON.parse(pase.plan(JSON.stringify({ model: 'gpt2', batch: 8, seq: 64, emit: 'pytorch' })));
  assert.equal(bad.error.where, 'emit');
  assert.match(bad.error.message, /known: jax, megatron, torchtitan/);
  const cnn = JSON.parse(pase.plan(JSON.stringify({ model: 'alexnet', batch: 32, emit: ['megatron', 'jax'] })));
  assert.equal(cnn.error, undefined);
  assert.equal(cnn.exports[0].error.where, 'emit');
  assert.match(cnn.exports[0].error.message, /'alexnet' is not one/);
  assert.equal(cnn.exports[1].file, 'plan.py');
  // A split no mesh expresses (the CLI's plans for a mesh; this strategy is made so).
  const gpt2 = JSON.parse(pase.plan(JSON.stringify({ model: 'gpt2', batch: 8, seq: 64, cluster: { devices: 8 } })));
  const threeWay = gpt2.vertices.map((v) => v.config.map(() => 1));
  const head = gpt2.vertices.find((v) => v.name === 'lm_head');
  const e = head.dims.indexOf('e');
  threeWay[head.id][e] = 3;
  const refused = JSON.parse(pase.evaluate(JSON.stringify({
    model: 'gpt2', batch: 8, seq: 64, cluster: { devices: 8 }, strategy: threeWay, emit: 'jax',
  })));
  assert.equal(refused.error, undefined, JSON.stringify(refused.error));
  assert.equal(refused.exports[0].error.where, 'emit');
  assert.match(refused.exports[0].error.message, /layer 'lm_head' splits its dimension e 3 ways on 8 devices/);
});
