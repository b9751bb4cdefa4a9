// The text helpers of text.hpp, in one place for the library and the CLI.
#include "util/text.hpp"

#include <cstdio>
#include <string>

namespace pase {

std::string bytes_text(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char text[48];
  std::snprintf(text, sizeof text,
                u == 0        ? "%.0f %s"
                : bytes < 1e4 ? "%.1f %s"
                              : "%.3g %s",
                bytes, kUnits[u]);
  return text;
}

std::string vertex_label(const Vertex& v) {
  return "vertex " + std::to_string(v.id) + " (" + v.name + ", " + v.op + ")";
}

}  // namespace pase
