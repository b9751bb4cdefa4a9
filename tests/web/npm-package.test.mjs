// The npm package of the module as a documentation site uses it (wasm/npm/,
// README.md "Embed the planner"): `npm pack` of build-wasm/npm/ (the
// pase_npm target of the WebAssembly build), installed from the .tgz into a
// temporary folder with npm's cache only, the page of
// tests/consumers/npm-page/ (the one wasm/npm/README.md shows) beside it,
// served from there on 127.0.0.1 and opened in Debian's Chromium: it must
// plan AlexNet with the package's module and show the step time, which must
// be the module's own under Node, with the threaded module on a cross-origin
// isolated page and the single-threaded one elsewhere, and no request
// leaving the server.
//
// Without the package, the browser or the CLI the tests are skipped, except
// under CI (CI=true), where they fail.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromiumPath, underCI } from './browser.mjs';
import { startServer } from './serve.mjs';
import { loadModule, repo, siteDir } from '../wasm/load-module.mjs';

const npmDir = path.resolve(repo, process.env.PASE_NPM ?? 'build-wasm/npm');
const cli = path.join(repo, 'build/pase');
const pageDir = path.join(repo, 'tests/consumers/npm-page');
const timeout = 180_000;

const missing = [
  [path.join(npmDir, 'package.json'), 'the npm package (build the WebAssembly build: bash .ci/build)'],
  [path.join(siteDir, 'pase.js'), 'the module (bash .ci/build)'],
  [cli, 'the CLI (bash .ci/build)'],
  [chromiumPath, 'a browser (install chromium or set PASE_CHROMIUM)'],
].filter(([file]) => !existsSync(file)).map(([file, what]) => `${what}: ${file} not found`);
const skip = missing.length > 0 && !underCI ? missing.join('; ') : false;

// The files the package must hold, and only these.
const packageFiles = ['README.md', 'index.d.ts', 'index.js', 'package.json', 'pase-mt.js', 'pase-mt.wasm',
  'pase-mt.worker.js', 'pase.js', 'pase.wasm', 'planner-client.js', 'worker.js'];

let tmp = null;
let installed = null; // the folder with node_modules/pase-planner and the page
let packed = null; // npm pack's report

before(() => {
  if (skip) return;
  assert.deepEqual(missing, [], `missing (CI=${process.env.CI}: these tests fail instead of skipping): ${missing.join('; ')}`);
  tmp = mkdtempSync(path.join(os.tmpdir(), 'pase-npm-'));
  // npm pack of the staged folder (the prepared files, nothing built here).
  const report = execFileSync('npm', ['pack', '--json', '--pack-destination', tmp, npmDir], { encoding: 'utf8' });
  packed = JSON.parse(report)[0];
  installed = path.join(tmp, 'site');
  execFileSync('mkdir', ['-p', installed]);
  writeFileSync(path.join(installed, 'package.json'), '{ "private": true }\n');
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(tmp, packed.filename)],
    { cwd: installed, encoding: 'utf8' });
  for (const name of ['index.html', 'main.js']) copyFileSync(path.join(pageDir, name), path.join(installed, name));
});

after(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test('npm package: npm pack holds the module, the worker, the client and its types, at the version of pase --version', { skip }, () => {
  assert.deepEqual(packed.files.map((f) => f.path).sort(), packageFiles);
  const manifest = JSON.parse(readFileSync(path.join(installed, 'node_modules/pase-planner/package.json'), 'utf8'));
  const cliVersion = execFileSync(cli, ['--version'], { encoding: 'utf8' }).trim();
  assert.equal(`pase ${manifest.version}`, cliVersion, 'the package version is the project version');
  assert.equal(packed.version, manifest.version);
  assert.equal(manifest.name, 'pase-planner');
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'scripts'])
    assert.equal(manifest[field], undefined, `the package has ${field}`);
  // The package's files are the build's, byte for byte.
  for (const name of ['pase.wasm', 'pase-mt.wasm', 'pase.js', 'pase-mt.js', 'pase-mt.worker.js'])
    assert.ok(readFileSync(path.join(installed, 'node_modules/pase-planner', name)).equals(readFileSync(path.join(siteDir, name))), name);
  for (const name of ['worker.js', 'planner-client.js'])
    assert.equal(readFileSync(path.join(installed, 'node_modules/pase-planner', name), 'utf8'),
      readFileSync(path.join(repo, 'web', name), 'utf8'), name);
  // Every action of the worker is typed.
  const types = readFileSync(path.join(installed, 'node_modules/pase-planner/index.d.ts'), 'utf8');
  const worker = readFileSync(path.join(repo, 'web/worker.js'), 'utf8');
  const actions = [...worker.slice(worker.indexOf('const actions = {')).matchAll(/^  (\w+)(?::|,)/gm)].map((m) => m[1]);
  assert.ok(actions.length >= 10, `actions of worker.js: ${actions}`);
  for (const action of actions.filter((a) => a !== 'shareStopFlag'))
    assert.match(types, new RegExp(`call\\(action: '${action}'`), `index.d.ts types the action ${action}`);
});

/** Opens the installed page served with or without cross-origin isolation; returns what it shows. */
async function planOnPage(isolated) {
  const { chromium } = await import('playwright-core');
  const served = [];
  const { server, url } = await startServer(installed, { isolated, onRequest: (file, status) => served.push(`${status} ${file}`) });
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  try {
    const context = await browser.newContext();
    // The browser asks for /favicon.ico on its own, which the page has none of.
    await context.route('**/favicon.ico', (route) => route.fulfill({ status: 204 }));
    const requests = [];
    context.on('request', (request) => requests.push(request.url()));
    const page = await context.newPage();
    const problems = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    await page.goto(url);
    await page.waitForFunction(() => document.getElementById('step').textContent !== 'planning…', null, { timeout: 120_000 });
    await page.waitForFunction(() => document.getElementById('mode').textContent !== '', null, { timeout: 10_000 })
      .catch(() => {});
    const shown = {
      text: await page.textContent('#step'),
      stepTime: await page.getAttribute('#step', 'data-step-time'),
      mode: await page.textContent('#mode'),
      isolated: await page.evaluate(() => globalThis.crossOriginIsolated),
    };
    return { shown, problems, requests, served, url };
  } finally {
    await browser.close();
    server.close();
  }
}

async function expectedStepTime() {
  const pase = await loadModule();
  const plan = JSON.parse(pase.plan(JSON.stringify({ model: 'alexnet', batch: 128, cluster: { devices: 8 } })));
  assert.ok(!plan.error, JSON.stringify(plan.error));
  return plan.step_time_s;
}

for (const isolated of [true, false]) {
  const which = isolated ? 'a cross-origin isolated page plans with the threaded module' : 'a page without isolation plans with the single-threaded module';
  test(`npm package: ${which}, shows the step time, fetches nothing from elsewhere`, { skip, timeout }, async () => {
    const { shown, problems, requests, served, url } = await planOnPage(isolated);
    assert.deepEqual(problems, []);
    assert.match(shown.text, /^\d+\.\d{4} s per step$/, `the page shows: ${shown.text}`);
    assert.equal(Number(shown.stepTime), await expectedStepTime(), 'the step time is the module\'s');
    assert.equal(shown.isolated, isolated);
    if (isolated) {
      assert.match(shown.mode, /^Search on (\d+ threads|one thread: the browser reports one core)$/);
      assert.ok(served.includes('200 /node_modules/pase-planner/pase-mt.wasm'), `the threaded module was loaded: ${served}`);
    } else {
      assert.equal(shown.mode, 'Search on one thread: the page is not cross-origin isolated');
      assert.ok(served.includes('200 /node_modules/pase-planner/pase.wasm'), `the single-threaded module was loaded: ${served}`);
      assert.ok(!served.some((r) => r.includes('pase-mt')), `the threaded module was not loaded: ${served}`);
    }
    const elsewhere = requests.filter((r) => !r.startsWith(url));
    assert.deepEqual(elsewhere, [], 'every request goes to the page\'s own server');
    assert.deepEqual(served.filter((r) => !r.startsWith('200 ')), [], 'every file the page asked for is there');
  });
}
