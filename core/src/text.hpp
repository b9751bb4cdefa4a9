// Small text helpers for the library's messages.
#pragma once

#include <cstdio>
#include <string>

namespace pase {

// "512 B", "12.5 MiB", "4.0 GiB"; beyond EiB (absurd orders) three
// significant digits ("1.03e+73 EiB") rather than sixty.
inline std::string bytes_text(double b) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024 && u < 6) {
    b /= 1024;
    ++u;
  }
  char text[48];
  std::snprintf(text, sizeof text,
                u == 0    ? "%.0f %s"
                : b < 1e4 ? "%.1f %s"
                          : "%.3g %s",
                b, kUnits[u]);
  return text;
}

}  // namespace pase
