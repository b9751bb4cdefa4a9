// The plan summary (pase/summary.hpp): the words of each dimension kind, the
// degrees by kind, the groups of every built-in network (each vertex in
// exactly one, shares adding up to 1, repeated blocks collapsing) and the
// "summary" of the plan-result document.
#include "pase/summary.hpp"

#include <doctest/doctest.h>

#include <cctype>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;

namespace {

// A vertex of these kinds (sizes do not matter to the summary).
Vertex vertex_of(std::vector<DimKind> kinds, std::string op = "Op") {
  Vertex v;
  v.op = std::move(op);
  v.kinds = std::move(kinds);
  v.dims.assign(v.kinds.size(), "d");
  v.dom.assign(v.kinds.size(), 64);
  return v;
}

Graph example_graph(const std::string& file) {
  Result<Graph> g = load_graph(read_text(std::string(PASE_EXAMPLES_DIR) + "/" + file));
  REQUIRE_MESSAGE(g.ok(), why(g));
  return std::move(g).value();
}

// The checks every summary must pass: each vertex in exactly one group, in
// ascending order; groups ordered by first vertex; every member of a group
// with the group's op and degrees (and no two groups with the same op and
// degrees); labels and device counts from the degrees; costs adding up to the
// plan's cost and memory to device 0's; shares adding up to 1.
void check_summary(const Graph& graph, const Plan& plan, const std::vector<LayerGroup>& groups) {
  std::vector<int> seen(graph.vertices.size(), 0);
  std::set<std::pair<std::string, std::vector<std::pair<int, int64_t>>>> keys;
  double cost = 0, memory = 0, cost_share = 0, memory_share = 0;
  int previous_first = -1;
  for (const LayerGroup& g : groups) {
    CAPTURE(g.label);
    REQUIRE_FALSE(g.vertices.empty());
    CHECK(g.vertices.front() > previous_first);
    previous_first = g.vertices.front();
    CHECK(std::is_sorted(g.vertices.begin(), g.vertices.end()));
    std::vector<std::pair<int, int64_t>> key;
    int64_t devices = 1;
    for (const KindDegree& k : g.degrees) {
      CHECK(k.degree > 1);
      key.emplace_back(static_cast<int>(k.kind), k.degree);
      devices *= k.degree;
    }
    CHECK(std::is_sorted(key.begin(), key.end()));
    CHECK(keys.insert({g.op, key}).second);
    CHECK(g.devices == devices);
    CHECK(g.label == split_label(g.degrees));
    double group_cost = 0, group_memory = 0;
    for (int id : g.vertices) {
      REQUIRE(id >= 0);
      REQUIRE(static_cast<size_t>(id) < graph.vertices.size());
      ++seen[static_cast<size_t>(id)];
      const Vertex& v = graph.vertices[static_cast<size_t>(id)];
      CHECK(v.op == g.op);
      CHECK(kind_degrees(v, plan.strategy[static_cast<size_t>(id)]) == g.degrees);
      group_cost += plan.layers[static_cast<size_t>(id)].total;
      group_memory += plan.vertex_memory[static_cast<size_t>(id)];
    }
    // The group's cost is its layers' and the edges into them.
    for (size_t e = 0; e < graph.edges.size(); ++e) {
      if (std::binary_search(g.vertices.begin(), g.vertices.end(), graph.edges[e].dst)) {
        group_cost += plan.edge_costs[e];
      }
    }
    CHECK(close(g.cost, group_cost));
    CHECK(close(g.memory_bytes, group_memory));
    CHECK(g.cost_share >= 0);
    CHECK(g.memory_share >= 0);
    cost += g.cost;
    memory += g.memory_bytes;
    cost_share += g.cost_share;
    memory_share += g.memory_share;
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    CAPTURE(i);
    CHECK(seen[i] == 1);
  }
  CHECK(close(cost, plan.cost));
  CHECK(close(memory, plan.memory.total()));
  CHECK(cost_share == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(memory_share == doctest::Approx(1.0).epsilon(1e-12));
}

}  // namespace

// ---- Edge cases first ---------------------------------------------------------------

TEST_CASE("summary: a plan shorter than its graph reads the missing vertices as unsplit and free") {
  const Graph g = example_graph("attention_block.json");
  const std::vector<LayerGroup> groups = summarize(g, Plan{});
  size_t covered = 0;
  std::set<std::string> ops;
  for (const LayerGroup& group : groups) {
    CHECK(group.label == "replicated");
    CHECK(group.degrees.empty());
    CHECK(group.devices == 1);
    CHECK(group.cost == 0);
    CHECK(group.cost_share == 0);
    CHECK(group.memory_share == 0);
    CHECK(ops.insert(group.op).second);  // one group per op
    covered += group.vertices.size();
  }
  CHECK(covered == g.vertices.size());
}

TEST_CASE("summary: a graph that costs nothing has shares of 0, not NaN") {
  GraphSpec spec = spec_with({{"x", {8, 16}}}, {layer("r", "Reshape", {"x"})}, 1);
  spec.layers[0].shape = Shape{8, 4, 4};
  const Graph g = build_ok(spec);
  Result<Plan> p = plan(g, Cluster{.devices = 4});
  REQUIRE_MESSAGE(p.ok(), why(p));
  REQUIRE(p->cost == 0);
  REQUIRE(p->memory.total() == 0);
  const std::vector<LayerGroup> groups = summarize(g, *p);
  REQUIRE(groups.size() == 2);  // Ravel and Unravel
  for (const LayerGroup& group : groups) {
    CHECK(group.cost_share == 0);
    CHECK(group.memory_share == 0);
  }
}

TEST_CASE("summary: splits of 1 or less and splits past the dimensions are not degrees") {
  const Vertex v = vertex_of({DimKind::kBatch, DimKind::kHidden});
  CHECK(kind_degrees(v, {1, 1}).empty());
  CHECK(kind_degrees(v, {0, -3}).empty());
  CHECK(kind_degrees(v, {}).empty());
  CHECK(kind_degrees(v, {1, 4, 8, 8}) == std::vector<KindDegree>{{DimKind::kHidden, 4}});
  CHECK(split_label({}) == "replicated");
  CHECK(split_label({{DimKind::kBatch, 1}}) == "replicated");
}

TEST_CASE("summary: dimensions of one kind multiply into one degree, listed in kind order") {
  // A convolution's kinds: b c h w r s n.
  const Vertex conv =
      vertex_of({DimKind::kBatch, DimKind::kReduction, DimKind::kSpatial, DimKind::kSpatial,
                 DimKind::kReduction, DimKind::kReduction, DimKind::kHidden},
                "Conv");
  CHECK(kind_degrees(conv, {1, 2, 1, 1, 3, 1, 2}) ==
        std::vector<KindDegree>{{DimKind::kHidden, 2}, {DimKind::kReduction, 6}});
  // The kinds come in DimKind order whatever the dimension order.
  const Vertex lstm = vertex_of({DimKind::kLayers, DimKind::kSequence, DimKind::kBatch,
                                 DimKind::kHidden, DimKind::kReduction},
                                "LSTM");
  CHECK(kind_degrees(lstm, {2, 1, 4, 2, 1}) == std::vector<KindDegree>{{DimKind::kBatch, 4},
                                                                       {DimKind::kHidden, 2},
                                                                       {DimKind::kLayers, 2}});
}

TEST_CASE("summary: every dimension kind has its word, in a fixed order") {
  CHECK(split_label({{DimKind::kBatch, 32}}) == "data parallel x32 (batch)");
  CHECK(split_label({{DimKind::kHeads, 2}}) == "tensor parallel x2 (heads)");
  CHECK(split_label({{DimKind::kHidden, 4}}) == "tensor parallel x4 (hidden)");
  CHECK(split_label({{DimKind::kReduction, 4}}) == "tensor parallel x4 (reduction)");
  CHECK(split_label({{DimKind::kVocabulary, 16}}) == "tensor parallel x16 (vocabulary)");
  CHECK(split_label({{DimKind::kSequence, 4}}) == "sequence split x4");
  CHECK(split_label({{DimKind::kSpatial, 2}}) == "spatial split x2");
  CHECK(split_label({{DimKind::kExperts, 8}}) == "expert parallel x8");
  CHECK(split_label({{DimKind::kLayers, 2}}) == "layer parallel x2");
  CHECK(split_label({{DimKind::kOther, 2}}) == "other split x2");
  // The families in order: data, tensor, sequence, spatial, expert, layer, other.
  CHECK(split_label({{DimKind::kBatch, 32}, {DimKind::kSequence, 4}, {DimKind::kHeads, 2}}) ==
        "data parallel x32 (batch), tensor parallel x2 (heads), sequence split x4");
  CHECK(split_label({{DimKind::kOther, 2},
                     {DimKind::kLayers, 2},
                     {DimKind::kExperts, 2},
                     {DimKind::kSpatial, 2}}) ==
        "spatial split x2, expert parallel x2, layer parallel x2, other split x2");
  // Several tensor-parallel kinds: one product, each kind with its degree.
  CHECK(split_label({{DimKind::kHidden, 2}, {DimKind::kReduction, 4}}) ==
        "tensor parallel x8 (hidden x2 / reduction x4)");
  CHECK(split_label({{DimKind::kHidden, 4}, {DimKind::kReduction, 2}}) ==
        "tensor parallel x8 (hidden x4 / reduction x2)");
}

TEST_CASE("summary: the words of each kind are those of graph-format.md's table of kinds") {
  const std::string doc = read_text(std::string(PASE_DOCS_DIR) + "/graph-format.md");
  const DimKind kinds[] = {DimKind::kBatch,   DimKind::kSequence,   DimKind::kSpatial,
                           DimKind::kHeads,   DimKind::kHidden,     DimKind::kReduction,
                           DimKind::kExperts, DimKind::kVocabulary, DimKind::kLayers,
                           DimKind::kOther};
  for (DimKind kind : kinds) {
    const std::string name = dim_kind_name(kind);
    CAPTURE(name);
    // "tensor parallel x2 (heads)" is documented as "tensor parallel (heads)".
    std::string word = split_label({{kind, 2}});
    const size_t degree = word.find(" x2");
    REQUIRE(degree != std::string::npos);
    word.erase(degree, 3);
    // The kind's row: "| `heads` | ... | tensor parallel (heads) |".
    std::string row_start = "| `";
    row_start += name;
    row_start += "` |";
    const size_t row = doc.find(row_start);
    REQUIRE(row != std::string::npos);
    const std::string line = doc.substr(row, doc.find('\n', row) - row);
    std::string row_end = "| ";
    row_end += word;
    row_end += " |";
    CHECK(line.size() > row_end.size());
    CHECK(line.compare(line.size() - row_end.size(), row_end.size(), row_end) == 0);
  }
}

TEST_CASE("summary: layers split alike but of different ops are different groups") {
  const Graph g = example_graph("attention_block.json");
  Strategy data_parallel;
  for (const Vertex& v : g.vertices) {
    Config c(v.dom.size(), 1);
    c[0] = v.kinds[0] == DimKind::kBatch ? 4 : 1;
    data_parallel.push_back(c);
  }
  // The Einsum "qkv" has the stacked dimension first: keep it unsplit.
  Result<Plan> p = evaluate(g, Cluster{.devices = 4}, data_parallel);
  REQUIRE_MESSAGE(p.ok(), why(p));
  const std::vector<LayerGroup> groups = summarize(g, *p);
  check_summary(g, *p, groups);
  std::set<std::string> ops;
  for (const Vertex& v : g.vertices) ops.insert(v.op);
  CHECK(groups.size() >= ops.size());
}

// ---- The built-in networks ------------------------------------------------------

TEST_CASE("summary: every built-in network's plan is grouped exactly once, shares adding to 1") {
  for (const char* name : {"alexnet", "resnet101", "inception3", "rnnlm", "transformer", "gpt2"}) {
    CAPTURE(name);
    Result<Graph> g = build_model(name);
    REQUIRE_MESSAGE(g.ok(), why(g));
    Result<Plan> p = plan(*g, Cluster{.devices = 8});
    REQUIRE_MESSAGE(p.ok(), why(p));
    const std::vector<LayerGroup> groups = summarize(*g, *p);
    check_summary(*g, *p, groups);
    // Far fewer groups than layers on the deep networks.
    if (g->vertices.size() > 100) CHECK(groups.size() * 10 < g->vertices.size());
  }
}

TEST_CASE("summary: the Transformer's repeated blocks collapse into a few groups") {
  Result<Graph> g = build_model("transformer");
  REQUIRE_MESSAGE(g.ok(), why(g));
  Result<Plan> p = plan(*g, Cluster{.devices = 16});
  REQUIRE_MESSAGE(p.ok(), why(p));
  const std::vector<LayerGroup> groups = summarize(*g, *p);
  check_summary(*g, *p, groups);
  CHECK(groups.size() <= 16);

  std::vector<size_t> group_of(g->vertices.size());
  for (size_t k = 0; k < groups.size(); ++k) {
    for (int id : groups[k].vertices) group_of[static_cast<size_t>(id)] = k;
  }
  std::map<std::string, int> by_name;
  for (const Vertex& v : g->vertices) by_name[v.name] = v.id;
  // Each layer of encoder (decoder) block i is in the group of its
  // counterpart in block 1: "enc4_ff_expand" with "enc1_ff_expand".
  // (Parsed by hand: std::regex trips GCC 12's -Wmaybe-uninitialized in the
  // sanitizer build.)
  int compared = 0;
  for (const Vertex& v : g->vertices) {
    const std::string& name = v.name;
    if (name.rfind("enc", 0) != 0 && name.rfind("dec", 0) != 0) continue;
    size_t end = 3;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    if (end == 3 || end >= name.size() || name[end] != '_') continue;
    if (name.compare(3, end - 3, "1") == 0) continue;
    const std::string first = name.substr(0, 3) + "1" + name.substr(end);
    CAPTURE(v.name);
    REQUIRE(by_name.count(first) == 1);
    CHECK(group_of[static_cast<size_t>(v.id)] == group_of[static_cast<size_t>(by_name[first])]);
    ++compared;
  }
  CHECK(compared > 150);
}

TEST_CASE("summary: the plan-result document carries the summary as summarize() gives it") {
  Result<Graph> g = build_model("alexnet");
  REQUIRE_MESSAGE(g.ok(), why(g));
  const Cluster cluster{.devices = 8};
  Result<Plan> p = plan(*g, cluster);
  REQUIRE_MESSAGE(p.ok(), why(p));
  const std::vector<LayerGroup> groups = summarize(*g, *p);
  const nlohmann::json doc = nlohmann::json::parse(plan_to_json(*g, cluster, *p));
  const nlohmann::json& summary = doc.at("summary");
  REQUIRE(summary.is_array());
  REQUIRE(summary.size() == groups.size());
  for (size_t k = 0; k < groups.size(); ++k) {
    CAPTURE(k);
    const nlohmann::json& entry = summary[k];
    CHECK(entry.at("vertices").get<std::vector<int>>() == groups[k].vertices);
    CHECK(entry.at("op") == groups[k].op);
    CHECK(entry.at("label") == groups[k].label);
    CHECK(entry.at("devices") == groups[k].devices);
    const nlohmann::json& degrees = entry.at("degrees");
    REQUIRE(degrees.is_object());
    CHECK(degrees.size() == groups[k].degrees.size());
    for (const KindDegree& d : groups[k].degrees) {
      CHECK(degrees.at(dim_kind_name(d.kind)) == d.degree);
    }
    CHECK(entry.at("cost").get<double>() == groups[k].cost);
    CHECK(entry.at("cost_share").get<double>() == groups[k].cost_share);
    CHECK(entry.at("memory_bytes").get<double>() == groups[k].memory_bytes);
    CHECK(entry.at("memory_share").get<double>() == groups[k].memory_share);
  }
  // AlexNet at 8 devices (the paper's result): the convolutions data
  // parallel, the fully-connected layers tensor parallel.
  CHECK(summary[0].at("op") == "Conv");
  CHECK(summary[0].at("label") == "data parallel x8 (batch)");
  CHECK(summary[0].at("vertices").size() == 5);
}
