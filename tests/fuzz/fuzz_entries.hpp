// The five fuzz targets' entry points, compiled once in fuzz_entries.cpp
// for all five executables (tests/fuzz/CMakeLists.txt); each returns "" or
// the first property that failed on its input.
#pragma once

#include <string>
#include <string_view>

namespace pase_fuzz {

std::string entry_plan(std::string_view input);      // fuzz_one() (fuzz_target.hpp)
std::string entry_layout(std::string_view input);    // fuzz_layout() (fuzz_layout.hpp)
std::string entry_request(std::string_view input);   // fuzz_request() (fuzz_request.hpp)
std::string entry_strategy(std::string_view input);  // fuzz_strategy() (fuzz_strategy.hpp)
std::string entry_emit(std::string_view input);      // fuzz_emit() (fuzz_emit.hpp)

}  // namespace pase_fuzz
