// Embind registrations of the WebAssembly modules `pase.js` (createPase()) and
// `pase-mt.js` (createPaseThreaded(), the same functions on threads).
//
// Every function takes and returns JSON strings of core/docs/formats.md, so
// JavaScript never holds a C++ object it would have to .delete(). Each one
// forwards to a JSON entry point of the core (json_api.hpp, compare.hpp),
// which returns bad input as {"error": {"message", "where"}} and turns what
// escapes from below (running out of memory) into such a document too: the
// core's guard is the only one, and nothing thrown reaches JavaScript. The
// wrappers exist only because Embind passes std::string, not std::string_view,
// except importModel's, which also turns its JavaScript source into a
// pase::ByteSource (JsReaderSource below).

#include <emscripten/bind.h>
#include <emscripten/emscripten.h>
#include <emscripten/val.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <utility>

#include "pase/compare.hpp"
#include "pase/import.hpp"
#include "pase/json_api.hpp"
#include "pase/plan.hpp"
#include "pase/version.hpp"

// reader.read(offset, length) copied to `dest` (length bytes the caller has
// allocated), in JavaScript so that an exception from read() stays on the
// JavaScript side: with -fwasm-exceptions, C++'s catch (...) does not catch
// JavaScript exceptions, and one unwinding through the module's frames would
// skip their cleanup. 1: copied; 0: read() threw or returned something else
// than `length` bytes. The heap view is taken after the call (HEAPU8 follows
// a heap that grew meanwhile); `dest >>> 0` keeps addresses above 2 GiB
// positive. (clang-format would split JavaScript's `!==`.)
// clang-format off
EM_JS(int, pase_read_slice, (emscripten::EM_VAL reader, double offset, double length,
                             unsigned char* dest), {
  try {
    var bytes = Emval.toValue(reader).read(offset, length);
    if (bytes instanceof ArrayBuffer) bytes = new Uint8Array(bytes);
    if (!(bytes instanceof Uint8Array) || bytes.length !== length) return 0;
    HEAPU8.set(bytes, dest >>> 0);
    return 1;
  } catch (e) {
    return 0;
  }
});
// clang-format on

namespace {

using emscripten::val;

// plan(requestJson, onProgress): onProgress may be undefined (or null); when it
// is a function it receives (fraction, phase, secondsLeft, note, gap): the
// fraction of the whole request done, 0..1, never lower than before
// (pase::Progress), what runs now ("search 3 under the memory cap"), the
// time left in seconds, null until it can be estimated, and a note on the
// request ("a long search: ...", given before it starts), "" when none, and
// the proven gap of the best plan so far (pase::Progress::gap), null when
// not known. The core throttles its
// reports (at most one per half percent, phase or half second), so none is needed here.
// The function returning true stops the search as a time limit does (the
// page's Cancel, web/worker.js): the result is the best plan found, with
// "stopped": "cancelled" where it keeps one (core/docs/pipeline.md, "A time
// limit").
std::string plan(const std::string& request, val on_progress) {
  if (on_progress.isUndefined() || on_progress.isNull()) return pase::plan_json(request);
  std::atomic<bool> stop{false};
  return pase::plan_json(
      request,
      [&on_progress, &stop](const pase::Progress& progress) {
        const val asked =
            on_progress(progress.fraction, progress.phase,
                        progress.seconds_left < 0 ? val::null() : val(progress.seconds_left),
                        progress.note, progress.gap < 0 ? val::null() : val(progress.gap));
        if (asked.isTrue()) stop = true;
      },
      &stop);
}

std::string plan_without_progress(const std::string& request) {
  return plan(request, val::undefined());
}

std::string evaluate(const std::string& request) { return pase::evaluate_json(request); }

// layouts(requestJson, onProgress): the layout search (json_api.hpp,
// layouts_json()); onProgress, when a function, receives the fraction done.
std::string layouts(const std::string& request, val on_progress) {
  if (on_progress.isUndefined() || on_progress.isNull()) return pase::layouts_json(request);
  return pase::layouts_json(request, [&on_progress](double fraction) {
    on_progress(fraction);
    return true;
  });
}

std::string layouts_without_progress(const std::string& request) {
  return layouts(request, val::undefined());
}

// estimate(requestJson): the size of the search a plan request would run
// (pairs, tables, dependent sets), without running it (json_api.hpp,
// estimate_json()); the page announces long searches from it.
std::string estimate(const std::string& request) { return pase::estimate_json(request); }

// compare(requestJson): a plan request plus an optional "mcmc" object
// (compare.hpp, compare_json()); every strategy priced on the same cost model.
std::string compare(const std::string& request) { return pase::compare_json(request); }

// validate(graphJson): a pase-graph/1 document, checked without planning
// (json_api.hpp, validate_json()): {"ok": true, "name", "layers", "vertices",
// "edges"} or an error document whose `where` is relative to the graph.
std::string validate(const std::string& graph) { return pase::validate_json(graph); }

std::string models() { return pase::models_to_json(); }

// presets(): the GPU presets that a request's "preset" names (presets.hpp),
// the list `pase presets --format json` prints, so the page offers exactly
// the machines the core knows.
std::string presets() { return pase::presets_to_json(); }

// exportModel(name[, batch[, seq]]): 0 (or leaving the argument out) is the
// network's default. JavaScript numbers are doubles; export_model_json()
// reports a batch or seq that is not a non-negative whole number rather than
// truncating it, and a seq for a network without a sequence as an error.
std::string export_model(const std::string& name, double batch, double seq) {
  return pase::export_model_json(name, batch, seq);
}

std::string export_model_default_seq(const std::string& name, double batch) {
  return export_model(name, batch, 0);
}

std::string export_model_defaults(const std::string& name) { return export_model(name, 0, 0); }

// ---- importModel ----------------------------------------------------------------

// Copies the bytes of a Uint8Array to the end of `out`: one copy, JavaScript
// to the heap, through a view of `out`'s new bytes. The view is made after the
// resize, which may grow (and so detach) the heap.
void append_bytes(const val& bytes, size_t length, std::string& out) {
  const size_t start = out.size();
  out.resize(start + length);
  auto* data = reinterpret_cast<unsigned char*>(out.data() + start);
  val(emscripten::typed_memory_view(length, data)).call<void>("set", bytes);
}

// An ArrayBuffer as a Uint8Array over it (no copy); anything else unchanged.
val as_uint8_array(const val& value) {
  if (value.instanceof (val::global("ArrayBuffer"))) return val::global("Uint8Array").new_(value);
  return value;
}

// A model file on the JavaScript side, {size, read(offset, length)}, where
// read() returns the bytes [offset, offset + length) as a Uint8Array (or an
// ArrayBuffer). The importer reads only the structure of the file, field by
// field (a few hundred bytes at a time), and skips the weights by offset, so
// a file of any size (the page's File, read with FileReaderSync) never has to
// be in memory whole. Its small reads are served from a window of kWindow
// bytes read ahead in one call: one call into JavaScript (and one file slice)
// per window rather than per field. A read that throws, or returns anything
// but exactly the bytes asked for, is a failed read: the importer reports the
// file as unreadable.
class JsReaderSource final : public pase::ByteSource {
 public:
  static constexpr size_t kWindow = 64 * 1024;

  JsReaderSource(val reader, uint64_t size) : reader_(std::move(reader)), size_(size) {}

  uint64_t size() const override { return size_; }

  bool read(uint64_t offset, size_t length, std::string& out) override {
    if (offset > size_ || length > size_ - offset) return false;
    if (length > kWindow) return read_js(offset, length, out);
    if (offset < window_start_ || offset + length > window_start_ + window_.size()) {
      window_.clear();
      window_start_ = offset;
      const size_t ahead = static_cast<size_t>(std::min<uint64_t>(kWindow, size_ - offset));
      if (!read_js(offset, ahead, window_)) {
        window_.clear();
        return false;
      }
    }
    out.append(window_, static_cast<size_t>(offset - window_start_), length);
    return true;
  }

 private:
  // Appends [offset, offset + length) read by JavaScript to `out`.
  bool read_js(uint64_t offset, size_t length, std::string& out) {
    const size_t start = out.size();
    out.resize(start + length);
    auto* data = reinterpret_cast<unsigned char*>(out.data() + start);
    if (pase_read_slice(reader_.as_handle(), static_cast<double>(offset),
                        static_cast<double>(length), data)) {
      return true;
    }
    out.resize(start);
    return false;
  }

  val reader_;
  uint64_t size_;
  std::string window_;  // bytes [window_start_, window_start_ + window_.size())
  uint64_t window_start_ = 0;
};

std::string source_error(const std::string& message) {
  return pase::error_to_json(pase::Error{message, "source"});
}

// importModel(source, optionsJson): `source` is the file's bytes (a Uint8Array
// or an ArrayBuffer, copied into the module once) or, for large files, a
// reader {size, read(offset, length) -> Uint8Array} (JsReaderSource);
// `optionsJson` is the options document of import_model_json() (json_api.hpp),
// or undefined. The answer is its result or error document.
std::string import_model(val source, val options) {
  std::string options_json;
  if (options.isString()) {
    options_json = options.as<std::string>();
  } else if (!options.isUndefined() && !options.isNull()) {
    return pase::error_to_json(pase::Error{"must be a JSON string", "options"});
  }
  source = as_uint8_array(source);
  if (source.instanceof (val::global("Uint8Array"))) {
    const double length = source["length"].as<double>();
    std::string bytes;
    try {
      append_bytes(source, static_cast<size_t>(length), bytes);
    } catch (const std::bad_alloc&) {
      return source_error("out of memory: the file is too large to copy into the module (" +
                          std::to_string(static_cast<uint64_t>(length)) +
                          " bytes); pass a reader {size, read(offset, length)} instead");
    }
    pase::MemorySource memory(bytes);
    return pase::import_model_json(memory, options_json);
  }
  const bool is_object = source.typeOf().as<std::string>() == "object" && !source.isNull();
  if (!is_object || source["read"].typeOf().as<std::string>() != "function") {
    return source_error(
        "must be a Uint8Array, an ArrayBuffer or a reader {size, read(offset, length)}");
  }
  const val size = source["size"];
  // Sizes beyond 2^53 are not exact in a JavaScript number.
  if (!size.isNumber() || !(size.as<double>() >= 0) || size.as<double>() > 9007199254740992.0 ||
      size.as<double>() != std::floor(size.as<double>())) {
    return pase::error_to_json(pase::Error{
        "must be the file's size in bytes, a non-negative whole number", "source.size"});
  }
  JsReaderSource reader(source, static_cast<uint64_t>(size.as<double>()));
  return pase::import_model_json(reader, options_json);
}

std::string import_model_without_options(val source) {
  return import_model(std::move(source), val::undefined());
}

// Plain text, not JSON: "0.1.0".
std::string version() { return pase::version(); }

// The threads a plan uses when its request does not say (pase::default_threads()):
// 1 in pase.js; in pase-mt.js, the cores the browser reports, at most 8.
int default_threads() { return pase::default_threads(); }

}  // namespace

EMSCRIPTEN_BINDINGS(pase) {
  // Embind overloads by argument count: plan(request), exportModel(name),
  // exportModel(name, batch) and importModel(source) work as well as the full
  // forms.
  emscripten::function("plan", &plan);
  emscripten::function("plan", &plan_without_progress);
  emscripten::function("evaluate", &evaluate);
  emscripten::function("layouts", &layouts);
  emscripten::function("layouts", &layouts_without_progress);
  emscripten::function("estimate", &estimate);
  emscripten::function("compare", &compare);
  emscripten::function("validate", &validate);
  emscripten::function("models", &models);
  emscripten::function("presets", &presets);
  emscripten::function("exportModel", &export_model);
  emscripten::function("exportModel", &export_model_default_seq);
  emscripten::function("exportModel", &export_model_defaults);
  emscripten::function("importModel", &import_model);
  emscripten::function("importModel", &import_model_without_options);
  emscripten::function("version", &version);
  emscripten::function("defaultThreads", &default_threads);
}
