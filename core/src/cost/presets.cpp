// The GPU presets of presets.hpp (core/docs/cluster.md, "Presets").
#include "pase/presets.hpp"

namespace pase {

const std::vector<GpuPreset>& gpu_presets() {
  // id, name, TFLOP/s, memory GiB, GPUs per node, intra GB/s, inter GB/s.
  static const std::vector<GpuPreset> kPresets = {
      {"v100", "V100 SXM2 32GB", 125, 32, 8, 150, 12.5},
      {"a100-40gb", "A100 SXM 40GB", 312, 40, 8, 300, 25},
      {"a100-80gb", "A100 SXM 80GB", 312, 80, 8, 300, 25},
      {"h100", "H100 SXM", 989, 80, 8, 450, 50},
      {"h200", "H200 SXM", 989, 141, 8, 450, 50},
      {"b200", "B200", 2250, 180, 8, 900, 50},
      {"mi300x", "MI300X", 1307, 192, 8, 448, 50},
      {"l4", "L4 (PCIe)", 121, 24, 8, 32, 12.5},
      {"rtx4090", "RTX 4090 (PCIe)", 165, 24, 8, 32, 12.5},
  };
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
  return cluster;
}

std::string preset_ids() {
  std::string out;
  for (const GpuPreset& p : gpu_presets()) out += (out.empty() ? "" : ", ") + p.id;
  return out;
}

}  // namespace pase
