// Testing aids: slow reference implementations that the tests check the
// planner against. Not part of the public API (tests include core/src).
#pragma once

#include <cstdint>

#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase {

// The strategy of least cost by trying every combination of the vertices'
// configurations (the plain enumeration, no EnumOptions): time O(product of
// configuration counts * (vertices + edges)). Refused ("graph": "too many
// combinations for exhaustive search") when that product exceeds
// `max_combinations`; a bad cluster is refused as by plan(). With
// Cluster::memory_gib only the strategies that fit count ("cluster.memory_gib":
// "no strategy fits" when none does). Ties go to the
// combination enumerated first (vertex 0's configuration varying fastest).
Result<Plan> exhaustive_search(const Graph& graph, const Cluster& cluster,
                               uint64_t max_combinations = 10'000'000);

}  // namespace pase
