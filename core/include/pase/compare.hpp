// Baselines: what a PaSE plan gains over the strategies users would pick
// otherwise, on the same cost model and the same machine (the comparison of
// the PaSE paper, Elango, IPDPS 2021, Fig. 6 and Table I). core/docs/baselines.md
// gives every rule below with the per-network results.
//
// USAGE
//   Result<Comparison> c = compare(graph, Cluster{.devices = 16});
//   c->pase.speedup;                      // data-parallel cost / PaSE cost
//   Result<StrategyReport> dp = data_parallel(graph, cluster);
//   std::string doc = compare_json(R"({"model": "alexnet", "cluster": {"devices": 8}})");
//
// THE STRATEGIES
//   pase           plan(): the least-cost strategy over the enumeration.
//   data_parallel  every vertex splits only its batch dimension (see
//                  batch_dimensions()) across all devices.
//   expert         the hand-designed strategy of the paper's comparison, for
//                  the built-in networks only (see expert_kind()):
//                    OWT ("one weird trick", Krizhevsky 2014) for alexnet,
//                    resnet101, inception3; GNMT-style for rnnlm;
//                    Mesh-TensorFlow for transformer.
//                  A custom graph has none.
//   mcmc           FlexFlow-style Markov chain Monte Carlo search (Jia et al.,
//                  SysML 2019) over the same configurations and cost.
//
// Every strategy is priced by evaluate(), so all four costs are the same
// formula F(G, strategy) of core/docs/cost-model.md section 3. Speedups are
// data-parallel cost / strategy cost.
//
// UNDER A MEMORY CAP (Cluster::memory_gib, core/docs/cluster.md)
//   pase is the cheapest strategy plan() finds that fits; the baselines are
//   built and searched without the cap and report whether they fit
//   (Plan::fits). A baseline cheaper than pase is then noted as not fitting,
//   or, when it fits and pase's plan is not proven optimal, as a strategy the
//   search under the cap missed.
//
// OUTSIDE THE ENUMERATION
//   The cost formulas are defined for any split that divides, but plan() only
//   searches the enumeration (core/docs/cost-model.md section 2: a split e of a size d
//   needs d / e >= cutoff). A baseline may use a configuration plan() never
//   considers (e.g. batch 128 split 64 ways under cutoff 4). Such a baseline is
//   still priced exactly; its vertices are listed in
//   StrategyReport::outside_enumeration, and when it then costs less than the
//   PaSE plan, Comparison::notes says so instead of hiding it.
//
// DETERMINISM
//   Everything is deterministic except the MCMC time limit: with the same
//   options and seed, mcmc_search() makes the same proposals and the same
//   decisions (std::mt19937_64, with integer and real draws derived from its
//   output by fixed formulas, not by library distributions), so it reproduces
//   its result exactly unless the time limit stops it first. Use
//   mcmc_time_limit_s = 0 for runs that must be reproducible.
//
// ERRORS
//   Bad input comes back as Error with `where` naming the field
//   ("cluster.devices", "mcmc.iterations"); nothing throws. plan() errors (a
//   plan over the memory limit) are passed on unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pase/graph.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase {

// Options of the comparison. `plan` is used for the PaSE search and defines
// the enumeration that the outside-the-enumeration marks and the MCMC search
// use, so all strategies talk about the same configurations.
struct CompareOptions {
  PlanOptions plan;
  // A plan with a pipeline (core/docs/pipeline.md) beside the others; "pase"
  // stays the best plan without one, so the two show what pipelining buys.
  std::optional<PipelineOptions> pipeline;

  // MCMC (FlexFlow): at most `mcmc_iterations` proposals (0: no MCMC run) and
  // `mcmc_time_limit_s` seconds (0: no time limit); whichever comes first. A
  // proposal costs about a microsecond, so 100000 take at most about 0.1 s
  // on the benchmarks; the stall rule often ends the search sooner.
  uint64_t mcmc_iterations = 100000;
  double mcmc_time_limit_s = 5.0;
  uint64_t mcmc_seed = 1;
  // Inverse temperature of the Metropolis rule, per vertex: a proposal that
  // raises the cost by delta is accepted with probability
  // exp(-beta * delta / (C_best / n)), C_best the best cost so far and n the
  // number of vertices. So one beta suits 10- and 200-vertex graphs, and the
  // chain cools as the best improves. With 10, a move uphill by a tenth of an
  // average vertex's cost is accepted with probability 1/e. Chosen on the
  // benchmark networks (core/docs/baselines.md): much lower and the chain wanders
  // uphill on 200-vertex graphs; much higher and it stops in the first local
  // minimum.
  double mcmc_beta = 10.0;
  // FlexFlow's rule: stop when the best strategy has not improved during the
  // last half of the search (counted in iterations, so it is deterministic),
  // checked once at least `mcmc_min_iterations` proposals were made.
  bool mcmc_stop_when_stalled = true;
  uint64_t mcmc_min_iterations = 10000;
};

// One priced strategy.
struct StrategyReport {
  std::string name;         // "pase", "data_parallel", "expert", "mcmc"
  std::string description;  // one line, e.g. "Mesh-TensorFlow, mesh 16 x 4 (batch x model)"
  Plan plan;                // evaluate()d (pase: the plan() result with its search stats)
  double speedup = 0;       // data-parallel cost / plan.cost (set by compare())
  // Vertex ids whose configuration the enumeration does not contain, ascending.
  std::vector<int> outside_enumeration;
  // Marks in words: a batch not divisible by the device count, configurations
  // outside the enumeration, the MCMC starting point, ...
  std::vector<std::string> notes;

  bool in_enumeration() const { return outside_enumeration.empty(); }
};

// ---- Data parallelism ---------------------------------------------------------

// The position of each vertex's batch dimension in its configuration, by
// vertex id. The rule, in order:
//   1. FC, Conv, Pool, Embedding, LSTM: the dimension named "b" (FC: position
//      0, the first input dimension; Conv/Pool/Embedding: 0; LSTM: 2).
//   2. Einsum whose equation has the letter 'b': that letter's position.
//   3. Any other vertex: the position that the batch dimension of its first
//      input produced by a layer maps onto (the producer's output dimension
//      whose split is exactly the producer's batch split, followed through the
//      slot's tensor map), when that is a single position.
//   4. Otherwise position 0 (the dimension the format names "b").
// Rule 3 is what makes a Stack at axis 0 (its position 0 is the new axis of
// size 1) and an Unstack at axis 0 use the real batch. For every built-in
// network the result is position 0 except LSTM (2), the Transformer's
// Stack/Unstack and "s..." Einsums (1).
// Complexity O(vertices + edges); never fails.
std::vector<int> batch_dimensions(const Graph& graph);

// Data parallelism: vertex v splits its batch dimension b(v) into the largest
// divisor of its size that is at most the device count P, every other
// dimension 1. Marks (notes): a batch size not divisible by P (fewer than P
// devices are used); configurations outside the enumeration (still priced).
// Errors: an invalid cluster, an enumeration that fails (too many
// configurations). Complexity: one evaluate() plus one enumeration.
Result<StrategyReport> data_parallel(const Graph& graph, const Cluster& cluster,
                                     const CompareOptions& options = {});

// ---- Expert strategies ----------------------------------------------------------

enum class ExpertKind : uint8_t {
  kNone,            // a custom graph: no expert strategy
  kOwt,             // alexnet, resnet101, inception3
  kGnmt,            // rnnlm
  kMeshTensorFlow,  // transformer
};

// Which expert strategy applies. A graph is a built-in network when its name
// is the network's name ("alexnet", ...) and its structure matches the
// built-in one: the same number of vertices and edges and, vertex by vertex,
// the same op and dimension names (the batch size and cutoff may differ). So
// a file written by `pase export` gets the expert strategy too; a renamed or
// edited copy does not.
ExpertKind expert_kind(const Graph& graph);
const char* expert_kind_name(ExpertKind kind);  // "none", "owt", "gnmt", "mesh_tensorflow"

// The expert strategy (P devices; "divisor(x, n)" is the largest divisor of
// x that is at most n; unlisted dimensions are 1):
//   OWT: every vertex data parallel (as data_parallel()), except each FC,
//     which splits only its output units: n = divisor(units, P).
//   GNMT: every vertex data parallel, except the LSTM, which puts its layers
//     on different devices and splits the batch over the rest:
//     l = divisor(L, P), b = divisor(batch, P / l).
//   Mesh-TensorFlow: a 2-D mesh r x c = P; the batch dimension of every vertex
//     splits divisor(size, r) ways; the "model" dimension splits
//     divisor(size, c) ways: the heads h (attention Einsums), the feed-forward
//     f, the vocabulary v (Embedding, output Einsum) and, along the first
//     input, the same dimension of the Unstack, Softmax and loss that follow
//     them. Every mesh r x c = P is priced and the cheapest is used (ties: the
//     smaller c), as a user tuning the mesh shape would; the description names
//     it.
// Errors: ExpertKind::kNone ("no expert strategy for custom graph 'x'", where
// "graph"), an invalid cluster, an enumeration failure.
Result<StrategyReport> expert_strategy(const Graph& graph, const Cluster& cluster,
                                       const CompareOptions& options = {});

// ---- MCMC search (FlexFlow) --------------------------------------------------

struct McmcStats {
  uint64_t iterations = 0;      // proposals made
  uint64_t accepted = 0;        // proposals accepted by the Metropolis rule
  uint64_t improvements = 0;    // times the best strategy improved
  uint64_t best_iteration = 0;  // proposal that found the best (0: the start)
  double start_cost = 0;        // cost of the starting strategy
  std::string start;            // "data_parallel" or "expert"
  std::string stop;             // "iterations", "time", "stalled", "no_moves"
  uint64_t seed = 0;
  double beta = 0;
  double time_s = 0;  // wall time of the search
};

struct McmcResult {
  StrategyReport report;  // name "mcmc": the best strategy found
  McmcStats stats;
};

// The search: the state is one enumerated configuration per vertex. It starts
// from data parallelism, or from the expert strategy when that is cheaper,
// each first mapped into the enumeration (a configuration outside it is
// replaced, per vertex, by the enumerated one nearest in log2 distance,
// sum over dimensions of |log2 c - log2 c'|; ties: enumeration order). Each
// iteration picks a vertex uniformly among those with two or more
// configurations and a different configuration of it uniformly, prices the
// change as a delta (the vertex's cost and its incident edges only, edge costs
// computed on demand, so memory is O(configurations + edges)) and accepts it
// by the Metropolis rule (CompareOptions::mcmc_beta). It stops after
// mcmc_iterations proposals, after mcmc_time_limit_s, or by the stall rule.
// The best strategy is priced again by evaluate(); its cost is never below the
// optimum of plan() because both search the same enumeration.
// Complexity: O(iterations * (degree + dims)) after O(configurations) set-up.
// Errors: an invalid cluster, an enumeration failure, cancellation
// (CompareOptions::plan.cancel, checked every 256 iterations).
Result<McmcResult> mcmc_search(const Graph& graph, const Cluster& cluster,
                               const CompareOptions& options = {});

// ---- The comparison ----------------------------------------------------------------

struct Comparison {
  Cluster cluster;
  StrategyReport pase;
  StrategyReport data_parallel;
  std::optional<StrategyReport> expert;  // none for a custom graph
  std::optional<StrategyReport> mcmc;    // none when mcmc_iterations is 0
  // With CompareOptions::pipeline: the pipeline plan ("pipeline"; its plan
  // over the micro-batch graph of pipeline_plan, cost = the step's T).
  std::optional<StrategyReport> pipeline;
  std::optional<PipelinePlan> pipeline_plan;
  McmcStats mcmc_stats;
  ExpertKind expert_kind = ExpertKind::kNone;
  // Findings: a baseline outside the enumeration that costs less than PaSE,
  // why there is no expert strategy, ...
  std::vector<std::string> notes;
};

// Runs plan(), data_parallel(), expert_strategy() where defined and
// mcmc_search() unless disabled, and fills every speedup. Errors: those of the
// four (the first one met), e.g. a plan over the memory limit.
Result<Comparison> compare(const Graph& graph, const Cluster& cluster,
                           const CompareOptions& options = {});

// ---- JSON ------------------------------------------------------------------------------

// {"graph": name, "parameters": n, "cluster": {...},
//  "strategies": {"pase": {...}, "data_parallel": {...}, "expert": {...}, "mcmc": {...}},
//  "notes": [...]}
// Each strategy is the plan-result document of plan_to_json() plus "strategy",
// ("pipeline", with CompareOptions::pipeline: pipeline_plan_to_json()'s),
// "description", "speedup", "in_enumeration", "outside_enumeration" and
// "notes"; "mcmc" also has "mcmc" (McmcStats). "expert" and "mcmc" are absent
// when not run.
std::string comparison_to_json(const Graph& graph, const Comparison& comparison);

// A whole request, for the WebAssembly module: a plan request (core/docs/formats.md,
// without "strategy") plus an optional
//   "mcmc": {"iterations": N, "time_limit_s": T, "seed": S, "beta": B,
//            "stop_when_stalled": true, "min_iterations": M}
// with CompareOptions' defaults. Returns comparison_to_json() or an error
// document {"error": {"message", "where"}}; never throws.
std::string compare_json(std::string_view request_json);

// The table of a device sweep (the paper's Fig. 6), one comparison per device
// count: {"graph": name, "parameters": n, "sweep": [{"devices": P, "strategies": {name:
// {"cost", "step_time_s", "speedup", "in_enumeration"}}, "notes": [...]}]}.
std::string sweep_to_json(const Graph& graph, const std::vector<Comparison>& comparisons);

}  // namespace pase
