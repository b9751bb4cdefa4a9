// Lower bounds of a pipeline stage's work and memory (pipeline_model.hpp,
// Floors; core/docs/pipeline.md, "What the planner chooses"): the search
// skips the ranges and the (S, M) pairs they prove cannot win.
#include "pipeline/pipeline_bounds.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "cost/configurations.hpp"
#include "model/cost_model.hpp"
#include "pipeline/pipeline_model.hpp"
#include "pipeline/pipeline_searcher.hpp"

namespace pase::pipeline_detail {

const VertexFloor& Floors::of(const Graph& g, int v, int print, int64_t q, int64_t align,
                              int64_t microbatches) {
  auto key = std::make_tuple(print, q, align, microbatches);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  VertexFloor f;
  Result<ConfigSet> set = enumerate_vertex(g, v, q, options_);
  // A vertex that cannot be enumerated fails its stage's search instead;
  // its floor is 0, which bounds anything.
  if (set && set->size() > 0) {
    Cluster cs = cluster_;
    cs.devices = q;
    cs.first_device = align;
    const ops::Machine m = ops::make_machine(cs);
    const Vertex& vertex = g.vertices[v];
    const double M = static_cast<double>(microbatches);
    std::vector<std::array<double, 3>> all;
    all.reserve(set->size());
    for (size_t i = 0; i < set->size(); ++i) {
      const LayerCost c = ops::layer_cost(g, vertex, set->at(i), m);
      const MemoryBytes b = ops::vertex_memory(g, vertex, set->at(i), m);
      const double F = c.total - c.weight_sync;
      const double weight = b.params + b.grads + b.optimizer;
      const double value = M * F + c.weight_sync;
      all.push_back({value, weight, b.activations});
      if (i == 0) {
        f = VertexFloor{F, value, weight, b.activations, {}};
      } else {
        f.F = std::min(f.F, F);
        f.value = std::min(f.value, value);
        f.weight_bytes = std::min(f.weight_bytes, weight);
        f.activation_bytes = std::min(f.activation_bytes, b.activations);
      }
    }
    // The front: by value, then bytes; each kept unless one kept before
    // (of no more value) holds no more of either.
    std::sort(all.begin(), all.end());
    for (const std::array<double, 3>& a : all) {
      bool beaten = false;
      for (const std::array<double, 3>& kept : f.front)
        if (kept[1] <= a[1] && kept[2] <= a[2]) {
          beaten = true;
          break;
        }
      if (!beaten) f.front.push_back(a);
    }
  }
  return cache_.emplace(key, f).first->second;
}

VertexSums vertex_sums(Searcher& searcher, const Micro& mg, int64_t stages, int64_t microbatches) {
  const int n = static_cast<int>(mg.graph.vertices.size());
  const int64_t q = searcher.cluster.devices / stages;
  VertexSums out;
  for (int64_t s = 0; s < stages; ++s)
    out.by_alignment.emplace(stage_alignment(searcher.cluster, s, q), std::vector<VertexFloor>{});
  out.least.assign(n + 1, 0);
  for (auto& [align, sum] : out.by_alignment) {
    sum.assign(n + 1, VertexFloor{});
    for (int v = 0; v < n; ++v) {
      const VertexFloor& f = searcher.floors.of(mg.graph, v, mg.print[v], q, align, microbatches);
      sum[v + 1] = VertexFloor{sum[v].F + f.F,
                               sum[v].value + f.value,
                               sum[v].weight_bytes + f.weight_bytes,
                               sum[v].activation_bytes + f.activation_bytes,
                               {}};
    }
  }
  for (int v = 0; v < n; ++v) {
    double f = kInf;
    for (const auto& [align, sum] : out.by_alignment) f = std::min(f, sum[v + 1].F - sum[v].F);
    out.least[v + 1] = out.least[v] + f;
  }
  return out;
}

void range_sends(const Micro& mg, const Sender& sender, const ops::Machine& m,
                 int64_t gpus_per_node, std::vector<double>& far, std::vector<double>& near) {
  const std::vector<int>& bounds = mg.bounds;
  const int nb = static_cast<int>(bounds.size());
  const size_t parts = static_cast<size_t>(nb);
  far.assign(parts * parts, 0);
  near.assign(far.size(), 0);
  std::vector<int> part(mg.graph.vertices.size() +
                        1);  // part[v]: the i with bounds[i] <= v < bounds[i + 1]
  for (int i = 0; i + 1 < nb; ++i)
    for (int v = bounds[i]; v < bounds[i + 1]; ++v) part[v] = i;
  for (const Edge& e : mg.graph.edges) {
    const int ps = part[e.src], pd = part[e.dst];
    if (ps == pd) continue;
    const double x_far = sender.price(e, m.r);
    const double x_near = gpus_per_node > 0 ? sender.price(e, m.r1) : x_far;
    for (int i = 0; i <= ps; ++i)
      for (int j = ps + 1; j <= pd; ++j) {
        far[i * parts + j] += x_far;
        near[i * parts + j] += x_near;
      }
  }
}

double WeighedFloors::floor(int64_t align, int64_t k, int a, int b, double scale) {
  if (lambdas_.empty()) {
    const double lambda0 = std::max(scale, 1.0) / cap_;
    for (int l = 0; l < kLambdas; ++l)
      lambdas_.push_back(lambda0 * std::ldexp(1.0, l - kLambdas / 2));
  }
  const std::vector<std::vector<double>>& sum = sums(align, k);
  double out = 0;
  for (size_t l = 0; l < lambdas_.size(); ++l)
    out = std::max(out, sum[l][b] - sum[l][a] - lambdas_[l] * cap_);
  return out;
}

const std::vector<std::vector<double>>& WeighedFloors::sums(int64_t align, int64_t k) {
  const auto key = std::make_pair(align, k);
  if (auto it = sums_.find(key); it != sums_.end()) return it->second;
  const int n = static_cast<int>(mg_.graph.vertices.size());
  std::vector<std::vector<double>> out(lambdas_.size(), std::vector<double>(n + 1, 0));
  std::map<int, std::vector<double>> by_print;
  const double copies = static_cast<double>(k);
  for (int v = 0; v < n; ++v) {
    std::vector<double>& least = by_print[mg_.print[v]];
    if (least.empty()) {
      const VertexFloor& f =
          searcher_.floors.of(mg_.graph, v, mg_.print[v], q_, align, microbatches_);
      least.assign(lambdas_.size(), f.front.empty() ? 0 : kInf);
      for (const std::array<double, 3>& c : f.front)
        for (size_t l = 0; l < lambdas_.size(); ++l)
          least[l] = std::min(least[l], c[0] + lambdas_[l] * (c[1] + copies * c[2]));
    }
    for (size_t l = 0; l < lambdas_.size(); ++l) out[l][v + 1] = out[l][v] + least[l];
  }
  return sums_.emplace(key, std::move(out)).first->second;
}

double vertex_floor_of_pair(Searcher& searcher, const Micro& mg, int64_t stages,
                            int64_t microbatches) {
  const double M = static_cast<double>(microbatches);
  return vertex_sums(searcher, mg, stages, microbatches).least.back() *
         (1 + (M - 1) / static_cast<double>(stages));
}

}  // namespace pase::pipeline_detail
