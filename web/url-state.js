// The page state in the URL, so that a plan can be shared as a link.
//
//   ?model=alexnet&batch=128&devices=8&tflops=10&bw=16[&order=bfs][&embed=1]
//   ?model=llama3-8b&batch=8&seq=2048&devices=8...   a network with a sequence length
//   ?example=small_cnn&devices=8...           an example graph shipped with the site
//   ?graph=my-net.json&devices=8...#g=z...    an uploaded graph, carried in the
//                                             fragment (never sent to a server),
//                                             deflated and base64url-encoded
//   ...&gpn=8&intra=450&mem=80&zero=1&pb=2&gb=2&ob=12&ab=2
//                                             nodes of 8 GPUs with 450 GB/s inside
//                                             (bw is then between nodes), 80 GiB per
//                                             GPU, ZeRO stage 1, the training's bytes
//   ...&cm=practice&membw=3350&rc=full        the practice cost model with 3350 GB/s
//                                             of memory bandwidth per GPU and full
//                                             recomputation (the paper model, and no
//                                             recomputation, when absent)
//   ...&rates=h100                            the practice model's rates of a GPU
//                                             kind, by its preset's id (the module's
//                                             generic rates when absent)
//   ...&cm=practice&hr=5                      the practice model's memory headroom, in
//                                             percent of the memory (the page's 10, the
//                                             module's default, when absent)
//   ...&search=bounded&pow2=1&mesh=1&maxmem=8 search options: the search (exact or
//                                             bounded; auto when absent), powers of
//                                             two only, mesh splits only (their product
//                                             divides the devices), a search table limit of 8 GiB
//                                             (0: none)
//   ...&stages=2&mb=auto&sched=gpipe          a pipeline: stages, micro-batches (a
//                                             count or auto), the GPipe schedule
//
// Fields missing from the URL keep the page defaults: a link written before
// the cluster editor existed has no gpn, mem, zero or byte counts, and plans
// on a flat ring without a memory cap, as it did. (A URL without any
// parameter is the page's first screen instead: app.js.) ZeRO "auto" (the
// default: a language model's per-layer plan under the practice model
// searches it; a link from before it, whose ZeRO 0 was left out, now plans
// such a model with it searched, never slower) and byte counts
// equal to the defaults are left out, and so are the search options when
// they are the defaults (the auto search, every split, the planner's own
// table limit, one stage, one micro-batch, 1F1B).
// Nothing here validates values: the module reports bad ones with the field
// they came from.

import { trainingDefaults } from './presets.js';

// The URL parameter of each training field.
const trainingParams = [
  ['paramBytes', 'pb'], ['gradBytes', 'gb'], ['optimizerBytes', 'ob'], ['activationBytes', 'ab'], ['zero', 'zero'],
];

// A link should stay pasteable; larger uploads are not put in the URL.
export const maxGraphFragment = 48 * 1024;

/**
 * @typedef {{kind: 'model', name: string, batch: number|null, seq: number|null}
 *         | {kind: 'example', name: string}
 *         | {kind: 'upload', fileName: string, text: string}} Source
 * @typedef {{paramBytes: number|null, gradBytes: number|null, optimizerBytes: number|null,
 *            activationBytes: number|null, zero: number|'auto'|null}} Training
 * @typedef {{source: Source|null, devices: number|null, tflops: number|null,
 *            bandwidth: number|null, gpusPerNode: number|null, intraBandwidth: number|null,
 *            memory: number|null, costModel: string|null ('practice'; null: paper),
 *            memoryBandwidth: number|null, headroom: number|null (percent), rates: string|null (a preset id; null: generic),
 *            training: Training & {recompute: string|null},
 *            order: string|null,
 *            search: string|null ('auto', 'exact', 'bounded'; null: auto),
 *            pow2Only: boolean, meshOnly: boolean, maxMemory: number|null (GiB), timeLimit: number|null (s), maxGap: number|null (%), pipeline: Pipeline,
 *            embed: boolean, bare: boolean, hasPlanState: boolean}} PageState
 * @typedef {{stages: string|null, microbatches: string|null, schedule: string|null}} Pipeline
 *   the pipeline fields as typed ("2", "auto"); null: the default
 */

/** A parameter's trimmed text, or null when absent or empty. */
function textParam(params, name) {
  const text = params.get(name)?.trim();
  return text ? text : null;
}

function numberParam(params, name) {
  const text = params.get(name)?.trim();
  if (!text) return null; // absent or empty: keep the page default
  const value = Number(text);
  return Number.isFinite(value) ? value : null;
}

/** Reads the state of a URL; async because an uploaded graph is inflated. */
export async function readState(href) {
  const url = new URL(href);
  const params = url.searchParams;
  /** @type {Source|null} */
  let source = null;
  if (params.has('model')) {
    source = { kind: 'model', name: params.get('model'), batch: numberParam(params, 'batch'), seq: numberParam(params, 'seq') };
  } else if (params.has('example')) {
    source = { kind: 'example', name: params.get('example') };
  } else if (params.has('graph')) {
    const fragment = new URLSearchParams(url.hash.slice(1)).get('g');
    if (fragment) {
      source = { kind: 'upload', fileName: params.get('graph'), text: await decodeText(fragment) };
    }
  }
  return {
    source,
    devices: numberParam(params, 'devices'),
    tflops: numberParam(params, 'tflops'),
    bandwidth: numberParam(params, 'bw'),
    gpusPerNode: numberParam(params, 'gpn'),
    intraBandwidth: numberParam(params, 'intra'),
    memory: numberParam(params, 'mem'),
    costModel: textParam(params, 'cm'),
    memoryBandwidth: numberParam(params, 'membw'),
    headroom: numberParam(params, 'hr'),
    rates: textParam(params, 'rates'),
    training: {
      ...Object.fromEntries(trainingParams.map(([key, name]) => [key, numberParam(params, name)])),
      recompute: textParam(params, 'rc'),
    },
    order: params.get('order'),
    search: textParam(params, 'search'),
    pow2Only: params.get('pow2') === '1',
    meshOnly: params.get('mesh') === '1',
    maxMemory: numberParam(params, 'maxmem'),
    timeLimit: numberParam(params, 'tlimit'),
    maxGap: numberParam(params, 'gap'),
    pipeline: { stages: textParam(params, 'stages'), microbatches: textParam(params, 'mb'), schedule: textParam(params, 'sched') },
    embed: params.get('embed') === '1',
    // A URL with no parameter at all: the page opens on its first screen.
    bare: [...params.keys()].length === 0,
    // A link that names what to plan is a shared plan: the page plans it on load.
    hasPlanState: source !== null,
  };
}

/**
 * The URL for a state, relative to `base`. Returns {href, graphShared}:
 * graphShared is false when an uploaded graph was too large for the link.
 */
export async function writeState(base, state) {
  const url = new URL(base);
  url.search = '';
  url.hash = '';
  const params = url.searchParams;
  const { source } = state;
  let graphShared = true;
  if (source?.kind === 'model') {
    params.set('model', source.name);
    if (source.batch != null) params.set('batch', String(source.batch));
    if (source.seq != null) params.set('seq', String(source.seq));
  } else if (source?.kind === 'example') {
    params.set('example', source.name);
  } else if (source?.kind === 'upload') {
    const encoded = await encodeText(source.text);
    if (encoded.length <= maxGraphFragment) {
      params.set('graph', source.fileName);
      url.hash = `g=${encoded}`;
    } else {
      graphShared = false;
    }
  }
  const cluster = [['devices', state.devices], ['tflops', state.tflops], ['bw', state.bandwidth],
    ['gpn', state.gpusPerNode], ['intra', state.intraBandwidth], ['mem', state.memory]];
  for (const [name, value] of cluster) {
    if (value != null && value !== '') params.set(name, String(value));
  }
  for (const [key, name] of trainingParams) {
    const value = state.training?.[key];
    if (value != null && value !== '' && value !== trainingDefaults[key]) params.set(name, String(value));
  }
  if (state.costModel === 'practice') {
    params.set('cm', 'practice');
    if (state.memoryBandwidth != null && state.memoryBandwidth !== '') params.set('membw', String(state.memoryBandwidth));
    if (state.headroom != null && state.headroom !== '') params.set('hr', String(state.headroom));
    if (state.training?.recompute && state.training.recompute !== 'auto') params.set('rc', state.training.recompute);
    if (state.rates) params.set('rates', state.rates);
  }
  if (state.order && state.order !== 'genseq') params.set('order', state.order);
  if (state.search && state.search !== 'auto') params.set('search', state.search);
  if (state.pow2Only) params.set('pow2', '1');
  if (state.meshOnly) params.set('mesh', '1');
  if (state.maxMemory != null && state.maxMemory !== '') params.set('maxmem', String(state.maxMemory));
  if (state.timeLimit != null && state.timeLimit !== '') params.set('tlimit', String(state.timeLimit));
  if (state.maxGap != null && state.maxGap !== '') params.set('gap', String(state.maxGap));
  const pipeline = state.pipeline ?? {};
  for (const [name, value, fallback] of [['stages', pipeline.stages, '1'], ['mb', pipeline.microbatches, '1'], ['sched', pipeline.schedule, '1f1b']]) {
    const text = value == null ? '' : String(value).trim();
    if (text !== '' && text !== fallback) params.set(name, text);
  }
  if (state.embed) params.set('embed', '1');
  return { href: url.href, graphShared };
}

// ---- Compact text encoding ------------------------------------------------------
// "z" + base64url(deflate-raw(utf8)) where CompressionStream exists (every
// current browser), "u" + base64url(utf8) otherwise.

async function pipeBytes(bytes, transform) {
  const stream = new Blob([bytes]).stream().pipeThrough(transform);
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function toBase64Url(bytes) {
  let binary = '';
  // Chunked: String.fromCharCode(...bytes) overflows the stack on large inputs.
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text) {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export async function encodeText(text) {
  const bytes = new TextEncoder().encode(text);
  if (typeof CompressionStream === 'function') {
    return `z${toBase64Url(await pipeBytes(bytes, new CompressionStream('deflate-raw')))}`;
  }
  return `u${toBase64Url(bytes)}`;
}

export async function decodeText(encoded) {
  let bytes = fromBase64Url(encoded.slice(1));
  if (encoded[0] === 'z') bytes = await pipeBytes(bytes, new DecompressionStream('deflate-raw'));
  return new TextDecoder().decode(bytes);
}
