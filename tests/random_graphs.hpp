// Random small graphs for the tests of the dynamic program (dp_test.cpp,
// classes_test.cpp): tensors of rank 2 and 3 with small sizes; each new layer
// reads one or two earlier tensors picked at random, so the graphs branch and
// join. Deterministic for a given seed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "pase/graph.hpp"
#include "test_util.hpp"

namespace pase::testing {

struct RandomTensor {
  std::string name;
  Shape shape;
};

class RandomGraphs {
 public:
  explicit RandomGraphs(uint32_t seed) : rng_(seed) {}

  int64_t pick(std::initializer_list<int64_t> values) {
    return values.begin()[rng_() % values.size()];
  }

  GraphSpec next(int n_layers) {
    GraphSpec s;
    s.name = "random";
    s.cutoff = pick({1, 1, 2});
    tensors_.clear();
    Shape x = {pick({2, 4, 6}), pick({2, 4, 6})};
    s.inputs.push_back({"x", x});
    tensors_.push_back({"x", x});
    if (rng_() % 3 == 0) {  // a second input: may start another component
      Shape y = {pick({2, 4}), pick({3, 4}), pick({2, 4})};
      s.inputs.push_back({"y", y});
      tensors_.push_back({"y", y});
    }
    while (static_cast<int>(s.layers.size()) < n_layers) {
      std::string name = std::to_string(s.layers.size());
      name.insert(name.begin(), 'l');
      if (auto l = make_layer(name)) s.layers.push_back(*l);
    }
    return s;
  }

 private:
  const RandomTensor& any() { return tensors_[rng_() % tensors_.size()]; }
  // Prefers recent tensors, so that chains form as well as branches.
  const RandomTensor& recent() {
    size_t n = tensors_.size();
    size_t back = std::min<size_t>(n - 1, rng_() % 3);
    return tensors_[n - 1 - back];
  }
  const RandomTensor* matching(const std::function<bool(const RandomTensor&)>& ok) {
    std::vector<const RandomTensor*> c;
    for (const RandomTensor& t : tensors_)
      if (ok(t)) c.push_back(&t);
    return c.empty() ? nullptr : c[rng_() % c.size()];
  }
  void add(const std::string& name, Shape shape) { tensors_.push_back({name, std::move(shape)}); }

  std::optional<LayerSpec> make_layer(const std::string& name) {
    const RandomTensor a = rng_() % 2 ? recent() : any();
    const size_t rank = a.shape.size();
    switch (rng_() % 13) {
      case 0:
      case 1: {  // FC
        LayerSpec l = layer(name, "FC", {a.name});
        l.units = pick({2, 4, 6});
        l.pw = pick({0, 1});
        Shape out = a.shape;
        out.back() = l.units;
        add(name, out);
        return l;
      }
      case 2: {  // Elementwise with a tensor of the same shape (possibly itself)
        const RandomTensor* b = matching([&](const RandomTensor& t) { return t.shape == a.shape; });
        LayerSpec l = layer(name, "Elementwise", {a.name, b->name});
        l.pw = pick({0, 2});
        add(name, a.shape);
        return l;
      }
      case 3: {  // Concat along the last axis
        const RandomTensor* b = matching([&](const RandomTensor& t) {
          return t.shape.size() == rank &&
                 std::equal(t.shape.begin(), t.shape.end() - 1, a.shape.begin());
        });
        LayerSpec l = layer(name, "Concat", {a.name, b->name});
        l.axis = -1;
        Shape out = a.shape;
        out.back() += b->shape.back();
        if (out.back() > 12) return std::nullopt;
        add(name, out);
        return l;
      }
      case 4: {  // Norm
        LayerSpec l = layer(name, "Norm", {a.name});
        l.axis = pick({0, -1});
        add(name, a.shape);
        return l;
      }
      case 5: {  // Softmax
        LayerSpec l = layer(name, "Softmax", {a.name});
        l.axis = pick({0, -1});
        add(name, a.shape);
        return l;
      }
      case 6: {  // Transpose of the last two axes
        LayerSpec l = layer(name, "Transpose", {a.name});
        Shape out = a.shape;
        for (size_t i = 0; i < rank; ++i) l.perm.push_back(static_cast<int64_t>(i));
        std::swap(l.perm[rank - 1], l.perm[rank - 2]);
        std::swap(out[rank - 1], out[rank - 2]);
        add(name, out);
        return l;
      }
      case 7: {  // Einsum against another layer's tensor: "bk,nk->bn"
        if (rank != 2) return std::nullopt;
        const RandomTensor* b = matching(
            [&](const RandomTensor& t) { return t.shape.size() == 2 && t.shape[1] == a.shape[1]; });
        LayerSpec l = layer(name, "Einsum", {a.name, b->name});
        l.equation = "bk,nk->bn";
        add(name, {a.shape[0], b->shape[0]});
        return l;
      }
      case 8: {  // Split in two along the last axis
        if (a.shape.back() % 2) return std::nullopt;
        LayerSpec l = layer(name, "Split", {a.name});
        l.num = 2;
        l.axis = -1;
        Shape out = a.shape;
        out.back() /= 2;
        add(name + ":0", out);
        add(name + ":1", out);
        return l;
      }
      case 9: {  // Reshape: swap the sizes of the last two axes (Ravel + Unravel)
        LayerSpec l = layer(name, "Reshape", {a.name});
        l.shape = a.shape;
        std::swap(l.shape[rank - 1], l.shape[rank - 2]);
        add(name, l.shape);
        return l;
      }
      case 10: {  // Stack two equal tensors of rank 2, or Unstack one of rank 3
        if (rank == 2) {
          const RandomTensor* b =
              matching([&](const RandomTensor& t) { return t.shape == a.shape; });
          LayerSpec l = layer(name, "Stack", {a.name, b->name});
          add(name, {2, a.shape[0], a.shape[1]});
          return l;
        }
        if (a.shape[0] > 4) return std::nullopt;
        LayerSpec l = layer(name, "Unstack", {a.name});
        for (int64_t k = 0; k < a.shape[0]; ++k)
          add(name + ":" + std::to_string(k), {a.shape[1], a.shape[2]});
        return l;
      }
      case 11: {  // LSTM over a rank-3 tensor, or ReduceMean with keepdims
        if (rank == 3) {
          LayerSpec l = layer(name, "LSTM", {a.name});
          l.units = a.shape[2];
          l.layers = pick({1, 2});
          add(name, a.shape);
          return l;
        }
        LayerSpec l = layer(name, "ReduceMean", {a.name});
        l.axes = {1};
        l.has_axes = true;
        l.keepdims = true;
        add(name, {a.shape[0], 1});
        return l;
      }
      default: {  // SoftmaxCrossEntropy: its output is only ever a sink here
        LayerSpec l = layer(name, "SoftmaxCrossEntropy", {a.name});
        return l;
      }
    }
  }

  std::mt19937 rng_;
  std::vector<RandomTensor> tensors_;
};

}  // namespace pase::testing
