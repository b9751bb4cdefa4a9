// What a chosen or dropped file is, and the small decisions around importing
// a model file: the default size offered for a dynamic dimension, and how a
// layer's output shape is written. No DOM here (tests/web/model-file.test.mjs
// runs it under Node).

// Enough of the file's start for fileKind().
export const sniffBytes = 64;

/**
 * 'json' (a pase-graph/1 document) or 'onnx' (a model to import), from the
 * name and the first bytes. A JSON document starts with '{' or '[' after
 * white space (and a UTF-8 byte order mark), which no ONNX file does: an ONNX
 * ModelProto starts with a protobuf field tag, and '{', '[', ' ', '\t', '\n'
 * and '\r' are none of the ModelProto's. So content that looks like JSON is
 * JSON whatever its name; otherwise a name ending in .onnx is ONNX, one
 * ending in .json is (broken) JSON, and any other file with content is
 * handed to the importer, which says whether it is ONNX.
 *
 * @param {string} name the file name
 * @param {Uint8Array} prefix the file's first bytes (sniffBytes of them, or all of a smaller file)
 * @returns {'json'|'onnx'}
 */
export function fileKind(name, prefix) {
  let i = 0;
  if (prefix[0] === 0xef && prefix[1] === 0xbb && prefix[2] === 0xbf) i = 3;
  while (i < prefix.length && (prefix[i] === 0x20 || prefix[i] === 0x09 || prefix[i] === 0x0a || prefix[i] === 0x0d)) i++;
  if (prefix[i] === 0x7b || prefix[i] === 0x5b) return 'json'; // '{' '['
  const lower = name.toLowerCase();
  if (lower.endsWith('.onnx')) return 'onnx';
  if (lower.endsWith('.json') || i >= prefix.length) return 'json';
  return 'onnx';
}

/**
 * The size the dims form offers for a dynamic dimension, from its name:
 * 1 for a batch ("batch", "batch_size", "N"), 128 for a sequence length
 * ("sequence", "seq_len", "tokens"), 224 for an image side ("height",
 * "width"); '' (the user must give one) for anything else.
 */
export function defaultDimValue(name) {
  const n = name.toLowerCase();
  if (/batch|^(n|b|bs)$/.test(n)) return 1;
  if (/seq|len|token|time|step/.test(n)) return 128;
  if (/height|width|^(h|w)$/.test(n)) return 224;
  return '';
}

/** [8, 64, 112, 112] -> "8×64×112×112"; [] -> "scalar". */
export function formatShape(shape) {
  return shape.length ? shape.join('×') : 'scalar';
}

/** A positive whole number typed into a dims field, or null. */
export function parseDimValue(text) {
  const trimmed = String(text).trim();
  if (!/^\d+$/.test(trimmed)) return null;
  const value = Number(trimmed);
  return Number.isSafeInteger(value) && value > 0 ? value : null;
}
