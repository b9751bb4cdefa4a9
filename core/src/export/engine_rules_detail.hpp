// What the engines' rule checks (export/engine_rules.cpp) and the search
// for the nearest accepted layout (export/engine_rules_nearest.cpp) share:
// the rules of one engine, model and cluster, and the helpers of both.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "export/engine_rules.hpp"

namespace pase::engine_rules_detail {

// a x b x ..., or -1 when the product overflows (degrees are checked
// positive first).
inline int64_t rules_product(std::initializer_list<int64_t> factors) {
  int64_t out = 1;
  for (int64_t f : factors)
    if (__builtin_mul_overflow(out, f, &out)) return -1;
  return out;
}

inline int64_t rules_expert_tp(const Layout& l) { return l.etp > 0 ? l.etp : l.tp; }

struct EngineRules {
  ExportTarget target;
  const LlmConfig& config;
  int64_t seq, devices, gpus_per_node;
  bool megatron() const { return target == ExportTarget::kMegatron; }
  const char* engine() const { return megatron() ? "Megatron-LM" : "torchtitan"; }

  std::vector<EngineRefusal> check(const Layout& l) const;
};

}  // namespace pase::engine_rules_detail
