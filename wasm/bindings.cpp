// Embind registrations of the WebAssembly module `pase.js` (createPase()).
//
// Every function takes and returns JSON strings of core/docs/formats.md, so
// JavaScript never holds a C++ object it would have to .delete(). Each one
// forwards to a JSON entry point of the core (json_api.hpp, compare.hpp),
// which returns bad input as {"error": {"message", "where"}} and turns what
// escapes from below (running out of memory) into such a document too: the
// core's guard is the only one, and nothing thrown reaches JavaScript. The
// wrappers exist only because Embind passes std::string, not std::string_view.

#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <string>

#include "pase/compare.hpp"
#include "pase/json_api.hpp"
#include "pase/plan.hpp"
#include "pase/version.hpp"

namespace {

using emscripten::val;

// plan(requestJson, onProgress): onProgress may be undefined (or null); when it
// is a function it receives the fraction of the search done, 0..1. The core
// reports at most about a hundred times, so no further throttling is needed.
std::string plan(const std::string& request, val on_progress) {
  if (on_progress.isUndefined() || on_progress.isNull()) return pase::plan_json(request);
  return pase::plan_json(
      request, [&on_progress](const pase::Progress& progress) { on_progress(progress.fraction); });
}

std::string plan_without_progress(const std::string& request) {
  return plan(request, val::undefined());
}

std::string evaluate(const std::string& request) { return pase::evaluate_json(request); }

// compare(requestJson): a plan request plus an optional "mcmc" object
// (compare.hpp, compare_json()); every strategy priced on the same cost model.
std::string compare(const std::string& request) { return pase::compare_json(request); }

// validate(graphJson): a pase-graph/1 document, checked without planning
// (json_api.hpp, validate_json()): {"ok": true, "name", "layers", "vertices",
// "edges"} or an error document whose `where` is relative to the graph.
std::string validate(const std::string& graph) { return pase::validate_json(graph); }

std::string models() { return pase::models_to_json(); }

// JavaScript numbers are doubles; export_model_json() reports a batch that is
// not a non-negative whole number rather than truncating it.
std::string export_model(const std::string& name, double batch) {
  return pase::export_model_json(name, batch);
}

std::string export_model_default_batch(const std::string& name) { return export_model(name, 0); }

// Plain text, not JSON: "0.1.0".
std::string version() { return pase::version(); }

}  // namespace

EMSCRIPTEN_BINDINGS(pase) {
  // Embind overloads by argument count: plan(request) and exportModel(name)
  // work as well as the full forms.
  emscripten::function("plan", &plan);
  emscripten::function("plan", &plan_without_progress);
  emscripten::function("evaluate", &evaluate);
  emscripten::function("compare", &compare);
  emscripten::function("validate", &validate);
  emscripten::function("models", &models);
  emscripten::function("exportModel", &export_model);
  emscripten::function("exportModel", &export_model_default_batch);
  emscripten::function("version", &version);
}
