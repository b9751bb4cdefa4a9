// JSON in, JSON out: the interchange formats of core/docs/formats.md (plan request,
// cluster, strategy, plan result, error) for the CLI, the WebAssembly module
// and tools. Each function is a thin layer over graph.hpp / plan.hpp.
//
// ERRORS: parse functions return Error with `where` naming the field of the
// request ("cluster.devices", "graph.layers[2].units", "strategy[4]"). Nothing
// throws: the whole-request functions at the end (and compare_json() of
// compare.hpp) also turn what escapes from below (std::bad_alloc) into an
// error document, so a caller such as the WebAssembly module needs no guard
// of its own.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pase/export.hpp"
#include "pase/graph.hpp"
#include "pase/import.hpp"
#include "pase/layout_search.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase {

struct PlanAnswers;  // answers.hpp

// A plan (or evaluate) request: {"graph": {...} | "model": "name", "batch": B, "seq": S,
// "preset": "h100" (fills the cluster; its own fields win), "training": {...},
// "cluster": {...}, "order": "genseq", "max_memory": bytes, "strategy": [...]}.
// With "pipeline": {"stages": S | "auto", "microbatches": M | "auto",
// "schedule": "1f1b" | "gpipe", "max_microbatches": 64} the plan has a
// pipeline (core/docs/pipeline.md); a strategy with "stage_of"
// ({"configs", "stage_of", "microbatches", "schedule"}, or a plan result
// with a "pipeline") is evaluated as one.
struct PlanRequest {
  Graph graph;
  Cluster cluster;
  PlanOptions options;  // order, max_memory, enumeration; callbacks left empty
  std::optional<Strategy> strategy;
  std::optional<PipelineOptions> pipeline;
  std::optional<PipelineStrategy> pipeline_strategy;
  // "emit": "jax" or a list of "jax", "megatron", "torchtitan": the result
  // carries "exports", each the plan as that target (core/docs/export.md).
  std::vector<ExportTarget> emit;
  // "vocab_padding" (a built-in language model's), and whether "training"
  // states "zero" (else the per-layer plan of a language model searches it:
  // answers.hpp).
  int64_t vocab_padding = kLlmVocabMultiple;
  bool zero_given = false;
  // "tokens" and "gpu_hour_price" (by default the preset's): the days and
  // cost to train of a language model's answers (answers.hpp).
  double tokens = 0, gpu_hour_price = 0;
};

Result<PlanRequest> parse_plan_request(std::string_view json_text);

// {"devices": 8, "tflops": 10.0, "bandwidth_gbps": 16.0}; missing fields keep
// their defaults. `where` prefixes the field names of errors.
Result<Cluster> parse_cluster(std::string_view json_text, const std::string& where = "cluster");

// A strategy: a JSON list of configurations in vertex order, or a plan result
// (its vertices[].config are used).
Result<Strategy> parse_strategy(std::string_view json_text);

// A strategy as parse_strategy() reads it, or one with a pipeline: an object
// {"configs": [[...], ...], "stage_of": [...], "microbatches": M, "schedule":
// "1f1b"}, or a plan result with a "pipeline" object. stage_of is empty for
// a strategy without a pipeline.
Result<PipelineStrategy> parse_any_strategy(std::string_view json_text);

// The plan-result document of a plan with a pipeline: plan_to_json() of its
// micro-batch graph and plan, plus "pipeline": {"stages", "microbatches",
// "schedule", "micro_batch", "label", "bubble", "stage_of", "stage":
// [{"first_vertex", "end_vertex", "layers", "first_device", "devices", "F",
// "W", "X", "A", "time_s", "busy_share", "activation_copies", "memory_bytes",
// "memory", "fits"}, ...], "allowed_boundaries", "stage_plans",
// "no_pipeline_cost" (the least cost without a pipeline when the search
// tried it, as "auto" does; else null)}. busy_share:
// M * A_s over the latency sum A + (M - 1) max A; bubble: 1 - their mean.
std::string pipeline_plan_to_json(const Cluster& cluster, const PipelinePlan& result);

// Order names: "genseq", "bfs", "mintable".
Result<Order> parse_order(std::string_view name);
// "auto", "exact" or "bounded" (PlanOptions::search); errors at "search".
Result<SearchMode> parse_search_mode(std::string_view name);

// The plan-result document of core/docs/formats.md, plus per-vertex "compute",
// "comm" and "memory_bytes", per-edge costs, the cost breakdown, "memory"
// and "training".
std::string plan_to_json(const Graph& graph, const Cluster& cluster, const Plan& plan);

// {"error": {"message": ..., "where": ...}}
std::string error_to_json(const Error& error);

// [{"name", "description", "default_batch", "default_seq" (null for a network
//   without a sequence), "llm", "cutoff", "vertices", "edges", "parameters"}, ...]
// Never throws (like the functions below).
std::string models_to_json();

// [{"id", "name", "tflops", "memory_gib", "gpus_per_node", "intra_node_gbps",
//   "bandwidth_gbps"}, ...]: the GPU presets (presets.hpp), whose ids a
// request's "preset" names. Never throws.
std::string presets_to_json();

// Whole requests as the module and tools use them: the result document or an
// error document, never an exception. Bad input is the error of the parse or
// of the step that refused it; an exception from below becomes
// {"error": {"message": "out of memory" (or "internal error: ..."), "where": ""}}.
// Stopped by `cancel` (PlanOptions::cancel) as by a time limit: a language
// model's answers and a pipeline keep the best plan found, with "stopped":
// "cancelled" (core/docs/pipeline.md, "A time limit").
std::string plan_json(std::string_view request_json,
                      const std::function<void(const Progress&)>& on_progress = {},
                      const std::atomic<bool>* cancel = nullptr);
std::string evaluate_json(std::string_view request_json);

// The layout search (layout_search.hpp, core/docs/layouts.md): a plan
// request's model and cluster fields ("model" or "graph" of a language
// model, "batch": the global batch, "seq", "preset", "cluster", "training",
// "vocab_padding") with "top" (10), "over" (3), "tokens", "gpu_hour_price"
// (default: the preset's), "layout" (a user's layout: parse_layout() text,
// a Megatron-LM argument list or a torchtitan TOML) and "emit" ("megatron"
// or "torchtitan", or a list: the best layout exported). The result:
// {"ranked": [{"rank", "layout", "items", "step_time_s", "parts",
// "memory", "tokens_per_s", "mfu", "days", "cost", "engines",
// "versus_best"}, ...], "over": [...], "given", "priced", "ruled_out",
// "refused", "refused_why": [{"why", "count"}], "seconds", "exports"}.
// `on_progress` sees the fraction done; false cancels.
std::string layouts_json(std::string_view request_json,
                         const std::function<bool(double)>& on_progress = {});
// The plan-result document of a language model's two answers (answers.hpp;
// what plan_json() returns for one under the practice model): the per-layer
// plan's document (pipeline_plan_to_json()) with "best_layout" (a ranked
// layout of layouts_json(), or null when none fits), "per_layer":
// {"runs_on": "JAX/GSPMD", "step_time_s", "layout_wins", "gain_s",
// "gain_fraction", "differs_at", "set_by_hand", "zero", "zero_searched",
// "days", "cost"}
// and "layouts": {"priced", "ruled_out", "bounded", "refused", "seconds"}.
std::string plan_answers_to_json(const PlanAnswers& answers, bool zero_searched);
// The result document of layouts_json() for a search already run.
std::string layout_search_to_json(const LayoutSearch& search);

// What a plan request would need, without searching (estimate() of plan.hpp):
// {"graph", "vertices", "devices", "memory_capped" (the request has a memory
// cap, so plan() may run several searches of this size), "max_memory" (the
// table limit of the request, bytes; 0: none), "search": {"order",
// "max_dependent_set", "table_entries", "largest_table", "pairs",
// "peak_bytes", "configurations", "time_s" (of the estimate)}}. The page
// turns "pairs" into the seconds it announces before a long search. Errors
// are plan_json()'s, except a search over the table limit, which is only
// refused by the plan itself (compare "peak_bytes" with "max_memory").
std::string estimate_json(std::string_view request_json);

// The pase-graph/1 document of a built-in network. `batch` and `seq` are
// doubles because the module's callers pass JavaScript numbers: each must be
// a whole number from 0 (the network's default) to 1e15, else the error is at
// "batch" or "seq"; an unknown name is an error at "model", a sequence length
// for a network without one an error at "seq".
std::string export_model_json(std::string_view name, double batch, double seq = 0);

// Checks a pase-graph/1 document without planning it: load_graph() (syntax,
// fields, names, shapes; linear in its size). A valid graph gives
//   {"ok": true, "name": "small-cnn", "layers": 6, "vertices": 7, "edges": 6,
//    "parameters": 1234}
// ("name" is "" when the document has none; a Reshape layer is two vertices).
// An invalid one gives the error document of load_graph()'s Error, so `where`
// is relative to the graph document ("layers[2].filter", "" for the document
// as a whole), not under "graph" as in a plan request.
std::string validate_json(std::string_view graph_json);

// Imports a model file read from `source`: an ONNX model (import.hpp) or a
// Hugging Face config.json (llm.hpp), told apart by content, with the options
// document `options_json` (all fields optional; "" is the same as {}):
//   {"dims": {"batch": 8, "sequence": 128}, "batch": 8, "seq": 2048,
//    "name": "my-model"}
// "dims" gives an ONNX model's dynamic dimensions their values by name,
// "batch" the leading dimension of the first input (the batch), "seq" a
// config's sequence length, "name" the graph's name (ImportOptions). Unknown
// fields are errors naming them; sizes are positive integers. The result
// (core/docs/formats.md, "Import options and result"):
//   {"graph": {pase-graph/1, as write_graph() writes it}, "parameters": N,
//    "layers": L, "format": "onnx" | "hf-config",
//    "dynamic_dims": [{"name", "input", "value"}, ...],
//    "layer_outputs": [[shape, ...] per layer]}
// and for a config also "config" (its hyper-parameters), "batch" and "seq"
// (the sizes used: the options' or the model's defaults).
// The graph is checked with build_graph(), so it can be planned as is.
//
// ERRORS: the error document; `where` names the option ("dims.batch"; a
// name in "dims" that is none of the model's dynamic dimensions is one), the
// node of the file (import_onnx()), or a field of the imported graph
// ("graph.layers[3]"). When the error is a dynamic dimension without a value
// ("dims.<name>"), the document also has
//   "missing_dims": [{"name": "batch", "input": "input"}, ...]
// listing every dynamic dimension that "dims" does not give, so that a caller
// can ask for all of them in one go. Never throws (an exception from below,
// such as a failed allocation, becomes an error document).
//
// COMPLEXITY: reads the structure of an ONNX file twice (onnx_dynamic_dims(),
// then import_onnx()), never its weights; linear in its node count. A config
// is read whole (at most kMaxDocumentBytes).
std::string import_model_json(ByteSource& source, std::string_view options_json);

}  // namespace pase
