// Text from the input (a graph's name, its layers' and dimensions' names,
// the messages that quote them) as it enters an exported file
// (core/docs/export.md, "Names in the exported files"). The exporters write
// such text in two places only, each through one of these: comment lines (of
// the JAX program, the Megatron-LM script, the torchtitan TOML) and the JAX
// program's JSON literal. Nothing is rejected: any name gives a valid file.
#pragma once

#include <string>
#include <string_view>

#include "util/json_util.hpp"

namespace pase {

// `text` as a part of one comment line, the same form in Python, shell and
// TOML: printable and without a line break. Valid UTF-8 is kept, except that
// each control character (C0, DEL, C1), line or paragraph separator,
// bidirectional control and byte order mark is written \xNN (below U+0080)
// or \u{NNNN}, each byte that is not part of valid UTF-8 \xNN (80 to FF), and
// a backslash \\, so that the form reads back unambiguously (hexadecimal
// digits in lower case: "a\nb" is a\x0ab).
std::string comment_text(std::string_view text);

// The JSON text of `value` in ASCII: every other character, and every control
// character, as \uNNNN; a byte that is not valid UTF-8 as U+FFFD. Such text
// cannot end the JAX program's r"""...""" literal: it holds no line break,
// a quote inside a string is \", and a string's closing quote is followed
// by a comma, a colon or a bracket, never by two more quotes.
std::string json_ascii(const json_detail::Json& value);

}  // namespace pase
