// The request target (pase_fuzz_request): the input is a plan request as the
// WebAssembly module and tools send it (core/docs/formats.md), through the
// whole-request functions of json_api.hpp: estimate_json() always,
// evaluate_json() when it has a strategy or a layout (and at most
// kMaxEvaluateVertices vertices), and plan_json() when its search is small
// (a graph of at most kMaxVertices vertices, at most kMaxRequestVertices with
// a pipeline, whose search estimate() puts at most kMaxPairs pairs and
// 64 MiB of tables).
// Nothing may crash, throw or hang, and:
//   - every output is a JSON object, and an error document has a message;
//   - estimate_json() of a request that parses names its graph, vertex count
//     and device count;
//   - a plan result has a finite cost, and the request with that result as
//     its "strategy" (less "pipeline" and "emit") evaluates to the same cost
//     through evaluate_json();
//   - every exported text ("emit") is valid UTF-8 with no control character
//     but line breaks, and every note and error message none at all.
#pragma once

#include <string>
#include <string_view>

#include "fuzz_target.hpp"

namespace pase_fuzz {

inline constexpr size_t kMaxRequestVertices = 8;
inline constexpr size_t kMaxEvaluateVertices = 1000;

// "" when the "exports" of a result document hold only clean text.
inline std::string check_exports(const nlohmann::json& result, std::string_view what) {
  if (!result.contains("exports")) return "";
  if (!result["exports"].is_array()) return std::string(what) + ": \"exports\" is not a list";
  for (const nlohmann::json& e : result["exports"]) {
    const std::string to = std::string(what) + " exports " + e.value("to", "?");
    if (e.contains("error")) {
      if (std::string f = check_text(e["error"].value("message", ""), to + " error", "");
          !f.empty())
        return f;
      continue;
    }
    if (!e.contains("text") || !e["text"].is_string()) return to + ": no text";
    if (std::string f = check_text(e["text"].get<std::string>(), to); !f.empty()) return f;
    for (const char* list : {"notes", "differences"})
      if (e.contains(list) && e[list].is_array())
        for (const nlohmann::json& n : e[list])
          if (std::string f =
                  check_text(n.is_string() ? n.get<std::string>() : "", to + " note", "");
              !f.empty())
            return f;
  }
  return "";
}

// plan_json() or evaluate_json() output `doc`: "" when it is an error
// document or a result with a finite cost and clean exports; `cost` is set
// for a result.
inline std::string check_result(const std::string& doc, std::string_view what, double& cost) {
  cost = -1;
  if (std::string e = check_document(doc, what); !e.empty()) return e;
  const nlohmann::json j = json_of(doc);
  if (j.contains("error")) return "";
  if (!j.contains("cost") || !j["cost"].is_number()) return std::string(what) + ": no cost";
  cost = j["cost"].get<double>();
  if (!std::isfinite(cost) || cost < 0) return std::string(what) + ": the cost is not finite";
  return check_exports(j, what);
}

inline std::string fuzz_request(std::string_view text) {
  const std::string estimated = pase::estimate_json(text);
  if (std::string e = check_document(estimated, "estimate_json"); !e.empty()) return e;
  pase::Result<pase::PlanRequest> request = pase::parse_plan_request(text);
  if (!request) return check_error(request.error(), "parse_plan_request");
  const nlohmann::json est = json_of(estimated);
  if (!est.contains("error") &&
      (est.value("graph", "\x01") != request->graph.name ||
       est.value("vertices", size_t{0}) != request->graph.vertices.size() ||
       est.value("devices", int64_t{0}) != request->cluster.devices))
    return "estimate_json: the graph, vertices or devices are not the request's";

  // A strategy (or a layout) is evaluated, which is linear in the graph.
  const size_t vertices = request->graph.vertices.size();
  if ((request->strategy || request->pipeline_strategy) && vertices <= kMaxEvaluateVertices) {
    double evaluated = -1;
    if (std::string e = check_result(pase::evaluate_json(text), "evaluate_json", evaluated);
        !e.empty())
      return e;
  }
  // Only small searches from here.
  if (vertices > (request->pipeline ? kMaxRequestVertices : kMaxVertices)) return "";
  pase::Result<pase::SearchStats> stats =
      pase::estimate(request->graph, request->cluster, request->options);
  if (!stats) return check_error(stats.error(), "estimate");
  if (static_cast<double>(stats->pairs) > kMaxPairs || stats->peak_bytes > kMaxMemory) return "";
  double planned = -1;
  const std::string plan = pase::plan_json(text);
  if (std::string e = check_result(plan, "plan_json", planned); !e.empty()) return e;
  if (planned < 0) return "";
  // The plan's own result as the request's strategy.
  nlohmann::json again = json_of(text);
  if (!again.is_object()) return "parse_plan_request: a request that is not a JSON object";
  again.erase("pipeline");
  again.erase("emit");
  again["strategy"] = json_of(plan);
  double priced = -1;
  const std::string doc = pase::evaluate_json(again.dump());
  if (std::string e = check_result(doc, "evaluate_json of a plan", priced); !e.empty()) return e;
  if (priced < 0) return "evaluate_json: a plan's own result is refused: " + doc.substr(0, 300);
  if (!close(priced, planned)) return "evaluate_json of a plan's result differs from its cost";
  return "";
}

}  // namespace pase_fuzz
