// What a chosen or dropped file is, and the small decisions around importing
// a model file: whether a JSON document is a graph or a Hugging Face
// config.json, the name an import gives its graph, the default size offered
// for a dynamic dimension, how a layer's output shape is written and how an
// imported config is summarised. No DOM here (tests/web/model-file.test.mjs
// runs it under Node).

// Enough of the file's start for fileKind().
export const sniffBytes = 64;

/**
 * 'json' (a JSON document: a pase-graph/1 document, or a Hugging Face
 * config that jsonKind() tells apart once parsed) or 'onnx' (a model to
 * import), from the name and the first bytes. A JSON document starts with '{' or '[' after
 * white space (and a UTF-8 byte order mark), which no ONNX file does: an ONNX
 * ModelProto starts with a protobuf field tag, and '{', '[', ' ', '\t', '\n'
 * and '\r' are none of the ModelProto's. So content that looks like JSON is
 * JSON whatever its name; otherwise a name ending in .onnx is ONNX, one
 * ending in .json is (broken) JSON unless its first bytes hold a control
 * character, which no text has, and any other file with content is handed to
 * the importer, whose content detection (sniff_file(), import.hpp) says
 * whether it is ONNX and, if not, what it is: a PNG, a PyTorch checkpoint,
 * safetensors (the same message as the CLI's).
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
  const binary = prefix.some((b) => (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) || b === 0x7f);
  if ((lower.endsWith('.json') && !binary) || i >= prefix.length) return 'json';
  return 'onnx';
}

/**
 * What a parsed JSON document is: 'config' for a Hugging Face config.json,
 * which the module imports like an ONNX file: an object with no "layers"
 * and either a string "model_type" or, with no "format" either, a field
 * that every config has (configFields), the core's test in
 * looks_like_llm_config(), llm.hpp; the module then says what a config
 * without its model_type lacks. 'graph' for anything else, a pase-graph/1
 * document (or something that validate() then refuses as one).
 *
 * @param {unknown} document the result of JSON.parse
 * @returns {'config'|'graph'}
 */
export function jsonKind(document) {
  const isObject = document !== null && typeof document === 'object' && !Array.isArray(document);
  if (!isObject || Object.hasOwn(document, 'layers')) return 'graph';
  if (typeof document.model_type === 'string') return 'config';
  const hasConfigField = configFields.some((field) => Object.hasOwn(document, field));
  return !Object.hasOwn(document, 'format') && hasConfigField ? 'config' : 'graph';
}

// The fields of kConfigFields (core/src/model/llm/llm_config.cpp): Hugging
// Face writes one of them into every language model's config, and no
// pase-graph/1 document has them.
const configFields = ['hidden_size', 'num_attention_heads', 'num_hidden_layers', 'vocab_size', 'intermediate_size',
  'n_embd', 'n_head', 'n_layer', 'architectures', 'transformers_version'];

/**
 * The "name" import option for the file `fileName`: its name without the
 * extension ("resnet50.onnx" -> "resnet50"), as in the CLI. A Hugging Face
 * config is named config.json by convention ("config (1).json" once a
 * browser downloaded it twice); its folder's name, the model's, is not
 * available in a browser, so such a file gets no name (null) and the
 * importer names the graph after its model_type ("llama").
 *
 * @param {string} fileName
 * @param {'onnx'|'config'} kind
 * @returns {string|null}
 */
export function importName(fileName, kind) {
  const stem = fileName.replace(/\.[^.]*$/, '') || fileName;
  if (kind === 'config' && /^config(\s*\(\d+\))?$/i.test(stem.trim())) return null;
  return stem;
}

/**
 * The summary of an imported config (the "config" of the import result) as
 * [label, value] rows: model type, layers, hidden size, attention heads
 * (with the key-value heads when fewer, grouped-query attention), the MLP's
 * hidden size, experts (for a mixture of experts), vocabulary and context.
 *
 * @param {{model_type: string, num_layers: number, hidden_size: number, num_heads: number,
 *          num_kv_heads: number, intermediate_size: number, num_experts: number,
 *          experts_per_token: number, vocab_size: number, max_positions: number}} config
 * @returns {[string, string][]}
 */
export function configSummary(config) {
  const n = (value) => Number(value).toLocaleString('en-US');
  const heads = config.num_kv_heads && config.num_kv_heads !== config.num_heads
    ? `${n(config.num_heads)} (${n(config.num_kv_heads)} KV)` : n(config.num_heads);
  const rows = [
    ['Model type', config.model_type],
    ['Layers', n(config.num_layers)],
    ['Hidden size', n(config.hidden_size)],
    ['Attention heads', heads],
    ['MLP size', n(config.intermediate_size)],
  ];
  if (config.num_experts > 0) rows.push(['Experts', `${n(config.num_experts)} (top ${n(config.experts_per_token)})`]);
  rows.push(['Vocabulary', n(config.vocab_size)], ['Context', `${n(config.max_positions)} tokens`]);
  return rows;
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
