// The Cluster panel: the preset, nodes x GPUs per node (= devices), compute,
// the link speeds inside and between nodes, the memory per GPU (and its
// headroom: the practice model's margin, in percent), the ZeRO
// stage and the training's byte counts, as the request's "cluster" and
// "training" (core/docs/cluster.md) and as the page state of the URL.
//
// The devices field holds the device count in every state. With GPUs per
// node empty the cluster is the paper's flat ring: one network, the nodes
// and the intra-node speed unused. With GPUs per node set, nodes x GPUs per
// node is the device count: editing the nodes or the node size changes the
// devices, editing the devices changes the nodes (rounded up: the last node
// may be partly used, as the core allows). An empty memory is no cap.
//
// The page sends the fields themselves, never a "preset": what the form
// shows is what is planned. The practice model's rates of a GPU kind (a
// preset's "practice" object) are a field too, Practice rates, which a
// preset sets and the link carries by the preset's id (rates=h100), so that
// a link plans the same numbers as the page it was copied from. Nothing is
// validated here but that id; the module names a bad field
// ("cluster.memory_gib") and the error box marks its control.

import { paperPreset, customPreset, trainingDefaults, presetFromModule, matchPreset } from './presets.js';
import { el } from './views/dom.js';

const defaultDevices = 8;
// The memory margin in percent: Cluster::headroom's default, 0.1 (core/include/pase/cluster.hpp).
const defaultHeadroom = 10;

/** An input's number, or null when it is empty or malformed (JSON null: the module names it). */
export function numberValue(input) {
  return Number.isFinite(input.valueAsNumber) ? input.valueAsNumber : null;
}

function setNumber(input, value) {
  input.value = value == null ? '' : String(value);
}

const isCount = (value) => Number.isInteger(value) && value > 0;

export class ClusterForm {
  /** The presets offered: the paper's, then the module's once they arrive. */
  presets = [paperPreset];
  #ui;
  /** The Practice rates id asked for (a link's rates=) before the module's presets arrive. */
  #ratesWanted = '';

  /**
   * @param {{preset, devices, nodes, gpusPerNode, tflops, intraBandwidth, bandwidth,
   *          bandwidthLabel, memory, zero, paramBytes, gradBytes, optimizerBytes,
   *          activationBytes, topology, costModel, memoryBandwidth, recompute, practiceFields,
   *          rates, practiceRates, ratesText}} ui the panel's elements
   */
  constructor(ui) {
    this.#ui = ui;
    this.#fillPresets();
  }

  /** Request field -> control, for the error box. */
  get controls() {
    const ui = this.#ui;
    return {
      'cluster.devices': ui.devices,
      'cluster.tflops': ui.tflops,
      'cluster.bandwidth_gbps': ui.bandwidth,
      'cluster.gpus_per_node': ui.gpusPerNode,
      'cluster.intra_node_gbps': ui.intraBandwidth,
      'cluster.memory_gib': ui.memory,
      'cluster.headroom': ui.headroom,
      'training.param_bytes': ui.paramBytes,
      'training.grad_bytes': ui.gradBytes,
      'training.optimizer_bytes': ui.optimizerBytes,
      'training.activation_bytes': ui.activationBytes,
      'training.zero': ui.zero,
      'training.recompute': ui.recompute,
      'cluster.memory_gbps': ui.memoryBandwidth,
      'cluster.device': ui.rates,
      cost_model: ui.costModel,
    };
  }

  /** The fields whose edits make the plan on display stale. */
  get inputs() {
    const ui = this.#ui;
    return [ui.devices, ui.nodes, ui.gpusPerNode, ui.tflops, ui.intraBandwidth, ui.bandwidth, ui.memory, ui.headroom,
      ui.paramBytes, ui.gradBytes, ui.optimizerBytes, ui.activationBytes, ui.memoryBandwidth];
  }

  /** The memory field, which a plan that fits nowhere points at. */
  get memoryInput() {
    return this.#ui.memory;
  }

  /** True when GPUs per node is given (valid or not): the cluster has nodes. */
  get hasNodes() {
    return this.#ui.gpusPerNode.value.trim() !== '';
  }

  /**
   * Wires the controls; `onChange` runs after every edit (the plan on display
   * is then stale and the URL is rewritten).
   */
  wire(onChange) {
    const ui = this.#ui;
    ui.preset.addEventListener('change', () => {
      this.#applyPreset();
      onChange();
    });
    const edited = (input, after = () => {}) => input.addEventListener('input', () => {
      input.removeAttribute('aria-invalid');
      after();
      this.#sync();
      onChange();
    });
    edited(ui.devices, () => this.#nodesFromDevices());
    edited(ui.nodes, () => this.#devicesFromNodes());
    edited(ui.gpusPerNode, () => (isCount(numberValue(ui.nodes)) ? this.#devicesFromNodes() : this.#nodesFromDevices()));
    for (const input of [ui.tflops, ui.intraBandwidth, ui.bandwidth, ui.memory, ui.headroom, ui.paramBytes, ui.gradBytes,
      ui.optimizerBytes, ui.activationBytes, ui.memoryBandwidth]) {
      edited(input);
    }
    for (const select of [ui.zero, ui.costModel, ui.recompute, ui.rates]) {
      select.addEventListener('change', () => {
        select.removeAttribute('aria-invalid');
        this.#sync();
        onChange();
      });
    }
  }

  /**
   * Fills the fields from the URL's page state (url-state.js); what it lacks
   * takes the paper's preset and the training defaults, so an old link plans
   * as it always did.
   */
  restore(state) {
    const ui = this.#ui;
    setNumber(ui.devices, state.devices ?? defaultDevices);
    setNumber(ui.tflops, state.tflops ?? paperPreset.tflops);
    setNumber(ui.bandwidth, state.bandwidth ?? paperPreset.bandwidth);
    setNumber(ui.gpusPerNode, state.gpusPerNode);
    setNumber(ui.intraBandwidth, state.intraBandwidth);
    setNumber(ui.memory, state.memory);
    setNumber(ui.headroom, state.headroom ?? defaultHeadroom);
    const t = state.training ?? {};
    setNumber(ui.paramBytes, t.paramBytes ?? trainingDefaults.paramBytes);
    setNumber(ui.gradBytes, t.gradBytes ?? trainingDefaults.gradBytes);
    setNumber(ui.optimizerBytes, t.optimizerBytes ?? trainingDefaults.optimizerBytes);
    setNumber(ui.activationBytes, t.activationBytes ?? trainingDefaults.activationBytes);
    // A stage the select does not offer is sent as it is, for the module to refuse.
    const zero = String(t.zero ?? trainingDefaults.zero);
    if (![...ui.zero.options].some((o) => o.value === zero)) ui.zero.append(el('option', { value: zero, text: zero }));
    ui.zero.value = zero;
    ui.costModel.value = state.costModel === 'practice' ? 'practice' : 'paper';
    setNumber(ui.memoryBandwidth, state.memoryBandwidth);
    ui.recompute.value = ['none', 'selective', 'full'].includes(t.recompute) ? t.recompute : 'auto';
    // Absent: the module's generic rates, as such a link always planned.
    this.#ratesWanted = state.rates ?? '';
    this.#fillRates();
    this.#nodesFromDevices();
    this.#sync();
  }

  /** Adds the module's presets (its presets() list) after the paper's. */
  setPresets(list) {
    this.presets = [paperPreset, ...list.map(presetFromModule)];
    this.#fillPresets();
    this.#fillRates();
    this.#sync();
  }

  /** Chooses the preset `id` as the select does (the page's first screen). */
  choosePreset(id) {
    this.#ui.preset.value = id;
    this.#applyPreset();
  }

  /**
   * What the page refuses itself: Practice rates naming no GPU kind the
   * module knows (a link's rates=), as {message, where}; null when fine.
   */
  check() {
    if (this.costModel !== 'practice' || this.#ui.rates.value === '' || this.#ratesPreset()) return null;
    return {
      message: `no GPU kind '${this.#ui.rates.value}' has practice rates; choose one of ${this.#ratePresets().map((p) => p.id).join(', ')}, or the generic rates`,
      where: 'cluster.device',
    };
  }

  /** The request's "cluster": node fields only with nodes, memory only when capped. */
  cluster() {
    const ui = this.#ui;
    const cluster = { devices: numberValue(ui.devices), tflops: numberValue(ui.tflops), bandwidth_gbps: numberValue(ui.bandwidth) };
    if (this.hasNodes) {
      cluster.gpus_per_node = numberValue(ui.gpusPerNode);
      cluster.intra_node_gbps = numberValue(ui.intraBandwidth);
    }
    if (ui.memory.value.trim() !== '') cluster.memory_gib = numberValue(ui.memory);
    // The practice model's memory margin, a share (the field is in percent); empty: the module's default.
    if (this.costModel === 'practice' && ui.headroom.value.trim() !== '') {
      const percent = numberValue(ui.headroom);
      cluster.headroom = percent === null ? null : percent / 100;
    }
    if (this.costModel === 'practice') {
      cluster.memory_gbps = numberValue(ui.memoryBandwidth);
      // The rates of the GPU kind chosen (core/docs/practice-model.md).
      const rates = this.#ratesPreset();
      if (rates) cluster.device = { ...rates.practice };
    }
    return cluster;
  }

  /** The request's "training". */
  training() {
    const ui = this.#ui;
    return {
      param_bytes: numberValue(ui.paramBytes),
      grad_bytes: numberValue(ui.gradBytes),
      optimizer_bytes: numberValue(ui.optimizerBytes),
      activation_bytes: numberValue(ui.activationBytes),
      // The module searches them ("auto") unless told.
      ...(ui.zero.value === 'auto' ? {} : { zero: Number(ui.zero.value) }),
      ...(this.costModel === 'practice' && ui.recompute.value !== 'auto' ? { recompute: ui.recompute.value } : {}),
    };
  }

  /** 'paper' or 'practice'. */
  get costModel() {
    return this.#ui.costModel.value;
  }

  /** The cluster's part of the URL's page state (url-state.js). */
  pageState() {
    const ui = this.#ui;
    return {
      devices: numberValue(ui.devices),
      tflops: numberValue(ui.tflops),
      bandwidth: numberValue(ui.bandwidth),
      gpusPerNode: this.hasNodes ? numberValue(ui.gpusPerNode) : null,
      intraBandwidth: this.hasNodes ? numberValue(ui.intraBandwidth) : null,
      memory: numberValue(ui.memory),
      costModel: ui.costModel.value,
      memoryBandwidth: ui.costModel.value === 'practice' ? numberValue(ui.memoryBandwidth) : null,
      headroom: ui.costModel.value === 'practice' ? numberValue(ui.headroom) : null,
      rates: ui.costModel.value === 'practice' && ui.rates.value !== '' ? ui.rates.value : null,
      training: {
        paramBytes: numberValue(ui.paramBytes),
        gradBytes: numberValue(ui.gradBytes),
        optimizerBytes: numberValue(ui.optimizerBytes),
        activationBytes: numberValue(ui.activationBytes),
        zero: ui.zero.value === 'auto' ? 'auto' : Number(ui.zero.value),
        recompute: ui.costModel.value === 'practice' ? ui.recompute.value : 'none',
      },
    };
  }

  /** The ZeRO stage chosen, for the hint of a plan that does not fit; null: searched. */
  get zero() {
    return this.#ui.zero.value === 'auto' ? null : Number(this.#ui.zero.value);
  }

  // ---- Private ------------------------------------------------------------------

  #fillPresets() {
    this.#ui.preset.replaceChildren(
      ...this.presets.map((p) => el('option', { value: p.id, text: p.label, title: p.detail })),
      el('option', { value: customPreset.id, text: customPreset.label, disabled: true }),
    );
  }

  #applyPreset() {
    const ui = this.#ui;
    const preset = this.presets.find((p) => p.id === ui.preset.value);
    if (!preset) return;
    setNumber(ui.tflops, preset.tflops);
    setNumber(ui.bandwidth, preset.bandwidth);
    setNumber(ui.gpusPerNode, preset.gpusPerNode);
    // The flat paper preset keeps the intra-node speed typed before: unused, not lost.
    if (preset.gpusPerNode !== null) setNumber(ui.intraBandwidth, preset.intraBandwidth);
    setNumber(ui.memory, preset.memory);
    if (preset.memoryBandwidth != null) setNumber(ui.memoryBandwidth, preset.memoryBandwidth);
    // The GPU kind's rates come with it; the paper's flat machine keeps those chosen (unused).
    if (preset.practice) ui.rates.value = preset.id;
    // The practice model is the default for a GPU; the paper's for its flat
    // machine (core/docs/practice-model.md).
    ui.costModel.value = preset.memoryBandwidth != null ? 'practice' : 'paper';
    // A preset is a machine, not a cluster size: the devices stay.
    this.#nodesFromDevices();
    for (const input of this.inputs) input.removeAttribute('aria-invalid');
    this.#sync();
  }

  /** The presets that carry practice rates: the Practice rates' choices. */
  #ratePresets() {
    return this.presets.filter((p) => p.practice);
  }

  /** The preset whose rates are chosen, or null (the generic rates, or an unknown id). */
  #ratesPreset() {
    const id = this.#ui.rates.value;
    return id === '' ? null : this.#ratePresets().find((p) => p.id === id) ?? null;
  }

  /** The Practice rates select: generic, each GPU kind, and an id asked for that none has. */
  #fillRates() {
    const ui = this.#ui;
    const wanted = this.#ratesWanted || ui.rates.value;
    const options = [el('option', { value: '', text: 'Generic (the module\'s defaults)' }),
      ...this.#ratePresets().map((p) => el('option', { value: p.id, text: p.label }))];
    if (wanted && !options.some((o) => o.value === wanted)) {
      options.push(el('option', { value: wanted, text: this.presets.length > 1 ? `Unknown: ${wanted}` : wanted }));
    }
    ui.rates.replaceChildren(...options);
    ui.rates.value = wanted;
    if (this.presets.length > 1) this.#ratesWanted = '';
  }

  /** The rates chosen, in words: what the practice model prices with beyond the fields. */
  #ratesText() {
    const p = this.#ratesPreset()?.practice;
    if (!p) return this.#ui.rates.value === '' ? 'The module\'s generic rates (core/docs/practice-model.md).' : '';
    const pct = (x) => `${Math.round(x * 1000) / 10}%`;
    return `Products at ${pct(p.matmul_efficiency)} of the peak (half rate at ${p.matmul_half} per device dimension), `
      + `attention at ${pct(p.attention_efficiency)}, memory-bound ops at ${pct(p.memory_efficiency)} of the bandwidth, `
      + `collectives at ${pct(p.link_efficiency)} of the links with ${p.latency_intra_us}/${p.latency_inter_us} µs a step `
      + `inside/between nodes, ${pct(p.overlap)} of the gradient reduction hidden, ${p.reserved_gib} GiB reserved.`;
  }

  #devicesFromNodes() {
    const nodes = numberValue(this.#ui.nodes);
    const size = numberValue(this.#ui.gpusPerNode);
    if (nodes !== null && isCount(size)) setNumber(this.#ui.devices, nodes * size);
  }

  #nodesFromDevices() {
    const devices = numberValue(this.#ui.devices);
    const size = numberValue(this.#ui.gpusPerNode);
    setNumber(this.#ui.nodes, isCount(devices) && isCount(size) ? Math.ceil(devices / size) : null);
  }

  /** The preset select, the enabled fields and the line that names the topology. */
  #sync() {
    const ui = this.#ui;
    const nodes = this.hasNodes;
    ui.nodes.disabled = !nodes;
    ui.practiceFields.hidden = ui.costModel.value !== 'practice';
    ui.practiceRates.hidden = ui.costModel.value !== 'practice';
    ui.ratesText.textContent = this.#ratesText();
    ui.intraBandwidth.disabled = !nodes;
    // The paper model has no headroom (nor reserve): its cap is the memory.
    ui.headroom.disabled = ui.costModel.value !== 'practice';
    ui.nodes.placeholder = nodes ? '' : '—';
    ui.bandwidthLabel.textContent = nodes ? 'Inter-node GB/s' : 'GB/s per link';
    ui.topology.textContent = this.#topologyText();
    ui.preset.value = matchPreset(this.presets, {
      tflops: numberValue(ui.tflops),
      bandwidth: numberValue(ui.bandwidth),
      gpusPerNode: nodes ? numberValue(ui.gpusPerNode) : null,
      intraBandwidth: numberValue(ui.intraBandwidth),
      memory: ui.memory.value.trim() === '' ? null : numberValue(ui.memory),
    }).id;
    ui.preset.title = [...this.presets, customPreset].find((p) => p.id === ui.preset.value)?.detail ?? '';
  }

  #topologyText() {
    const devices = numberValue(this.#ui.devices);
    const size = numberValue(this.#ui.gpusPerNode);
    const memory = this.#ui.memory.value.trim() === '' ? 'no memory cap' : `${this.#ui.memory.value} GiB per GPU`;
    if (!isCount(devices)) return '';
    if (!this.hasNodes) return `Flat ring: ${devices} device${devices === 1 ? '' : 's'} on one network, ${memory}.`;
    if (!isCount(size)) return '';
    const full = Math.floor(devices / size);
    const rest = devices % size;
    if (full === 0 || (full === 1 && rest === 0)) return `${devices} device${devices === 1 ? '' : 's'} on one node of ${size}, ${memory}.`;
    const shape = rest === 0 ? `${full} nodes × ${size}` : `${full + 1} nodes of ${size}, the last with ${rest}`;
    return `${devices} devices as ${shape}, ${memory}.`;
  }
}
