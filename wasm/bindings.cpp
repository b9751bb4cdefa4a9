// Embind registrations of the WebAssembly module `pase.js` (createPase()).
//
// Every function takes and returns JSON strings of graph-format.md, so
// JavaScript never holds a C++ object it would have to .delete(). Bad input
// comes back as {"error": {"message", "where"}}: json_api.hpp already turns
// every input problem into an error document; the catch below is the last
// resort for what the core cannot foresee (running out of memory).

#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdint>
#include <exception>
#include <new>
#include <string>

#include "pase/compare.hpp"
#include "pase/json_api.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "pase/version.hpp"

#ifndef PASE_VERSION
#define PASE_VERSION "unknown"
#endif

namespace {

using emscripten::val;

// Nothing may cross into JavaScript as an exception: an escaped C++ exception
// is only a pointer number on the JS side and leaves the module unusable.
template <class Body>
std::string guard(Body body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return pase::error_to_json({"out of memory: the WebAssembly heap is exhausted", ""});
  } catch (const std::exception& e) {
    return pase::error_to_json({std::string("internal error: ") + e.what(), ""});
  } catch (...) {
    return pase::error_to_json({"internal error", ""});
  }
}

// plan(requestJson, onProgress): onProgress may be undefined (or null); when it
// is a function it receives the fraction of the search done, 0..1. The core
// reports at most about a hundred times, so no further throttling is needed.
std::string plan(const std::string& request, val on_progress) {
  return guard([&] {
    if (on_progress.isUndefined() || on_progress.isNull()) return pase::plan_json(request);
    return pase::plan_json(request, [&on_progress](const pase::Progress& progress) {
      on_progress(progress.fraction);
    });
  });
}

std::string plan_without_progress(const std::string& request) {
  return plan(request, val::undefined());
}

std::string evaluate(const std::string& request) {
  return guard([&] { return pase::evaluate_json(request); });
}

// compare(requestJson): a plan request plus an optional "mcmc" object
// (compare.hpp, compare_json()); every strategy priced on the same cost model.
std::string compare(const std::string& request) {
  return guard([&] { return pase::compare_json(request); });
}

std::string models() {
  return guard([] { return pase::models_to_json(); });
}

// JavaScript numbers are doubles; a batch that is not a non-negative whole
// number is reported here rather than silently truncated. (The range check
// comes first: converting an out-of-range double to an integer is undefined.)
std::string export_model(const std::string& name, double batch) {
  return guard([&] {
    if (!(batch >= 0) || batch > 1e15 ||
        batch != static_cast<double>(static_cast<int64_t>(batch))) {
      return pase::error_to_json({"must be a non-negative whole number (0: the default)", "batch"});
    }
    return pase::export_model_json(name, static_cast<int64_t>(batch));
  });
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
  emscripten::function("models", &models);
  emscripten::function("exportModel", &export_model);
  emscripten::function("exportModel", &export_model_default_batch);
  emscripten::function("version", &version);
}
