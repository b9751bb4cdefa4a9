// What hand-written and generated graphs must not do to the planner: crash,
// hang or exhaust memory. Disconnected graphs (each weakly connected
// component is planned on its own and the costs add up), the documented
// limits at their boundaries, the enumeration cases that used to hang, and the
// fuzz regression inputs (tests/fuzz/regressions/) with the seed corpus.
// Nothing here reads a clock: what used to be timed is checked by what the
// planner counts (configurations, pairs, progress reports); timings belong in
// `pase bench`.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "fuzz/fuzz_emit.hpp"
#include "fuzz/fuzz_layout.hpp"
#include "fuzz/fuzz_request.hpp"
#include "fuzz/fuzz_strategy.hpp"
#include "fuzz/fuzz_target.hpp"
#include "invalid_corpus.hpp"
#include "model/cost_model.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "plan/testing.hpp"
#include "test_util.hpp"

using namespace pase;
using pase::testing::close;
using pase::testing::contains;
using pase::testing::kOrders;
using pase::testing::why;
namespace fs = std::filesystem;

namespace {

Graph load(const std::string& text) {
  Result<Graph> g = load_graph(text);
  REQUIRE_MESSAGE(g.ok(), why(g));
  return std::move(g).value();
}

// A small chain on input `in`: FC, FC, loss (cutoff 4 keeps the enumeration
// small enough for exhaustive search of two chains together).
std::string chain(const std::string& prefix, const std::string& in) {
  return R"({"name": ")" + prefix + R"(1", "op": "FC", "inputs": [")" + in + R"("], "units": 16},
            {"name": ")" +
         prefix + R"(2", "op": "FC", "inputs": [")" + prefix + R"(1"], "units": 8},
            {"name": ")" +
         prefix + R"(loss", "op": "SoftmaxCrossEntropy", "inputs": [")" + prefix + R"(2"]})";
}

std::string graph_of(const std::string& inputs, const std::string& layers) {
  return R"({"format": "pase-graph/1", "inputs": {)" + inputs + R"(}, "layers": [)" + layers + "]}";
}

// The configurations of a vertex without any pruning: every tuple of
// candidate splits in enumeration order (first dimension outermost), product
// at most `devices`, then filtered by `keep`.
template <class Keep>
std::vector<Config> reference_configs(const Vertex& v, const std::vector<bool>& pinned,
                                      int64_t cutoff, int64_t devices, Keep keep) {
  std::vector<std::vector<int64_t>> cand(v.dom.size());
  for (size_t i = 0; i < v.dom.size(); ++i) {
    for (int64_t e = 1; e <= devices && e <= v.dom[i] && !pinned[i]; ++e)
      if (v.dom[i] % e == 0 && v.dom[i] / e >= cutoff) cand[i].push_back(e);
    if (cand[i].empty()) cand[i] = {1};
  }
  std::vector<Config> out;
  Config cur(v.dom.size(), 1);
  auto rec = [&](auto&& self, size_t k, int64_t prod) -> void {
    if (k == cur.size()) {
      if (keep(cur, prod)) out.push_back(cur);
      return;
    }
    for (int64_t e : cand[k]) {
      if (prod * e > devices) break;
      cur[k] = e;
      self(self, k + 1, prod * e);
    }
    cur[k] = 1;
  };
  rec(rec, 0, 1);
  return out;
}

}  // namespace

// ---- Disconnected graphs ---------------------------------------------------------

TEST_CASE("disconnected: two independent chains plan to the sum of each alone") {
  const Graph both =
      load(graph_of(R"("x": [16, 32], "y": [16, 64])", chain("a", "x") + "," + chain("b", "y")));
  const Graph first = load(graph_of(R"("x": [16, 32])", chain("a", "x")));
  const Graph second = load(graph_of(R"("y": [16, 64])", chain("b", "y")));
  REQUIRE(both.vertices.size() == first.vertices.size() + second.vertices.size());
  const Cluster cluster{.devices = 4};

  Result<Plan> exhaustive = exhaustive_search(both, cluster);
  REQUIRE_MESSAGE(exhaustive.ok(), why(exhaustive));
  for (Order order : kOrders) {
    CAPTURE(order_name(order));
    PlanOptions options;
    options.order = order;
    Result<Plan> p = plan(both, cluster, options);
    Result<Plan> p1 = plan(first, cluster, options);
    Result<Plan> p2 = plan(second, cluster, options);
    REQUIRE(p.ok());
    REQUIRE(p1.ok());
    REQUIRE(p2.ok());
    CHECK(close(p->cost, p1->cost + p2->cost));
    CHECK(close(p->cost, exhaustive->cost));
    // Each component's share of the joint plan is that component's optimum.
    double share = 0;
    for (size_t v = 0; v < first.vertices.size(); ++v) share += p->layers[v].total;
    for (size_t e = 0; e < both.edges.size(); ++e)
      if (both.edges[e].dst < static_cast<int>(first.vertices.size())) share += p->edge_costs[e];
    CHECK(close(share, p1->cost));
    // The joint dependent sets are no larger than the components' own.
    CHECK(p->search.max_dependent_set ==
          std::max(p1->search.max_dependent_set, p2->search.max_dependent_set));
  }
}

TEST_CASE("disconnected: layers that only read graph inputs are planned each on its own") {
  // No edges at all: every vertex is a component, its best configuration alone.
  const Graph g = load(graph_of(R"("x": [16, 32])", R"(
      {"name": "a", "op": "FC", "inputs": ["x"], "units": 64},
      {"name": "b", "op": "Softmax", "inputs": ["x"]},
      {"name": "c", "op": "Norm", "inputs": ["x"], "axis": 0})"));
  REQUIRE(g.edges.empty());
  const Cluster cluster{.devices = 8};
  Result<Plan> p = plan(g, cluster);
  REQUIRE(p.ok());
  double sum = 0;
  for (const Vertex& v : g.vertices) {
    Result<std::vector<Config>> configs = enumerate_configs(g, v.id, cluster);
    REQUIRE(configs.ok());
    double best = INFINITY;
    for (const Config& c : *configs) {
      Strategy s(g.vertices.size());
      for (const Vertex& u : g.vertices) s[u.id] = u.id == v.id ? c : Config(u.dom.size(), 1);
      Result<Plan> e = evaluate(g, cluster, s);
      REQUIRE(e.ok());
      best = std::min(best, e->layers[v.id].total);
    }
    sum += best;
  }
  CHECK(close(p->cost, sum));
  Result<Plan> exhaustive = exhaustive_search(g, cluster);
  REQUIRE(exhaustive.ok());
  CHECK(close(p->cost, exhaustive->cost));
}

// ---- Limits at their boundaries -----------------------------------------------------

TEST_CASE("limits: a document of exactly 64 MiB loads, one byte more is refused") {
  std::string text = pase_test::generated_text({{"kind", "padded"}, {"bytes", kMaxDocumentBytes}});
  CHECK(text.size() == kMaxDocumentBytes);
  CHECK_MESSAGE(load_graph(text).ok(), why(load_graph(text)));
  text += ' ';
  Result<Graph> g = load_graph(text);
  REQUIRE_FALSE(g.ok());
  CHECK(contains(g.error().message, "larger than the limit of 64 MiB"));
}

TEST_CASE("limits: nesting depth 64 loads, 65 is refused") {
  // The generated document nests `depth` arrays inside two objects.
  Result<Graph> at_limit =
      load_graph(pase_test::generated_text({{"kind", "nested"}, {"depth", kMaxJsonDepth - 2}}));
  REQUIRE_FALSE(at_limit.ok());  // it has no layers, but parses
  CHECK(at_limit.error().where == "layers");
  Result<Graph> over =
      load_graph(pase_test::generated_text({{"kind", "nested"}, {"depth", kMaxJsonDepth - 1}}));
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().message == "the document is nested deeper than 64 levels");
  // Brackets inside strings do not count.
  CHECK(load_graph(R"({"format": "pase-graph/1", "inputs": {"x": [8, 8]}, "name": ")" +
                   std::string(1000, '[') +
                   R"(", "layers": [{"name": "s", "op": "Softmax", "inputs": ["x"]}]})")
            .ok());
}

TEST_CASE("limits: 100000 layers load, 100001 are refused") {
  Result<Graph> g =
      load_graph(pase_test::generated_text({{"kind", "layers"}, {"count", kMaxLayers}}));
  REQUIRE_MESSAGE(g.ok(), why(g));
  CHECK(g->vertices.size() == static_cast<size_t>(kMaxLayers));
  Result<Graph> over =
      load_graph(pase_test::generated_text({{"kind", "layers"}, {"count", kMaxLayers + 1}}));
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().where == "layers");
}

TEST_CASE("limits: 32 dimensions, 2^62 - 1 elements and 4096 outputs load") {
  std::string dims = "2";
  for (int i = 1; i < 32; ++i) dims += ", 2";
  Result<Graph> rank32 = load_graph(
      graph_of(R"("x": [)" + dims + "]", R"({"name": "s", "op": "Softmax", "inputs": ["x"]})"));
  REQUIRE_MESSAGE(rank32.ok(), why(rank32));
  CHECK(plan(*rank32, Cluster{.devices = 4}).ok());
  // 2^62 - 1 = 3 * 715827883 * 2147483647, just below the element limit.
  Result<Graph> big = load_graph(graph_of(R"("x": [3, 715827883, 2147483647])",
                                          R"({"name": "s", "op": "Softmax", "inputs": ["x"]})"));
  CHECK_MESSAGE(big.ok(), why(big));
  Result<Graph> fan = load_graph(graph_of(R"("x": [4096, 2])", R"(
      {"name": "u", "op": "Unstack", "inputs": ["x"]},
      {"name": "s", "op": "Split", "inputs": ["x"], "num": 4096, "axis": 0},
      {"name": "last_u", "op": "Softmax", "inputs": ["u:4095"]},
      {"name": "last_s", "op": "Softmax", "inputs": ["s:4095"]})"));
  REQUIRE_MESSAGE(fan.ok(), why(fan));
  CHECK(fan->vertices[0].outputs.size() == 4096);
  CHECK(fan->vertices[1].outputs.size() == 4096);
}

TEST_CASE("limits: 65536 devices plan, one more is refused") {
  const Graph g = load(graph_of(R"("x": [65536, 1024])", chain("a", "x")));
  Result<Plan> p = plan(g, Cluster{.devices = kMaxDevices});
  REQUIRE_MESSAGE(p.ok(), why(p));
  Result<Plan> over = plan(g, Cluster{.devices = kMaxDevices + 1});
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().where == "cluster.devices");
}

TEST_CASE("limits: tables over the memory limit are refused before any is allocated") {
  // Breadth-first order on the Transformer at 32 devices: about 1e81 table
  // entries, far past any machine and past the hard cap of 2^62 bytes.
  Result<Graph> g = build_model("transformer");
  REQUIRE(g.ok());
  const Cluster cluster{.devices = 32};
  PlanOptions bfs;
  bfs.order = Order::kBfs;
  bfs.search = SearchMode::kExact;  // auto would run the bounded search
  Result<SearchStats> need = estimate(*g, cluster, bfs);
  REQUIRE(need.ok());
  REQUIRE(need->peak_bytes > (uint64_t{1} << 62));

  for (uint64_t limit : {uint64_t{64} << 20, uint64_t{4} << 30, uint64_t{0}}) {
    CAPTURE(limit);
    PlanOptions options = bfs;
    options.max_memory = limit;  // 0: no limit, but never past 2^62 bytes
    // Refused from the estimate: the search never started, so it reported no
    // progress (a plan that runs reports at least its end).
    int progress_calls = 0;
    options.on_progress = [&](const Progress&) { ++progress_calls; };
    Result<Plan> p = plan(*g, cluster, options);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().where == "max_memory");
    CHECK(contains(p.error().message, "of tables"));
    CHECK(contains(p.error().message, "more than the limit of"));
    CHECK(progress_calls == 0);
  }
  int progress_calls = 0;
  PlanOptions genseq;
  genseq.on_progress = [&](const Progress&) { ++progress_calls; };
  CHECK(plan(*g, Cluster{.devices = 4}, genseq).ok());
  CHECK(progress_calls > 0);

  // The configurations count too: many wide vertices at many devices.
  std::string wide;
  for (int i = 0; i < 50; ++i) {
    wide += std::string(i ? "," : "") + R"({"name": "s)" + std::to_string(i) +
            R"(", "op": "Softmax", "inputs": ["x"]})";
  }
  const Graph many = load(
      R"({"format": "pase-graph/1", "cutoff": 1, "inputs": {"x": [64, 64, 64, 64, 64, 64]}, "layers": [)" +
      wide + "]}");
  PlanOptions small;
  small.max_memory = 1 << 20;
  Result<Plan> p = plan(many, Cluster{.devices = 4096}, small);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().where == "max_memory");
  CHECK(
      contains(p.error().message, "the configurations of the first 2 of 50 vertices already need"));
  CHECK(contains(p.error().message, "more than the limit of 1.0 MiB"));
}

// ---- Inputs that used to hang ----------------------------------------------------------

TEST_CASE("hangs: a Reshape of 30 dimensions at 65536 devices enumerates only contiguous splits") {
  // The Ravel vertex keeps only contiguous configurations; enumerating every
  // tuple first took billions of steps. What is counted here, not timed
  // (`pase bench` times the planner): 17 configurations per vertex, one for
  // each total split 2^0 .. 2^16 (Ravel: 4 ... 4, e, 1 ... 1; Unravel: its one
  // dimension of 2^60).
  std::string dims = "4";
  for (int i = 1; i < 30; ++i) dims += ", 4";
  const Graph g = load(
      R"({"format": "pase-graph/1", "cutoff": 1, "inputs": {"x": [)" + dims +
      R"(]}, "layers": [{"name": "r", "op": "Reshape", "inputs": ["x"], "shape": [1152921504606846976]}]})");
  REQUIRE(g.vertices.size() == 2);
  for (const Vertex& v : g.vertices) {
    CAPTURE(v.name);
    Result<std::vector<Config>> configs =
        enumerate_configs(g, v.id, Cluster{.devices = kMaxDevices});
    REQUIRE_MESSAGE(configs.ok(), why(configs));
    CHECK(configs->size() == 17);
  }
  Result<Plan> p = plan(g, Cluster{.devices = kMaxDevices});
  REQUIRE_MESSAGE(p.ok(), why(p));
  CHECK(p->search.configurations == 34);
  // pairs (plan.hpp): 17 for the first vertex alone, 17 x 17 for the second
  // against the first.
  CHECK(p->search.pairs == 17 + 17 * 17);
}

TEST_CASE("hangs: the pruned enumeration equals the plain one") {
  // Ravel/Unravel (contiguous configurations only) and all_devices, on shapes
  // small enough to enumerate every tuple.
  const Graph g = load(R"({"format": "pase-graph/1", "cutoff": 1, "inputs": {"x": [4, 6, 2, 3, 4]},
      "layers": [{"name": "r", "op": "Reshape", "inputs": ["x"], "shape": [24, 24]},
                 {"name": "s", "op": "Softmax", "inputs": ["x"]}]})");
  for (int64_t devices : {1, 2, 6, 12, 16, 48, 64}) {
    for (bool all : {false, true}) {
      CAPTURE(devices);
      CAPTURE(all);
      for (const Vertex& v : g.vertices) {
        CAPTURE(v.name);
        const bool contiguous_only = v.op == "Ravel" || v.op == "Unravel";
        auto keep = [&](const Config& c, int64_t prod) {
          if (all && prod != devices) return false;
          if (!contiguous_only) return true;
          size_t i = 0;
          while (i < c.size() && c[i] == v.dom[i]) ++i;
          for (size_t j = i + 1; j < c.size(); ++j)
            if (c[j] != 1) return false;
          return true;
        };
        const std::vector<Config> expected =
            reference_configs(v, model_of(g, v.id).pinned, g.cutoff, devices, keep);
        Result<std::vector<Config>> got = enumerate_configs(g, v.id, Cluster{.devices = devices},
                                                            EnumOptions{.all_devices = all});
        if (expected.empty()) {
          CHECK_FALSE(got.ok());
        } else {
          REQUIRE_MESSAGE(got.ok(), why(got));
          CHECK(*got == expected);
        }
      }
    }
  }
}

// ---- Fuzzing ---------------------------------------------------------------------------------

namespace {

// The files of `dirs` (those that exist) but READMEs and scripts, sorted.
std::vector<fs::path> fuzz_inputs(std::initializer_list<std::string> dirs) {
  std::vector<fs::path> inputs;
  for (const std::string& dir : dirs) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file() && entry.path().filename() != "README.md" &&
          entry.path().extension() != ".py")
        inputs.push_back(entry.path());
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

const std::string kFuzzSeeds = PASE_SOURCE_DIR "/tests/fuzz/seeds/";
const std::string kFuzzRegressions = PASE_FUZZ_REGRESSIONS_DIR "/";

}  // namespace

TEST_CASE("fuzz: regression inputs and the seed corpus keep every property") {
  const std::vector<fs::path> inputs = fuzz_inputs(
      {kFuzzRegressions + "plan", PASE_EXAMPLES_DIR, PASE_INVALID_DIR "/graphs",
       PASE_INVALID_DIR "/requests", PASE_INVALID_DIR "/models", PASE_INVALID_DIR "/configs",
       PASE_EXAMPLES_DIR "/../hf/gpt2", PASE_EXAMPLES_DIR "/../hf/Mixtral-8x7B-v0.1"});
  CHECK(inputs.size() >= 150);
  for (const fs::path& path : inputs) {
    CAPTURE(path.string());
    CHECK(pase_fuzz::fuzz_one(pase_test::read_binary(path.string())) == "");
  }
}

TEST_CASE("fuzz layout: regressions and seeds keep every property") {
  const std::vector<fs::path> inputs =
      fuzz_inputs({kFuzzRegressions + "layout", kFuzzSeeds + "layout"});
  CHECK(inputs.size() >= 20);
  for (const fs::path& path : inputs) {
    CAPTURE(path.string());
    CHECK(pase_fuzz::fuzz_layout(pase_test::read_binary(path.string())) == "");
  }
}

TEST_CASE("fuzz request: regressions and seeds keep every property") {
  const std::vector<fs::path> inputs = fuzz_inputs(
      {kFuzzRegressions + "request", kFuzzSeeds + "request", PASE_INVALID_DIR "/requests"});
  CHECK(inputs.size() >= 40);
  for (const fs::path& path : inputs) {
    CAPTURE(path.string());
    CHECK(pase_fuzz::fuzz_request(pase_test::read_binary(path.string())) == "");
  }
}

TEST_CASE("fuzz strategy: regressions and seeds keep every property") {
  const std::vector<fs::path> inputs = fuzz_inputs(
      {kFuzzRegressions + "strategy", kFuzzSeeds + "strategy", PASE_TEST_DATA_DIR "/golden"});
  CHECK(inputs.size() >= 8);
  for (const fs::path& path : inputs) {
    CAPTURE(path.string());
    CHECK(pase_fuzz::fuzz_strategy(pase_test::read_binary(path.string())) == "");
  }
}

TEST_CASE("fuzz emit: regressions and seeds keep every property") {
  const std::vector<fs::path> inputs =
      fuzz_inputs({kFuzzRegressions + "emit", kFuzzSeeds + "emit"});
  CHECK(inputs.size() >= 10);
  for (const fs::path& path : inputs) {
    CAPTURE(path.string());
    CHECK(pase_fuzz::fuzz_emit(pase_test::read_binary(path.string())) == "");
  }
}

TEST_CASE("fuzz emit: the checks catch an added line, a changed line and unclean text") {
  using pase_fuzz::check_lines;
  using pase_fuzz::check_text;
  const std::string neutral = "# plan of fuzz-neutral-name\nx = 1\n";
  CHECK(check_lines("# plan of 'a b'\nx = 1\n", neutral, "t") == "");
  CHECK(contains(check_lines("# plan of a\nb\nx = 1\n", neutral, "t"), "makes 4 lines, not 3"));
  CHECK(contains(check_lines("# plan of a\nx = 2\n", neutral, "t"), "changes line 2 (x = 1)"));
  CHECK(check_text("caf\xc3\xa9\n", "t") == "");
  CHECK(contains(check_text("a\rb", "t"), "a raw control character 13 at byte 1"));
  CHECK(contains(check_text("a\nb", "t", ""), "a raw control character 10"));
  CHECK(contains(check_text("\xc2\x85", "t"), "a raw control character U+008x"));
  CHECK(contains(check_text("a\xff", "t"), "not valid UTF-8 at byte 1"));
  CHECK(contains(check_text("\xc0\xaf", "t"), "not valid UTF-8"));      // overlong '/'
  CHECK(contains(check_text("\xed\xa0\x80", "t"), "not valid UTF-8"));  // a surrogate
  CHECK(contains(check_text("\xe2\x82", "t"), "not valid UTF-8"));      // cut short
}
