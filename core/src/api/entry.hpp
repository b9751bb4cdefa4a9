// What the JSON entry points of api/ share (pase/json_api.hpp, compare_json()):
// the one exception guard, and the cluster object of their documents.
#pragma once

#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pase/cluster.hpp"
#include "pase/export.hpp"
#include "pase/json_api.hpp"
#include "pase/layout_search.hpp"
#include "pase/pipeline.hpp"
#include "util/json_util.hpp"

namespace pase::json_detail {

// The cluster object of core/docs/formats.md.
inline Json cluster_to_json(const Cluster& cluster) {
  Json j = Json::object();
  j["devices"] = cluster.devices;
  j["tflops"] = cluster.tflops;
  j["bandwidth_gbps"] = cluster.bandwidth_gbps;
  // The fields of core/docs/cluster.md only when set, so that a flat
  // cluster's documents are as before.
  if (cluster.hierarchical()) {
    j["gpus_per_node"] = cluster.gpus_per_node;
    j["intra_node_gbps"] = cluster.intra_node_gbps;
  }
  if (cluster.memory_gib > 0) j["memory_gib"] = cluster.memory_gib;
  // The practice model's device (core/docs/practice-model.md); a paper
  // model's documents are as before.
  if (cluster.cost_model == CostModel::kPractice) {
    j["cost_model"] = cost_model_name(cluster.cost_model);
    j["memory_gbps"] = cluster.device.memory_gbps;
    // The memory margin, where it applies (a share of a cap).
    if (cluster.memory_gib > 0) j["headroom"] = cluster.headroom;
  }
  return j;
}

// Parses a whole document and reads it with `read`; syntax errors are placed
// at `where` (the field the document stands for, or "" for a request).
template <class T, class Read>
Result<T> read_document(std::string_view text, const std::string& where, Read read) {
  Result<Json> document = parse_document(text);
  if (!document) return with_prefix(document.error(), where);
  return read(*document, where);
}

// Runs `body` (which returns a JSON document), turning an escaped exception
// into an error document: the one exception guard of every JSON entry point
// (json_api.hpp, compare_json()), which the WebAssembly bindings rely on
// instead of a guard of their own. Native builds can throw std::bad_alloc from
// deep inside a search; the module runs out of its heap the same way, and an
// exception that escaped into JavaScript would leave it unusable. Builds
// without exceptions have nothing to catch.
template <class Body>
std::string guarded(Body body) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  try {
    return body();
  } catch (const std::bad_alloc&) {
#ifdef __EMSCRIPTEN__
    return error_to_json(Error{"out of memory: the WebAssembly heap is exhausted", ""});
#else
    return error_to_json(Error{"out of memory", ""});
#endif
  } catch (const std::length_error&) {
    return error_to_json(Error{"out of memory (a table larger than the address space)", ""});
  } catch (const std::exception& e) {
    return error_to_json(Error{std::string("internal error: ") + e.what(), ""});
  } catch (...) {
    return error_to_json(Error{"internal error", ""});
  }
#else
  return body();
#endif
}

}  // namespace pase::json_detail

namespace pase {

// The plan-result document of a plan with a pipeline (pipeline_plan_to_json()
// of json_api.hpp, before it is written).
json_detail::Json pipeline_plan_object(const Cluster& cluster, const PipelinePlan& result);

// The request of an entry point that searches (plan_json(), estimate_json(),
// compare_json()): parse_plan_request() of the document, except that a
// "strategy" or a "layout", which only evaluate_json() prices, is an error
// at that field rather than ignored.
Result<PlanRequest> search_request_from_json(const json_detail::Json& document);
Result<PlanRequest> parse_search_request(std::string_view json_text);

// One entry of a result's "exports": {"to", "file", "text", "notes"} and,
// for Megatron-LM and torchtitan, {"uniform", "differences", "layout"} (and
// the two step times of a plan that is not uniform); or {"to", "error"}.
json_detail::Json export_entry(ExportTarget target, const Result<Exported>& out);

// `result` with "exports": the plan of `view` as each target of `emit`
// (export_json.cpp), written as a document; `result` alone when `emit` is
// empty.
std::string with_exports(json_detail::Json result, const std::vector<ExportTarget>& emit,
                         const PlanView& view);

// plan_json() of a language model under the practice model
// (has_layout_answers(), answers.hpp): its two answers, with the exports
// of `emit` (answers_json.cpp).
std::string answers_json(const PlanRequest& request);

// One ranked layout of layouts_json()'s "ranked" (layouts_json.cpp).
json_detail::Json ranked_layout_json(const RankedLayout& ranked);

}  // namespace pase
