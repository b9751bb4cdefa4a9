// The graph of a JAX program (export/jax_program.hpp): its layers' attributes
// and the ops' own weights, and the graph reduced for a CPU (--reduce;
// core/docs/export.md, "Running it").
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "export/jax_program.hpp"
#include "model/cost_model.hpp"
#include "util/json_util.hpp"

namespace pase {

using json_detail::Json;

namespace {

// Every dimension of a graph above this size is reduced by --reduce.
constexpr int64_t kJaxReducedSize = 32;
// The batch of a graph whose other sizes cannot be reduced.
constexpr int64_t kJaxReducedBatch = 8;

int64_t jax_lcm(int64_t a, int64_t b) { return a / std::gcd(a, b) * b; }

// `small` built, when it builds to vertices of the dimensions of `g` that
// the strategy divides; else nullopt, and `why` says what fails.
std::optional<Graph> jax_same_structure(const GraphSpec& small, const Graph& g, const Strategy& s,
                                        std::string& why) {
  Result<Graph> built = build_graph(small);
  if (!built) {
    why = built.error().message;
    return std::nullopt;
  }
  bool same = built->vertices.size() == g.vertices.size();
  for (size_t v = 0; same && v < g.vertices.size(); ++v) {
    const Vertex& a = built->vertices[v];
    same = a.dims == g.vertices[v].dims;
    for (size_t p = 0; same && p < a.dom.size(); ++p) same = a.dom[p] % s[v][p] == 0;
  }
  if (!same) {
    why = "the plan's splits do not divide the reduced sizes";
    return std::nullopt;
  }
  return std::move(*built);
}

// The graph reduced for a CPU (--reduce), or nullopt with `note` saying why
// not; `note` says what changed. First every size above kJaxReducedSize,
// the same size to the same value: the least multiple of every split of a
// dimension of that size from kJaxReducedSize on (at most the size). When
// the graph's sizes depend on each other (a CNN's channels and images), the
// batch alone: the graph inputs' first size, and a Reshape's that equals it.
std::optional<Graph> jax_reduced_sizes(const GraphSpec& spec, const Graph& g, const Strategy& s,
                                       std::string& note) {
  std::map<int64_t, int64_t> splits;  // size -> lcm of its splits
  for (const Vertex& v : g.vertices)
    for (size_t p = 0; p < v.dom.size(); ++p) {
      int64_t& l = splits.try_emplace(v.dom[p], 1).first->second;
      l = jax_lcm(l, s[v.id][p]);
    }
  std::map<int64_t, int64_t> to;
  const auto reduce = [&](int64_t size) -> int64_t {
    if (size <= kJaxReducedSize) return size;
    auto found = to.find(size);
    if (found != to.end()) return found->second;
    const int64_t l = splits.count(size) ? splits[size] : 1;
    const int64_t r = std::min(size, l * ((kJaxReducedSize + l - 1) / l));
    to[size] = r;
    return r;
  };
  GraphSpec small = spec;
  small.parameters = -1;
  for (auto& input : small.inputs)
    for (int64_t& d : input.second) d = reduce(d);
  for (LayerSpec& l : small.layers) {
    l.units = l.units > 0 ? reduce(l.units) : l.units;
    l.vocab = l.vocab > 0 ? reduce(l.vocab) : l.vocab;
    l.dim = l.dim > 0 ? reduce(l.dim) : l.dim;
    for (int64_t& d : l.filter) d = reduce(d);
    for (int64_t& d : l.shape) d = reduce(d);
    for (Operand& o : l.inputs)
      for (int64_t& d : o.weight_shape) d = reduce(d);
  }
  std::string why;
  std::optional<Graph> built;
  if (!to.empty() && (built = jax_same_structure(small, g, s, why))) {
    note = "every size above " + std::to_string(kJaxReducedSize) +
           " becomes the least multiple of its splits from " + std::to_string(kJaxReducedSize) +
           " on:";
    for (const auto& [from, r] : to) note += " " + std::to_string(from) + "->" + std::to_string(r);
    return built;
  }
  // The batch alone.
  if (spec.inputs.empty() || spec.inputs[0].second.empty()) {
    note = "the graph has no input to reduce";
    return std::nullopt;
  }
  const int64_t batch = spec.inputs[0].second[0];
  const int64_t l = splits.count(batch) ? splits[batch] : 1;
  const int64_t b = std::min(batch, l * ((kJaxReducedBatch + l - 1) / l));
  small = spec;
  small.parameters = -1;
  for (auto& input : small.inputs)
    if (!input.second.empty() && input.second[0] == batch) input.second[0] = b;
  for (LayerSpec& layer : small.layers)
    if (!layer.shape.empty() && layer.shape[0] == batch) layer.shape[0] = b;
  std::string why_batch;
  if (b < batch && (built = jax_same_structure(small, g, s, why_batch))) {
    note = "the batch " + std::to_string(batch) + "->" + std::to_string(b) +
           " (the other sizes depend on each other: " + why + ")";
    return built;
  }
  note = "no reduction keeps the graph valid: " + (why.empty() ? why_batch : why);
  return std::nullopt;
}

// `spec` (reduced in size, built to vertices of `g`'s dimensions) with the
// decoder blocks a check needs: of every run of consecutive blocks that
// have the same layers, sizes and configurations, the first two (so that
// both a block and the edge from one like it are checked); the layers that
// read a dropped block read the last kept block before it, of the same run.
// nullopt when no block is dropped; else `kept` says which are kept.
std::optional<JaxReduced> jax_fewer_blocks(const GraphSpec& spec, const Graph& g, const Strategy& s,
                                           std::string& kept) {
  // Each block's vertices, in graph order, as (role, sizes, configuration).
  using Entry = std::tuple<std::string, Shape, Config>;
  std::map<int, std::vector<Entry>> blocks;
  for (const Vertex& v : g.vertices) {
    std::string role;
    const int b = ops::decoder_block(v.name, &role);
    if (b >= 0) blocks[b].emplace_back(role, v.dom, s[v.id]);
  }
  if (blocks.size() < 3) return std::nullopt;
  std::set<int> keep;
  int run = 0;  // blocks in the current run so far
  const std::vector<Entry>* last = nullptr;
  for (const auto& [b, entries] : blocks) {
    run = last != nullptr && entries == *last ? run + 1 : 1;
    if (run <= 2) keep.insert(b);
    last = &entries;
  }
  if (keep.size() == blocks.size()) return std::nullopt;
  // A dropped block's reader reads the last kept block at or before it.
  const auto kept_at = [&keep](int b) { return *std::prev(keep.upper_bound(b)); };
  GraphSpec fewer = spec;
  fewer.layers.clear();
  for (const LayerSpec& l : spec.layers) {
    const int b = ops::decoder_block(l.name);
    if (b >= 0 && keep.count(b) == 0) continue;
    LayerSpec copy = l;
    for (Operand& o : copy.inputs) {
      std::string role;
      const int from = o.is_weight() ? -1 : ops::decoder_block(o.name, &role);
      if (from >= 0 && keep.count(from) == 0)
        o.name = "layer" + std::to_string(kept_at(from)) + "_" + role;
    }
    fewer.layers.push_back(std::move(copy));
  }
  Result<Graph> built = build_graph(fewer);
  if (!built) return std::nullopt;
  std::map<std::string, int> of_name;
  for (const Vertex& v : g.vertices) of_name[v.name] = v.id;
  Strategy mapped;
  for (const Vertex& v : built->vertices) {
    const auto found = of_name.find(v.name);
    if (found == of_name.end() || g.vertices[found->second].dims != v.dims) return std::nullopt;
    const Config& c = s[found->second];
    for (size_t p = 0; p < v.dom.size(); ++p)
      if (p >= c.size() || v.dom[p] % c[p] != 0) return std::nullopt;
    mapped.push_back(c);
  }
  // "decoder blocks 0-1, 5-7 of 12 kept (...)"
  std::string list;
  for (auto it = keep.begin(); it != keep.end();) {
    auto end = it;
    while (std::next(end) != keep.end() && *std::next(end) == *end + 1) ++end;
    list += (list.empty() ? "" : ", ") + std::to_string(*it) +
            (end == it ? "" : "-" + std::to_string(*end));
    it = std::next(end);
  }
  kept = "decoder blocks " + list + " of " + std::to_string(blocks.size()) +
         " kept (a run of blocks alike in sizes and splits is checked by its first two)";
  return JaxReduced{std::move(*built), std::move(mapped)};
}

}  // namespace

std::optional<JaxReduced> jax_reduced_graph(const GraphSpec& spec, const Graph& g,
                                            const Strategy& s, std::string& note) {
  std::optional<Graph> sized = jax_reduced_sizes(spec, g, s, note);
  if (!sized) return std::nullopt;
  std::string kept;
  std::optional<JaxReduced> fewer = jax_fewer_blocks(*sized->model->spec, g, s, kept);
  if (!fewer) return JaxReduced{std::move(*sized), s};
  note += "; " + kept;
  return fewer;
}

std::vector<JaxWeight> jax_implicit_weights(const LayerSpec& l, const Vertex& v) {
  std::vector<JaxWeight> out;
  if (l.op == "FC") {
    const int a = static_cast<int>(v.dom.size()) - 2;  // ..., n, k
    out.push_back({{v.dom[a + 1], l.units}, {{a + 1}, {a}}, v.dom[a + 1]});
  } else if (l.op == "Conv") {
    const int64_t fan = l.filter[1] * l.filter[2] * l.filter[3];
    if (v.dom.size() == 8)
      out.push_back({l.filter, {{1, 7}, {2}, {5}, {6}}, fan});
    else
      out.push_back({l.filter, {{6}, {1}, {4}, {5}}, fan});
  } else if (l.op == "Embedding") {
    out.push_back({{l.vocab, l.dim}, {{3}, {2}}, 1});
  } else if (l.op == "LSTM") {
    // (L, 2, u, 4, u): dimensions (l, s, b, n, k); the state's and the
    // input's u are k, a gate's u is n.
    out.push_back({{l.layers, 2, l.units, 4, l.units}, {{0}, {}, {4}, {}, {3}}, 2 * l.units});
  }
  return out;
}

// The fan-in of an Einsum's weight operand: the sizes of its letters that
// the output does not have.
int64_t jax_einsum_fan_in(const LayerSpec& l, const Shape& weight) {
  const std::string& eq = l.equation;
  const size_t comma = eq.find(','), arrow = eq.find("->");
  if (comma == std::string::npos || arrow == std::string::npos) return 1;
  const std::string w = eq.substr(comma + 1, arrow - comma - 1), out = eq.substr(arrow + 2);
  int64_t fan = 1;
  for (size_t i = 0; i < w.size() && i < weight.size(); ++i)
    if (out.find(w[i]) == std::string::npos) fan *= weight[i];
  return fan;
}

Json jax_attributes(const LayerSpec& l) {
  Json j = Json::object();
  j["name"] = l.name;
  j["op"] = l.op;
  if (l.op == "FC" || l.op == "LSTM") j["units"] = l.units;
  if (l.op == "LSTM") j["layers"] = l.layers;
  if (l.pw != 0) j["pw"] = l.pw;
  if (l.op == "Einsum") j["equation"] = l.equation;
  if (l.op == "Embedding") {
    j["vocab"] = l.vocab;
    j["dim"] = l.dim;
  }
  if (l.op == "Conv" || l.op == "Pool") {
    j["stride"] = {l.stride[0], l.stride[1]};
    j["pad"] = {l.pad[0], l.pad[1]};
  }
  if (l.op == "Conv") j["group"] = l.group;
  if (l.op == "Pool") j["window"] = l.window;
  if (l.op == "Norm" || l.op == "Softmax" || l.op == "Concat" || l.op == "Split" ||
      l.op == "Stack" || l.op == "Unstack")
    j["axis"] = l.axis;
  if (l.op == "Split") j["num"] = l.num;
  if (l.op == "ReduceMean") {
    j["axes"] = l.axes;
    j["has_axes"] = l.has_axes;
    j["keepdims"] = l.keepdims;
  }
  if (l.op == "Reshape") j["shape"] = l.shape;
  if (l.op == "Transpose") j["perm"] = l.perm;
  return j;
}

}  // namespace pase
