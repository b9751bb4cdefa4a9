// pase presets: the GPU presets that --preset accepts (core/docs/cluster.md,
// "Presets"), as a table or JSON (presets_to_json()).
#include <algorithm>
#include <string>
#include <vector>

#include "commands.hpp"
#include "flags.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "pase/json_api.hpp"
#include "pase/presets.hpp"
#include "report.hpp"

namespace pase_cli {

std::string presets_usage() {
  return "usage: pase presets [--format text|json]\n\n"
         "Lists the GPU presets of --preset: dense BF16/FP16 peak TFLOP/s, memory per\n"
         "device, GPUs per node, the per-GPU bandwidths inside and between nodes, the\n"
         "memory bandwidth, the dense FP8 peak where the vendor states one, and the\n"
         "price of a GPU-hour in USD (a cloud's on-demand list price, its source in\n"
         "core/docs/cluster.md), at which the cost to train is priced. A preset\n"
         "fills --flops, --bandwidth (between nodes), --gpus-per-node,\n"
         "--intra-bandwidth, --memory and --memory-bandwidth, and the practice cost\n"
         "model's rates for the GPU kind (--format json lists them); those flags given\n"
         "explicitly win. The values are starting points to edit, not claims.\n";
}

int run_presets(const Args& args) {
  Flags flags;
  if (auto message = parse_flags(args, {{"--format", true}}, flags)) {
    return usage_error("presets", *message);
  }
  bool json = false;
  if (auto failure = format_from_flags(flags, json)) return failure->report("presets");
  if (json) return write_stdout(pase::presets_to_json()) ? kExitOk : kExitError;

  const std::vector<std::string> header = {"id",          "name",       "TFLOP/s",    "memory GiB",
                                           "GPUs/node",   "intra GB/s", "inter GB/s", "memory GB/s",
                                           "FP8 TFLOP/s", "USD/GPU-h"};
  std::vector<std::vector<std::string>> rows;
  for (const pase::GpuPreset& p : pase::gpu_presets()) {
    rows.push_back({p.id, p.name, format("%g", p.tflops), format("%g", p.memory_gib),
                    std::to_string(p.gpus_per_node), format("%g", p.intra_node_gbps),
                    format("%g", p.inter_node_gbps), format("%g", p.memory_gbps),
                    p.fp8_tflops > 0 ? format("%g", p.fp8_tflops) : "-",
                    format("%.2f", p.gpu_hour_usd)});
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  // The id and name left-aligned, the numbers right-aligned two spaces apart.
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text = pad_right(cells[0], width[0]) + "  " + pad_right(cells[1], width[1]);
    for (size_t c = 2; c < cells.size(); ++c) text += pad_left(cells[c], width[c] + 2);
    return text + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  return write_stdout(out) ? kExitOk : kExitError;
}

}  // namespace pase_cli
