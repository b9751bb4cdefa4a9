// Number formatting for the page. Costs are FLOP-equivalents (large numbers
// whose magnitude matters more than their digits); times are seconds.

const siPrefixes = [
  [1e18, 'E'], [1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'],
];

/** 70320712672 -> "70.3 G"; three significant digits. */
export function formatCost(value) {
  if (!Number.isFinite(value)) return '—';
  if (value === 0) return '0';
  const abs = Math.abs(value);
  for (const [scale, prefix] of siPrefixes) {
    if (abs >= scale) return `${(value / scale).toPrecision(3)} ${prefix}`;
  }
  return value.toPrecision(3);
}

/**
 * A cost with its unit, rounded: 97098296512 -> "97.1 GFLOP-eq", 512 ->
 * "512 FLOP-eq". FLOP-equivalents are the cost model's unit: the compute in
 * FLOPs, with communication counted as the FLOPs the same time would compute
 * (core/docs/cost-model.md, section 1).
 */
export function formatCostUnit(value) {
  if (!Number.isFinite(value)) return '—';
  const number = formatCost(value);
  return /[kMGTPE]$/.test(number) ? `${number}FLOP-eq` : `${number} FLOP-eq`;
}

/** 0.0097 -> "9.70 ms". */
export function formatSeconds(seconds) {
  if (!Number.isFinite(seconds)) return '—';
  const abs = Math.abs(seconds);
  if (abs >= 1) return `${seconds.toPrecision(3)} s`;
  if (abs >= 1e-3) return `${(seconds * 1e3).toPrecision(3)} ms`;
  if (abs >= 1e-6) return `${(seconds * 1e6).toPrecision(3)} µs`;
  if (abs === 0) return '0 s';
  return `${(seconds * 1e9).toPrecision(3)} ns`;
}

/** 0.4213 -> "42.1%"; shares under 0.1% show as "<0.1%" rather than "0.0%". */
export function formatShare(fraction) {
  if (!Number.isFinite(fraction) || fraction <= 0) return '0%';
  if (fraction < 0.001) return '<0.1%';
  return `${(fraction * 100).toFixed(1)}%`;
}

/** 1234567 -> "1,234,567". */
export function formatCount(value) {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '—';
}

/**
 * A parameter count as people write it: 124439808 -> "124M",
 * 8030261248 -> "8.03B", 174604259328 -> "175B", 62466080 -> "62.5M";
 * three significant digits, trailing zeros of the fraction dropped.
 */
export function formatParameters(count) {
  if (!Number.isFinite(count)) return '—';
  if (count === 0) return '0';
  // Rounded first, so that 999,999 is "1M", not "1000k".
  const rounded = Number(count.toPrecision(3));
  for (const [scale, suffix] of [[1e12, 'T'], [1e9, 'B'], [1e6, 'M'], [1e3, 'k']]) {
    if (Math.abs(rounded) >= scale) return `${Number((rounded / scale).toPrecision(3))}${suffix}`;
  }
  return String(rounded);
}

const byteUnits = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];

/**
 * Bytes in binary units, as the CLI prints them: 256 -> "256 B",
 * 294912 -> "288.0 KiB", 147841187840 -> "137.7 GiB".
 */
export function formatBytes(bytes) {
  if (!Number.isFinite(bytes)) return '—';
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < byteUnits.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${Math.round(value)} B`;
  return `${value.toFixed(1)} ${byteUnits[unit]}`;
}

/** The devices first .. first + count - 1: "GPU 3", "GPUs 0–3". */
export function formatDeviceRange(first, count) {
  if (!Number.isInteger(first) || !Number.isInteger(count) || count < 1) return '—';
  return count === 1 ? `GPU ${first}` : `GPUs ${first}–${first + count - 1}`;
}

/** A capacity as it was typed when it is whole GiB ("80 GiB"), else in readable bytes. */
export function capacityText(bytes) {
  const gib = bytes / 2 ** 30;
  return Number.isInteger(gib) ? `${gib} GiB` : formatBytes(bytes);
}

/** The GPU's memory of a result's memory report under a cap (its device_bytes), or 0. */
export function deviceCapacity(memory) {
  if (!(memory?.capacity_bytes > 0)) return 0;
  return memory.device_bytes > 0 ? memory.device_bytes : memory.capacity_bytes;
}

/**
 * The GPU's memory in words and, when the practice model's reserve and
 * headroom take a part of it, what a plan may use (capacity_bytes):
 * "80 GiB", "80 GiB per GPU (69 GiB usable)" with `per` ' per GPU'.
 */
export function capacityOf(memory, per = '') {
  const device = deviceCapacity(memory);
  const usable = memory.capacity_bytes;
  return `${capacityText(device)}${per}${usable < device ? ` (${capacityText(usable)} usable)` : ''}`;
}
