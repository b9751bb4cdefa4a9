// The invalid-input corpus (tests/invalid/cases.json) through the library:
// every case is refused with its own `where` and message, by load_graph() and
// validate_json() (the page's check of a file), by parse_plan_request() (a
// graph inside a request, as the module and the page send it) or by plan().
// Nothing crashes, throws or hangs.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "invalid_corpus.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using pase::testing::contains;
using pase_test::InvalidCase;

namespace {

// A short form of a case for failure messages.
std::string label(const InvalidCase& c) { return c.name + " (" + c.file + c.request + ")"; }

void check_error(const InvalidCase& c, const Error& error, const std::string& where,
                 const std::string& message) {
  INFO(label(c), ": got '", error.where, "': ", error.message.substr(0, 300));
  CHECK(error.where == where);
  CHECK(contains(error.message, message));
  CHECK(!error.message.empty());
}

// The error of planning a request that parses; fails the test when the plan
// succeeds.
Error plan_error(const InvalidCase& c, const PlanRequest& request) {
  Result<Plan> p = plan(request.graph, request.cluster, request.options);
  if (p.ok()) FAIL(label(c), ": planned, expected an error");
  return p.error();
}

}  // namespace

TEST_CASE("invalid corpus: the manifest is well formed") {
  const auto cases = pase_test::load_invalid_cases();
  CHECK(cases.size() >= 150);
  for (const InvalidCase& c : cases) {
    INFO(c.name);
    const int sources = !c.file.empty() + !c.request.empty() + !c.generate.is_null();
    CHECK(sources <= 1);
    if (sources == 0) CHECK(c.cli_exit != 0);  // a CLI-only case
    if (c.cli_exit != 0) CHECK((c.cli_exit == 1 || c.cli_exit == 2));
    if (sources == 1) CHECK(!c.message.empty());
    if (c.plan) CHECK(!c.file.empty());
  }
}

TEST_CASE("invalid corpus: load_graph names the place of every graph error") {
  for (const InvalidCase& c : pase_test::load_invalid_cases()) {
    if (!c.is_graph() || c.plan) continue;
    const std::string text = pase_test::case_text(c);
    Result<Graph> g = load_graph(text);
    if (g.ok()) {
      FAIL_CHECK(label(c), ": loaded, expected an error");
      continue;
    }
    check_error(c, g.error(), c.where, c.message);
  }
}

TEST_CASE("invalid corpus: validate_json gives load_graph's error as a document") {
  // The page's check of an uploaded file: the bare document, so `where` is
  // the file's own field. Graphs refused only by plan() pass the check.
  for (const InvalidCase& c : pase_test::load_invalid_cases()) {
    if (!c.is_graph()) continue;
    const nlohmann::json doc = nlohmann::json::parse(validate_json(pase_test::case_text(c)));
    INFO(label(c), ": ",
         doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).substr(0, 300));
    if (c.plan) {
      CHECK(doc["ok"] == true);
      continue;
    }
    REQUIRE(doc.contains("error"));
    CHECK(doc["error"]["where"] == c.where);
    CHECK(contains(doc["error"]["message"].get<std::string>(), c.message));
  }
}

TEST_CASE("invalid corpus: a graph inside a plan request keeps its error, under 'graph'") {
  // The request the module gets from the page. Errors in the JSON text itself
  // are checked on the bare text: spliced into a request they would move.
  for (const InvalidCase& c : pase_test::load_invalid_cases()) {
    if (!c.is_graph() || c.plan) continue;
    const std::string text = pase_test::case_text(c);
    Result<PlanRequest> r = parse_plan_request(c.document ? text : pase_test::wrap_graph(text));
    if (r.ok()) {
      FAIL_CHECK(label(c), ": the request parsed, expected an error");
      continue;
    }
    if (c.document) {
      check_error(c, r.error(), c.where, c.message);
    } else {
      check_error(c, r.error(),
                  c.module_where.value_or(c.where.empty() ? "graph" : "graph." + c.where),
                  c.module_message.value_or(c.message));
    }
  }
}

TEST_CASE("invalid corpus: valid graphs that cannot be planned as asked are refused by plan()") {
  for (const InvalidCase& c : pase_test::load_invalid_cases()) {
    if (!c.plan) continue;
    const std::string text = pase_test::case_text(c);
    REQUIRE_MESSAGE(load_graph(text).ok(), label(c));
    Result<PlanRequest> r = parse_plan_request(pase_test::wrap_graph(text, *c.plan));
    REQUIRE_MESSAGE(r.ok(), label(c), ": ", r.ok() ? "" : r.error().to_string());
    check_error(c, plan_error(c, *r), c.where, c.message);
    // estimate() refuses the same way (it has no memory limit to hit).
    Result<SearchStats> s = estimate(r->graph, r->cluster, r->options);
    if (c.where != "max_memory") {
      REQUIRE_FALSE(s.ok());
      check_error(c, s.error(), c.where, c.message);
    }
  }
}

TEST_CASE("invalid corpus: plan requests and clusters name the request field") {
  for (const InvalidCase& c : pase_test::load_invalid_cases()) {
    if (!c.is_request()) continue;
    Result<PlanRequest> r = parse_plan_request(pase_test::case_text(c));
    check_error(c, r.ok() ? plan_error(c, *r) : r.error(), c.where, c.message);
    // The module's entry point gives the same error as a document.
    const nlohmann::json doc = nlohmann::json::parse(plan_json(pase_test::case_text(c)));
    REQUIRE_MESSAGE(doc.contains("error"), label(c));
    CHECK(doc["error"]["where"] == c.where);
    CHECK(contains(doc["error"]["message"].get<std::string>(), c.message));
  }
}

TEST_CASE("invalid corpus: a bad cluster is refused by check_cluster() and plan() alike") {
  // The cluster cases as C++ values (the CLI builds them from flags).
  struct Bad {
    Cluster cluster;
    const char* where;
    const char* message;
  };
  const Bad bad[] = {
      {{.devices = 0}, "cluster.devices", "must be at least 1, got 0"},
      {{.devices = -4}, "cluster.devices", "must be at least 1, got -4"},
      {{.devices = kMaxDevices + 1}, "cluster.devices", "must be at most 65536, got 65537"},
      {{.tflops = 0}, "cluster.tflops", "must be a positive number"},
      {{.tflops = -1.5}, "cluster.tflops", "must be a positive number"},
      {{.tflops = 1.0 / 0.0}, "cluster.tflops", "must be a positive number"},
      {{.bandwidth_gbps = 0}, "cluster.bandwidth_gbps", "must be a positive number"},
      {{.bandwidth_gbps = 0.0 / 0.0}, "cluster.bandwidth_gbps", "must be a positive number"},
  };
  Result<Graph> g =
      load_graph(pase_test::read_binary(std::string(PASE_EXAMPLES_DIR) + "/mlp_residual.json"));
  REQUIRE(g.ok());
  for (const Bad& b : bad) {
    INFO(b.where, " ", b.message);
    const std::optional<Error> e = check_cluster(b.cluster);
    REQUIRE(e.has_value());
    CHECK(e->where == b.where);
    CHECK(contains(e->message, b.message));
    Result<Plan> p = plan(*g, b.cluster);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().where == b.where);
    CHECK(!evaluate(*g, b.cluster, Strategy(g->vertices.size())).ok());
  }
}
