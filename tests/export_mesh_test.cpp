// The JAX program's mesh on nodes, and a split no mesh expresses
// (core/docs/export.md, "The plan as shardings").
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.hpp"
#include "export_util.hpp"
#include "pase/export.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;
using nlohmann::json;

TEST_CASE("export: on nodes the nodes' mesh axes come first") {
  const Graph g = export_mlp();
  const Cluster c{.devices = 8, .gpus_per_node = 4, .intra_node_gbps = 100};
  const Strategy s = export_strategy(g, {{"fc1", {8, 1, 1}}, {"fc2", {2, 4, 1}}});
  Result<Plan> p = evaluate(g, c, s);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  const json data =
      export_embedded(export_ok(ExportTarget::kJax, PlanView{&g, &g, &c, &*p, nullptr}).text);
  CHECK(data["mesh"]["axes"] == json({"n0", "d0", "d1"}));
  CHECK(data["mesh"]["shape"] == json({2, 2, 2}));
  const json& full = data["variants"]["full"];
  export_check_variant(export_axes(data), full);
  // The batch over every device: nodes outermost.
  CHECK(export_layer(full, "fc1")["out_specs"][0][0] == json({"n0", "d0", "d1"}));
  // fc2's batch 2 is no split of fc1's 8: the outermost free axis, n0.
  CHECK(export_layer(full, "fc2")["out_specs"][0] == json({{"n0"}, {"d0", "d1"}}));
  // 12 devices on nodes of 4: 3 nodes, then the node's 2 x 2. A split of 8
  // (no divisor of 12) has no axes on that mesh: refused, naming it.
  Cluster twelve = c;
  twelve.devices = 12;
  Result<Plan> p12 = evaluate(g, twelve, s);
  REQUIRE_MESSAGE(p12.ok(), testing::why(p12));
  Result<Exported> refused =
      export_plan(ExportTarget::kJax, PlanView{&g, &g, &twelve, &*p12, nullptr});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().where == "emit");
  CHECK(contains(refused.error().message, "layer 'fc1' splits its dimension"));
  CHECK(contains(refused.error().message, "8 ways on 12 devices"));
  const Strategy s12 = export_strategy(g, {{"fc1", {4, 1, 1}}});
  Result<Plan> q12 = evaluate(g, twelve, s12);
  REQUIRE_MESSAGE(q12.ok(), testing::why(q12));
  const json d12 = export_embedded(
      export_ok(ExportTarget::kJax, PlanView{&g, &g, &twelve, &*q12, nullptr}).text);
  CHECK(d12["mesh"]["axes"] == json({"n0", "d0", "d1"}));
  CHECK(d12["mesh"]["shape"] == json({3, 2, 2}));
  const json& f12 = d12["variants"]["full"];
  export_check_variant(export_axes(d12), f12);
  // fc1's batch of 4: the node's two axes (the nodes' 3 does not divide 4).
  CHECK(export_layer(f12, "fc1")["out_specs"][0][0] == json({"d0", "d1"}));
  // The CLI plans for a mesh with --emit jax: gpt2 on 12 devices exports.
  const testing::Run run = run_cli(
      {"plan", "--model", "gpt2", "--batch", "8", "--seq", "64", "--procs", "12", "--emit", "jax"});
  CHECK_MESSAGE(run.exit == 0, run.err);
}
