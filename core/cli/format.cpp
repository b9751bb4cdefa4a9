// Number and column formatting of the text output (format.hpp).
#include "format.hpp"

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <system_error>

namespace pase_cli {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

std::string exact(double value) {
  char buffer[64];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, ptr) : format("%.17g", value);
}

std::string grouped(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string grouped(double n) {
  if (n < 1e15) return grouped(static_cast<uint64_t>(n));
  return format("%.3g", n);
}

std::string gib_text(double bytes) { return format("%.1f GiB", bytes / 0x1p30); }

std::string seconds_text(double s) {
  if (s < 1e-3) return format("%.4g us", s * 1e6);
  if (s < 1) return format("%.4g ms", s * 1e3);
  return format("%.4g s", s);
}

std::string percent(double part, double whole) {
  return whole > 0 ? format("%.1f%%", 100 * part / whole) : "-";
}

std::string pad_right(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string pad_left(std::string text, size_t width) {
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text;
}

namespace {

// "450 GB/s inside nodes, 50 GB/s between" or "16 GB/s links".
std::string links_text(const pase::Cluster& cluster) {
  if (!cluster.hierarchical()) return format("%g", cluster.bandwidth_gbps) + " GB/s links";
  return format("%g", cluster.intra_node_gbps) + " GB/s inside nodes, " +
         format("%g", cluster.bandwidth_gbps) + " GB/s between";
}

}  // namespace

std::string cluster_text(const pase::Cluster& cluster) {
  std::string text =
      std::to_string(cluster.devices) + (cluster.devices == 1 ? " device" : " devices");
  if (cluster.hierarchical()) {
    const int64_t per_node = cluster.gpus_per_node;
    const int64_t nodes = (cluster.devices + per_node - 1) / per_node;
    if (nodes <= 1) {
      text += " in one node";
    } else if (cluster.devices % per_node == 0) {
      text += " as " + std::to_string(nodes) + " nodes x " + std::to_string(per_node);
    } else {
      text += " as " + std::to_string(nodes) + " nodes of up to " + std::to_string(per_node);
    }
  }
  text += " (" + format("%g", cluster.tflops) + " TFLOP/s, " + links_text(cluster);
  // The practice model names itself and the memory bandwidth it prices with.
  if (cluster.cost_model == pase::CostModel::kPractice)
    text += ", " + format("%g", cluster.device.memory_gbps) + " GB/s memory; practice cost model";
  return text + ")";
}

std::string machine_text(const pase::Cluster& cluster) {
  return format("%g", cluster.tflops) + " TFLOP/s, " +
         (cluster.hierarchical() ? "nodes of " + std::to_string(cluster.gpus_per_node) + ", "
                                 : std::string()) +
         links_text(cluster);
}

std::string training_text(const pase::Training& t) {
  return std::to_string(t.param_bytes) + "+" + std::to_string(t.grad_bytes) + "+" +
         std::to_string(t.optimizer_bytes) + " bytes per parameter, " +
         std::to_string(t.activation_bytes) + " per activation, ZeRO " + std::to_string(t.zero);
}

std::string recompute_text(const pase::Training& t) {
  const pase::Recompute mode =
      t.recompute == pase::Recompute::kAuto ? pase::Recompute::kNone : t.recompute;
  if (t.recompute_blocks < 0 || mode == t.recompute_rest) return pase::recompute_name(mode);
  const std::string first = t.recompute_blocks == 0 ? std::string("no decoder block")
                            : t.recompute_blocks == 1
                                ? std::string("decoder block 0")
                                : "decoder blocks 0-" + std::to_string(t.recompute_blocks - 1);
  return std::string(pase::recompute_name(mode)) + " on " + first + ", " +
         pase::recompute_name(t.recompute_rest) + " on the others";
}

std::string trim_line_ends(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    if (ch == '\n') {
      while (!out.empty() && out.back() == ' ') out.pop_back();
    }
    out += ch;
  }
  return out;
}

}  // namespace pase_cli
