// Small text helpers shared by the library's messages and the CLI's tables.
#pragma once

#include <string>

#include "pase/graph.hpp"

namespace pase {

// "512 B", "12.5 MiB", "4.0 GiB": binary units with one decimal; beyond
// 10000 EiB (absurd orders) three significant digits ("1.03e+73 EiB")
// rather than sixty.
std::string bytes_text(double bytes);

// "vertex 3 (conv2, Conv)": how messages name a vertex.
std::string vertex_label(const Vertex& v);

}  // namespace pase
