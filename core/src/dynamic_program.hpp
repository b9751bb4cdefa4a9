// The dynamic program of the PaSE paper (Fig. 4, recurrence 4) over an
// Ordering, on flat mixed-radix tables.
//
// Step i processes vertex v = v(i) with dependent set D = D(i) = (u_1..u_d):
//   T_i[phi] = min over c of  vcost_v[c]
//                           + sum over consumed tables T_j: T_j[phi|D_j, c]
//                           + sum over new neighbours u:    E_vu[phi_u][c]
// where phi ranges over the configurations of D. Every table lists its
// dimensions latest-processed first, so its consumer's configuration is the
// fastest-moving index and no table is ever transposed.
#pragma once

#include <cstdint>
#include <vector>

#include "configurations.hpp"
#include "cost_model.hpp"
#include "ordering.hpp"
#include "pase/plan.hpp"

namespace pase {

// What a run will need, computed before anything is allocated. Sizes are
// doubles so that absurd orders report their size instead of overflowing.
struct DpEstimate {
  double pairs = 0;
  double table_entries = 0;
  double largest_table = 0;
  double peak_bytes = 0;
  int max_dependent_set = 0;
};

DpEstimate estimate_dp(const Ordering& ord, const std::vector<ConfigSet>& configs);

struct DpResult {
  double cost = 0;
  std::vector<int> choice;  // configuration index per vertex
};

// Runs the program. Errors: "cancelled" when options.cancel is set.
Result<DpResult> run_dp(const Graph& g, const std::vector<ConfigSet>& configs, const Ordering& ord,
                        const ops::Machine& m, const DpEstimate& est, const PlanOptions& options);

}  // namespace pase
