// Repeated steps of the dynamic program (core/docs/performance.md,
// "Repeated blocks"): a deep network's identical blocks give stretches of
// the ordering whose steps repeat with a period, and once the one table that
// crosses from one period to the next is the previous crossing table plus a
// constant, every later period makes the same choices, and its crossing
// table is that table plus the constant again. run_dp skips those periods.
// Private to run_dp.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "cost/cost_tables.hpp"
#include "kernels/uninitialised.hpp"
#include "search/dynamic_program.hpp"
#include "search/ordering.hpp"

namespace pase::detail {

// Steps [start, start + windows * period), in windows of `period` steps
// that are alike: the same vertex costs, dependent vertices at the same
// offsets, the same classes, tables consumed at the same step offsets and
// edges of the same prices. Exactly one table crosses each window boundary
// start + k * period (k = 0..windows), apart from tables made before the
// stretch and consumed after it: crossing[k], made in window k - 1 (k >= 1)
// and consumed in window k (k < windows).
struct RepeatedSteps {
  int start = 0, period = 0, windows = 0;
  std::vector<int> crossing;
};

// Each step's signature (equal ids: alike steps, as above), from the vertex
// cost vectors (vcost[v]) and the edge prices' signatures.
std::vector<int> step_signatures(const Graph& g, const Ordering& ord, const TableClasses& classes,
                                 const std::vector<std::vector<double>>& vcost,
                                 const EdgePrices& prices, const EdgePairs& pairs);

// The stretches of at least three windows, disjoint, in step order; each
// at the phase of its smallest crossing tables (`table_entries` by step).
std::vector<RepeatedSteps> find_repeated_steps(const Ordering& ord, const std::vector<int>& sig,
                                               const std::vector<double>& table_entries);

// Cycles of up to this many windows are found: near the Lagrangian's
// balance, the cheapest blocks may alternate between two choices.
constexpr int kMaxCycle = 3;

// run_dp's side of the skip: at each window boundary, the crossing table
// against those kept of the boundaries before. Once it is the table of c
// windows before plus a constant, the stretch's later windows repeat the
// last c windows' choices, and its last crossing table is made from the
// kept ones.
class RepeatSkipper {
 public:
  RepeatSkipper(std::vector<RepeatedSteps> stretches, size_t steps);
  bool empty() const { return stretches_.empty(); }
  // Before step i runs, with `tables` the program's tables: the step to go
  // on from (i when nothing is skipped; else the end of the stretch, with
  // its last crossing table made and the skipped windows' consumed table
  // freed).
  size_t at(size_t i, std::vector<RawVector<double>>& tables);
  // The step whose arg-min table holds step i's choices.
  int source(size_t i) const { return source_[i]; }
  uint64_t skipped() const { return skipped_; }

 private:
  std::vector<RepeatedSteps> stretches_;
  std::vector<int> source_;
  // The crossing tables of the current stretch's last boundaries, by boundary.
  std::vector<std::pair<int, std::vector<double>>> kept_;
  uint64_t skipped_ = 0;
};

// Whether `cur` is `prev` plus one constant (returned in `shift`): the same
// entries infinite, and the others' differences equal, exactly when both
// tables hold integers below 2^51 (the paper's flat machine), else within
// 1e-13 of the largest magnitude.
bool shifted_copy(const double* prev, const double* cur, size_t n, double& shift);

}  // namespace pase::detail
