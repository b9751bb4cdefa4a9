// The parts a layout's price is composed from (layout_pricer.hpp): the
// two-block model at a micro-batch with a layout's configurations, and the
// parts' sums at one placement. Private to core/src/layouts/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layouts/layout_pricer.hpp"
#include "model/cost_model.hpp"

namespace pase::layout_detail {

inline Error pricer_error(std::string message, const std::string& field) {
  return Error{std::move(message), "layout." + field};
}

enum Part : int { kEmbed, kBlock0, kBlock1, kHead };

// The machine of one stage of q devices, its first device at `first_device`,
// under a ZeRO stage, its replicas and one recomputation for every block.
ops::Machine stage_machine(const Cluster& cluster, int64_t q, int64_t first_device, int64_t zero,
                           int64_t replicas, Recompute mode);

// The two-block model at one micro-batch with one layout's configurations:
// the vertices of each part and the edges by the parts they join.
struct LayoutPricer::Reduced {
  std::shared_ptr<const Graph> graph;
  Strategy configs;
  std::vector<int> part_of;  // per vertex
  // Edges inside a part (by part), and between: embedding -> first block,
  // block -> next block, last block -> head.
  std::vector<size_t> inside[4], embed_link, link, head_link;
  // The compute of the embedding, of a block without recomputation and of
  // the head: what no placement, ZeRO stage or shard degree changes (the
  // practice model's compute is the kernels' time alone).
  double embed_compute = 0, block_compute = 0, head_compute = 0;
  int block_part = kBlock1;  // the block priced for every block: kBlock0 with one block
};

struct LayoutPricer::Placement {
  PartSums embed, head, block[3];  // block: by recomputation none, selective, full
  double embed_link = 0, link = 0, head_link = 0;
};

// The edges' costs depend on the machine's links and where its first device
// sits, not on its training settings: priced once per placement, shared by
// every ZeRO stage, shard degree and recomputation.
struct LayoutPricer::EdgeSums {
  double inside[4] = {0, 0, 0, 0};
  double embed_link = 0, link = 0, head_link = 0;
};

// Two graphs of the model at two micro-batches that layout_strategy() reads
// alike (layout_parts.cpp): `alike`, and the (vertex, dimension) sizes that
// differ, which a layout's splits must still divide.
struct LayoutPricer::Twins {
  bool alike = false;
  std::vector<std::pair<size_t, size_t>> differ;
};

}  // namespace pase::layout_detail
