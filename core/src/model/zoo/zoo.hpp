// The benchmark networks of core/docs/models.md, one function per file in zoo/. Each
// builds the pase-graph/1 document with the layers in core/docs/models.md order, so that
// vertex ids and dimension orders match core/docs/models.md exactly.
#pragma once

#include <cstdint>

#include "pase/graph.hpp"

namespace pase::zoo {

GraphSpec alexnet(int64_t batch);                   // 14 vertices, 13 edges
GraphSpec resnet101(int64_t batch);                 // 245 vertices, 277 edges
GraphSpec inception3(int64_t batch);                // 219 vertices, 253 edges
GraphSpec rnnlm(int64_t batch, int64_t seq);        // 4 vertices, 3 edges, cutoff 1
GraphSpec transformer(int64_t batch, int64_t seq);  // 204 vertices, 280 edges, cutoff 1

}  // namespace pase::zoo
