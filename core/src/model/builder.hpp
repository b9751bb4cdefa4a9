// Builder: appends layers to a GraphSpec (the built-in networks of zoo/ and
// the language models of llm/ alike), one call per core/docs/models.md layer, and
// hands back the new layer's output name so calls can be chained like the
// pseudo-code of core/docs/models.md ("Conv(x, ...)" returns the tensor fed to "BN(.)").
//
// Names are "<scope><kind><n>" with n counting from 1 per scope and kind
// ("conv1", "layer2_0_bn3"), or "<scope><name>" after named(). They depend
// only on the call sequence, so they are stable across runs and batches.
// Weights and constants are Operand{"", shape}: they create no edge.
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pase/graph.hpp"

namespace pase::build {

using Pair = std::array<int64_t, 2>;  // (height, width) of a stride or pad

class Builder {
 public:
  Builder(std::string name, int64_t cutoff) {
    spec_.name = std::move(name);
    spec_.cutoff = cutoff;
  }

  // Declares a graph input (image, tokens, positional table) and returns its name.
  std::string input(std::string name, Shape shape) {
    claim(name);
    spec_.inputs.emplace_back(name, std::move(shape));
    return name;
  }

  // Prefix of every following layer name, e.g. "layer1_0_".
  void scope(std::string prefix) { scope_ = std::move(prefix); }

  // The next layer is called exactly "<scope><name>" instead of a numbered kind.
  Builder& named(std::string name) {
    next_name_ = std::move(name);
    return *this;
  }

  std::string conv(const std::string& x, Shape filter, Pair stride = {1, 1}, Pair pad = {0, 0},
                   int64_t pw = 0) {
    LayerSpec& l = add("conv", "Conv", {x});
    l.filter = std::move(filter);
    l.stride = stride;
    l.pad = pad;
    l.pw = pw;
    return l.name;
  }

  std::string pool(const std::string& x, Shape window, Pair stride = {1, 1}, Pair pad = {0, 0}) {
    LayerSpec& l = add("pool", "Pool", {x});
    l.window = std::move(window);
    l.stride = stride;
    l.pad = pad;
    return l.name;
  }

  // BatchNorm is Norm over axis 0, LayerNorm Norm over axis -1 (core/docs/models.md).
  std::string bn(const std::string& x) { return norm("bn", x, 0); }
  std::string ln(const std::string& x) { return norm("ln", x, -1); }

  std::string fc(const std::string& x, int64_t units, int64_t pw = 0) {
    LayerSpec& l = add("fc", "FC", {x});
    l.units = units;
    l.pw = pw;
    return l.name;
  }

  // Einsum whose second operand is a weight of the given shape (no edge).
  std::string einsum(const std::string& x, const Shape& weight, std::string equation,
                     int64_t pw = 0) {
    return einsum_of(Operand{x, {}}, Operand{"", weight}, std::move(equation), pw);
  }

  // Einsum of two layer outputs (two edges), e.g. q . k in attention.
  std::string einsum(const std::string& x, const std::string& y, std::string equation,
                     int64_t pw = 0) {
    return einsum_of(Operand{x, {}}, Operand{y, {}}, std::move(equation), pw);
  }

  // Attention scores of two layer outputs under a causal mask (Einsum's
  // "causal": a decoder's queries see only the keys before them).
  std::string causal_einsum(const std::string& x, const std::string& y, std::string equation,
                            int64_t pw = 0) {
    const std::string name = einsum(x, y, std::move(equation), pw);
    spec_.layers.back().causal = true;
    return name;
  }

  std::string embedding(const std::string& tokens, int64_t vocab, int64_t dim) {
    LayerSpec& l = add("embed", "Embedding", {tokens});
    l.vocab = vocab;
    l.dim = dim;
    return l.name;
  }

  std::string elementwise(const std::string& a, const std::string& b, int64_t pw = 0) {
    LayerSpec& l = add("add", "Elementwise", {a, b});
    l.pw = pw;
    return l.name;
  }

  std::string concat(const std::vector<std::string>& xs, int64_t axis) {
    LayerSpec& l = add("concat", "Concat", xs);
    l.axis = axis;
    return l.name;
  }

  std::string stack(const std::vector<std::string>& xs, int64_t axis = 0) {
    LayerSpec& l = add("stack", "Stack", xs);
    l.axis = axis;
    return l.name;
  }

  // Unstack into `count` outputs, referred to as "name:0", "name:1", ...
  // (the builder does not track shapes, so the caller states the count).
  std::vector<std::string> unstack(const std::string& x, int count, int64_t axis = 0) {
    LayerSpec& l = add("unstack", "Unstack", {x});
    l.axis = axis;
    std::vector<std::string> outs;
    for (int i = 0; i < count; ++i) outs.push_back(l.name + ":" + std::to_string(i));
    return outs;
  }

  // One layer here; build_graph() lowers it to the vertices Ravel and Unravel.
  std::string reshape(const std::string& x, Shape shape) {
    LayerSpec& l = add("reshape", "Reshape", {x});
    l.shape = std::move(shape);
    return l.name;
  }

  std::string reduce_mean(const std::string& x, std::vector<int64_t> axes, bool keepdims = false) {
    LayerSpec& l = add("mean", "ReduceMean", {x});
    l.axes = std::move(axes);
    l.has_axes = true;
    l.keepdims = keepdims;
    return l.name;
  }

  std::string softmax(const std::string& x, int64_t axis = -1) {
    LayerSpec& l = add("softmax", "Softmax", {x});
    l.axis = axis;
    return l.name;
  }

  std::string sce(const std::string& x) { return add("loss", "SoftmaxCrossEntropy", {x}).name; }

  std::string lstm(const std::string& x, int64_t units, int64_t layers) {
    LayerSpec& l = add("lstm", "LSTM", {x});
    l.units = units;
    l.layers = layers;
    return l.name;
  }

  // The finished document; the builder is spent afterwards.
  GraphSpec finish() && { return std::move(spec_); }

 private:
  std::string norm(const char* kind, const std::string& x, int64_t axis) {
    LayerSpec& l = add(kind, "Norm", {x});
    l.axis = axis;
    return l.name;
  }

  std::string einsum_of(Operand a, Operand b, std::string equation, int64_t pw) {
    LayerSpec& l = add("einsum", "Einsum", {});
    l.inputs = {std::move(a), std::move(b)};
    l.equation = std::move(equation);
    l.pw = pw;
    return l.name;
  }

  // Appends a layer of `op` reading the named tensors `xs`. The reference is
  // valid until the next add().
  LayerSpec& add(const std::string& kind, std::string op, const std::vector<std::string>& xs) {
    LayerSpec l;
    if (next_name_.empty()) {
      const std::string base = scope_ + kind;
      l.name = base + std::to_string(++counts_[base]);
    } else {
      l.name = scope_ + next_name_;
      next_name_.clear();
    }
    claim(l.name);
    l.op = std::move(op);
    for (const std::string& x : xs) l.inputs.push_back(Operand{x, {}});
    spec_.layers.push_back(std::move(l));
    return spec_.layers.back();
  }

  // Names must be unique across inputs and layers (a zoo bug otherwise).
  void claim(const std::string& name) {
    [[maybe_unused]] const bool fresh = used_.insert(name).second;
    assert(fresh && "duplicate name in a zoo network");
  }

  GraphSpec spec_;
  std::string scope_;
  std::string next_name_;
  std::map<std::string, int> counts_;
  std::set<std::string> used_;
};

}  // namespace pase::build
