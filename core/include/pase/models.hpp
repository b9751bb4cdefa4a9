// The benchmark networks of the PaSE paper (spec: core/docs/models.md): alexnet,
// resnet101, inception3, rnnlm, transformer.
//
// Vertex ids and dimension orders are exactly those of core/docs/models.md, so a
// strategy can be compared entry by entry with other implementations. Each
// network is built as a GraphSpec (the same document `pase export` writes), so
// planning an exported file gives exactly the built-in result.
//
// ERRORS: an unknown name ("unknown model 'x'; known: alexnet, ...") or a
// batch that is not a positive integer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pase/graph.hpp"
#include "pase/result.hpp"

namespace pase {

struct ModelInfo {
  std::string name;
  std::string description;
  int64_t default_batch = 0;
  int64_t cutoff = 4;
};

// The built-in networks, in the order of core/docs/models.md.
const std::vector<ModelInfo>& list_models();

// The network's document; batch 0 means the model's default batch.
Result<GraphSpec> model_spec(std::string_view name, int64_t batch = 0);

// model_spec() followed by build_graph().
Result<Graph> build_model(std::string_view name, int64_t batch = 0);

}  // namespace pase
