// Planning: the PaSE search for the per-layer parallelization of least cost.
//
// USAGE
//   Result<Graph> g = load_graph(text);
//   Result<Plan> p = plan(*g, Cluster{.devices = 16});
//   Result<Plan> e = evaluate(*g, Cluster{}, strategy);   // cost of a given strategy
//
// THE METHOD (Elango, "Automatic Parallelization Strategies for DNN Training",
// IPDPS 2021). Every vertex has a set of configurations (how many ways each
// dimension of its iteration space is split, core/docs/cost-model.md section 2). The cost
// of a strategy is the sum of the layer costs and the re-distribution costs of
// the tensor edges (section 3). plan() orders the vertices (GenerateSeq, paper
// Fig. 3, by default), then runs the dynamic program of paper Fig. 4 /
// recurrence (4): after vertex v(i) is processed, a table indexed by the
// configurations of its dependent set D(i) holds the least cost of the processed
// part of the graph that touches it (configurations that this part sees alike
// share one entry: core/docs/performance.md, "Equivalence classes"). The
// table of the last vertex holds the optimum; the strategy is recovered from
// per-table arg-min records.
//
// COMPLEXITY
//   Time O(sum over i of |configs(v(i))| * prod over u in D(i) of |classes(u, i)|)
//   (the "pairs" of SearchStats), where classes(u, i) are u's configurations
//   told apart by what the edges between u and the processed part see of them
//   (at most |configs(u)|; core/docs/performance.md, "Equivalence classes"),
//   less where a step runs its innermost rows over groups of v's
//   configurations: (|T_i| / states(w)) * (|configs(v)| + states(w) *
//   groups) for its innermost vertex w ("Groups and level order"); both are
//   in "pairs". Memory: the live cost tables (8 bytes an entry) plus every
//   arg-min table (2 bytes an entry). Both are computed before anything is
//   allocated; a plan over PlanOptions::max_memory is refused.
//
// DETERMINISM AND TIE-BREAKING
//   Results are deterministic for a given graph, cluster and options. When a
//   vertex's configurations tie for a table entry, the one enumerated first
//   wins (enumeration: first dimension outermost, splits ascending; with
//   groups, among the configurations of least partial sum in each group, so
//   a member whose larger partial sum rounds to the same total is passed
//   over; the cost is the same), so among
//   several optimal strategies the one returned depends on the order; the cost
//   does not. GenerateSeq breaks ties between vertices by the lowest id. The
//   reported cost is evaluate() of the returned strategy (it equals the
//   program's optimum up to summation order, about 1e-15 relative).
//
// ERRORS
//   Bad cluster values, a Graph not made by build_graph() / load_graph() /
//   build_model(), strategies of the wrong shape, too many configurations,
//   a plan over the memory limit and cancellation come back as Error.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pase/cluster.hpp"
#include "pase/graph.hpp"
#include "pase/result.hpp"

namespace pase {

using Config = std::vector<int64_t>;   // one split per dimension of a vertex
using Strategy = std::vector<Config>;  // one configuration per vertex, by id

enum class Order : uint8_t {
  kGenSeq,    // paper Fig. 3: least dependent-set cardinality first
  kBfs,       // breadth-first from vertex 0 (the paper's comparison)
  kMinTable,  // least dependent-set table size (product of configuration counts)
};
const char* order_name(Order order);

// Options of the configuration enumeration (core/docs/cost-model.md section 2).
struct EnumOptions {
  bool pow2_only = false;    // only power-of-two splits (not the paper's)
  bool all_devices = false;  // only configurations whose splits multiply to devices
  // Only configurations a device mesh can express: splits whose product
  // divides the devices, the rest replicated (what a JAX program runs,
  // core/docs/export.md; --emit jax turns it on).
  bool mesh_only = false;
};

// How plan() searches (core/docs/bounded-search.md). kExact: the exact
// dynamic program, refused ("max_memory") when its tables exceed
// PlanOptions::max_memory. kBounded: rounds of the exact program over parts
// of the space, each within BoundedOptions; the plan comes with a proven
// lower bound (Plan::lower_bound) and is optimal only when it meets it.
// kAuto: exact when its tables fit max_memory, bounded otherwise.
enum class SearchMode : uint8_t { kAuto, kExact, kBounded };
const char* search_mode_name(SearchMode mode);

// The budget of the bounded search: each round's tables and pairs (the
// largest table of a round, in bytes with its arg-min records, and the
// round's (state, configuration) pairs, both counted on raw configurations
// before classes), and the number of rounds.
struct BoundedOptions {
  double round_table_bytes = 256.0 * (1 << 20);
  double round_pairs = 2e8;
  int max_rounds = 12;
};

// Progress of a running plan (plan(), plan_pipeline(), plan_json()): called
// on the planning thread, at most once per half percent, phase or half
// second, and once at the end with fraction 1. The fraction is the whole
// request's and never goes back: each search fills its share of it, and a
// sequence of searches of unknown length (the Lagrangian loop under a memory
// cap, the recomputations tried) gives each further search a share of what
// is left (core/docs/architecture.md, "Progress").
struct Progress {
  double fraction = 0;  // of the whole request, 0..1, never lower than before
  // Of the search running now: its steps done and in all, and the vertex
  // (a pipeline's: stage plans done and the most it may still need).
  int vertices_done = 0;
  int vertices_total = 0;
  int current_vertex = -1;
  // What runs now, e.g. "search 3 under the memory cap" or "pipeline: stage
  // plans"; "" before the first search.
  std::string phase;
  double elapsed_s = 0;      // since the request started
  double seconds_left = -1;  // estimated from elapsed_s and fraction; -1: not yet known
  // The proven gap of the best plan found so far, relative: (its cost - the
  // lower bound proven) / its cost, as a pipeline search closes it; -1: not
  // known (no plan yet, or a search that proves no bound on its way).
  double gap = -1;
  // A note on the request as a whole, given before a long search starts
  // (e.g. "a long search: ..."; core/docs/performance.md, "Deep models")
  // and carried by every report after it; "" when there is none.
  std::string note;
};

inline constexpr double kMaxTimeLimitSeconds = 366.0 * 86400;

struct PlanOptions {
  Order order = Order::kGenSeq;
  // Bytes for the tables, and separately for the enumerated configurations;
  // 0 = no limit (tables are still refused past 2^62 bytes).
  uint64_t max_memory = uint64_t{4} << 30;
  EnumOptions enumeration;
  std::function<void(const Progress&)> on_progress;  // may be empty
  const std::atomic<bool>* cancel =
      nullptr;  // checked per vertex and every 2^20 pairs; may be null
  // Seconds the request may run (0: no limit), from the call of the entry
  // point (plan(), plan_pipeline(), plan_answers(), plan_json()), checked
  // where `cancel` is. plan_pipeline() and plan_answers() that reach it
  // return the best plan found with the lower bound proven
  // (Plan::lower_bound, PipelineInfo::stopped, PlanAnswers::gap;
  // core/docs/pipeline.md, "A time limit"); with none found, and plan()
  // always, an error at "time_limit_s".
  double time_limit_s = 0;  // at most kMaxTimeLimitSeconds (a year)
  // The proven gap the request accepts, a fraction in [0, 1) (0: none, the
  // least plan): plan_pipeline() and plan_answers() leave unsearched the
  // (S, M) pairs and ZeRO stages whose floors are within it of the best
  // step found, so the answer is at most that much slower than the best
  // possible, and says by how much (core/docs/pipeline.md, "A time limit").
  double max_gap = 0;
  // The instant time_limit_s ends, set by the entry point (the nested
  // calls keep it); max(): none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  SearchMode search = SearchMode::kAuto;
  BoundedOptions bounded;
  // Threads for the dynamic program's tables; 1 = the calling thread only.
  // The result does not depend on it. default_threads() gives every core.
  int threads = 1;
};

// Every core this process may use (1 where threads are not available, as in
// a WebAssembly module built without them; in the threaded module, at most
// the threads it started with: navigator.hardwareConcurrency, at most 8).
int default_threads();

// Sizes are doubles: exact below 2^53, and an order whose tables could never
// be built (breadth-first on InceptionV3: ~1e19 entries) reports its size
// instead of overflowing.
struct SearchStats {
  Order order = Order::kGenSeq;
  int max_dependent_set = 0;  // largest |D(i)|
  double table_entries = 0;   // sum of all table sizes
  double largest_table = 0;   // entries of the largest table
  double pairs = 0;           // (dependent-set state, configuration or group) pairs visited
  double peak_bytes = 0;      // predicted peak of table memory
  // The same two for tables indexed by raw configurations, before they are
  // reduced to equivalence classes (core/docs/performance.md).
  double raw_pairs = 0;
  double raw_peak_bytes = 0;
  uint64_t configurations = 0;  // sum over vertices of their configuration counts
  double time_s = 0;            // wall time of plan()
  int searches = 0;             // dynamic-program runs of plan() (several under a memory cap)
  int threads = 1;              // PlanOptions::threads of plan()
  // The bounded search (SearchMode): whether the plan used it, its rounds,
  // the most vertices a round held at one configuration, and the table
  // memory the exact search would have needed. The size fields above are
  // then the largest (max_dependent_set, largest_table, peak_bytes) or the
  // sum (table_entries, pairs) over its rounds.
  bool bounded = false;
  int rounds = 0;
  int fixed_vertices = 0;
  double exact_peak_bytes = 0;
};

struct Plan {
  double cost = 0;                                   // F(G, strategy), FLOP-equivalents
  double step_time_s = 0;                            // cost / (tflops * 1e12)
  Strategy strategy;                                 // by vertex id
  std::vector<LayerCost> layers;                     // by vertex id
  std::vector<double> edge_costs;                    // by Graph::edges index
  double compute = 0, comm = 0, redistribution = 0;  // the total, by part
  MemoryBytes memory;                                // device 0's, summed over vertices
  std::vector<double> vertex_memory;                 // device 0's bytes, by vertex id
  // Planned under a memory cap (Cluster::memory_gib): the capacity in bytes
  // (what the plan may use, Cluster::capacity_bytes()), whether it fits, a
  // proven lower bound on the cost of every enumerated strategy that fits,
  // and whether the plan's cost meets it.
  // Without a cap: capacity 0, fits, bound = cost, optimal; except after the
  // bounded search (SearchStats::bounded), whose bound is below the cost
  // unless it proves the plan optimal.
  double capacity_bytes = 0;
  bool fits = true;
  double lower_bound = 0;
  bool optimal = true;
  SearchStats search;
  // The training the plan is priced with when the search chose part of it
  // (Recompute::kAuto: the recomputation of each decoder block); empty when
  // it is the cluster's.
  std::optional<Training> training;
};

// The strategy of least cost; with Cluster::memory_gib, the least-cost
// strategy found whose device-0 memory fits, with the bound of Plan
// (core/docs/cluster.md, "Planning under a memory cap"); no strategy that
// fits is an error at "cluster.memory_gib" naming the least memory reachable.
// Under a cap a plan runs several searches, each of the cost of COMPLEXITY
// above and each filling its share of on_progress's fraction (Progress):
// the least cost, then,
// if that does not fit, the least memory and one per breakpoint of the
// Lagrangian dual (at most 100; a handful in practice). With
// Training::recompute kAuto (the practice model) it plans again per
// recomputation tried, up to 3 + log2(decoder blocks) plans, and returns
// the fastest that fits with Plan::training set to the choice
// (core/docs/practice-model.md, "Recomputation").
// Errors: invalid cluster, a vertex with more
// than kMaxConfigurations configurations, configurations or tables over
// max_memory (where "max_memory": "the bfs order needs 98.6 GiB of tables
// (largest dependent set 7, ...), more than the limit of 4.0 GiB; ..."),
// cancellation ("cancelled").
Result<Plan> plan(const Graph& graph, const Cluster& cluster, const PlanOptions& options = {});

// What plan() would need, without running the search: the ordering's
// dependent sets, table sizes, pairs and predicted peak memory (time_s is the
// time of the estimate). Same errors as plan() except the memory limit.
Result<SearchStats> estimate(const Graph& graph, const Cluster& cluster,
                             const PlanOptions& options = {});

// The cost and memory of a given strategy (under a cap: whether it fits;
// `optimal` is false and `lower_bound` its cost, as a given strategy proves
// nothing). Every configuration must have one split per
// dimension, each split a positive divisor of its dimension (1 for pinned
// dimensions), and their product at most the number of devices; it need not be
// one the enumeration yields. Errors name the entry: "strategy[3][1]".
Result<Plan> evaluate(const Graph& graph, const Cluster& cluster, const Strategy& strategy);

// The configurations of one vertex, in enumeration order.
Result<std::vector<Config>> enumerate_configs(const Graph& graph, int vertex,
                                              const Cluster& cluster,
                                              const EnumOptions& options = {});

inline constexpr int kMaxConfigurations = 65535;

}  // namespace pase
