// The ranges a pipeline search weighs (core/docs/pipeline.md): where stages
// may start, and what makes two ranges plan alike.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/cost_model.hpp"
#include "pipeline/pipeline_model.hpp"

namespace pase::pipeline_detail {

namespace {

// Whether the graph's decoder blocks (vertices named "layer<N>_...") are
// at least two and alike: the same layers, named alike, in each (a language
// model's; a ResNet's stages, also named "layer<N>_", differ).
bool blocks_alike(const Graph& g) {
  std::map<int, std::vector<std::string>> roles;
  for (const Vertex& v : g.vertices) {
    std::string role;
    const int b = ops::decoder_block(v.name, &role);
    if (b >= 0) roles[b].push_back(std::move(role));
  }
  if (roles.size() < 2) return false;
  for (const auto& [b, r] : roles)
    if (r != roles.begin()->second) return false;
  return true;
}

}  // namespace

std::vector<int> allowed_boundaries(const Graph& g) {
  const int n = static_cast<int>(g.vertices.size());
  std::vector<int> out;
  if (n <= 64) {
    for (int b = 0; b <= n; ++b) out.push_back(b);
    return out;
  }
  // crossing[b]: distinct producer outputs made before b and used at or after b.
  std::map<std::pair<int, int>, int> last;
  for (const Edge& e : g.edges) {
    auto& l = last[{e.src, e.src_output}];
    l = std::max(l, e.dst);
  }
  std::vector<int> delta(n + 2, 0);
  for (const auto& [tensor, dst] : last) {
    // crosses positions src+1 .. dst
    delta[tensor.first + 1] += 1;
    delta[dst + 1] -= 1;
  }
  std::vector<int> crossing(n + 1, 0);
  int run = 0;
  for (int b = 0; b <= n; ++b) {
    run += delta[b];
    crossing[b] = run;
  }
  int fewest = std::numeric_limits<int>::max();
  for (int b = 1; b < n; ++b) fewest = std::min(fewest, crossing[b]);
  // Of a language model's, those between decoder blocks (not inside a
  // block, after its attention's residual add).
  const bool between_blocks = blocks_alike(g);
  const auto block = [&g](int v) { return model_of(g, v).block; };
  out.push_back(0);
  for (int b = 1; b < n; ++b)
    if (crossing[b] == fewest && (!between_blocks || block(b - 1) != block(b))) out.push_back(b);
  out.push_back(n);
  return out;
}

std::vector<int64_t> vertex_print(const Vertex& v, const VertexModel& m) {
  std::vector<int64_t> out;
  auto add = [&](int64_t x) { out.push_back(x); };
  auto list = [&](const auto& xs) {
    add(static_cast<int64_t>(xs.size()));
    for (auto x : xs) add(static_cast<int64_t>(x));
  };
  for (char c : v.op) add(c);
  add(-1);
  list(v.dom);
  list(v.kinds);
  for (const Slot& s : v.inputs) list(s.shape);
  add(-2);
  for (const Output& o : v.outputs) list(o.shape);
  add(-3);
  add(static_cast<int64_t>(reinterpret_cast<uintptr_t>(m.cost)));
  for (const TensorMap& t : m.in_maps)
    for (const auto& d : t) list(d);
  add(-4);
  for (const TensorMap& t : m.out_maps)
    for (const auto& d : t) list(d);
  add(-5);
  list(m.pinned);
  add(m.contiguous_only);
  add(m.batch_dim);
  list(m.gemm.batch);
  list(m.gemm.m);
  list(m.gemm.n);
  list(m.gemm.k);
  add(m.gemm.pw);
  add(m.gemm.n_scale);
  add(m.gemm.k_scale);
  add(m.axis);
  list(m.axes);
  add(m.window[0]);
  add(m.window[1]);
  add(m.pw);
  add(m.weight_elements);
  list(m.weight_dims);
  return out;
}

}  // namespace pase::pipeline_detail
