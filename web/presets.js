// Presets of the Cluster panel. The GPU presets are the core's list
// (presets_to_json(), the module's presets()), which the page asks the worker
// for at start-up: the page, the CLI's --preset and a request's "preset" offer
// the same machines with the same numbers. The page adds one entry of its
// own, the paper's setting that it opens on and that its golden numbers use.
// A preset fills the compute, both link speeds, the node size and the memory;
// the user may edit them afterwards (the select then reads "Custom").

/**
 * The cluster values a preset fills, in the page's terms; null is an empty
 * field (no nodes: a flat ring; no memory: unlimited).
 * @typedef {{tflops: number|null, bandwidth: number|null, gpusPerNode: number|null,
 *            intraBandwidth: number|null, memory: number|null}} ClusterValues
 * @typedef {ClusterValues & {id: string, label: string, detail?: string}} Preset
 *   `label` is the select's text, short enough to show whole in the narrow
 *   panel; `detail` the rest, in the option's and the select's tooltip
 */

/** @type {Preset} The PaSE paper's cluster: one flat ring, no memory cap. */
export const paperPreset = {
  id: 'paper',
  label: 'PaSE paper (flat ring)',
  detail: '10 TFLOP/s per device, 16 GB/s links, one flat ring, no memory cap',
  tflops: 10,
  bandwidth: 16,
  gpusPerNode: null,
  intraBandwidth: null,
  memory: null,
};

export const customPreset = { id: 'custom', label: 'Custom', detail: 'The values typed below' };

/** What a training step keeps per device when the fields are left alone:
 *  mixed-precision Adam (the core's defaults, core/docs/cluster.md), and
 *  the ZeRO stage left to the planner: a language model's per-layer plan
 *  under the practice model searches it (core/docs/layouts.md, "Both
 *  answers"), any other plan has none. */
export const trainingDefaults = { paramBytes: 2, gradBytes: 2, optimizerBytes: 12, activationBytes: 2, zero: 'auto' };

/**
 * One entry of the module's presets() list ({id, name, tflops, memory_gib,
 * gpus_per_node, intra_node_gbps, bandwidth_gbps}) as a page preset.
 * @returns {Preset}
 */
export function presetFromModule(entry) {
  return {
    id: entry.id,
    label: entry.name,
    detail: `${entry.name}: ${entry.tflops} TFLOP/s, ${entry.memory_gib} GiB, ${entry.gpus_per_node} per node, `
      + `${entry.intra_node_gbps} GB/s inside a node, ${entry.bandwidth_gbps} GB/s between nodes`,
    tflops: entry.tflops,
    bandwidth: entry.bandwidth_gbps,
    gpusPerNode: entry.gpus_per_node,
    intraBandwidth: entry.intra_node_gbps,
    memory: entry.memory_gib,
    // The practice cost model's values (core/docs/practice-model.md).
    memoryBandwidth: entry.memory_gbps ?? null,
    practice: entry.practice ?? null,
    // The price of one GPU-hour (core/docs/cluster.md), the layouts' default price.
    gpuHourUsd: entry.gpu_hour_usd ?? null,
  };
}

/**
 * The preset of `list` whose values are exactly `values`, or the custom
 * entry. Without nodes the intra-node speed is not used, so it is not compared.
 * @param {Preset[]} list
 * @param {ClusterValues} values
 */
export function matchPreset(list, values) {
  return list.find((p) => p.tflops === values.tflops && p.bandwidth === values.bandwidth
    && p.gpusPerNode === values.gpusPerNode && p.memory === values.memory
    && (p.gpusPerNode === null || p.intraBandwidth === values.intraBandwidth)) ?? customPreset;
}
