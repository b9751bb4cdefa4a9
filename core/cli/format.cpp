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

std::string cluster_text(const pase::Cluster& cluster) {
  return std::to_string(cluster.devices) + (cluster.devices == 1 ? " device" : " devices") + " (" +
         format("%g", cluster.tflops) + " TFLOP/s, " + format("%g", cluster.bandwidth_gbps) +
         " GB/s links)";
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
