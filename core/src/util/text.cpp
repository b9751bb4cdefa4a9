// The text helpers of text.hpp, in one place for the library and the CLI.
#include "util/text.hpp"

#include <algorithm>
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

std::string quoted_text(std::string_view text, size_t max) {
  const bool cut = text.size() > max;
  size_t end = cut ? max - std::min<size_t>(max, 3) : text.size();
  // Back to the start of a UTF-8 character (continuation bytes are 10xxxxxx).
  while (cut && end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  std::string out = "'";
  for (size_t i = 0; i < end; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    // U+0080 to U+009F, the C1 controls, are C2 80 to C2 9F in UTF-8.
    const bool c1 = byte == 0xC2 && i + 1 < end &&
                    static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9F;
    if (byte < 0x20 || byte == 0x7F || c1) {
      const unsigned code = c1 ? static_cast<unsigned char>(text[++i]) : byte;
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", code);
      out += escape;
    } else {
      out += static_cast<char>(byte);
    }
  }
  if (cut) out += "...";
  out += '\'';
  return out;
}

std::string vertex_label(const Vertex& v) {
  return "vertex " + std::to_string(v.id) + " (" + v.name + ", " + v.op + ")";
}

}  // namespace pase
