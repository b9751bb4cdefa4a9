// libFuzzer target: JSON loading, validation and planning of small graphs
// (the properties are listed in fuzz_target.hpp). Built only with
// -DPASE_FUZZ=ON and clang; run by .ci/fuzz:
//
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DPASE_FUZZ=ON
//   cmake --build build-fuzz --target pase_fuzz
//   build-fuzz/tests/fuzz/pase_fuzz build-fuzz/tests/fuzz/corpus -max_len=65536
//
// A failed property aborts, so libFuzzer records the input as a crash; copy it
// to tests/fuzz/regressions/, where the doctest suite replays it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string failure =
      pase_fuzz::fuzz_one(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!failure.empty()) {
    std::fprintf(stderr, "pase_fuzz: %s\n", failure.c_str());
    std::abort();
  }
  return 0;
}
