// ZeRO stages priced alike (zero_alike(), core/src/model/cost_model.hpp):
// every strategy costs the same at both stages and holds no more bytes at
// the higher, so the higher's fastest plan is at least as fast under any
// cap, and the per-layer answers search it alone (core/docs/layouts.md,
// "Both answers"). Stages not alike price some strategy differently.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "model/cost_model.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "pase/presets.hpp"
#include "test_util.hpp"

using namespace pase;

namespace {

Cluster h100(CostModel model) {
  Cluster c = apply_preset(Cluster{}, *find_preset("h100"));
  c.devices = 8;
  c.gpus_per_node = 4;
  c.memory_gib = 0;
  c.cost_model = model;
  return c;
}

// Strategies of GPT-2 at a short sequence (weights large beside the compute,
// so their traffic shows): the plans of each ZeRO stage under both models.
std::vector<Strategy> strategies(const Graph& g) {
  std::vector<Strategy> out;
  for (CostModel model : {CostModel::kPaper, CostModel::kPractice})
    for (int64_t zero = 0; zero <= 3; ++zero) {
      Cluster c = h100(model);
      c.training.zero = zero;
      Result<Plan> p = plan(g, c);
      REQUIRE_MESSAGE(p.ok(), testing::why(p));
      out.push_back(p->strategy);
    }
  return out;
}

Plan priced(const Graph& g, Cluster c, int64_t zero, const Strategy& s) {
  c.training.zero = zero;
  Result<Plan> p = evaluate(g, c, s);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  return std::move(*p);
}

}  // namespace

TEST_CASE("zero: stages priced alike cost the same for every strategy, the higher holding less") {
  Result<Graph> g = build_model("gpt2", 64, 64);
  REQUIRE(g.ok());
  const std::vector<Strategy> all = strategies(*g);
  for (CostModel model : {CostModel::kPaper, CostModel::kPractice})
    for (int64_t grad_bytes : {2, 4}) {
      Cluster c = h100(model);
      c.training.grad_bytes = grad_bytes;
      for (int64_t lower = 0; lower <= 3; ++lower)
        for (int64_t upper = lower + 1; upper <= 3; ++upper) {
          CAPTURE(model == CostModel::kPaper);
          CAPTURE(grad_bytes);
          CAPTURE(lower);
          CAPTURE(upper);
          const bool alike = zero_alike(c, lower, upper);
          // What the rule says: 1 and 2 always; 0 with them under the paper
          // model or with gradients as wide as weights; 3 with none.
          CHECK(alike == (upper < 3 && (lower >= 1 || model == CostModel::kPaper ||
                                        grad_bytes == c.training.param_bytes)));
          int differ = 0;
          for (const Strategy& s : all) {
            const Plan a = priced(*g, c, lower, s), b = priced(*g, c, upper, s);
            if (alike) {
              CHECK(b.cost == doctest::Approx(a.cost).epsilon(1e-12));
              CHECK(b.memory.total() <= a.memory.total());
            }
            if (b.cost != doctest::Approx(a.cost).epsilon(1e-9)) ++differ;
          }
          if (!alike) CHECK(differ > 0);
        }
    }
  CHECK_FALSE(zero_alike(h100(CostModel::kPaper), 2, 1));
  CHECK_FALSE(zero_alike(h100(CostModel::kPaper), 1, 1));
}
