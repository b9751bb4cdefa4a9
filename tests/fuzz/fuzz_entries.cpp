// The entry points of fuzz_entries.hpp: the five fuzz_*.hpp compiled once,
// instead of once per target executable (each was a compile of all five
// under the sanitizers).
#include "fuzz_entries.hpp"

#include "fuzz_emit.hpp"
#include "fuzz_layout.hpp"
#include "fuzz_request.hpp"
#include "fuzz_strategy.hpp"
#include "fuzz_target.hpp"

namespace pase_fuzz {

std::string entry_plan(std::string_view input) { return fuzz_one(input); }
std::string entry_layout(std::string_view input) { return fuzz_layout(input); }
std::string entry_request(std::string_view input) { return fuzz_request(input); }
std::string entry_strategy(std::string_view input) { return fuzz_strategy(input); }
std::string entry_emit(std::string_view input) { return fuzz_emit(input); }

}  // namespace pase_fuzz
