// The invalid-input corpus (cases.json, see README.md) for the JavaScript
// drivers: tests/wasm/invalid.test.mjs (the module) and
// tests/web/invalid.test.mjs (the page). invalid_corpus.hpp is its C++ twin;
// both build the same generated documents.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const corpusDir = path.dirname(fileURLToPath(import.meta.url));

/** The cases of cases.json. */
export function loadCases() {
  return JSON.parse(readFileSync(path.join(corpusDir, 'cases.json'), 'utf8')).cases;
}

/** A generated document: {"kind": "nested" | "padded" | "layers", ...}. */
export function generatedText(spec) {
  switch (spec.kind) {
    case 'nested':
      // Arrays inside "meta", so that nothing but the depth is wrong.
      return `{"format": "pase-graph/1", "layers": [], "meta": {"deep": ${'['.repeat(spec.depth)}${']'.repeat(spec.depth)}}}\n`;
    case 'padded': {
      // A valid graph followed by spaces up to the size.
      const graph = '{"format": "pase-graph/1", "inputs": {"x": [8, 8]}, ' +
        '"layers": [{"name": "fc", "op": "FC", "inputs": ["x"], "units": 8}]}';
      return graph.padEnd(spec.bytes, ' ');
    }
    case 'layers': {
      const layers = Array.from({ length: spec.count }, (_, i) => `{"name": "l${i}", "op": "FC", "inputs": ["x"], "units": 8}`);
      return `{"format": "pase-graph/1", "inputs": {"x": [8, 8]}, "layers": [${layers.join(',\n')}]}\n`;
    }
    default:
      throw new Error(`unknown generated kind ${spec.kind}`);
  }
}

/** The bytes of a graph or request case. */
export function caseBytes(c) {
  if (c.file) return readFileSync(path.join(corpusDir, c.file));
  if (c.request) return readFileSync(path.join(corpusDir, c.request));
  return Buffer.from(generatedText(c.generate), 'utf8');
}

/** Whether the bytes are UTF-8: a JavaScript string cannot carry anything else. */
export function isUtf8(bytes) {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/**
 * A graph document inside a plan request, spliced in as text exactly as the
 * page does it when planning (web/source.js), so the request holds the
 * file's bytes.
 */
export function wrapGraph(text, fields = { cluster: { devices: 1 } }) {
  const tail = Object.entries(fields).map(([k, v]) => `, ${JSON.stringify(k)}: ${JSON.stringify(v)}`).join('');
  return `{"graph": ${text}\n${tail}}`;
}

/**
 * What the module gets for a case and the error it must answer:
 * {request, where, message}. Errors in the JSON text itself ("document")
 * are checked on the bare text; a graph's errors move under "graph".
 */
export function moduleExpectation(c) {
  const text = caseBytes(c).toString('utf8');
  if (c.request) return { request: text, where: c.where, message: c.message };
  if (c.plan) return { request: wrapGraph(text, c.plan), where: c.where, message: c.message };
  if (c.document) return { request: text, where: c.where, message: c.message };
  return {
    request: wrapGraph(text),
    where: c.module_where ?? (c.where ? `graph.${c.where}` : 'graph'),
    message: c.module_message ?? c.message,
  };
}
