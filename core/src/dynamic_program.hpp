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

// What a run will need, computed before anything is allocated: the size
// fields of SearchStats (max_dependent_set, table_entries, largest_table,
// pairs, peak_bytes); the others are left at their defaults.
SearchStats estimate_dp(const Ordering& ord, const std::vector<ConfigSet>& configs);

struct DpResult {
  double cost = 0;
  std::vector<int> choice;  // configuration index per vertex
};

// Runs the program. Errors: "cancelled" when options.cancel is set.
Result<DpResult> run_dp(const Graph& g, const std::vector<ConfigSet>& configs, const Ordering& ord,
                        const ops::Machine& m, const SearchStats& est, const PlanOptions& options);

}  // namespace pase
