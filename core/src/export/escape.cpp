// Names as they enter exported files (export/escape.hpp).
#include "export/escape.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace pase {
namespace {

// The code point of the UTF-8 sequence at text[i] and its length, or a
// length of 0 where the byte does not start a valid sequence (truncated,
// overlong, a surrogate, above U+10FFFF).
struct Utf8Char {
  uint32_t code = 0;
  size_t size = 0;
};

Utf8Char utf8_at(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return {lead, 1};
  size_t size = 0;
  uint32_t code = 0, least = 0;
  if (lead >= 0xc2 && lead <= 0xdf) size = 2, code = lead & 0x1f, least = 0x80;
  if (lead >= 0xe0 && lead <= 0xef) size = 3, code = lead & 0x0f, least = 0x800;
  if (lead >= 0xf0 && lead <= 0xf4) size = 4, code = lead & 0x07, least = 0x10000;
  if (size == 0 || i + size > text.size()) return {};
  for (size_t k = 1; k < size; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return {};
    code = code << 6 | (byte(i + k) & 0x3f);
  }
  if (code < least || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return {};
  return {code, size};
}

// Characters that show nothing, break the line or reorder what a reader
// sees ("Trojan Source"): written as escapes.
bool comment_hides(uint32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
         (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}

}  // namespace

std::string comment_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char buf[16];
  for (size_t i = 0; i < text.size();) {
    const Utf8Char ch = utf8_at(text, i);
    if (ch.size == 0) {  // not UTF-8: the byte
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(text[i]));
      out += buf;
      ++i;
      continue;
    }
    if (ch.code == '\\') {
      out += "\\\\";
    } else if (comment_hides(ch.code)) {
      std::snprintf(buf, sizeof buf, ch.code < 0x80 ? "\\x%02x" : "\\u{%04x}",
                    static_cast<unsigned>(ch.code));
      out += buf;
    } else {
      out.append(text, i, ch.size);
    }
    i += ch.size;
  }
  return out;
}

std::string json_ascii(const json_detail::Json& value) {
  return value.dump(-1, ' ', true, json_detail::Json::error_handler_t::replace);
}

}  // namespace pase
