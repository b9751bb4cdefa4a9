// The libFuzzer targets, one executable each (tests/fuzz/CMakeLists.txt),
// this file compiled with PASE_FUZZ_ENTRY naming the entry point of the
// target (fuzz_entries.hpp, compiled once for all) and PASE_FUZZ_TARGET its
// name:
//
//   pase_fuzz_plan      entry_plan()      ONNX models, configs, graph documents
//                                         and plan requests (fuzz_target.hpp)
//   pase_fuzz_layout    entry_layout()    `pase eval --layout` (fuzz_layout.hpp)
//   pase_fuzz_request   entry_request()   plan_json(), evaluate_json(),
//                                         estimate_json() (fuzz_request.hpp)
//   pase_fuzz_strategy  entry_strategy()  `pase eval --strategy` (fuzz_strategy.hpp)
//   pase_fuzz_emit      entry_emit()      the emitters, `pase emit --plan`
//                                         (fuzz_emit.hpp)
//
// Built only with -DPASE_FUZZ=ON and clang (`bash .ci/sanitize --build
// pase_fuzz` builds them all); run by .ci/fuzz. A failed property aborts, so
// libFuzzer records the input as a crash; copy it to
// tests/fuzz/regressions/<target>/ (plan, layout, ...), where the doctest
// suite replays it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string failure =
      pase_fuzz::PASE_FUZZ_ENTRY(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!failure.empty()) {
    std::fprintf(stderr, "%s: %s\n", PASE_FUZZ_TARGET, failure.c_str());
    std::abort();
  }
  return 0;
}
