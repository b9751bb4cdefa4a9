// Types of the planner client (planner-client.js) and of the documents it
// sends and receives: core/docs/formats.md of the PaSE Planner repository
// describes every field. Documents carry more fields than typed here in
// some cases (a practice-model plan's kernels, a pipeline's stages): those
// are typed as `unknown` through the index signatures, never dropped.

/** A cluster (formats.md, "Cluster"); missing fields take the defaults. */
export interface ClusterSpec {
  /** 1 to 65536; default 8. */
  devices?: number;
  /** Per device; default 10. */
  tflops?: number;
  /** GB/s per device link; with nodes, between nodes. Default 16. */
  bandwidth_gbps?: number;
  /** With intra_node_gbps: devices per node. */
  gpus_per_node?: number;
  intra_node_gbps?: number;
  /** Memory per device; caps the plan's memory. */
  memory_gib?: number;
  /** Memory bandwidth, for the practice cost model. */
  memory_gbps?: number;
  /** 0 to below 1: the share of memory_gib a practice plan leaves free. */
  headroom?: number;
  [field: string]: unknown;
}

/** What the memory model counts (formats.md, "Plan request"). */
export interface TrainingSpec {
  param_bytes?: number;
  grad_bytes?: number;
  optimizer_bytes?: number;
  activation_bytes?: number;
  /** 0 to 3. */
  zero?: number;
  recompute?: 'auto' | 'none' | 'selective' | 'full';
  [field: string]: unknown;
}

/** The names of the built-in networks (the `models` action lists them). */
export type ModelName =
  | 'alexnet' | 'resnet101' | 'inception3' | 'rnnlm' | 'transformer'
  | 'gpt2' | 'llama3-8b' | 'llama3-70b' | 'mixtral-8x7b' | 'gpt3-175b'
  | (string & {});

/** A plan request: a built-in `model` (with `batch`, `seq`) or a `graph`. */
export interface PlanRequest {
  model?: ModelName;
  batch?: number;
  seq?: number;
  /** A pase-graph/1 document (graph-format.md). */
  graph?: object;
  cluster?: ClusterSpec;
  /** A GPU preset id ('h100', ...; the `presets` action lists them). */
  preset?: string;
  cost_model?: 'paper' | 'practice';
  training?: TrainingSpec;
  order?: 'genseq' | 'bfs' | 'mintable';
  /** Search table limit in bytes (default 4 GiB; 0: none). */
  max_memory?: number;
  search?: 'auto' | 'exact' | 'bounded';
  pow2_only?: boolean;
  all_devices?: boolean;
  mesh_only?: boolean;
  emit?: 'jax' | 'megatron' | 'torchtitan' | Array<'jax' | 'megatron' | 'torchtitan'>;
  time_limit_s?: number;
  max_gap?: number;
  threads?: number;
  pipeline?: { stages?: number | 'auto'; microbatches?: number | 'auto'; [field: string]: unknown };
  vocab_padding?: number;
  [field: string]: unknown;
}

/** An evaluate request: a plan request with a `strategy` or a `layout`. */
export interface EvaluateRequest extends PlanRequest {
  /** One configuration per vertex, or a plan result. */
  strategy?: number[][] | PlanResult;
  /** A language model's layout: "tp=8 pp=8 dp=16 ...". */
  layout?: string;
}

/** A compare request: a plan request plus an optional MCMC search. */
export interface CompareRequest extends PlanRequest {
  mcmc?: { iterations?: number; seed?: number; [field: string]: unknown };
}

export interface VertexResult {
  id: number;
  name: string;
  op: string;
  dims: string[];
  kinds: string[];
  sizes: number[];
  /** The split of each dimension, in the order of `dims`. */
  config: number[];
  cost: number;
  compute: number;
  comm: number;
  memory_bytes: number;
  [field: string]: unknown;
}

export interface SummaryGroup {
  vertices: number[];
  op: string;
  /** "data parallel x4 (batch), layer parallel x2" */
  label: string;
  degrees: Record<string, number>;
  devices: number;
  cost: number;
  cost_share: number;
  memory_bytes: number;
  memory_share: number;
}

export interface SearchStats {
  method: 'exact' | 'bounded';
  order: string;
  max_dependent_set: number;
  table_entries: number;
  largest_table: number;
  pairs: number;
  peak_bytes: number;
  configurations: number;
  searches?: number;
  threads?: number;
  time_s: number;
  [field: string]: unknown;
}

/** A plan result (formats.md, "Plan result"). */
export interface PlanResult {
  graph: string;
  parameters: number;
  cluster: ClusterSpec;
  /** FLOP-equivalents. */
  cost: number;
  /** Seconds per training step. */
  step_time_s: number;
  optimal: boolean;
  lower_bound: number;
  gap_percent: number | null;
  summary: SummaryGroup[];
  vertices: VertexResult[];
  edges: Array<{ src: number; dst: number; cost: number }>;
  breakdown: { compute: number; comm: number; redistribution: number; [field: string]: unknown };
  memory: {
    per_device_bytes: number;
    params: number;
    grads: number;
    optimizer: number;
    activations: number;
    capacity_bytes: number | null;
    fits: boolean;
    lower_bound: number | null;
    optimal: boolean | null;
    [field: string]: unknown;
  };
  training: TrainingSpec;
  search: SearchStats;
  /** With `emit`: the plan as each export. */
  exports?: Record<string, unknown>;
  [field: string]: unknown;
}

/** What a plan request's search would need (formats.md, "Estimate"). */
export interface EstimateResult {
  graph: string;
  vertices: number;
  devices: number;
  memory_capped: boolean;
  max_memory: number;
  search: SearchStats;
  pipeline?: { stages: number | 'auto'; microbatches: number | 'auto'; whole_graph_searches: number };
  [field: string]: unknown;
}

/** The strategies of `pase compare`, each a plan result. */
export interface CompareResult {
  graph: string;
  parameters: number;
  strategies: Record<string, PlanResult>;
  [field: string]: unknown;
}

/** A valid graph document's summary (the `validate` action). */
export interface ValidateResult {
  ok: true;
  name: string;
  layers: number;
  vertices: number;
  edges: number;
  parameters: number;
}

/** One of the built-in networks (the `models` action). */
export interface ModelEntry {
  name: ModelName;
  description: string;
  default_batch: number;
  /** null for a network without a sequence. */
  default_seq: number | null;
  llm: boolean;
  parameters: number;
  [field: string]: unknown;
}

/** A GPU preset (the `presets` action). */
export interface Preset {
  id: string;
  name: string;
  tflops: number;
  memory_gib: number;
  gpus_per_node: number;
  intra_node_gbps: number;
  bandwidth_gbps: number;
  [field: string]: unknown;
}

/** Which module the worker runs (the `mode` action). */
export interface PlannerMode {
  /** The threads a plan uses by default. */
  threads: number;
  /** true: the threaded module (pase-mt.js), on a cross-origin isolated page. */
  threaded: boolean;
  isolated: boolean;
  /** A line for the page: "Search on 8 threads", or why one thread. */
  text: string;
}

/** An imported model (formats.md, "Import options and result"). */
export interface ImportResult {
  graph: object;
  parameters: number;
  layers: number;
  format: string;
  dynamic_dims: unknown[];
  layer_outputs: unknown;
  [field: string]: unknown;
}

export interface ImportOptions {
  dims?: Record<string, number>;
  batch?: number;
  seq?: number;
  name?: string;
  [field: string]: unknown;
}

/** What a plan's progress reports besides its fraction done (0 to 1). */
export interface ProgressInfo {
  /** What runs now: "search 3 under the memory cap". */
  phase: string;
  /** null until it is estimated. */
  secondsLeft: number | null;
  /** A note on a long search ahead, '' when none. */
  note: string;
  /** The proven gap of the best plan so far, or null. */
  gap: number | null;
}

export interface CallOptions {
  onProgress?: (fraction: number, info: ProgressInfo) => void;
}

/** What a call rejects with. */
export class PlannerError extends Error {
  constructor(message: string, where?: string, kind?: PlannerError['kind'], missingDims?: PlannerError['missingDims']);
  name: 'PlannerError';
  /** The field of the request at fault ("cluster.devices"), 'module', or ''. */
  where: string;
  /**
   * 'input': the request is wrong (message and where say how);
   * 'module': the module failed to load or stopped; 'cancelled': restart().
   */
  kind: 'input' | 'module' | 'cancelled';
  /** An import's dynamic dimensions that need a size. */
  missingDims?: Array<{ name: string; input: string }>;
}

/**
 * The planner in a worker of its own. A request is an object or its JSON
 * text; each call resolves with the result document or rejects with a
 * PlannerError.
 */
export class PlannerClient {
  /** @param workerUrl the package's worker.js; left out, the one next to the client's module. */
  constructor(workerUrl?: string | URL);
  /** Calls not yet answered. */
  readonly pendingCount: number;
  /** Whether stop() can end a plan with its best found (cross-origin isolated pages). */
  readonly canStop: boolean;
  /** Stops the latest plan in flight as a time limit would; false when none can be. */
  stop(): boolean;
  /** Abandons every call in flight (they reject, kind 'cancelled') and starts a fresh worker. */
  restart(): void;

  call(action: 'plan', request: PlanRequest | string, options?: CallOptions): Promise<PlanResult>;
  call(action: 'evaluate', request: EvaluateRequest | string): Promise<PlanResult>;
  call(action: 'estimate', request: PlanRequest | string): Promise<EstimateResult>;
  call(action: 'compare', request: CompareRequest | string): Promise<CompareResult>;
  call(action: 'layouts', request: object | string, options?: CallOptions): Promise<Record<string, unknown>>;
  /** A pase-graph/1 document, or its JSON text. */
  call(action: 'validate', graph: object | string): Promise<ValidateResult>;
  call(action: 'models'): Promise<ModelEntry[]>;
  call(action: 'presets'): Promise<Preset[]>;
  call(action: 'version'): Promise<string>;
  call(action: 'mode'): Promise<PlannerMode>;
  /** A built-in network's pase-graph/1 document; 0 or left out: its default sizes. */
  call(action: 'exportModel', payload: { name: ModelName; batch?: number; seq?: number }): Promise<object>;
  /** An ONNX model or a Hugging Face config.json, read in the worker in slices. */
  call(action: 'importModel', payload: { file: File; options?: ImportOptions }): Promise<ImportResult>;
}
