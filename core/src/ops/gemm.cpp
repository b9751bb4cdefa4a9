// GEMM-shaped layers: FC, Einsum, Embedding, Conv and LSTM (cost-model.md
// sections 4 and 5).
#include "ops/op_cost.hpp"

namespace pase::ops {

namespace {

// Product of the sizes and of the splits at `pos`.
void group(const Vertex& v, const int64_t* c, const std::vector<int>& pos, double& size,
           double& split) {
  int64_t s = 1, k = 1;
  for (int i : pos) {
    s *= v.dom[i];
    k *= c[i];
  }
  size = static_cast<double>(s);
  split = static_cast<double>(k);
}

}  // namespace

LayerCost gemm_cost(const Vertex& v, const int64_t* c, const Machine& mc) {
  const GemmView& g = v.gemm;
  double bpp = 1;
  for (int i : g.batch) bpp *= static_cast<double>(v.dom[i]) / static_cast<double>(c[i]);
  double M, cm, N, cn, K, ck;
  group(v, c, g.m, M, cm);
  group(v, c, g.n, N, cn);
  group(v, c, g.k, K, ck);
  N *= static_cast<double>(g.n_scale);
  K *= static_cast<double>(g.k_scale);
  double m = M / cm, n = N / cn, k = K / ck;
  double comp = 3 * m * n * k + (g.pw > 0 ? 3 * static_cast<double>(g.pw) * m * n : 0);
  double comm = mc.allreduce(m * n, ck) + mc.allreduce(m * k, cn) + mc.allreduce(n * k, cm);
  LayerCost out;
  out.total = bpp * (comp + comm);
  out.compute = bpp * comp;
  if (v.op == Op::kLSTM) {
    // Cell re-layout: the (b, u) state moves from (c_b, c_n) to (c_b, c_k) at
    // every layer and step (full L and s).
    Shape state{v.dom[2], v.dom[3]};
    int64_t from[2] = {c[2], c[3]}, to[2] = {c[2], c[4]};
    double x = redistribution_words(state, from, to);
    out.total += static_cast<double>(v.dom[0]) * static_cast<double>(v.dom[1]) * mc.words(x);
  }
  out.comm = out.total - out.compute;
  return out;
}

}  // namespace pase::ops
