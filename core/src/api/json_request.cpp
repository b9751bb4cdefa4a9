// json_api.hpp, the reading half: plan requests, clusters and orders from
// JSON, each error naming the offending field. Strategies are read in
// strategy_json.cpp, the writers are in json_api.cpp.

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "api/entry.hpp"
#include "api/strategy_json.hpp"
#include "model/graph_json.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/layout.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/presets.hpp"
#include "util/json_util.hpp"

namespace pase {
namespace {

using json_detail::any_strategy_from_json;
using json_detail::field_path;
using json_detail::index_path;
using json_detail::Json;
using json_detail::ObjectReader;
using json_detail::pipeline_from_json;
using json_detail::type_error;
using json_detail::with_prefix;

// ---- Readers ------------------------------------------------------------------

// A cluster's "device" over `base`: the practice model's rates.
Result<DeviceProfile> device_over(const Json& value, const std::string& where,
                                  const DeviceProfile& base) {
  if (!value.is_object()) return type_error("an object", value, where);
  ObjectReader reader(value, where);
  reader.allow_only({"matmul_efficiency", "matmul_half", "attention_efficiency",
                     "memory_efficiency", "latency_intra_us", "latency_inter_us", "overlap",
                     "link_efficiency", "reserved_gib"});
  DeviceProfile d = base;
  reader.read("matmul_efficiency", d.matmul_efficiency, json_detail::to_positive_number);
  reader.read("matmul_half", d.matmul_half, json_detail::to_positive_number);
  reader.read("attention_efficiency", d.attention_efficiency, json_detail::to_positive_number);
  reader.read("memory_efficiency", d.memory_efficiency, json_detail::to_positive_number);
  reader.read("latency_intra_us", d.latency_intra_us, json_detail::to_positive_number);
  reader.read("latency_inter_us", d.latency_inter_us, json_detail::to_positive_number);
  reader.read("overlap", d.overlap, json_detail::to_number);  // checked by check_cluster
  reader.read("link_efficiency", d.link_efficiency, json_detail::to_positive_number);
  reader.read("reserved_gib", d.reserved_gib, json_detail::to_number);  // checked by check_cluster
  if (!reader.ok()) return reader.error();
  return d;
}

// The cluster object; absent fields keep those of `base` (the defaults, or a
// preset's).
Result<Cluster> cluster_over(const Json& value, const std::string& where, const Cluster& base) {
  if (!value.is_object()) return type_error("an object", value, where);
  ObjectReader reader(value, where);
  reader.allow_only({"devices", "tflops", "bandwidth_gbps", "gpus_per_node", "intra_node_gbps",
                     "memory_gib", "headroom", "memory_gbps", "device"});
  Cluster cluster = base;
  const bool had_nodes = cluster.hierarchical();
  if (reader.read("devices", cluster.devices, json_detail::to_positive_int) &&
      cluster.devices > kMaxDevices) {
    reader.fail(Error{"must be at most " + std::to_string(kMaxDevices) + ", not " +
                          std::to_string(cluster.devices),
                      reader.path("devices")});
  }
  reader.read("tflops", cluster.tflops, json_detail::to_positive_number);
  reader.read("bandwidth_gbps", cluster.bandwidth_gbps, json_detail::to_positive_number);
  // Nodes (core/docs/cluster.md): both fields or neither.
  const bool nodes =
      reader.read("gpus_per_node", cluster.gpus_per_node, json_detail::to_positive_int);
  const bool intra =
      reader.read("intra_node_gbps", cluster.intra_node_gbps, json_detail::to_positive_number);
  if (reader.ok() && nodes != intra && !had_nodes) {
    reader.fail(Error{"gpus_per_node and intra_node_gbps come together",
                      reader.path(nodes ? "intra_node_gbps" : "gpus_per_node")});
  }
  reader.read("memory_gib", cluster.memory_gib, json_detail::to_positive_number);
  reader.read("headroom", cluster.headroom, json_detail::to_number);  // checked by check_cluster
  reader.read("memory_gbps", cluster.device.memory_gbps, json_detail::to_positive_number);
  // The practice model's rates (a preset's "practice" object;
  // core/docs/practice-model.md): each field optional.
  reader.read("device", cluster.device, [&](const Json& v, const std::string& at) {
    return device_over(v, at, cluster.device);  // read before the result replaces it
  });
  if (!reader.ok()) return reader.error();
  return cluster;
}

Result<Cluster> cluster_from_json(const Json& value, const std::string& where) {
  return cluster_over(value, where, Cluster{});
}

// The request's "training" (core/docs/cluster.md): byte counts are
// non-negative integers, the ZeRO stage 0 to 3; absent fields keep the
// defaults.
Result<Training> training_from_json(const Json& value, const std::string& where) {
  if (!value.is_object()) return type_error("an object", value, where);
  ObjectReader reader(value, where);
  reader.allow_only({"param_bytes", "grad_bytes", "optimizer_bytes", "activation_bytes", "zero",
                     "recompute", "recompute_blocks", "recompute_rest", "recompute_searched"});
  Training t;
  reader.read("param_bytes", t.param_bytes, json_detail::to_non_negative_int);
  reader.read("grad_bytes", t.grad_bytes, json_detail::to_non_negative_int);
  reader.read("optimizer_bytes", t.optimizer_bytes, json_detail::to_non_negative_int);
  reader.read("activation_bytes", t.activation_bytes, json_detail::to_non_negative_int);
  if (reader.read("zero", t.zero, json_detail::to_non_negative_int) && t.zero > 3) {
    reader.fail(Error{"must be 0, 1, 2 or 3, not " + std::to_string(t.zero), reader.path("zero")});
  }
  const auto mode = [](const Json& value, const std::string& where) {
    if (!value.is_string()) return Result<Recompute>(type_error("a string", value, where));
    Result<Recompute> r = parse_recompute(value.get<std::string>());
    if (!r) return Result<Recompute>(Error{r.error().message, where});
    return r;
  };
  reader.read("recompute", t.recompute, mode);
  // A saved plan's choice (the first blocks, the others), checked by
  // check_cluster(); "recompute_searched" only records that it was searched.
  reader.read("recompute_blocks", t.recompute_blocks, json_detail::to_non_negative_int);
  reader.read("recompute_rest", t.recompute_rest, mode);
  bool searched = false;
  reader.read("recompute_searched", searched, json_detail::to_bool);
  if (!reader.ok()) return reader.error();
  return t;
}

// parse_order() names its own field "order"; inside a request the caller's
// path is used instead.
Result<Order> order_from_json(const Json& value, const std::string& where) {
  if (!value.is_string()) return type_error("a string", value, where);
  Result<Order> order = parse_order(value.get<std::string>());
  if (!order) return Error{order.error().message, where};
  return order;
}

// "paper" or "practice" (core/docs/practice-model.md).
Result<CostModel> cost_model_from_json(const Json& value, const std::string& where) {
  if (!value.is_string()) return type_error("a string", value, where);
  Result<CostModel> model = parse_cost_model(value.get<std::string>());
  if (!model) return Error{model.error().message, where};
  return model;
}

Result<SearchMode> search_from_json(const Json& value, const std::string& where) {
  if (!value.is_string()) return type_error("a string", value, where);
  Result<SearchMode> mode = parse_search_mode(value.get<std::string>());
  if (!mode) return Error{mode.error().message, where};
  return mode;
}

// Bytes: any non-negative integral number; JSON writers often print large
// integers as floats (4e9), so those are accepted when integral.
Result<uint64_t> bytes_from_json(const Json& value, const std::string& where) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer()) {
    const int64_t n = value.get<int64_t>();
    if (n < 0) return type_error("a non-negative number of bytes", value, where);
    return static_cast<uint64_t>(n);
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    // 2^64 is exactly representable; anything at or above it does not fit.
    if (!(d >= 0) || d != std::floor(d) || d >= 18446744073709551616.0) {
      return type_error("a non-negative whole number of bytes", value, where);
    }
    return static_cast<uint64_t>(d);
  }
  return type_error("a non-negative number of bytes", value, where);
}

Result<PlanRequest> request_from_json(const Json& value) {
  if (!value.is_object()) return Error{"the request must be a JSON object", ""};
  ObjectReader reader(value, "");
  reader.allow_only({"graph",    "model",          "batch",        "seq",        "preset",
                     "cluster",  "training",       "order",        "max_memory", "search",
                     "strategy", "pow2_only",      "all_devices",  "mesh_only",  "threads",
                     "pipeline", "cost_model",     "layout",       "emit",       "vocab_padding",
                     "tokens",   "gpu_hour_price", "time_limit_s", "max_gap"});

  PlanRequest request;
  const Json* graph = reader.find("graph");
  const Json* model = reader.find("model");
  if (reader.ok() && graph != nullptr && model != nullptr) {
    reader.fail(Error{"give either 'graph' or 'model', not both", "model"});
  } else if (reader.ok() && graph == nullptr && model == nullptr) {
    reader.fail(Error{"missing required field 'graph' (or 'model')", "graph"});
  }
  std::string model_name;
  reader.read("model", model_name, json_detail::to_non_empty_string);
  int64_t batch = 0;
  if (reader.read("batch", batch, json_detail::to_positive_int) && model == nullptr) {
    reader.fail(Error{"'batch' applies only to a built-in 'model'", "batch"});
  }
  int64_t seq = 0;
  if (reader.read("seq", seq, json_detail::to_positive_int) && model == nullptr) {
    reader.fail(Error{"'seq' applies only to a built-in 'model'", "seq"});
  }
  // A language model's vocabulary padded to a multiple of this (x a
  // layout's tp), as Megatron-LM's --make-vocab-size-divisible-by
  // (core/docs/llm.md); 1 keeps it exact; a graph document keeps its own.
  int64_t vocab_padding = kLlmVocabMultiple;
  if (reader.read("vocab_padding", vocab_padding, json_detail::to_positive_int)) {
    if (model == nullptr) {
      reader.fail(Error{"'vocab_padding' applies only to a built-in 'model'", "vocab_padding"});
    } else if (vocab_padding > kLlmMaxVocabMultiple) {
      reader.fail(Error{"must be at most " + std::to_string(kLlmMaxVocabMultiple) + ", not " +
                            std::to_string(vocab_padding),
                        "vocab_padding"});
    }
  }
  request.vocab_padding = vocab_padding;
  reader.read("tokens", request.tokens, json_detail::to_non_negative_number);
  const bool priced =
      reader.read("gpu_hour_price", request.gpu_hour_price, json_detail::to_non_negative_number);
  // The small fields come before the graph so that their errors do not wait
  // for a large graph to be built.
  // A preset fills the cluster; the cluster's own fields win.
  Cluster base;
  std::string preset;
  if (reader.read("preset", preset, json_detail::to_non_empty_string)) {
    if (const GpuPreset* p = find_preset(preset)) {
      base = apply_preset(base, *p);
      if (!priced) request.gpu_hour_price = p->gpu_hour_usd;
    } else {
      reader.fail(
          Error{"unknown preset " + quoted_text(preset) + "; known: " + preset_ids(), "preset"});
    }
  }
  request.cluster = base;
  reader.read("cluster", request.cluster, [&](const Json& value, const std::string& where) {
    return cluster_over(value, where, base);
  });
  reader.read("training", request.cluster.training, training_from_json);
  // The practice model is the default for a GPU (a preset) or nodes; the
  // paper's for the flat ring of the paper (core/docs/practice-model.md).
  if (!preset.empty() || request.cluster.gpus_per_node > 0)
    request.cluster.cost_model = CostModel::kPractice;
  reader.read("cost_model", request.cluster.cost_model, cost_model_from_json);
  // The practice model searches the recomputation unless the request states
  // it (core/docs/practice-model.md, "Recomputation").
  const Json* training = reader.find("training");
  request.zero_given = training != nullptr && training->is_object() && training->contains("zero");
  if (request.cluster.cost_model == CostModel::kPractice &&
      !(training != nullptr && training->is_object() && training->contains("recompute")))
    request.cluster.training.recompute = Recompute::kAuto;
  reader.read("order", request.options.order, order_from_json);
  reader.read("max_memory", request.options.max_memory, bytes_from_json);
  reader.read("search", request.options.search, search_from_json);
  reader.read("pow2_only", request.options.enumeration.pow2_only, json_detail::to_bool);
  reader.read("all_devices", request.options.enumeration.all_devices, json_detail::to_bool);
  reader.read("mesh_only", request.options.enumeration.mesh_only, json_detail::to_bool);
  // Seconds the plan may run: then the best plan found, with its proven
  // gap (core/docs/pipeline.md, "A time limit"). At most a year.
  if (reader.read("time_limit_s", request.options.time_limit_s,
                  json_detail::to_non_negative_number) &&
      !(request.options.time_limit_s > 0 && request.options.time_limit_s <= kMaxTimeLimitSeconds))
    reader.fail(Error{"must be a number of seconds above 0 and at most " +
                          std::to_string(static_cast<int64_t>(kMaxTimeLimitSeconds)),
                      "time_limit_s"});
  // The proven gap the plan may stop at (PlanOptions::max_gap).
  if (reader.read("max_gap", request.options.max_gap, json_detail::to_non_negative_number) &&
      !(request.options.max_gap < 1))
    reader.fail(Error{"must be a fraction at least 0 and under 1", "max_gap"});
  request.options.threads = default_threads();
  int64_t threads = 0;
  if (reader.read("threads", threads, json_detail::to_positive_int)) {
    if (threads > default_threads()) {
      reader.fail(Error{"got " + std::to_string(threads) + " threads; at most " +
                            std::to_string(default_threads()) +
                            " here (every core the planner may use)",
                        "threads"});
    } else {
      request.options.threads = static_cast<int>(threads);
    }
  }
  PipelineStrategy strategy;
  if (reader.read("strategy", strategy, any_strategy_from_json)) {
    if (strategy.stage_of.empty()) {
      request.strategy = std::move(strategy.configs);
    } else {
      request.pipeline_strategy = std::move(strategy);
    }
  }
  PipelineOptions pipeline;
  if (reader.read("pipeline", pipeline, pipeline_from_json)) request.pipeline = pipeline;
  // A practitioner's layout (pase/layout.hpp): evaluated as the strategy it
  // means; a built-in model is built at its global batch.
  std::optional<Layout> layout;
  std::string layout_text_given;
  if (reader.read("layout", layout_text_given, json_detail::to_non_empty_string)) {
    if (request.strategy || request.pipeline_strategy) {
      reader.fail(Error{"give either 'strategy' or 'layout', not both", "layout"});
    } else if (Result<Layout> parsed = parse_layout(layout_text_given); !parsed) {
      reader.fail(parsed.error());
    } else {
      layout = *parsed;
      if (model != nullptr && batch == 0) batch = layout->gbs;
    }
  }
  if (const Json* emit = reader.find("emit")) {
    // One target or a list of them.
    const Json list = emit->is_array() ? *emit : Json::array({*emit});
    for (size_t i = 0; i < list.size() && reader.ok(); ++i) {
      const std::string where = emit->is_array() ? "emit[" + std::to_string(i) + "]" : "emit";
      if (!list[i].is_string()) {
        reader.fail(Error{"must be \"jax\", \"megatron\" or \"torchtitan\"", where});
        break;
      }
      Result<ExportTarget> target = parse_export_target(list[i].get<std::string>());
      if (!target) {
        reader.fail(Error{target.error().message, where});
        break;
      }
      request.emit.push_back(*target);
      // A JAX program runs on a mesh: a plan for it splits by divisors.
      if (*target == ExportTarget::kJax) request.options.enumeration.mesh_only = true;
    }
  }
  if (!reader.ok()) return reader.error();

  // build_model() and build_graph() report paths relative to the graph
  // document; inside a request they live under "graph" (or "model").
  if (model != nullptr) {
    const int64_t multiple = vocab_padding == 1 ? 1 : vocab_padding * (layout ? layout->tp : 1);
    Result<Graph> built = build_model(model_name, batch, seq, multiple);
    if (!built && layout && batch == layout->gbs && batch > 0) {
      // Too large a gbs is the layout's error, not the graph's layers[0].
      if (Result<Graph> small = build_model(model_name, 1, seq, multiple))
        if (auto e = check_global_batch(*small, layout->gbs)) return *e;
    }
    if (!built) {
      Error error = built.error();
      if (error.where.empty()) error.where = "model";
      return error;
    }
    request.graph = std::move(*built);
  } else {
    Result<GraphSpec> spec = json_detail::graph_spec_from_json(*graph, "graph");
    if (!spec) return spec.error();
    Result<Graph> built = build_graph(std::move(*spec));
    if (!built) return with_prefix(built.error(), "graph");
    request.graph = std::move(*built);
  }
  if (layout) {
    Result<LayoutStrategy> laid = layout_strategy(request.graph, request.cluster, *layout);
    if (!laid) return laid.error();
    request.cluster = laid->cluster;
    request.pipeline_strategy = std::move(laid->strategy);
  }
  return request;
}

}  // namespace

Result<PlanRequest> parse_plan_request(std::string_view json_text) {
  Result<Json> document = json_detail::parse_document(json_text);
  if (!document) return document.error();
  return request_from_json(*document);
}

Result<PlanRequest> search_request_from_json(const Json& document) {
  // A strategy or a layout says what to price: a search would ignore it (and
  // plan something else), so it is refused rather than dropped.
  if (document.is_object() && document.contains("strategy")) {
    return Error{"a strategy is evaluated, not planned: send it in an evaluate request",
                 "strategy"};
  }
  if (document.is_object() && document.contains("layout")) {
    return Error{"a layout is evaluated, not planned: send it in an evaluate request", "layout"};
  }
  return request_from_json(document);
}

Result<PlanRequest> parse_search_request(std::string_view json_text) {
  Result<Json> document = json_detail::parse_document(json_text);
  if (!document) return document.error();
  return search_request_from_json(*document);
}

Result<Cluster> parse_cluster(std::string_view json_text, const std::string& where) {
  return json_detail::read_document<Cluster>(json_text, where, cluster_from_json);
}

Result<Order> parse_order(std::string_view name) {
  if (name == "genseq") return Order::kGenSeq;
  if (name == "bfs") return Order::kBfs;
  if (name == "mintable") return Order::kMinTable;
  return Error{"unknown order " + quoted_text(name) + "; known: genseq, bfs, mintable", "order"};
}

Result<SearchMode> parse_search_mode(std::string_view name) {
  if (name == "auto") return SearchMode::kAuto;
  if (name == "exact") return SearchMode::kExact;
  if (name == "bounded") return SearchMode::kBounded;
  return Error{"unknown search " + quoted_text(name) + "; known: auto, exact, bounded", "search"};
}

}  // namespace pase
