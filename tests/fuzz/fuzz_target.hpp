// The body of the fuzz target, shared by the libFuzzer executable
// (fuzz_plan.cpp) and the doctest suite (robustness_test.cpp), which runs it
// on every regression input under tests/fuzz/regressions/ and the seed corpus.
//
// The input is read as an ONNX model, as a Hugging Face config, as a
// pase-graph/1 document and as a plan request. An imported model builds or is refused with an
// error, and a small one is planned like a graph. Whatever it is, nothing may crash, throw or hang,
// and:
//   - every error has a message, and its error document is valid JSON;
//   - a graph that loads is written back and loads again with the same shape;
//   - a small graph (at most kMaxVertices vertices, a search of at most
//     kMaxPairs pairs) is planned at 4 devices with max_memory 64 MiB; the
//     plan's cost is finite, equals evaluate() of its strategy within 1e-9
//     relative, and equals exhaustive search where that is small;
//   - a small request is planned with its own cluster and options (the memory
//     limit lowered to 64 MiB) and its strategy, if any, evaluated.
// fuzz_one() returns "" or the first property that failed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "pase/graph.hpp"
#include "pase/import.hpp"
#include "pase/json_api.hpp"
#include "pase/llm.hpp"
#include "pase/plan.hpp"
#include "plan/testing.hpp"

namespace pase_fuzz {

inline constexpr size_t kMaxVertices = 12;
inline constexpr double kMaxPairs = 1e6;
inline constexpr uint64_t kMaxMemory = uint64_t{64} << 20;
inline constexpr uint64_t kMaxExhaustive = 4096;

inline bool close(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

// "" when `error` is a proper error value.
inline std::string check_error(const pase::Error& error, std::string_view what) {
  if (error.message.empty()) return std::string(what) + ": an error without a message";
  const nlohmann::json doc = nlohmann::json::parse(pase::error_to_json(error), nullptr, false);
  if (doc.is_discarded() || !doc.contains("error")) {
    return std::string(what) + ": error_to_json() is not an error document";
  }
  return "";
}

// "" when `text` is valid UTF-8 with no control character other than those
// `allowed` (a line break, say): what an emitted file or a message may hold.
inline std::string check_text(std::string_view text, std::string_view what,
                              std::string_view allowed = "\n") {
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      if (allowed.find(static_cast<char>(c)) == std::string_view::npos)
        return std::string(what) + ": a raw control character " + std::to_string(c) + " at byte " +
               std::to_string(i);
      ++i;
      continue;
    }
    // UTF-8: the length from the lead byte, then continuation bytes, no
    // overlong form, no surrogate, nothing past U+10FFFF.
    const size_t n = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xe  ? 3
                     : (c >> 3) == 0x1e ? 4
                                        : 0;
    bool ok = n != 0 && i + n <= text.size();
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1fu) : n == 3 ? (c & 0x0fu) : (c & 0x07u);
    for (size_t k = 1; ok && k < n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      ok = (b >> 6) == 0x2;
      cp = (cp << 6) | (b & 0x3fu);
    }
    ok = ok && !(n == 2 && cp < 0x80) && !(n == 3 && cp < 0x800) && !(n == 4 && cp < 0x10000) &&
         !(cp >= 0xd800 && cp <= 0xdfff) && cp <= 0x10ffff;
    if (!ok) return std::string(what) + ": not valid UTF-8 at byte " + std::to_string(i);
    // C1 controls (U+0080 .. U+009F) are control characters too.
    if (cp >= 0x80 && cp <= 0x9f)
      return std::string(what) + ": a raw control character U+00" + (cp < 0x90 ? "8" : "9") +
             "x at byte " + std::to_string(i);
    i += n;
  }
  return "";
}

// `text` as JSON (discarded when it is not JSON).
inline nlohmann::json json_of(std::string_view text) {
  return nlohmann::json::parse(text, nullptr, false);
}

// "" when `doc` (the output of a whole-request function of json_api.hpp) is
// valid JSON and, when it is an error document, one with a message.
inline std::string check_document(std::string_view doc, std::string_view what) {
  const nlohmann::json j = json_of(doc);
  if (j.is_discarded() || !j.is_object()) return std::string(what) + ": not a JSON object";
  if (j.contains("error")) {
    const nlohmann::json& e = j["error"];
    if (!e.is_object() || !e.contains("message") || !e["message"].is_string() ||
        e["message"].get<std::string>().empty())
      return std::string(what) + ": an error document without a message";
  }
  return "";
}

// A small decoder-only model (core/docs/llm.md): 4 blocks of width 64, 4
// query and 2 key-value heads, a vocabulary of 256; with `moe`, a mixture of
// 4 experts, 2 per token.
inline pase::LlmConfig tiny_llm(bool moe) {
  pase::LlmConfig c;
  c.model_type = moe ? "mixtral" : "llama";
  c.vocab_size = 256;
  c.hidden_size = 64;
  c.num_layers = 4;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.intermediate_size = 128;
  c.max_positions = 256;
  if (moe) {
    c.num_experts = 4;
    c.experts_per_token = 2;
  }
  return c;
}

inline constexpr int64_t kTinySeq = 16;

// tiny_llm(moe)'s graph of `batch` sequences of kTinySeq tokens named `name`.
inline pase::Result<pase::Graph> tiny_llm_graph(bool moe, int64_t batch, std::string_view name,
                                                int64_t vocab_multiple = pase::kLlmVocabMultiple) {
  pase::Result<pase::GraphSpec> spec =
      pase::llm_spec(tiny_llm(moe), std::string(name), batch, kTinySeq, vocab_multiple);
  if (!spec) return spec.error();
  return pase::build_graph(*spec);
}

// Plans `graph` when the search is small; "" when all properties hold.
inline std::string check_plan(const pase::Graph& graph, const pase::Cluster& cluster,
                              pase::PlanOptions options, bool exhaustive) {
  if (graph.vertices.size() > kMaxVertices) return "";
  options.max_memory =
      options.max_memory == 0 ? kMaxMemory : std::min(options.max_memory, kMaxMemory);
  pase::Result<pase::SearchStats> stats = pase::estimate(graph, cluster, options);
  if (!stats) return check_error(stats.error(), "estimate");
  if (static_cast<double>(stats->pairs) > kMaxPairs || stats->peak_bytes > kMaxMemory) return "";
  pase::Result<pase::Plan> plan = pase::plan(graph, cluster, options);
  if (!plan) return check_error(plan.error(), "plan");
  if (!std::isfinite(plan->cost)) return "plan: the cost is not finite";
  pase::Result<pase::Plan> priced = pase::evaluate(graph, cluster, plan->strategy);
  if (!priced) return "evaluate: the plan's own strategy is refused: " + priced.error().to_string();
  if (!close(plan->cost, priced->cost)) return "plan cost differs from evaluate() of its strategy";
  const nlohmann::json doc =
      nlohmann::json::parse(pase::plan_to_json(graph, cluster, *plan), nullptr, false);
  if (doc.is_discarded()) return "plan_to_json() is not valid JSON";
  // Only plain enumerations: exhaustive_search() knows no options.
  if (exhaustive && !options.enumeration.pow2_only && !options.enumeration.all_devices) {
    pase::Result<pase::Plan> best = pase::exhaustive_search(graph, cluster, kMaxExhaustive);
    if (best && !close(plan->cost, best->cost)) return "plan cost differs from exhaustive search";
  }
  return "";
}

// As an ONNX model, every named dimension 2.
inline std::string fuzz_onnx(std::string_view bytes) {
  pase::MemorySource source(bytes);
  pase::Result<std::vector<pase::DynamicDim>> dims = pase::onnx_dynamic_dims(source);
  if (!dims) return check_error(dims.error(), "onnx_dynamic_dims");
  pase::ImportOptions options;
  for (const pase::DynamicDim& d : *dims) options.dims.emplace_back(d.name, 2);
  pase::Result<pase::GraphSpec> spec = pase::import_onnx(source, options);
  if (!spec) return check_error(spec.error(), "import_onnx");
  if (spec->parameters < 0) return "import_onnx: no parameter count";
  pase::Result<pase::Graph> graph = pase::build_graph(*spec);
  if (!graph) return check_error(graph.error(), "build_graph of an imported model");
  return check_plan(*graph, pase::Cluster{.devices = 4}, {}, false);
}

// As a Hugging Face config.json: a config that reads builds a graph of 2
// sequences of 4 tokens (or is refused with an error), which carries the
// config's exact parameter count and builds.
inline std::string fuzz_config(std::string_view text) {
  pase::Result<pase::LlmConfig> config = pase::parse_llm_config(text);
  if (!config) return check_error(config.error(), "parse_llm_config");
  pase::Result<pase::GraphSpec> spec = pase::llm_spec(*config, "fuzz", 2, 4);
  if (!spec) return check_error(spec.error(), "llm_spec");
  if (spec->parameters != pase::llm_parameters(*config)) return "llm_spec: wrong parameter count";
  pase::Result<pase::Graph> graph = pase::build_graph(*spec);
  if (!graph) return check_error(graph.error(), "build_graph of a config's graph");
  return "";
}

inline std::string fuzz_one(std::string_view text) {
  if (std::string e = fuzz_onnx(text); !e.empty()) return e;
  if (std::string e = fuzz_config(text); !e.empty()) return e;

  // As a graph document.
  pase::Result<pase::Graph> graph = pase::load_graph(text);
  if (!graph) {
    if (std::string e = check_error(graph.error(), "load_graph"); !e.empty()) return e;
  } else {
    // load_graph() succeeded, so the document parses.
    const std::string written = pase::write_graph(*pase::parse_graph_spec(text));
    pase::Result<pase::Graph> again = pase::load_graph(written);
    if (!again) return "write_graph() output does not load: " + again.error().to_string();
    if (again->vertices.size() != graph->vertices.size() ||
        again->edges.size() != graph->edges.size()) {
      return "write_graph() round trip changes the graph";
    }
    if (std::string e = check_plan(*graph, pase::Cluster{.devices = 4}, {}, true); !e.empty()) {
      return e;
    }
  }

  // As a plan request.
  pase::Result<pase::PlanRequest> request = pase::parse_plan_request(text);
  if (!request) return check_error(request.error(), "parse_plan_request");
  if (request->graph.vertices.size() > kMaxVertices) return "";
  if (request->strategy) {
    pase::Result<pase::Plan> priced =
        pase::evaluate(request->graph, request->cluster, *request->strategy);
    if (!priced) return check_error(priced.error(), "evaluate");
    if (!std::isfinite(priced->cost)) return "evaluate: the cost is not finite";
  }
  return check_plan(request->graph, request->cluster, request->options, false);
}

}  // namespace pase_fuzz
