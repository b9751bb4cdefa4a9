// Plans stored in tests/data/stored_plans.json: the five built-in networks at
// 8 devices with the default cluster and options (genseq order), each
// with its optimal cost (written with full precision, so it reads back
// exactly) and the configuration of every vertex. plan() must give the stored
// cost to 1e-12 relative and exactly the stored configurations: results are
// deterministic (plan.hpp, DETERMINISM AND TIE-BREAKING) across runs,
// processes and builds, not only within one process.
//
// A change that is meant to change a plan (the cost model, the enumeration,
// the tie-breaking) regenerates the file; review its diff like code:
//
//   PASE_REGENERATE=1 build/tests/pase_tests --test-case='stored plans*'
//
// (or PASE_REGENERATE=1 ctest --test-dir build -R 'stored plans'). The test
// then writes the file in the source tree instead of comparing.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "invalid_corpus.hpp"
#include "pase/graph.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using nlohmann::json;
using pase::testing::why;

namespace {

const std::string kStoredPath = std::string(PASE_TEST_DATA_DIR) + "/stored_plans.json";

struct StoredCase {
  std::string model;
  int64_t devices;
};

// Every paper network at 8 devices; each plans in well under a second, also
// under the sanitizers. (The language models' plans are checked against data
// parallelism in llm_test.cpp.)
std::vector<StoredCase> cases() {
  std::vector<StoredCase> out;
  for (const ModelInfo& m : list_models())
    if (!m.llm) out.push_back({m.name, 8});
  return out;
}

std::string case_name(const StoredCase& c) { return c.model + " at " + std::to_string(c.devices); }

Graph model_graph(const StoredCase& c) {
  Result<Graph> g = build_model(c.model);
  REQUIRE_MESSAGE(g.ok(), why(g));
  return std::move(g).value();
}

Plan plan_case(const Graph& g, const StoredCase& c) {
  Result<Plan> p = plan(g, Cluster{.devices = c.devices});
  REQUIRE_MESSAGE(p.ok(), why(p));
  return std::move(p).value();
}

std::string show_list(const Config& config) {
  std::string out = "[";
  for (size_t i = 0; i < config.size(); ++i) out += (i ? ", " : "") + std::to_string(config[i]);
  return out + "]";
}

// The file, one vertex a line so that a changed plan shows as a short diff.
// json::dump() writes a double with the fewest digits that read back to the
// same value.
std::string stored_text() {
  const Cluster defaults;
  std::ostringstream out;
  out << "{\n"
      << R"(  "about": "plan() of the built-in networks, default cluster and options; )"
      << R"(tests/stored_plans_test.cpp checks them and says how to regenerate this file",)"
      << "\n  \"plans\": [\n";
  const std::vector<StoredCase> all = cases();
  for (size_t i = 0; i < all.size(); ++i) {
    const StoredCase& c = all[i];
    const Graph g = model_graph(c);
    const Plan p = plan_case(g, c);
    out << "    {\"model\": " << json(c.model).dump() << ", \"devices\": " << c.devices
        << ", \"tflops\": " << json(defaults.tflops).dump()
        << ", \"bandwidth_gbps\": " << json(defaults.bandwidth_gbps).dump()
        << ", \"order\": " << json(order_name(PlanOptions{}.order)).dump() << ",\n"
        << "     \"cost\": " << json(p.cost).dump() << ",\n"
        << "     \"vertices\": [\n";
    for (const Vertex& v : g.vertices) {
      out << "       {\"name\": " << json(v.name).dump()
          << ", \"config\": " << show_list(p.strategy[v.id]) << "}"
          << (v.id + 1 < static_cast<int>(g.vertices.size()) ? "," : "") << "\n";
    }
    out << "     ]}" << (i + 1 < all.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
  return out.str();
}

bool regenerate() {
  const char* flag = std::getenv("PASE_REGENERATE");
  return flag != nullptr && std::string(flag) == "1";
}

}  // namespace

TEST_CASE("stored plans: plan() gives the stored cost and every stored configuration") {
  if (regenerate()) {
    const std::string text = stored_text();
    std::ofstream file(kStoredPath, std::ios::binary);
    REQUIRE_MESSAGE(file.good(), "cannot write " << kStoredPath);
    file << text;
    file.close();
    REQUIRE_MESSAGE(file.good(), "cannot write " << kStoredPath);
    MESSAGE("PASE_REGENERATE=1: wrote " << kStoredPath << "; review its diff before committing");
    return;
  }

  const json stored = json::parse(pase_test::read_binary(kStoredPath));
  const std::vector<StoredCase> all = cases();
  REQUIRE_MESSAGE(stored["plans"].size() == all.size(),
                  "the stored cases are not those of this test: regenerate the file");
  const Cluster defaults;
  for (size_t i = 0; i < all.size(); ++i) {
    const StoredCase& c = all[i];
    const json& s = stored["plans"][i];
    CAPTURE(case_name(c));
    REQUIRE(s["model"].get<std::string>() == c.model);
    REQUIRE(s["devices"].get<int64_t>() == c.devices);
    // The defaults the file was written with are still the defaults.
    REQUIRE(s["tflops"].get<double>() == defaults.tflops);
    REQUIRE(s["bandwidth_gbps"].get<double>() == defaults.bandwidth_gbps);
    REQUIRE(s["order"].get<std::string>() == order_name(PlanOptions{}.order));

    const Graph g = model_graph(c);
    const Plan p = plan_case(g, c);
    const double want = s["cost"].get<double>();
    CHECK_MESSAGE(std::abs(p.cost - want) <= 1e-12 * std::abs(want),
                  "cost " << json(p.cost).dump() << ", stored " << json(want).dump());

    const json& vertices = s["vertices"];
    REQUIRE(vertices.size() == g.vertices.size());
    int differ = 0;
    for (const Vertex& v : g.vertices) {
      const json& sv = vertices[v.id];
      CHECK(sv["name"].get<std::string>() == v.name);
      const Config config = sv["config"].get<Config>();
      if (p.strategy[v.id] != config) {
        ++differ;
        MESSAGE("vertex " << v.id << " (" << v.name << ") planned " << show_list(p.strategy[v.id])
                          << ", stored " << show_list(config));
      }
    }
    CHECK_MESSAGE(differ == 0, differ << " configurations differ from the stored plan");
  }
}
