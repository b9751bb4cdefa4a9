// The helpers that the readers of pase/layout_import.hpp share
// (plan/layout_import.cpp, plan/layout_import_megatron.cpp,
// plan/layout_import_torchtitan.cpp): inline in a named namespace, so that
// a unity batch holding the three files defines each once.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

namespace pase::import_detail {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// A whole decimal integer, or nullopt (a sign, a fraction, trailing text).
inline std::optional<int64_t> integer_text(std::string_view text) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return n;
}

template <size_t N>
inline bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

}  // namespace pase::import_detail
