#!/usr/bin/env node
// A small static file server for the built site (build-wasm/site/), bound to
// 127.0.0.1 only. Used by the end-to-end tests and by people trying the page:
//
//   node tests/web/serve.mjs [root=build-wasm/site] [--port N] [--no-isolation]   (port 0: any free port)
//
// It serves files below `root` and nothing else: no directory listings, no
// paths outside the root, GET and HEAD only. Every response makes the page
// cross-origin isolated (the headers below), so that the planner runs its
// threaded module; --no-isolation leaves them out, and the page runs on one
// thread.

import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const contentTypes = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  // Required for WebAssembly.instantiateStreaming.
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

// The page's own policy (index.html) as a header too: a worker takes its policy
// from its script's response, not from the page, so this is what proves the
// module runs without eval (-sDYNAMIC_EXECUTION=0) inside the worker.
const contentSecurityPolicy = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; " +
  "style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'";

// Cross-origin isolation: what a page needs for SharedArrayBuffer, hence for
// WebAssembly threads. COOP puts the page in a browsing context group of its
// own; COEP lets it load only resources that agree to it, which every file
// here does, being same-origin (CORP says so explicitly). The worker and its
// thread workers take theirs from their scripts' responses, hence on every
// response, not only the page's.
const isolationHeaders = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

async function resolveFile(root, urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  // normalize + prefix check: "/../x" and "%2e%2e" cannot leave the root.
  const file = path.normalize(path.join(root, decoded));
  if (file !== root && !file.startsWith(root + path.sep)) return null;
  try {
    const info = await stat(file);
    if (info.isDirectory()) {
      const index = path.join(file, 'index.html');
      const indexInfo = await stat(index);
      return indexInfo.isFile() ? { file: index, size: indexInfo.size } : null;
    }
    return info.isFile() ? { file, size: info.size } : null;
  } catch {
    return null;
  }
}

/**
 * Starts serving `root`. Resolves with {server, url}; `port` 0 picks a free one.
 * `isolated` false leaves out the cross-origin isolation headers;
 * `onRequest(pathname, status)` is told of every request.
 */
export function startServer(root, { port = 0, host = '127.0.0.1', log = false, isolated = true, onRequest = null } = {}) {
  const absoluteRoot = path.resolve(root);
  const server = createServer(async (request, response) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    const { pathname } = new URL(request.url, 'http://localhost');
    const found = await resolveFile(absoluteRoot, pathname);
    if (log) console.log(`${request.method} ${pathname} ${found ? 200 : 404}`);
    onRequest?.(pathname, found ? 200 : 404);
    if (!found) {
      response.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    response.writeHead(200, {
      'Content-Type': contentTypes[path.extname(found.file).toLowerCase()] ?? 'application/octet-stream',
      'Content-Length': found.size,
      // A development server: always fetch the freshly built module.
      'Cache-Control': 'no-cache',
      'X-Content-Type-Options': 'nosniff',
      'Content-Security-Policy': contentSecurityPolicy,
      ...(isolated ? isolationHeaders : {}),
    });
    if (request.method === 'HEAD') response.end();
    else createReadStream(found.file).pipe(response);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      resolve({ server, url: `http://${host}:${actual}/` });
    });
  });
}

// Run as a program.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  let root = 'build-wasm/site';
  let port = 8080;
  let isolated = true;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--port') port = Number(args[++i]);
    else if (args[i] === '--no-isolation') isolated = false;
    else if (args[i] === '--help' || args[i] === '-h') {
      console.log('usage: node tests/web/serve.mjs [root=build-wasm/site] [--port N] [--no-isolation]');
      process.exit(0);
    } else if (args[i].startsWith('-')) {
      console.error(`serve: unknown option ${args[i]}\nusage: node tests/web/serve.mjs [root=build-wasm/site] [--port N] [--no-isolation]`);
      process.exit(2);
    } else root = args[i];
  }
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`serve: --port must be 0..65535, not ${port}`);
    process.exit(2);
  }
  const index = await stat(path.join(root, 'index.html')).catch(() => null);
  if (!index) {
    console.error(`serve: ${root}/index.html not found; build the site first:\n` +
      '  emcmake cmake -S . -B build-wasm -DCMAKE_BUILD_TYPE=Release && cmake --build build-wasm');
    process.exit(1);
  }
  try {
    const { url } = await startServer(root, { port, isolated });
    console.log(`PaSE Planner: serving ${path.resolve(root)}` +
      (isolated ? ' (cross-origin isolated: the planner uses every core)' : ' (not cross-origin isolated: the planner uses one thread)'));
    console.log(`open ${url}`);
    console.log('stop the server with Ctrl+C');
  } catch (e) {
    console.error(`serve: ${e.message}${e.code === 'EADDRINUSE' ? ' (try --port 0 for any free port)' : ''}`);
    process.exit(1);
  }
}
