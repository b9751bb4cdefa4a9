// The floors of a pair's ranges without a search (core/docs/pipeline.md,
// "Pruning"): the vertices' floors summed per alignment, a range's sends,
// the floor under the memory cap from the layers and the first floor of a
// pair (pipeline_bounds.cpp). best_partition() (pipeline_partition.cpp) and
// the pairs' order (pipeline_search.cpp) read them.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "pipeline/pipeline_searcher.hpp"

namespace pase::pipeline_detail {

// The floors of the vertices of `mg` (M micro-batches) on the stages'
// devices (Floors), summed from vertex 0 at each alignment of the stages of a pipeline of
// `stages`, and `least`: the least over those alignments per vertex,
// summed.
struct VertexSums {
  std::map<int64_t, std::vector<VertexFloor>> by_alignment;
  std::vector<double> least;
};
VertexSums vertex_sums(Searcher& searcher, const Micro& mg, int64_t stages, int64_t microbatches);

// X of every range [i, j) of mg's parts (at i * parts + j), sent at the
// rate between nodes (`far`) and inside one (`near`), summed in edge order:
// every edge from the range to a vertex at or after bounds[j].
void range_sends(const Micro& mg, const Sender& sender, const ops::Machine& m,
                 int64_t gpus_per_node, std::vector<double>& far, std::vector<double>& near);

// The floor of a range's M * F + W among its plans that fit the cap C, from
// its vertices alone (no search; core/docs/pipeline.md, "Pruning"): for
// every lambda >= 0 such a plan holds its weights and k copies of its
// activations, at most C, so its value is at least the sum over its
// vertices of the least value + lambda * (weight + k * activations) over
// their configurations (VertexFloor::front; the edges cost nothing below
// zero), less lambda * C. The floor is the largest of that over kLambdas
// weights spread about lambda0 = `scale` (the whole graph's least value) /
// C, by factors of two. The sums per lambda are kept by (alignment, k).
class WeighedFloors {
 public:
  WeighedFloors(Searcher& searcher, const Micro& mg, int64_t q, int64_t microbatches, double cap)
      : searcher_(searcher), mg_(mg), q_(q), microbatches_(microbatches), cap_(cap) {}
  // The floor of vertices [a, b) on a stage of `q` devices at `align`
  // holding k copies of the activations.
  double floor(int64_t align, int64_t k, int a, int b, double scale);

 private:
  static constexpr int kLambdas = 25;  // lambda0 * 2^-12 .. lambda0 * 2^12
  // Per lambda, the vertices' least value + lambda * (weight + k *
  // activations), summed from vertex 0. Vertices that print alike share
  // their least.
  const std::vector<std::vector<double>>& sums(int64_t align, int64_t k);

  Searcher& searcher_;
  const Micro& mg_;
  const int64_t q_, microbatches_;
  const double cap_;
  std::vector<double> lambdas_;
  std::map<std::pair<int64_t, int64_t>, std::vector<std::vector<double>>> sums_;
};

// The first floor of the pair (S, M), from the vertices' floors alone (no
// search): T >= (1 + (M - 1) / S) * the least F of every vertex summed.
double vertex_floor_of_pair(Searcher& searcher, const Micro& mg, int64_t stages,
                            int64_t microbatches);

}  // namespace pase::pipeline_detail
