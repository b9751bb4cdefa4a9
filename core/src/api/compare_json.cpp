// The JSON documents of a comparison (compare.hpp): comparison_to_json(),
// sweep_to_json() and the whole request of the WebAssembly module,
// compare_json().
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/entry.hpp"
#include "pase/compare.hpp"
#include "pase/json_api.hpp"
#include "pase/plan.hpp"
#include "util/json_util.hpp"

namespace pase {

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
  Result<PlanRequest> request = search_request_from_json(*doc);
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
