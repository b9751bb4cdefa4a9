// Small text helpers shared by the library's messages and the CLI's tables.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "pase/graph.hpp"

namespace pase {

// "512 B", "12.5 MiB", "4.0 GiB": binary units with one decimal; beyond
// 10000 EiB (absurd orders) three significant digits ("1.03e+73 EiB")
// rather than sixty.
std::string bytes_text(double bytes);

// How a message echoes a value the user wrote: in single quotes, cut to its
// first `max` bytes and "..." (a long value would drown the message; never
// inside a UTF-8 character), control characters escaped as JSON escapes them
// ("\u001b"; C1 controls too), so that an error printed to a terminal cannot
// drive it. The JSON readers' describe() (json_util.hpp) shows a JSON
// string value its own way: its JSON text (escaped by JSON), cut at 40.
std::string quoted_text(std::string_view text, size_t max = 40);

// "vertex 3 (conv2, Conv)": how messages name a vertex.
std::string vertex_label(const Vertex& v);

}  // namespace pase
