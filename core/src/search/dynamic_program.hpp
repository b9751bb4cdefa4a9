// The dynamic program of the PaSE paper (Fig. 4, recurrence 4) over an
// Ordering, on flat mixed-radix tables indexed by equivalence classes.
//
// Step i processes vertex v = v(i) with dependent set D = D(i) = (u_1..u_d):
//   T_i[phi] = min over c of  vcost_v[c]
//                           + sum over consumed tables T_j: T_j[phi|D_j, c]
//                           + sum over new neighbours u:    E_vu[phi_u][c]
// where c ranges over the configurations of v and phi over the states of D.
// A state of u in D is not one of u's configurations but its class
// (TableClasses): configurations that every edge between u and the vertices
// processed so far (in v's component) sees alike share one entry, since they
// share its value. Every table lists its dimensions latest-processed first,
// so its consumer's index is the fastest-moving one and no table is ever
// transposed. core/docs/performance.md, "Equivalence classes".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "cost/configurations.hpp"
#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "pase/plan.hpp"
#include "search/ordering.hpp"

namespace pase {

// The classes of one step's dependent vertices, aligned with Step::dep.
struct DepClasses {
  std::vector<std::vector<int>> of;     // of[k][c]: class of configuration c of dep[k]
  std::vector<int> count;               // count[k]: classes of dep[k], the table's radix
  std::vector<std::vector<int>> first;  // first[k][q]: least configuration of class q
  // The order in which the step iterates its dependent vertices, outermost
  // first: order[l] is the index in dep of level l + 1. The table keeps its
  // own layout (dep's order) whatever this order.
  std::vector<int> order;
  // Groups of v's configurations that every term of the innermost level
  // reads alike (the same class in each consumed table that has that level's
  // vertex, the same end on each edge to it): group_of per configuration,
  // numbered by least member, group_first per group. Empty: no groups, the
  // innermost rows run over the configurations.
  std::vector<int> group_of, group_first;
};

// For step i and u = dep(i)[k], the class of a configuration c of u is the
// key made of (a) its class in every table T_j that step i consumes and that
// has u in D(j), and (b) for each edge between v(i) and u, the id of u's end
// (edge_end_ids: the consumer's tensor configuration, the producer's tensor
// configuration on a flat machine or its placement on a machine of nodes, and
// the consumer's placement too for edges priced both ways).
// Classes are the distinct keys, numbered by their least configuration, so
// class 0 holds configuration 0. Configurations of one class give every
// entry of T_i the same value and the same arg-min, bit for bit (the terms
// of the recurrence read the same numbers in the same order). Depends on the
// machine only through `view` (EndView::of). Time O(sum over steps and u in D of
// |configs(u)| * (consumed tables + edges)), plus the edge ids.
//
// Each step also gets its iteration order and its groups: the innermost
// level is the dependent vertex u whose groups make the step cheapest, at
// (|T_i| / states(u)) * (|configs(v)| + states(u) * groups(u)) pairs (a
// run's partial sums folded into one per group, then its rows over the
// groups), when that beats |T_i| * |configs(v)| by a fifth; otherwise the
// table's own order without groups. `groups` false: never (the tests).
struct TableClasses {
  std::vector<DepClasses> steps;  // by step
  double bytes = 0;               // memory held by the class maps
};
TableClasses table_classes(const Graph& g, const std::vector<ConfigSet>& configs,
                           const Ordering& ord, EndView view, bool groups = true);

// What a run will need, computed before anything is allocated: the size
// fields of SearchStats (max_dependent_set, table_entries, largest_table,
// pairs, peak_bytes, raw_pairs, raw_peak_bytes); the others are left at their
// defaults. With `classes`, the sizes of the tables indexed by classes (what
// run_dp allocates); without, of tables indexed by raw configurations (what
// run_dp_reference allocates), which are also the raw_* fields.
SearchStats estimate_dp(const Ordering& ord, const std::vector<ConfigSet>& configs,
                        const TableClasses* classes = nullptr);

// What the searches of one space share besides their edge prices: run_dp()
// over one graph, its configurations, ordering, classes and edge prices, on
// one machine but for its weights and recomputation (the Lagrangian loop
// under a cap, plan_recompute()'s choices). It keeps the vertices' cost
// parts (VertexCostCache) and, for the latest edge weight (cost_weight *
// microbatches, what pair matrices are scaled by), the pair matrices and
// the threshold search's sorted rows, each within one search's budget
// (kPairMatrixBudget, and the rows'), for searches given the same edge
// prices. A search then finds made what the searches before it made, the
// same numbers. Not thread-safe.
class SearchCache {
 public:
  SearchCache();
  ~SearchCache();
  SearchCache(const SearchCache&) = delete;
  SearchCache& operator=(const SearchCache&) = delete;

  VertexCostCache vertex_costs;
  // least_working_bytes() of the space, once read (weighted_plan.hpp: it
  // depends on neither the search's weights nor the recomputation).
  std::optional<double> least_working;
  struct Kept;
  // The pair matrices and sorted rows of m's edge weight: those kept when
  // the weight, the graph, the configurations and the prices (objects) are
  // the search's before, else new ones (the others dropped).
  Kept& kept(const Graph& g, const std::vector<ConfigSet>& configs, const ops::Machine& m,
             EdgePrices& prices);

 private:
  std::unique_ptr<Kept> kept_;
};

struct DpResult {
  double cost = 0;
  std::vector<int> choice;  // configuration index per vertex
  // Pair matrices, and threshold searches' sorted rows, that a step found
  // already made by an earlier step (PairMatrices, SortedRowsCache).
  uint64_t shared_matrices = 0, shared_rows = 0;
  // Steps whose dense rows of two terms were summed into one.
  uint64_t fused_steps = 0;
  // Steps of repeated blocks not run: their choices are those of the block
  // before (repeated_steps.hpp).
  uint64_t repeated_steps = 0;
  // With the last step's vertex left open (run_dp's open_last): by each of
  // its configurations c, the least cost of the graph with that vertex at
  // c, and the configuration of every vertex in a strategy of that cost.
  std::vector<double> open_cost;
  std::vector<std::vector<int>> open_choice;
};

// How run_dp fills its tables; the defaults are the planner's, the tests
// vary them (the result never depends on them).
struct DpTuning {
  // Steps of at least this many pairs are split across options.threads.
  double parallel_pairs = 1 << 20;
  // Rows are searched in threshold order (core/docs/performance.md,
  // "Threshold search") when v has at least threshold_min_configs
  // configurations and the innermost dimension at least threshold_min_rows
  // states; row_keep: the sorted prefix kept per row. false: every pair.
  bool threshold = true;
  int threshold_min_configs = 32;
  int64_t threshold_min_rows = 16;
  int row_keep = 64;
  // A run of rows is walked in threshold order while the walks so far
  // reached less deep than 1 / dense_per_walked of the configurations (the
  // cost of one walked configuration in pairs of a dense row read in a
  // stream), or dense_per_walked_gather when a row term is read through a
  // class map; otherwise every pair is summed. The entries are the same.
  double dense_per_walked = 50;
  double dense_per_walked_gather = 3;
  // Outer states that share one pass over the rows in dense blocks
  // (min_row.hpp); 0: no blocks.
  int dense_block = 16;
  // A block that is walked only to keep the estimate current walks its
  // first run and sums the others (false: walks them all).
  bool probe_one_run = true;
  // Dense rows of two terms whose numbers are all integers below 2^51 are
  // summed once per row and read by the one-term kernel (StepRunner).
  bool fuse_integer_rows = true;
  // Repeated blocks are skipped once their crossing tables differ by a
  // constant (core/docs/performance.md, "Repeated blocks").
  bool repeat = true;
  // Whether a step whose v has `configs` configurations and whose innermost
  // dependent vertex has `innermost_states` states uses the threshold search
  // (and keeps min(configs, row_keep) sorted entries per innermost state).
  bool threshold_for(double configs, double innermost_states) const {
    return threshold && configs >= threshold_min_configs &&
           innermost_states >= static_cast<double>(threshold_min_rows);
  }
};

// Runs the program on tables indexed by `classes` (from table_classes() with
// EndView::of(m)), on options.threads threads. `est` scales the progress
// reports, which come from the calling thread only. Errors: "cancelled"
// when options.cancel is set. Ties go to the configuration of v enumerated
// first, as in run_dp_reference, so both return the same cost, bit for bit,
// and the same strategy, whatever the threads and the tuning; two
// exceptions: a step with groups where two members' partial sums differ but
// round to the same total (a group is stood for by its member of least
// partial sum), which can pick another strategy of the same cost; and
// repeated blocks skipped (DpTuning::repeat, on by default) on tables that
// are not whole numbers, where the cost agrees within 1e-13 of the tables'
// scale and a tie within rounding may go to another strategy
// (core/docs/performance.md, "Repeated blocks"; on whole numbers the skip
// is exact). Time: that of the steps run; a skipped stretch costs only its
// steps' signatures and the copy of its last crossing table. The edges'
// prices come from `prices` (made with the same configurations and
// EndView::of(m); several searches of one plan share it), or from prices
// kept for this run alone when it is null; the vertices' costs, pair
// matrices and sorted rows from `cache` (SearchCache), or made for this run
// when it is null. `open_last`: the result's open_cost and open_choice are
// filled for the vertex of the ordering's last step (the composition of
// repeated blocks, core/docs/pipeline.md, "Composing the repeated blocks":
// a block's cost to each configuration of its output stream).
Result<DpResult> run_dp(const Graph& g, const std::vector<ConfigSet>& configs, const Ordering& ord,
                        const TableClasses& classes, const ops::Machine& m, const SearchStats& est,
                        const PlanOptions& options, const DpTuning& tuning = {},
                        EdgePrices* prices = nullptr, SearchCache* cache = nullptr,
                        bool open_last = false);

// The same, computing the classes first.
Result<DpResult> run_dp(const Graph& g, const std::vector<ConfigSet>& configs, const Ordering& ord,
                        const ops::Machine& m, const SearchStats& est, const PlanOptions& options);

// For tests only: the program on tables indexed by the raw configurations of
// the dependent vertices (the engine before the classes), as the reference
// that run_dp must equal in cost and strategy (tests/classes_test.cpp).
Result<DpResult> run_dp_reference(const Graph& g, const std::vector<ConfigSet>& configs,
                                  const Ordering& ord, const ops::Machine& m,
                                  const SearchStats& est, const PlanOptions& options);

}  // namespace pase
