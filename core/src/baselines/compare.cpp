// The comparison of PaSE with its baselines (compare.hpp) and the helpers the
// baselines share (baselines.hpp). Its JSON documents: api/compare_json.cpp.
#include "pase/compare.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "baselines/baselines.hpp"
#include "cost/configurations.hpp"
#include "model/cost_model.hpp"
#include "pase/plan.hpp"
#include "util/text.hpp"

namespace pase {

// ---- Shared helpers (baselines.hpp) ---------------------------------------------

namespace baselines {

std::vector<int> follow_dimension(const Graph& graph,
                                  const std::function<int(const Vertex&)>& seed) {
  return pase::follow_dimension(graph, *graph.model,
                                [&](int v) { return seed(graph.vertices[v]); });
}

int64_t largest_divisor_at_most(int64_t n, int64_t limit) {
  if (n <= 1 || limit <= 1) return 1;
  if (limit >= n) return n;
  // Divisors come in pairs (d, n / d); scan the small ones up to sqrt(n).
  int64_t best = 1;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    if (d <= limit && d > best) best = d;
    if (n / d <= limit && n / d > best) best = n / d;
  }
  return best;
}

int64_t find_config(const ConfigSet& set, const Config& c) {
  if (static_cast<size_t>(set.dims) != c.size()) return -1;
  for (size_t i = 0; i < set.size(); ++i) {
    const int64_t* x = set.at(i);
    bool same = true;
    for (int d = 0; d < set.dims && same; ++d) same = x[d] == c[d];
    if (same) return static_cast<int64_t>(i);
  }
  return -1;
}

int64_t nearest_config(const ConfigSet& set, const Config& c) {
  int64_t best = 0;
  double best_distance = INFINITY;
  for (size_t i = 0; i < set.size(); ++i) {
    const int64_t* x = set.at(i);
    double distance = 0;
    for (int d = 0; d < set.dims && static_cast<size_t>(d) < c.size(); ++d)
      distance +=
          std::fabs(std::log2(static_cast<double>(x[d])) - std::log2(static_cast<double>(c[d])));
    if (distance < best_distance) {
      best_distance = distance;
      best = static_cast<int64_t>(i);
    }
  }
  return best;
}

std::string number_text(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", x);
  return buffer;
}

namespace {

// Why the enumeration (core/docs/cost-model.md section 2) leaves configuration `c` out.
std::string outside_reason(const Vertex& v, const VertexModel& m, const Config& c, int64_t cutoff) {
  for (size_t d = 0; d < c.size(); ++d)
    if (m.pinned[d] && c[d] != 1) return "dimension " + v.dims[d] + " is pinned";
  for (size_t d = 0; d < c.size(); ++d) {
    if (c[d] > 1 && v.dom[d] / c[d] < cutoff) {
      return "dimension " + v.dims[d] + " of size " + std::to_string(v.dom[d]) + " split " +
             std::to_string(c[d]) + " ways leaves " + std::to_string(v.dom[d] / c[d]) +
             " per device, below the cutoff " + std::to_string(cutoff);
    }
  }
  return "excluded by the enumeration options or the contiguity rule of Ravel/Unravel";
}

}  // namespace

Result<StrategyReport> make_report(const Graph& graph, const Cluster& cluster,
                                   const std::vector<ConfigSet>& configs, std::string name,
                                   std::string description, const Strategy& strategy,
                                   std::vector<std::string> notes) {
  Result<Plan> priced = evaluate(graph, cluster, strategy);
  if (!priced) return priced.error();
  StrategyReport r;
  r.name = std::move(name);
  r.description = std::move(description);
  r.plan = std::move(*priced);
  r.notes = std::move(notes);
  for (const Vertex& v : graph.vertices)
    if (find_config(configs[v.id], strategy[v.id]) < 0) r.outside_enumeration.push_back(v.id);
  if (!r.outside_enumeration.empty()) {
    const Vertex& first = graph.vertices[r.outside_enumeration.front()];
    r.notes.push_back(
        std::to_string(r.outside_enumeration.size()) + " of " +
        std::to_string(graph.vertices.size()) +
        " vertices use configurations outside the enumeration that plan() "
        "searches (priced all the same); first " +
        vertex_label(first) + ": " +
        outside_reason(first, model_of(graph, first.id), strategy[first.id], graph.cutoff));
  }
  return r;
}

}  // namespace baselines

// ---- The comparison -------------------------------------------------------------------

Result<Comparison> compare(const Graph& graph, const Cluster& cluster,
                           const CompareOptions& options) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  Comparison c;
  c.cluster = cluster;

  Result<Plan> best = plan(graph, cluster, options.plan);
  if (!best) return best.error();
  c.pase.name = "pase";
  c.pase.description =
      cluster.memory_gib > 0
          ? std::string("PaSE: the cheapest strategy the dynamic program finds that fits in ") +
                baselines::number_text(cluster.memory_gib) + " GiB per device (" +
                order_name(options.plan.order) + " order)"
          : std::string("PaSE: the least-cost strategy of the dynamic program (") +
                order_name(options.plan.order) + " order)";
  c.pase.plan = std::move(*best);

  Result<StrategyReport> dp = data_parallel(graph, cluster, options);
  if (!dp) return dp.error();
  c.data_parallel = std::move(*dp);

  c.expert_kind = expert_kind(graph);
  if (c.expert_kind != ExpertKind::kNone) {
    Result<StrategyReport> expert = expert_strategy(graph, cluster, options);
    if (!expert) return expert.error();
    c.expert = std::move(*expert);
  } else {
    c.notes.push_back("no expert strategy: " + quoted_text(graph.name) +
                      " is not one of the paper's networks (alexnet, resnet101, inception3, "
                      "rnnlm, transformer), which alone have one");
  }

  if (options.mcmc_iterations > 0) {
    Result<McmcResult> mcmc = mcmc_search(graph, cluster, options);
    if (!mcmc) return mcmc.error();
    c.mcmc = std::move(mcmc->report);
    c.mcmc_stats = std::move(mcmc->stats);
  }

  if (options.pipeline) {
    Result<PipelinePlan> piped = plan_pipeline(graph, cluster, *options.pipeline, options.plan);
    if (!piped) return piped.error();
    StrategyReport r;
    r.name = "pipeline";
    r.description = pipeline_label(piped->pipeline) + " over " +
                    std::to_string(piped->pipeline.stage.front().devices) +
                    " devices a stage, micro-batch " + std::to_string(piped->pipeline.micro_batch);
    r.plan = piped->plan;
    c.pipeline = std::move(r);
    c.pipeline_plan = std::move(*piped);
  }

  const double base = c.data_parallel.plan.cost;
  auto speedup = [base](double cost) {
    if (cost > 0) return base / cost;
    return base > 0 ? INFINITY : 1.0;
  };
  std::vector<StrategyReport*> all = {&c.pase, &c.data_parallel};
  if (c.expert) all.push_back(&*c.expert);
  if (c.mcmc) all.push_back(&*c.mcmc);
  for (StrategyReport* r : all) r->speedup = speedup(r->plan.cost);
  if (c.pipeline) c.pipeline->speedup = speedup(c.pipeline->plan.cost);

  // A baseline cheaper than the optimum can only use configurations the
  // enumeration leaves out; say so rather than hide it. Under a memory cap
  // (core/docs/cluster.md, "Planning under a memory cap") the baselines are
  // priced without it: one cheaper than the plan may not fit, or, when the
  // plan is not proven optimal, be a fitting strategy the search missed.
  const double optimum = c.pase.plan.cost;
  const bool capped = c.pase.plan.capacity_bytes > 0;
  // The GPU's memory and, under the practice model, what a plan may use of
  // it (less the framework's reserve and the headroom).
  std::string cap_text =
      capped ? baselines::number_text(cluster.memory_gib) + " GiB per device" : "";
  if (capped && c.pase.plan.capacity_bytes < cluster.memory_gib * 0x1p30) {
    cap_text += " (";
    cap_text += baselines::number_text(c.pase.plan.capacity_bytes / 0x1p30);
    cap_text += " GiB of it for a plan)";
  }
  for (size_t i = 1; i < all.size(); ++i) {
    const StrategyReport& r = *all[i];
    if (!(r.plan.cost < optimum * (1 - 1e-12))) continue;
    const std::string by = baselines::number_text(100 * (optimum - r.plan.cost) / optimum);
    if (!r.plan.fits) {
      c.notes.push_back(r.name + " costs " + by + "% less than pase but does not fit in " +
                        cap_text + " (it needs " + bytes_text(r.plan.memory.total()) + ")");
    } else if (!r.in_enumeration()) {
      c.notes.push_back(r.name + " costs " + by +
                        "% less than pase: it uses configurations outside the enumeration that "
                        "plan() searches (" +
                        std::to_string(r.outside_enumeration.size()) +
                        " vertices; see its notes); with the cutoff lowered, plan() would find "
                        "them");
    } else if (!c.pase.plan.optimal) {
      const std::string which =
          c.pase.plan.search.bounded ? "the bounded search" : "the search under the memory cap";
      c.notes.push_back(r.name + " costs " + by + "% less than pase" +
                        (capped ? " and fits in " + cap_text : std::string()) + ": " + which +
                        " did not find it (pase's plan is not proven optimal)");
    } else {
      c.notes.push_back("internal inconsistency: " + r.name + " costs " + by +
                        "% less than pase although every configuration is in the enumeration");
    }
  }
  return c;
}

}  // namespace pase
