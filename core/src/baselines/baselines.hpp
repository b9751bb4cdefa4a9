// Private helpers shared by the baselines (data_parallel.cpp, expert.cpp,
// mcmc.cpp, compare.cpp): following a dimension along the graph, divisors,
// finding a configuration in the enumeration and pricing a strategy into a
// StrategyReport.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cost/configurations.hpp"
#include "pase/compare.hpp"
#include "pase/graph.hpp"
#include "pase/plan.hpp"

namespace pase::baselines {

// Per vertex (by id), a configuration position: `seed(v)` when it is >= 0,
// else the position that the producer's position maps onto along the vertex's
// first input fed by a layer (see batch_dimensions() in compare.hpp), else -1.
// Vertex ids are a topological order, so one pass suffices.
std::vector<int> follow_dimension(const Graph& graph,
                                  const std::function<int(const Vertex&)>& seed);

// The largest divisor of n (>= 1) that is at most limit (>= 1).
int64_t largest_divisor_at_most(int64_t n, int64_t limit);

// Index of configuration `c` in `set`, or -1.
int64_t find_config(const ConfigSet& set, const Config& c);

// The enumerated configuration nearest to `c`: least sum over dimensions of
// |log2 c - log2 c'|, the first in enumeration order on ties.
int64_t nearest_config(const ConfigSet& set, const Config& c);

// Prices `strategy` with evaluate() and marks its vertices outside
// `configs` (the enumeration): outside_enumeration plus one summary note that
// names the first such vertex and why.
Result<StrategyReport> make_report(const Graph& graph, const Cluster& cluster,
                                   const std::vector<ConfigSet>& configs, std::string name,
                                   std::string description, const Strategy& strategy,
                                   std::vector<std::string> notes);

// Data parallelism on `devices` devices (data_parallel.cpp): the batch
// dimension of each vertex split largest_divisor_at_most(size, devices) ways.
Strategy data_parallel_strategy(const Graph& graph, int64_t devices);

// A number as "%g" writes it ("100", "0.5").
std::string number_text(double x);

}  // namespace pase::baselines
