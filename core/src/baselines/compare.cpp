// The comparison of PaSE with its baselines (compare.hpp), the helpers the
// baselines share (baselines.hpp) and the JSON documents of a comparison.
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
#include "pase/json_api.hpp"
#include "pase/plan.hpp"
#include "util/json_util.hpp"
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
    c.notes.push_back("no expert strategy: '" + graph.name +
                      "' is not one of the paper's networks (alexnet, resnet101, inception3, "
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
  const std::string cap_text =
      capped ? baselines::number_text(cluster.memory_gib) + " GiB per device" : "";
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

// ---- JSON ------------------------------------------------------------------------------

namespace {

using json_detail::Json;

Json strategy_json(const Graph& graph, const Cluster& cluster, const StrategyReport& r) {
  Json j = Json::object();
  j["strategy"] = r.name;
  j["description"] = r.description;
  j["speedup"] = r.speedup;
  // plan_to_json() is the one writer of plan results; its document is
  // embedded field by field.
  Result<Json> plan_doc = json_detail::parse_document(plan_to_json(graph, cluster, r.plan));
  if (plan_doc && plan_doc->is_object())
    for (auto it = plan_doc->begin(); it != plan_doc->end(); ++it) j[it.key()] = it.value();
  j["in_enumeration"] = r.in_enumeration();
  j["outside_enumeration"] = r.outside_enumeration;
  j["notes"] = r.notes;
  return j;
}

Json mcmc_stats_json(const McmcStats& s) {
  Json j = Json::object();
  j["iterations"] = s.iterations;
  j["accepted"] = s.accepted;
  j["improvements"] = s.improvements;
  j["best_iteration"] = s.best_iteration;
  j["start"] = s.start;
  j["start_cost"] = s.start_cost;
  j["stop"] = s.stop;
  j["seed"] = s.seed;
  j["beta"] = s.beta;
  j["time_s"] = s.time_s;
  return j;
}

Result<CompareOptions> mcmc_options_from_json(const Json& value, CompareOptions options) {
  const std::string where = "mcmc";
  if (!value.is_object()) return json_detail::type_error("an object", value, where);
  json_detail::ObjectReader reader(value, where);
  reader.allow_only(
      {"iterations", "time_limit_s", "seed", "beta", "stop_when_stalled", "min_iterations"});
  int64_t iterations = static_cast<int64_t>(options.mcmc_iterations);
  int64_t seed = static_cast<int64_t>(options.mcmc_seed);
  int64_t min_iterations = static_cast<int64_t>(options.mcmc_min_iterations);
  auto non_negative_number = [](const Json& v, const std::string& w) -> Result<double> {
    Result<double> d = json_detail::to_number(v, w);
    if (d && *d < 0) return json_detail::type_error("a non-negative number", v, w);
    return d;
  };
  reader.read("iterations", iterations, json_detail::to_non_negative_int);
  reader.read("time_limit_s", options.mcmc_time_limit_s, non_negative_number);
  reader.read("seed", seed, json_detail::to_non_negative_int);
  reader.read("beta", options.mcmc_beta, non_negative_number);
  reader.read("stop_when_stalled", options.mcmc_stop_when_stalled, json_detail::to_bool);
  reader.read("min_iterations", min_iterations, json_detail::to_non_negative_int);
  if (!reader.ok()) return reader.error();
  options.mcmc_iterations = static_cast<uint64_t>(iterations);
  options.mcmc_seed = static_cast<uint64_t>(seed);
  options.mcmc_min_iterations = static_cast<uint64_t>(min_iterations);
  return options;
}

std::string compare_request(std::string_view request_json) {
  Result<Json> doc = json_detail::parse_document(request_json);
  if (!doc) return error_to_json(doc.error());
  CompareOptions options;
  if (doc->is_object()) {
    if (doc->contains("strategy"))
      return error_to_json(Error{"a comparison takes no strategy (use evaluate)", "strategy"});
    // "mcmc" is ours; the rest is a plan request, read by its own parser.
    auto it = doc->find("mcmc");
    if (it != doc->end()) {
      Result<CompareOptions> read = mcmc_options_from_json(*it, options);
      if (!read) return error_to_json(read.error());
      options = std::move(*read);
      doc->erase(it);
    }
  }
  Result<PlanRequest> request = parse_plan_request(json_detail::dump_compact(*doc));
  if (!request) return error_to_json(request.error());
  options.plan = std::move(request->options);
  options.pipeline = request->pipeline;
  Result<Comparison> result = compare(request->graph, request->cluster, options);
  if (!result) return error_to_json(result.error());
  return comparison_to_json(request->graph, *result);
}

}  // namespace

std::string comparison_to_json(const Graph& graph, const Comparison& c) {
  Json j = Json::object();
  j["graph"] = graph.name;
  j["parameters"] = graph.parameters;
  j["cluster"] = json_detail::cluster_to_json(c.cluster);
  j["expert_kind"] = expert_kind_name(c.expert_kind);
  Json strategies = Json::object();
  strategies["pase"] = strategy_json(graph, c.cluster, c.pase);
  strategies["data_parallel"] = strategy_json(graph, c.cluster, c.data_parallel);
  if (c.expert) strategies["expert"] = strategy_json(graph, c.cluster, *c.expert);
  if (c.mcmc) {
    strategies["mcmc"] = strategy_json(graph, c.cluster, *c.mcmc);
    strategies["mcmc"]["mcmc"] = mcmc_stats_json(c.mcmc_stats);
  }
  if (c.pipeline && c.pipeline_plan) {
    Json piped = Json::object();
    piped["strategy"] = c.pipeline->name;
    piped["description"] = c.pipeline->description;
    piped["speedup"] = c.pipeline->speedup;
    Result<Json> doc =
        json_detail::parse_document(pipeline_plan_to_json(c.cluster, *c.pipeline_plan));
    if (doc && doc->is_object())
      for (auto it = doc->begin(); it != doc->end(); ++it) piped[it.key()] = it.value();
    piped["in_enumeration"] = true;
    piped["outside_enumeration"] = Json::array();
    piped["notes"] = Json::array();
    strategies["pipeline"] = std::move(piped);
  }
  j["strategies"] = std::move(strategies);
  j["notes"] = c.notes;
  return json_detail::dump_pretty(j) + "\n";
}

std::string sweep_to_json(const Graph& graph, const std::vector<Comparison>& comparisons) {
  Json rows = Json::array();
  for (const Comparison& c : comparisons) {
    Json strategies = Json::object();
    auto add = [&strategies](const StrategyReport& r) {
      strategies[r.name] = Json{{"cost", r.plan.cost},
                                {"step_time_s", r.plan.step_time_s},
                                {"speedup", r.speedup},
                                {"in_enumeration", r.in_enumeration()},
                                {"memory_bytes", r.plan.memory.total()},
                                {"fits", r.plan.fits}};
    };
    add(c.pase);
    add(c.data_parallel);
    if (c.expert) add(*c.expert);
    if (c.mcmc) add(*c.mcmc);
    Json row = Json::object();
    row["devices"] = c.cluster.devices;
    row["strategies"] = std::move(strategies);
    row["notes"] = c.notes;
    rows.push_back(std::move(row));
  }
  Json j = Json::object();
  j["graph"] = graph.name;
  j["parameters"] = graph.parameters;
  j["sweep"] = std::move(rows);
  return json_detail::dump_pretty(j) + "\n";
}

std::string compare_json(std::string_view request_json) {
  return json_detail::guarded([&] { return compare_request(request_json); });
}

}  // namespace pase
