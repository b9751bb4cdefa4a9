// The GPU presets of presets.hpp (core/docs/cluster.md, "Presets").
#include "pase/presets.hpp"

#include "cost/practice_fit.hpp"

namespace pase {

const std::vector<GpuPreset>& gpu_presets() {
  // id, name, dense BF16/FP16 TFLOP/s, memory GiB, GPUs per node, intra
  // GB/s, inter GB/s, memory GB/s, dense FP8 TFLOP/s, USD per GPU-hour; then
  // the practice model's profile (core/docs/practice-model.md). Peaks and
  // memory bandwidths are the vendors' datasheet figures (dense, without
  // sparsity). The prices are on-demand list prices per GPU of 2025, from
  // the pricing pages of Lambda (lambda.ai/pricing: its 8-GPU instances of
  // V100 (16 GB), A100 SXM 40GB and 80GB, H100 SXM and B200) and of RunPod
  // (runpod.io/pricing, Secure Cloud: H200 SXM, MI300X, L4, RTX 4090), the
  // clouds that list all of these; hyperscalers' on-demand prices run two to
  // four times higher, reserved ones lower. They date fast: a request can
  // give its own.
  static const std::vector<GpuPreset> kPresets = [] {
    std::vector<GpuPreset> presets = {
        {"v100", "V100 SXM2 32GB", 125, 32, 8, 150, 12.5, 900, 0, 0.55, {}},
        {"a100-40gb", "A100 SXM 40GB", 312, 40, 8, 300, 25, 1555, 0, 1.29, {}},
        {"a100-80gb", "A100 SXM 80GB", 312, 80, 8, 300, 25, 2039, 0, 1.79, {}},
        {"h100", "H100 SXM", 989, 80, 8, 450, 50, 3350, 1979, 2.99, {}},
        {"h200", "H200 SXM", 989, 141, 8, 450, 50, 4800, 1979, 3.99, {}},
        {"b200", "B200", 2250, 180, 8, 900, 50, 8000, 4500, 4.99, {}},
        {"mi300x", "MI300X", 1307, 192, 8, 448, 50, 5300, 2615, 2.49, {}},
        {"l4", "L4 (PCIe)", 121, 24, 8, 32, 12.5, 300, 242, 0.43, {}},
        {"rtx4090", "RTX 4090 (PCIe)", 165, 24, 8, 32, 12.5, 1008, 330, 0.69, {}},
    };
    for (GpuPreset& p : presets) {
      p.profile = practice_profile(p.id);
      p.profile.memory_gbps = p.memory_gbps;
    }
    return presets;
  }();
  return kPresets;
}

const GpuPreset* find_preset(std::string_view id) {
  for (const GpuPreset& p : gpu_presets())
    if (p.id == id) return &p;
  return nullptr;
}

Cluster apply_preset(Cluster cluster, const GpuPreset& preset) {
  cluster.tflops = preset.tflops;
  cluster.bandwidth_gbps = preset.inter_node_gbps;
  cluster.gpus_per_node = preset.gpus_per_node;
  cluster.intra_node_gbps = preset.intra_node_gbps;
  cluster.memory_gib = preset.memory_gib;
  cluster.device = preset.profile;
  return cluster;
}

std::string preset_ids() {
  std::string out;
  for (const GpuPreset& p : gpu_presets()) out += (out.empty() ? "" : ", ") + p.id;
  return out;
}

}  // namespace pase
