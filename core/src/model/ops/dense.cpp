// GEMM-shaped ops without a window: FC, Einsum and Embedding
// (core/docs/graph-format.md; cost: core/docs/cost-model.md sections 4 and 5).
#include <map>
#include <set>

#include "model/op_table.hpp"

namespace pase {
namespace {

using T = Attr::Type;

int dim_named(const std::vector<std::string>& dims, std::string_view name) {
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] == name) return static_cast<int>(d);
  return -1;
}

// ---- FC: y = x W over the last dimension of x ----

std::optional<Error> lower_fc(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(1, 1)) return e;
  const Shape& x = lo.inputs()[0].shape;
  if (x.size() < 2)
    return lo.err("FC input must have at least 2 dimensions, got " + shape_str(x), "inputs[0]");
  if (l.units <= 0) return lo.err("must be a positive integer", "units");
  size_t a = x.size() - 1;
  VertexPlan p;
  p.op = "FC";
  p.dims = generic_dims(a);
  p.dims.push_back("n");
  p.dims.push_back("k");
  p.kinds.assign(a, DimKind::kSequence);
  p.kinds[0] = DimKind::kBatch;
  p.kinds.push_back(DimKind::kHidden);
  p.kinds.push_back(DimKind::kReduction);
  p.dom.assign(x.begin(), x.end() - 1);
  p.dom.push_back(l.units);
  p.dom.push_back(x.back());
  if (auto e = lo.check_dom(p.dom)) return e;
  TensorMap in = identity_map(x.size());
  in[a] = {static_cast<int>(a + 1)};
  p.inputs.push_back(lo.port(0, std::move(in)));
  Shape out(x.begin(), x.end() - 1);
  out.push_back(l.units);
  p.outputs.push_back(OutPort{out, identity_map(a + 1)});
  VertexModel& m = p.model;
  m.cost = ops::gemm_cost;
  m.batch_dim = 0;  // generic_dims names the first dimension "b"
  for (size_t i = 0; i < a; ++i) m.gemm.m.push_back(static_cast<int>(i));
  m.gemm.n = {static_cast<int>(a)};
  m.gemm.k = {static_cast<int>(a + 1)};
  m.gemm.pw = l.pw;
  m.weight_elements = l.units * x.back();  // W is (units, K); below 2^62 as dom is
  m.weight_dims = {static_cast<int>(a), static_cast<int>(a + 1)};
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

// ---- Einsum: two operands, "in1,in2->out" ----

// Letters by convention first (b batch, h heads, s/l/m/t sequence, v
// vocabulary, x experts), else by role: only in input 2 and the output
// (weights' output features) hidden, summed over reduction.
DimKind einsum_kind(char c, bool is_n, bool is_reduced) {
  switch (c) {
    case 'b':
      return DimKind::kBatch;
    case 'h':
      return DimKind::kHeads;
    case 's':
    case 'l':
    case 'm':
    case 't':
      return DimKind::kSequence;
    case 'v':
      return DimKind::kVocabulary;
    case 'x':
      return DimKind::kExperts;
    default:
      break;
  }
  if (is_reduced) return DimKind::kReduction;
  return is_n ? DimKind::kHidden : DimKind::kOther;
}

std::optional<Error> lower_einsum(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(2, 2)) return e;
  const std::vector<Slot>& in = lo.inputs();
  const std::string& eq = l.equation;
  size_t comma = eq.find(','), arrow = eq.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || comma > arrow ||
      eq.find(',', comma + 1) < arrow)
    return lo.err("equation " + quoted(eq) + " must have the form 'in1,in2->out'", "equation");
  std::string t[3] = {eq.substr(0, comma), eq.substr(comma + 1, arrow - comma - 1),
                      eq.substr(arrow + 2)};
  std::map<char, int64_t> size;
  for (int k = 0; k < 3; ++k) {
    std::set<char> seen;
    for (char ch : t[k]) {
      if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
        return lo.err("equation " + quoted(eq) + ": '" + std::string(1, ch) + "' is not a letter",
                      "equation");
      if (!seen.insert(ch).second)
        return lo.err(
            "equation " + quoted(eq) + ": letter '" + std::string(1, ch) + "' repeats in one term",
            "equation");
    }
    if (t[k].empty()) return lo.err("equation " + quoted(eq) + " has an empty term", "equation");
  }
  for (int k = 0; k < 2; ++k) {
    const Shape& s = in[k].shape;
    if (s.size() != t[k].size())
      return lo.err("input " + std::to_string(k + 1) + " has shape " + shape_str(s) +
                        " but the equation names " + std::to_string(t[k].size()) +
                        " dimensions ('" + t[k] + "')",
                    "inputs[" + std::to_string(k) + "]");
    for (size_t i = 0; i < s.size(); ++i) {
      auto [it, fresh] = size.emplace(t[k][i], s[i]);
      if (!fresh && it->second != s[i])
        return lo.err("letter '" + std::string(1, t[k][i]) + "' is " + std::to_string(it->second) +
                          " in input 1 but " + std::to_string(s[i]) + " in input 2",
                      "equation");
    }
  }
  if (t[2].size() > kMaxRank)
    return lo.err("the output would have " + std::to_string(t[2].size()) +
                      " dimensions; a tensor has at most " + std::to_string(kMaxRank),
                  "equation");
  auto has = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
  std::string batch, m, n, red;
  for (char c : t[2])
    if (!has(t[0], c) && !has(t[1], c))
      return lo.err("output letter '" + std::string(1, c) + "' is in neither input", "equation");
  for (char c : t[0]) {
    if (has(t[1], c))
      (has(t[2], c) ? batch : red) += c;
    else if (has(t[2], c))
      m += c;
    else
      return lo.err("letter '" + std::string(1, c) +
                        "' of input 1 is in neither input 2 nor the output (unsupported)",
                    "equation");
  }
  for (char c : t[1])
    if (!has(t[0], c)) {
      if (has(t[2], c))
        n += c;
      else
        return lo.err("letter '" + std::string(1, c) +
                          "' of input 2 is in neither input 1 nor the output (unsupported)",
                      "equation");
    }
  if (m.empty() || n.empty())
    return lo.err("equation " + quoted(eq) +
                      " needs a letter only in input 1 and the output, and one only in input 2 "
                      "and the output",
                  "equation");
  std::string letters = t[2] + red;
  VertexPlan p;
  p.op = "Einsum";
  for (char c : letters) {
    p.dims.emplace_back(1, c);
    p.kinds.push_back(einsum_kind(c, has(n, c), has(red, c)));
    p.dom.push_back(size[c]);
  }
  if (auto e = lo.check_dom(p.dom)) return e;
  auto pos = [&](char c) { return static_cast<int>(letters.find(c)); };
  for (int k = 0; k < 2; ++k) {
    TensorMap map;
    for (char c : t[k]) map.push_back({pos(c)});
    p.inputs.push_back(lo.port(k, std::move(map)));
  }
  OutPort out;
  for (char c : t[2]) {
    out.shape.push_back(size[c]);
    out.map.push_back({pos(c)});
  }
  p.outputs.push_back(std::move(out));
  VertexModel& vm = p.model;
  vm.cost = ops::gemm_cost;
  vm.batch_dim = dim_named(p.dims, "b");  // none: follow the first input
  for (char c : batch) vm.gemm.batch.push_back(pos(c));
  for (char c : m) vm.gemm.m.push_back(pos(c));
  for (char c : n) vm.gemm.n.push_back(pos(c));
  for (char c : red) vm.gemm.k.push_back(pos(c));
  vm.gemm.pw = l.pw;
  vm.causal = l.causal;
  // A weight operand ({"shape": [..]}) is counted by the graph builder, as
  // for every op: an Einsum has no weight of its own. The memory model
  // splits a second operand that is one along its letters.
  if (l.inputs.size() == 2 && l.inputs[1].is_weight())
    for (char c : t[1]) vm.weight_dims.push_back(pos(c));
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

// ---- Embedding: token ids (b, s) to vectors (b, s, d) ----

std::optional<Error> lower_embedding(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(1, 1)) return e;
  if (lo.inputs()[0].producer >= 0)
    return lo.err(
        "Embedding takes token ids from a graph input, not from layer " + quoted(l.inputs[0].name),
        "inputs[0]");
  const Shape& x = lo.inputs()[0].shape;
  if (x.size() != 2)
    return lo.err("Embedding input must be (batch, sequence), got " + shape_str(x), "inputs[0]");
  if (l.vocab <= 0) return lo.err("must be a positive integer", "vocab");
  if (l.dim <= 0) return lo.err("must be a positive integer", "dim");
  VertexPlan p;
  p.op = "Embedding";
  p.dims = {"b", "s", "d", "v"};
  p.kinds = {DimKind::kBatch, DimKind::kSequence, DimKind::kHidden, DimKind::kVocabulary};
  p.dom = {x[0], x[1], l.dim, l.vocab};
  if (auto e = lo.check_dom(p.dom)) return e;
  p.inputs.push_back(lo.port(0, identity_map(2)));
  p.outputs.push_back(OutPort{{x[0], x[1], l.dim}, identity_map(3)});
  p.model.cost = ops::gemm_cost;
  p.model.batch_dim = 0;
  p.model.gemm.m = {0, 1};
  p.model.gemm.n = {2};
  p.model.gemm.k = {3};
  p.model.weight_elements = l.vocab * l.dim;  // the table; below 2^62 as dom is
  p.model.weight_dims = {2, 3};
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

}  // namespace

void register_dense(OpTable& table) {
  table.add({"FC",
             1,
             {required("units", T::kPositiveInt, &LayerSpec::units),
              optional("pw", T::kNonNegativeInt, &LayerSpec::pw)},
             lower_fc});
  table.add({"Einsum",
             2,
             {required("equation", T::kString, &LayerSpec::equation),
              optional("pw", T::kNonNegativeInt, &LayerSpec::pw),
              optional("causal", T::kBool, &LayerSpec::causal)},
             lower_einsum});
  table.add({"Embedding",
             3,
             {required("vocab", T::kPositiveInt, &LayerSpec::vocab),
              required("dim", T::kPositiveInt, &LayerSpec::dim)},
             lower_embedding});
}

}  // namespace pase
