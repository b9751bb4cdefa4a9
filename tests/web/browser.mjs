// Serves the built site on 127.0.0.1 and starts Debian's Chromium headless
// (never a downloaded browser), with a fresh temporary profile and nothing
// reaching the network.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { siteDir } from '../wasm/load-module.mjs';

export const chromiumPath = process.env.PASE_CHROMIUM ?? '/usr/bin/chromium';

export async function startSiteAndBrowser() {
  assert.ok(existsSync(path.join(siteDir, 'index.html')), `${siteDir}/index.html not found: build the site first`);
  const { chromium } = await import('playwright-core');
  const { server, url } = await startServer(siteDir);
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  return { server, url, browser };
}
