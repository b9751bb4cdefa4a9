// GPU presets (core/docs/cluster.md, "Presets"): starting points for a
// cluster's compute, links, node size and memory, one list shared by the
// CLI (--preset), the JSON requests ("preset") and the page (the module's
// presets()). A preset fills the cluster; fields given explicitly win.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pase/cluster.hpp"

namespace pase {

struct GpuPreset {
  std::string id;              // what --preset and "preset" accept: "h100"
  std::string name;            // "H100 SXM"
  double tflops = 0;           // dense BF16/FP16 peak
  double memory_gib = 0;       // per device
  int64_t gpus_per_node = 0;   // devices per node
  double intra_node_gbps = 0;  // per-GPU bandwidth inside a node
  double inter_node_gbps = 0;  // per-GPU bandwidth between nodes
  double memory_gbps = 0;      // memory bandwidth, GB/s (vendor datasheet)
  double fp8_tflops = 0;       // dense FP8 peak where the vendor states one; 0: none
  // The price of one GPU-hour, USD: a cloud's on-demand list price for one
  // GPU of an 8-GPU instance (its source in presets.cpp and
  // core/docs/cluster.md), what the time and cost to train are priced at
  // unless a price is given. A starting point, as the other fields are.
  double gpu_hour_usd = 0;
  // The practice model's fitted rates and latencies for this GPU kind
  // (core/docs/practice-model.md, "Fitted parameters"); memory_gbps above.
  DeviceProfile profile{};
};

// The presets, in the order of core/docs/cluster.md.
const std::vector<GpuPreset>& gpu_presets();

// The preset `id`, or nullptr.
const GpuPreset* find_preset(std::string_view id);

// `cluster` with the preset's tflops, bandwidths, node size, memory and
// device profile (devices and cost model unchanged).
Cluster apply_preset(Cluster cluster, const GpuPreset& preset);

// The GPU kind whose fitted practice rates preset `id` shares: the first
// preset of the kind ("a100-40gb" for "a100-80gb"), or `id` itself.
std::string_view practice_kind(std::string_view id);

// "v100, a100-40gb, ..." for messages.
std::string preset_ids();

}  // namespace pase
