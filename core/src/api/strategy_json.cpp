// Strategies and pipeline options from JSON (api/strategy_json.hpp), and
// parse_strategy(), parse_any_strategy() of pase/json_api.hpp.
#include "api/strategy_json.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/entry.hpp"
#include "pase/cluster.hpp"
#include "pase/json_api.hpp"

namespace pase {
namespace json_detail {
namespace {

Result<Config> config_from_json(const Json& value, const std::string& where) {
  return json_detail::to_list<int64_t>(value, where, "a list of positive integers",
                                       json_detail::to_positive_int);
}

// A positive count or "auto" (kAuto).
Result<int64_t> count_or_auto(const Json& value, const std::string& where) {
  if (value.is_string() && value.get<std::string>() == "auto") return kAuto;
  if (value.is_number_integer() && value.get<int64_t>() >= 1) return value.get<int64_t>();
  return type_error("a positive integer or \"auto\"", value, where);
}

Result<Schedule> schedule_from_json(const Json& value, const std::string& where) {
  if (value.is_string() && value.get<std::string>() == "1f1b") return Schedule::k1F1B;
  if (value.is_string() && value.get<std::string>() == "gpipe") return Schedule::kGPipe;
  return type_error("\"1f1b\" or \"gpipe\"", value, where);
}

Result<std::vector<int>> stage_list(const Json& value, const std::string& where) {
  return json_detail::to_list<int>(
      value, where, "a list of stage numbers", [](const Json& v, const std::string& w) {
        Result<int64_t> s = json_detail::to_int_at_least(v, w, 0, "a stage number");
        if (!s) return Result<int>(s.error());
        if (*s > kMaxDevices) return Result<int>(Error{"more stages than devices can be", w});
        return Result<int>(static_cast<int>(*s));
      });
}

}  // namespace

// A list of configurations, or a plan result whose vertices[i].config are
// taken in vertex order (so a saved result can be evaluated again).
Result<Strategy> strategy_from_json(const Json& value, const std::string& where) {
  if (value.is_array()) {
    return json_detail::to_list<Config>(value, where, "a list of configurations", config_from_json);
  }
  if (!value.is_object()) {
    return type_error("a list of configurations or a plan result", value, where);
  }
  const std::string vertices_where = field_path(where, "vertices");
  auto it = value.find("vertices");
  if (it == value.end()) return Error{"missing required field 'vertices'", vertices_where};
  const Json& vertices = *it;
  if (!vertices.is_array()) return type_error("a list of vertices", vertices, vertices_where);
  Strategy strategy;
  strategy.reserve(vertices.size());
  for (size_t i = 0; i < vertices.size(); ++i) {
    const Json& vertex = vertices[i];
    const std::string vertex_where = index_path(vertices_where, i);
    if (!vertex.is_object()) return type_error("an object", vertex, vertex_where);
    // Only the configuration matters; the other fields of a result are ignored.
    ObjectReader reader(vertex, vertex_where);
    Config config;
    reader.require("config", config, config_from_json);
    if (!reader.ok()) return reader.error();
    strategy.push_back(std::move(config));
  }
  return strategy;
}

// "auto", "on" or "off" (PipelineOptions::compose).
Result<Compose> compose_from_json(const Json& value, const std::string& where) {
  if (value.is_string() && value.get<std::string>() == "auto") return Compose::kAuto;
  if (value.is_string() && value.get<std::string>() == "on") return Compose::kOn;
  if (value.is_string() && value.get<std::string>() == "off") return Compose::kOff;
  return type_error("\"auto\", \"on\" or \"off\"", value, where);
}

// The request's "pipeline" (core/docs/pipeline.md): {"stages", "microbatches",
// "schedule", "max_microbatches", "compose"}, each optional.
Result<PipelineOptions> pipeline_from_json(const Json& value, const std::string& where) {
  if (!value.is_object()) return type_error("an object", value, where);
  ObjectReader reader(value, where);
  reader.allow_only({"stages", "microbatches", "schedule", "max_microbatches", "compose"});
  PipelineOptions p;
  reader.read("stages", p.stages, count_or_auto);
  reader.read("microbatches", p.microbatches, count_or_auto);
  reader.read("schedule", p.schedule, schedule_from_json);
  reader.read("max_microbatches", p.max_microbatches, json_detail::to_positive_int);
  reader.read("compose", p.compose, compose_from_json);
  if (!reader.ok()) return reader.error();
  return p;
}

// A strategy with or without a pipeline (parse_any_strategy()).
Result<PipelineStrategy> any_strategy_from_json(const Json& value, const std::string& where) {
  PipelineStrategy out;
  if (value.is_object() && value.contains("configs")) {
    ObjectReader reader(value, where);
    reader.allow_only({"configs", "stage_of", "microbatches", "schedule", "virtual_stages"});
    reader.require("configs", out.configs, [](const Json& v, const std::string& w) {
      return json_detail::to_list<Config>(v, w, "a list of configurations", config_from_json);
    });
    reader.require("stage_of", out.stage_of, stage_list);
    reader.read("microbatches", out.microbatches, json_detail::to_positive_int);
    reader.read("schedule", out.schedule, schedule_from_json);
    reader.read("virtual_stages", out.virtual_stages, json_detail::to_positive_int);
    if (!reader.ok()) return reader.error();
    return out;
  }
  Result<Strategy> configs = strategy_from_json(value, where);
  if (!configs) return configs.error();
  out.configs = std::move(*configs);
  // A saved plan result with a pipeline keeps it.
  if (value.is_object() && value.contains("pipeline") && value["pipeline"].is_object()) {
    const std::string p_where = field_path(where, "pipeline");
    ObjectReader reader(value["pipeline"], p_where);
    reader.require("stage_of", out.stage_of, stage_list);
    reader.read("microbatches", out.microbatches, json_detail::to_positive_int);
    reader.read("schedule", out.schedule, schedule_from_json);
    reader.read("virtual_stages", out.virtual_stages, json_detail::to_positive_int);
    if (!reader.ok()) return reader.error();
  }
  return out;
}

}  // namespace json_detail

Result<Strategy> parse_strategy(std::string_view json_text) {
  return json_detail::read_document<Strategy>(json_text, "strategy",
                                              json_detail::strategy_from_json);
}

Result<PipelineStrategy> parse_any_strategy(std::string_view json_text) {
  return json_detail::read_document<PipelineStrategy>(json_text, "strategy",
                                                      json_detail::any_strategy_from_json);
}

}  // namespace pase
