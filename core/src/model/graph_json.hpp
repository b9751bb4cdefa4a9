// The pase-graph/1 schema (core/docs/graph-format.md) in JSON, both ways:
// graph_json.cpp, over the readers of util/json_util.hpp. load_graph() and
// write_graph() (pase/graph.hpp) use them, and so do the requests of api/ that
// hold a graph.
#pragma once

#include <string>

#include "pase/graph.hpp"
#include "pase/result.hpp"
#include "util/json_util.hpp"

namespace pase::json_detail {

// The pase-graph/1 object `value` found at `where` ("" for a whole document,
// "graph" inside a plan request) as a GraphSpec: field names and types only.
Result<GraphSpec> graph_spec_from_json(const Json& value, const std::string& where);

// The pase-graph/1 object of `spec`.
Json graph_spec_to_json(const GraphSpec& spec);

}  // namespace pase::json_detail
