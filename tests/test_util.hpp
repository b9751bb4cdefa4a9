// Helpers shared by the doctest files: building layers by hand, comparing
// costs, and printing a failed Result in assertion messages.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase::testing {

// A layer of `op` named `name` whose operands are the named tensors `inputs`.
inline LayerSpec layer(std::string name, std::string op, std::vector<std::string> inputs) {
  LayerSpec l;
  l.name = std::move(name);
  l.op = std::move(op);
  for (std::string& in : inputs) l.inputs.push_back(Operand{std::move(in), {}});
  return l;
}

// The error text of a failed result, for assertion messages (which doctest
// may build even when the assertion passes, so it must not touch error()).
template <class T>
std::string why(const Result<T>& r) {
  return r.ok() ? std::string() : r.error().to_string();
}

// Equal to 1e-9 relative: the agreement the cost model asks of implementations.
inline bool close(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

// Every order plan() offers; each must give the same optimum.
inline constexpr Order kOrders[] = {Order::kGenSeq, Order::kBfs, Order::kMinTable};

}  // namespace pase::testing
