// GPU presets for the cluster panel: vendor peak throughput per device and
// per-direction bandwidth of one device-to-device link. They are starting
// points; the user may edit the numbers afterwards (the preset then reads
// "Custom"). The precision is part of the label because it changes the peak
// several-fold.

export const presets = [
  { id: 'paper', label: 'PaSE paper defaults', tflops: 10, bandwidth: 16 },
  { id: 'gtx1080ti-pcie3', label: 'GTX 1080 Ti · PCIe 3.0 (FP32)', tflops: 11.3, bandwidth: 16 },
  { id: 'v100-nvlink2', label: 'V100 SXM2 · NVLink 2 (FP32)', tflops: 15.7, bandwidth: 150 },
  { id: 'v100-nvlink2-fp16', label: 'V100 SXM2 · NVLink 2 (FP16 tensor)', tflops: 125, bandwidth: 150 },
  { id: 'a100-nvlink3', label: 'A100 SXM4 · NVLink 3 (BF16 tensor)', tflops: 312, bandwidth: 300 },
  { id: 'h100-nvlink4', label: 'H100 SXM5 · NVLink 4 (BF16 tensor)', tflops: 989, bandwidth: 450 },
  { id: 'rtx4090-pcie4', label: 'RTX 4090 · PCIe 4.0 (FP32)', tflops: 82.6, bandwidth: 32 },
];

export const customPreset = { id: 'custom', label: 'Custom' };

/** The preset whose numbers are exactly these, or the custom entry. */
export function matchPreset(tflops, bandwidth) {
  return presets.find((p) => p.tflops === tflops && p.bandwidth === bandwidth) ?? customPreset;
}
