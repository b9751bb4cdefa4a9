// Every graph in examples/graphs loads, plans at 4, 8 and 16 devices, matches
// exhaustive search where that is small enough, and survives a write/load
// round trip with the same plan.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cost/configurations.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/plan.hpp"
#include "plan/testing.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> example_files() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(PASE_EXAMPLES_DIR))
    if (entry.path().extension() == ".json") out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("examples: the directory holds graphs") { CHECK(example_files().size() >= 3); }

TEST_CASE("examples: every graph loads and plans at 4, 8 and 16 devices") {
  for (const fs::path& path : example_files()) {
    CAPTURE(path.filename().string());
    Result<Graph> g = load_graph(read_text(path));
    REQUIRE_MESSAGE(g.ok(), why(g));
    CHECK_FALSE(g->vertices.empty());
    for (int64_t devices : {4, 8, 16}) {
      CAPTURE(devices);
      Cluster cluster{.devices = devices};
      Result<Plan> p = plan(*g, cluster);
      REQUIRE_MESSAGE(p.ok(), why(p));
      CHECK(p->cost > 0);
      CHECK(std::isfinite(p->cost));
      // The plan never costs more than running everything on one device.
      Result<Plan> one = plan(*g, Cluster{.devices = 1});
      REQUIRE(one.ok());
      CHECK(p->cost <= one->cost);
      for (Order order : {Order::kBfs, Order::kMinTable}) {
        PlanOptions options;
        options.order = order;
        Result<Plan> q = plan(*g, cluster, options);
        if (!q) {
          // Only the memory guard may refuse another order.
          CHECK(q.error().where == "max_memory");
          continue;
        }
        CHECK(q->cost == doctest::Approx(p->cost).epsilon(1e-9));
      }
    }
  }
}

TEST_CASE("examples: plans equal exhaustive search where it is small enough") {
  int compared = 0;
  for (const fs::path& path : example_files()) {
    Result<Graph> g = load_graph(read_text(path));
    REQUIRE(g.ok());
    for (int64_t devices : {2, 3, 4, 8, 16}) {
      if (combinations(*g, devices) > 1e6) continue;
      CAPTURE(path.filename().string());
      CAPTURE(devices);
      Cluster cluster{.devices = devices};
      Result<Plan> best = exhaustive_search(*g, cluster, 1'000'000);
      REQUIRE_MESSAGE(best.ok(), why(best));
      Result<Plan> p = plan(*g, cluster);
      REQUIRE(p.ok());
      CHECK(p->cost == doctest::Approx(best->cost).epsilon(1e-9));
      ++compared;
    }
  }
  MESSAGE("exhaustive comparisons: " << compared);
  CHECK(compared > 0);
}

TEST_CASE("examples: every graph survives write_graph and load_graph") {
  for (const fs::path& path : example_files()) {
    CAPTURE(path.filename().string());
    Result<GraphSpec> spec = parse_graph_spec(read_text(path));
    REQUIRE(spec.ok());
    Result<Graph> g = build_graph(*spec);
    REQUIRE(g.ok());
    const std::string text = write_graph(*spec);
    Result<GraphSpec> spec_again = parse_graph_spec(text);
    REQUIRE(spec_again.ok());
    CHECK(spec_again->meta_json == spec->meta_json);
    Result<Graph> again = load_graph(text);
    REQUIRE_MESSAGE(again.ok(), why(again));
    REQUIRE(again->vertices.size() == g->vertices.size());
    for (size_t i = 0; i < g->vertices.size(); ++i)
      CHECK(again->vertices[i].dom == g->vertices[i].dom);
    CHECK(again->edges.size() == g->edges.size());
    CHECK(plan(*again, Cluster{})->cost == plan(*g, Cluster{})->cost);
  }
}

TEST_CASE("examples: every graph plans through a JSON request") {
  for (const fs::path& path : example_files()) {
    CAPTURE(path.filename().string());
    std::string request = R"({"graph": )" + read_text(path) + R"(, "cluster": {"devices": 8}})";
    Result<PlanRequest> r = parse_plan_request(request);
    REQUIRE_MESSAGE(r.ok(), why(r));
    std::string result = plan_json(request);
    CHECK(result.find("\"error\"") == std::string::npos);
    Result<Strategy> s = parse_strategy(result);
    REQUIRE_MESSAGE(s.ok(), why(s));
    CHECK(*s == plan(r->graph, r->cluster)->strategy);
  }
}
