// build_graph(): checks a GraphSpec and lowers it to vertices with their
// iteration spaces, tensor maps and cost parameters (cost-model.md section 5).
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "pase/graph.hpp"

namespace pase {

const char* op_name(Op op) {
  switch (op) {
    case Op::kFC:
      return "FC";
    case Op::kEinsum:
      return "Einsum";
    case Op::kEmbedding:
      return "Embedding";
    case Op::kConv:
      return "Conv";
    case Op::kPool:
      return "Pool";
    case Op::kElementwise:
      return "Elementwise";
    case Op::kNorm:
      return "Norm";
    case Op::kReduceMean:
      return "ReduceMean";
    case Op::kSoftmax:
      return "Softmax";
    case Op::kSoftmaxCrossEntropy:
      return "SoftmaxCrossEntropy";
    case Op::kReshape:
      return "Reshape";
    case Op::kTranspose:
      return "Transpose";
    case Op::kConcat:
      return "Concat";
    case Op::kSplit:
      return "Split";
    case Op::kStack:
      return "Stack";
    case Op::kUnstack:
      return "Unstack";
    case Op::kLSTM:
      return "LSTM";
    case Op::kRavel:
      return "Ravel";
    case Op::kUnravel:
      return "Unravel";
  }
  return "?";
}

namespace {

constexpr int64_t kMaxElements = int64_t{1} << 62;
constexpr int64_t kMaxOutputs = 4096;  // Unstack / Split fan-out
// Dimensions of a tensor. Every vertex keeps per-dimension names, maps and
// splits, so a document of a few megabytes with million-dimension shapes of
// size 1 would otherwise need gigabytes.
constexpr size_t kMaxRank = 32;

// A name or equation from the document, quoted for a message; shortened, so a
// megabyte-long name cannot make a megabyte-long message.
std::string quoted(const std::string& text) {
  constexpr size_t kMax = 64;
  if (text.size() <= kMax) return "'" + text + "'";
  return "'" + text.substr(0, kMax - 3) + "...'";
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Element count, or nullopt when a size is not positive or the product
// reaches kMaxElements (so that every later product of splits and sizes fits).
std::optional<int64_t> element_count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d <= 0) return std::nullopt;
    if (__builtin_mul_overflow(n, d, &n) || n >= kMaxElements) return std::nullopt;
  }
  return n;
}

Error check_shape(const Shape& s, const std::string& where) {
  if (s.empty()) return {"a shape needs at least one dimension", where};
  if (s.size() > kMaxRank)
    return {"a shape has at most " + std::to_string(kMaxRank) + " dimensions, got " +
                std::to_string(s.size()),
            where};
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] <= 0)
      return {"size " + std::to_string(s[i]) + " at dimension " + std::to_string(i) +
                  " must be a positive integer",
              where};
  if (!element_count(s))
    return {"shape " + shape_str(s) + " has too many elements (2^62 or more)", where};
  return {};
}

TensorMap identity_map(size_t rank) {
  TensorMap m(rank);
  for (size_t i = 0; i < rank; ++i) m[i] = {static_cast<int>(i)};
  return m;
}

// Normalizes a possibly negative axis into [0, rank).
std::optional<int> norm_axis(int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

// Dimension names for shape-generic ops: "b" for the first, then "d1", "d2",
// ...; a stacking axis (Stack, Unstack) is "n" and the others keep their
// names as if it were absent, so the batch stays "b".
std::vector<std::string> generic_dims(size_t rank, int stack_axis = -1) {
  std::vector<std::string> d(rank);
  size_t k = 0;
  for (size_t i = 0; i < rank; ++i) {
    if (static_cast<int>(i) == stack_axis) {
      d[i] = "n";
      continue;
    }
    // snprintf, not "d" + std::to_string(k): GCC 12 warns falsely (-Wrestrict).
    char name[24];
    std::snprintf(name, sizeof name, k == 0 ? "b" : "d%zu", k);
    d[i] = name;
    ++k;
  }
  return d;
}

// A tensor visible to later layers: a graph input (vertex -1) or a layer output.
struct Tensor {
  int vertex = -1;
  int output = 0;
  Shape shape;
};

class Builder {
 public:
  explicit Builder(GraphSpec spec) { g_.spec = std::move(spec); }

  Result<Graph> run() {
    const GraphSpec& spec = g_.spec;
    g_.name = spec.name;
    g_.cutoff = spec.cutoff;
    if (spec.cutoff < 1) return Error{"must be a positive integer", "cutoff"};
    for (const auto& [name, shape] : spec.inputs) {
      std::string where = "inputs." + name;
      if (name.empty()) return Error{"an input needs a non-empty name", "inputs"};
      if (name.find(':') != std::string::npos) return Error{"names may not contain ':'", where};
      if (tensors_.count(name)) return Error{"duplicate input name " + quoted(name), where};
      if (Error e = check_shape(shape, where); !e.message.empty()) return e;
      tensors_[name] = Tensor{-1, 0, shape};
    }
    if (spec.layers.empty()) return Error{"the graph has no layers", "layers"};
    if (spec.layers.size() > static_cast<size_t>(kMaxLayers))
      return Error{"too many layers (" + std::to_string(spec.layers.size()) + "; the limit is " +
                       std::to_string(kMaxLayers) + ")",
                   "layers"};
    for (const LayerSpec& l : spec.layers) all_names_.insert(l.name);
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      where_ = "layers[" + std::to_string(i) + "]";
      if (Error e = add_layer(static_cast<int>(i), spec.layers[i]); !e.message.empty()) return e;
    }
    for (const Vertex& v : g_.vertices)
      for (size_t s = 0; s < v.inputs.size(); ++s)
        if (v.inputs[s].producer >= 0)
          g_.edges.push_back(
              Edge{v.inputs[s].producer, v.inputs[s].output, v.id, static_cast<int>(s)});
    return std::move(g_);
  }

 private:
  Error err(std::string msg, const std::string& field = "") const {
    return Error{std::move(msg), field.empty() ? where_ : where_ + "." + field};
  }

  // Resolves the operands of a layer into slots (shapes known; maps set later).
  Error resolve(const LayerSpec& l, std::vector<Slot>& slots) {
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      const Operand& o = l.inputs[i];
      std::string field = "inputs[" + std::to_string(i) + "]";
      Slot s;
      if (o.is_weight()) {
        if (Error e = check_shape(o.weight_shape, where_ + "." + field); !e.message.empty())
          return e;
        s.shape = o.weight_shape;
      } else {
        auto it = tensors_.find(o.name);
        if (it == tensors_.end()) {
          std::string base = o.name.substr(0, o.name.find(':'));
          if (base == l.name)
            return err("layer " + quoted(l.name) + " uses its own output (a cycle)", field);
          if (multi_.count(base) && o.name.find(':') == std::string::npos)
            return err(
                quoted(o.name) + " has several outputs; name one as " + quoted(o.name + ":0"),
                field);
          if (all_names_.count(base) && !defined_.count(base))
            return err("input " + quoted(o.name) +
                           " is defined by a later layer (layers must be in topological order; "
                           "a cycle is not allowed)",
                       field);
          return err("unknown input " + quoted(o.name), field);
        }
        s.producer = it->second.vertex;
        s.output = it->second.output;
        s.shape = it->second.shape;
      }
      slots.push_back(std::move(s));
    }
    return {};
  }

  Error want_inputs(const LayerSpec& l, size_t lo, size_t hi) const {
    size_t n = l.inputs.size();
    if (n >= lo && n <= hi) return {};
    std::string want = lo == hi         ? std::to_string(lo)
                       : hi == SIZE_MAX ? std::to_string(lo) + " or more"
                                        : std::to_string(lo) + " to " + std::to_string(hi);
    return err(std::string(op_name(l.op)) + " takes " + want + " input" + (hi == 1 ? "" : "s") +
                   ", got " + std::to_string(n),
               "inputs");
  }

  Vertex& new_vertex(const LayerSpec& l, int layer, Op op, std::vector<std::string> dims,
                     Shape dom) {
    Vertex v;
    v.id = static_cast<int>(g_.vertices.size());
    v.name = l.name;
    v.op = op;
    v.layer = layer;
    v.pinned.assign(dom.size(), false);
    v.dims = std::move(dims);
    v.dom = std::move(dom);
    g_.vertices.push_back(std::move(v));
    return g_.vertices.back();
  }

  // Registers the outputs of vertex `v` under the layer's name.
  void publish(const std::string& name, const Vertex& v, bool multi) {
    defined_.insert(name);
    if (!multi) {
      tensors_[name] = Tensor{v.id, 0, v.outputs[0].shape};
      return;
    }
    multi_.insert(name);
    for (size_t k = 0; k < v.outputs.size(); ++k)
      tensors_[name + ":" + std::to_string(k)] =
          Tensor{v.id, static_cast<int>(k), v.outputs[k].shape};
  }

  Error check_dom(const Vertex& v) const {
    if (!element_count(v.dom))
      return err("the iteration space " + shape_str(v.dom) + " is too large (2^62 or more points)");
    return {};
  }

  Error add_layer(int index, const LayerSpec& l) {
    if (l.name.empty()) return err("a layer needs a non-empty name", "name");
    if (l.name.find(':') != std::string::npos) return err("names may not contain ':'", "name");
    if (tensors_.count(l.name) || defined_.count(l.name))
      return err("duplicate name " + quoted(l.name), "name");
    if (l.op == Op::kRavel || l.op == Op::kUnravel)
      return err("unknown op '" + std::string(op_name(l.op)) + "' (write a Reshape)", "op");
    std::vector<Slot> in;
    if (Error e = resolve(l, in); !e.message.empty()) return e;
    if (l.pw < 0) return err("must be a non-negative integer", "pw");
    switch (l.op) {
      case Op::kFC:
        return fc(index, l, in);
      case Op::kEinsum:
        return einsum(index, l, in);
      case Op::kEmbedding:
        return embedding(index, l, in);
      case Op::kConv:
        return conv(index, l, in);
      case Op::kPool:
        return pool(index, l, in);
      case Op::kElementwise:
        return elementwise(index, l, in);
      case Op::kNorm:
      case Op::kSoftmax:
        return norm_like(index, l, in);
      case Op::kReduceMean:
        return reduce_mean(index, l, in);
      case Op::kSoftmaxCrossEntropy:
        return sce(index, l, in);
      case Op::kReshape:
        return reshape(index, l, in);
      case Op::kTranspose:
        return transpose(index, l, in);
      case Op::kConcat:
        return concat(index, l, in);
      case Op::kSplit:
        return split(index, l, in);
      case Op::kStack:
        return stack(index, l, in);
      case Op::kUnstack:
        return unstack(index, l, in);
      case Op::kLSTM:
        return lstm(index, l, in);
      case Op::kRavel:
      case Op::kUnravel:
        break;
    }
    return err("unsupported op", "op");
  }

  Error fc(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    const Shape& x = in[0].shape;
    if (x.size() < 2)
      return err("FC input must have at least 2 dimensions, got " + shape_str(x), "inputs[0]");
    if (l.units <= 0) return err("must be a positive integer", "units");
    size_t a = x.size() - 1;
    std::vector<std::string> dims = generic_dims(a);
    dims.push_back("n");
    dims.push_back("k");
    Shape dom(x.begin(), x.end() - 1);
    dom.push_back(l.units);
    dom.push_back(x.back());
    Vertex& v = new_vertex(l, index, Op::kFC, dims, dom);
    if (Error e = check_dom(v); !e.message.empty()) return e;
    in[0].map = identity_map(x.size());
    in[0].map[a] = {static_cast<int>(a + 1)};
    v.inputs = std::move(in);
    Shape out(x.begin(), x.end() - 1);
    out.push_back(l.units);
    v.outputs.push_back(Output{out, identity_map(a + 1)});
    for (size_t i = 0; i < a; ++i) v.gemm.m.push_back(static_cast<int>(i));
    v.gemm.n = {static_cast<int>(a)};
    v.gemm.k = {static_cast<int>(a + 1)};
    v.gemm.pw = l.pw;
    publish(l.name, v, false);
    return {};
  }

  Error einsum(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 2, 2); !e.message.empty()) return e;
    const std::string& eq = l.equation;
    size_t comma = eq.find(','), arrow = eq.find("->");
    if (comma == std::string::npos || arrow == std::string::npos || comma > arrow ||
        eq.find(',', comma + 1) < arrow)
      return err("equation " + quoted(eq) + " must have the form 'in1,in2->out'", "equation");
    std::string t[3] = {eq.substr(0, comma), eq.substr(comma + 1, arrow - comma - 1),
                        eq.substr(arrow + 2)};
    std::map<char, int64_t> size;
    for (int k = 0; k < 3; ++k) {
      std::set<char> seen;
      for (char ch : t[k]) {
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
          return err("equation " + quoted(eq) + ": '" + std::string(1, ch) + "' is not a letter",
                     "equation");
        if (!seen.insert(ch).second)
          return err("equation " + quoted(eq) + ": letter '" + std::string(1, ch) +
                         "' repeats in one term",
                     "equation");
      }
      if (t[k].empty()) return err("equation " + quoted(eq) + " has an empty term", "equation");
    }
    for (int k = 0; k < 2; ++k) {
      const Shape& s = in[k].shape;
      if (s.size() != t[k].size())
        return err("input " + std::to_string(k + 1) + " has shape " + shape_str(s) +
                       " but the equation names " + std::to_string(t[k].size()) + " dimensions ('" +
                       t[k] + "')",
                   "inputs[" + std::to_string(k) + "]");
      for (size_t i = 0; i < s.size(); ++i) {
        auto [it, fresh] = size.emplace(t[k][i], s[i]);
        if (!fresh && it->second != s[i])
          return err("letter '" + std::string(1, t[k][i]) + "' is " + std::to_string(it->second) +
                         " in input 1 but " + std::to_string(s[i]) + " in input 2",
                     "equation");
      }
    }
    if (t[2].size() > kMaxRank)
      return err("the output would have " + std::to_string(t[2].size()) +
                     " dimensions; a tensor has at most " + std::to_string(kMaxRank),
                 "equation");
    auto has = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
    std::string batch, m, n, red;
    for (char c : t[2])
      if (!has(t[0], c) && !has(t[1], c))
        return err("output letter '" + std::string(1, c) + "' is in neither input", "equation");
    for (char c : t[0]) {
      if (has(t[1], c))
        (has(t[2], c) ? batch : red) += c;
      else if (has(t[2], c))
        m += c;
      else
        return err("letter '" + std::string(1, c) +
                       "' of input 1 is in neither input 2 nor the output (unsupported)",
                   "equation");
    }
    for (char c : t[1])
      if (!has(t[0], c)) {
        if (has(t[2], c))
          n += c;
        else
          return err("letter '" + std::string(1, c) +
                         "' of input 2 is in neither input 1 nor the output (unsupported)",
                     "equation");
      }
    if (m.empty() || n.empty())
      return err("equation " + quoted(eq) +
                     " needs a letter only in input 1 and the output, and one only in input 2 and "
                     "the output",
                 "equation");
    std::string letters = t[2] + red;
    std::vector<std::string> dims;
    Shape dom;
    for (char c : letters) {
      dims.emplace_back(1, c);
      dom.push_back(size[c]);
    }
    Vertex& v = new_vertex(l, index, Op::kEinsum, dims, dom);
    if (Error e = check_dom(v); !e.message.empty()) return e;
    auto pos = [&](char c) { return static_cast<int>(letters.find(c)); };
    for (int k = 0; k < 2; ++k) {
      in[k].map.clear();
      for (char c : t[k]) in[k].map.push_back({pos(c)});
    }
    v.inputs = std::move(in);
    Output out;
    for (char c : t[2]) {
      out.shape.push_back(size[c]);
      out.map.push_back({pos(c)});
    }
    v.outputs.push_back(out);
    for (char c : batch) v.gemm.batch.push_back(pos(c));
    for (char c : m) v.gemm.m.push_back(pos(c));
    for (char c : n) v.gemm.n.push_back(pos(c));
    for (char c : red) v.gemm.k.push_back(pos(c));
    v.gemm.pw = l.pw;
    publish(l.name, v, false);
    return {};
  }

  Error embedding(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    if (in[0].producer >= 0)
      return err("Embedding takes token ids from a graph input, not from layer " +
                     quoted(l.inputs[0].name),
                 "inputs[0]");
    const Shape& x = in[0].shape;
    if (x.size() != 2)
      return err("Embedding input must be (batch, sequence), got " + shape_str(x), "inputs[0]");
    if (l.vocab <= 0) return err("must be a positive integer", "vocab");
    if (l.dim <= 0) return err("must be a positive integer", "dim");
    Vertex& v =
        new_vertex(l, index, Op::kEmbedding, {"b", "s", "d", "v"}, {x[0], x[1], l.dim, l.vocab});
    if (Error e = check_dom(v); !e.message.empty()) return e;
    in[0].map = identity_map(2);
    v.inputs = std::move(in);
    v.outputs.push_back(Output{{x[0], x[1], l.dim}, identity_map(3)});
    v.gemm.m = {0, 1};
    v.gemm.n = {2};
    v.gemm.k = {3};
    publish(l.name, v, false);
    return {};
  }

  // Output size of a windowed op along one axis, or an error.
  std::optional<int64_t> window_out(int64_t size, int64_t win, int64_t stride, int64_t pad) const {
    int64_t span = size - win + 2 * pad;
    if (span < 0) return std::nullopt;
    return span / stride + 1;
  }

  Error check_stride_pad(const LayerSpec& l) const {
    for (int i = 0; i < 2; ++i) {
      if (l.stride[i] <= 0) return err("must be a positive integer", "stride");
      if (l.pad[i] < 0) return err("must be a non-negative integer", "pad");
    }
    return {};
  }

  Error conv(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    const Shape& x = in[0].shape;
    if (x.size() != 4)
      return err("Conv input must be (b, c, h, w), got " + shape_str(x), "inputs[0]");
    if (l.filter.size() != 4) return err("must be [n, c, r, s]", "filter");
    for (int64_t f : l.filter)
      if (f <= 0) return err("sizes must be positive integers", "filter");
    if (l.filter[1] != x[1])
      return err("channel " + std::to_string(l.filter[1]) + " does not match input " +
                     std::to_string(x[1]),
                 "filter");
    if (Error e = check_stride_pad(l); !e.message.empty()) return e;
    auto ho = window_out(x[2], l.filter[2], l.stride[0], l.pad[0]);
    auto wo = window_out(x[3], l.filter[3], l.stride[1], l.pad[1]);
    if (!ho || !wo)
      return err(
          "filter " + shape_str(l.filter) + " is larger than the padded input " + shape_str(x),
          "filter");
    Vertex& v = new_vertex(l, index, Op::kConv, {"b", "c", "h", "w", "r", "s", "n"},
                           {x[0], x[1], *ho, *wo, l.filter[2], l.filter[3], l.filter[0]});
    if (Error e = check_dom(v); !e.message.empty()) return e;
    v.pinned[2] = v.pinned[3] = true;  // no halo exchange is modelled
    in[0].map = identity_map(4);
    v.inputs = std::move(in);
    v.outputs.push_back(Output{{x[0], l.filter[0], *ho, *wo}, {{0}, {6}, {2}, {3}}});
    v.gemm.m = {0, 2, 3};
    v.gemm.n = {6};
    v.gemm.k = {1, 4, 5};
    v.gemm.pw = l.pw;
    publish(l.name, v, false);
    return {};
  }

  Error pool(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    const Shape& x = in[0].shape;
    if (x.size() != 4)
      return err("Pool input must be (b, c, h, w), got " + shape_str(x), "inputs[0]");
    if (l.window.size() != 2 || l.window[0] <= 0 || l.window[1] <= 0)
      return err("must be [r, s] with positive sizes", "window");
    if (Error e = check_stride_pad(l); !e.message.empty()) return e;
    auto ho = window_out(x[2], l.window[0], l.stride[0], l.pad[0]);
    auto wo = window_out(x[3], l.window[1], l.stride[1], l.pad[1]);
    if (!ho || !wo)
      return err(
          "window " + shape_str(l.window) + " is larger than the padded input " + shape_str(x),
          "window");
    Vertex& v = new_vertex(l, index, Op::kPool, {"b", "c", "h", "w"}, {x[0], x[1], *ho, *wo});
    in[0].map = identity_map(4);
    v.inputs = std::move(in);
    v.outputs.push_back(Output{v.dom, identity_map(4)});
    v.window = {l.window[0], l.window[1]};
    publish(l.name, v, false);
    return {};
  }

  Error elementwise(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 2, 2); !e.message.empty()) return e;
    if (in[0].shape != in[1].shape)
      return err(
          "input shapes " + shape_str(in[0].shape) + " and " + shape_str(in[1].shape) + " differ",
          "inputs");
    Shape s = in[0].shape;
    Vertex& v = new_vertex(l, index, Op::kElementwise, generic_dims(s.size()), s);
    for (Slot& slot : in) slot.map = identity_map(s.size());
    v.inputs = std::move(in);
    v.outputs.push_back(Output{s, identity_map(s.size())});
    v.pw = l.pw;
    publish(l.name, v, false);
    return {};
  }

  // Norm and Softmax: dom = shape, configs c, one normalized axis.
  Error norm_like(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    Shape s = in[0].shape;
    auto axis = norm_axis(l.axis, s.size());
    if (!axis)
      return err("axis " + std::to_string(l.axis) + " is out of range for shape " + shape_str(s),
                 "axis");
    Vertex& v = new_vertex(l, index, l.op, generic_dims(s.size()), s);
    in[0].map = identity_map(s.size());
    v.inputs = std::move(in);
    v.outputs.push_back(Output{s, identity_map(s.size())});
    v.axis = *axis;
    publish(l.name, v, false);
    return {};
  }

  Error reduce_mean(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    Shape s = in[0].shape;
    std::vector<bool> reduced(s.size(), !l.has_axes);
    for (int64_t a : l.axes) {
      auto axis = norm_axis(a, s.size());
      if (!axis)
        return err("axis " + std::to_string(a) + " is out of range for shape " + shape_str(s),
                   "axes");
      if (reduced[*axis]) return err("axis " + std::to_string(a) + " is named twice", "axes");
      reduced[*axis] = true;
    }
    Vertex& v = new_vertex(l, index, Op::kReduceMean, generic_dims(s.size()), s);
    in[0].map = identity_map(s.size());
    v.inputs = std::move(in);
    Output out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (reduced[i]) {
        v.axes.push_back(static_cast<int>(i));
        if (l.keepdims) {
          out.shape.push_back(1);
          out.map.push_back({});
        }
      } else {
        out.shape.push_back(s[i]);
        out.map.push_back({static_cast<int>(i)});
      }
    }
    if (out.shape.empty()) {
      out.shape = {1};
      out.map = {{}};
    }
    v.outputs.push_back(out);
    publish(l.name, v, false);
    return {};
  }

  Error sce(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    Shape s = in[0].shape;
    Vertex& v = new_vertex(l, index, Op::kSoftmaxCrossEntropy, generic_dims(s.size()), s);
    in[0].map = identity_map(s.size());
    v.inputs = std::move(in);
    // The per-example loss: the input without its class dimension.
    Output out{Shape(s.begin(), s.end() - 1), identity_map(s.size() - 1)};
    if (out.shape.empty()) out = Output{{1}, {{}}};
    v.outputs.push_back(out);
    publish(l.name, v, false);
    return {};
  }

  Error reshape(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    Shape s = in[0].shape;
    if (Error e = check_shape(l.shape, where_ + ".shape"); !e.message.empty()) return e;
    int64_t n_in = *element_count(s), n_out = *element_count(l.shape);
    if (n_in != n_out)
      return err("shape " + shape_str(l.shape) + " has " + std::to_string(n_out) +
                     " elements but the input " + shape_str(s) + " has " + std::to_string(n_in),
                 "shape");
    TensorMap all(1);
    for (size_t i = 0; i < s.size(); ++i) all[0].push_back(static_cast<int>(i));
    Vertex& r = new_vertex(l, index, Op::kRavel, generic_dims(s.size()), s);
    r.name = l.name + "/ravel";
    in[0].map = identity_map(s.size());
    r.inputs = std::move(in);
    r.outputs.push_back(Output{{n_in}, all});
    int ravel_id = r.id;
    Vertex& u = new_vertex(l, index, Op::kUnravel, generic_dims(l.shape.size()), l.shape);
    TensorMap all_out(1);
    for (size_t i = 0; i < l.shape.size(); ++i) all_out[0].push_back(static_cast<int>(i));
    u.inputs.push_back(Slot{ravel_id, 0, {n_in}, all_out});
    u.outputs.push_back(Output{l.shape, identity_map(l.shape.size())});
    publish(l.name, u, false);
    return {};
  }

  Error transpose(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    Shape s = in[0].shape;
    std::vector<bool> seen(s.size(), false);
    if (l.perm.size() != s.size())
      return err(
          "must list " + std::to_string(s.size()) + " axes, got " + std::to_string(l.perm.size()),
          "perm");
    for (int64_t p : l.perm) {
      if (p < 0 || p >= static_cast<int64_t>(s.size()) || seen[p])
        return err(
            shape_str(l.perm) + " is not a permutation of 0.." + std::to_string(s.size() - 1),
            "perm");
      seen[p] = true;
    }
    Vertex& v = new_vertex(l, index, Op::kTranspose, generic_dims(s.size()), s);
    in[0].map = identity_map(s.size());
    v.inputs = std::move(in);
    Output out;
    for (int64_t p : l.perm) {
      out.shape.push_back(s[p]);
      out.map.push_back({static_cast<int>(p)});
    }
    v.outputs.push_back(out);
    publish(l.name, v, false);
    return {};
  }

  Error concat(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 2, SIZE_MAX); !e.message.empty()) return e;
    Shape s = in[0].shape;
    auto axis = norm_axis(l.axis, s.size());
    if (!axis)
      return err("axis " + std::to_string(l.axis) + " is out of range for shape " + shape_str(s),
                 "axis");
    int64_t total = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const Shape& t = in[k].shape;
      std::string f = "inputs[" + std::to_string(k) + "]";
      if (t.size() != s.size())
        return err("rank " + std::to_string(t.size()) + " differs from the first input's " +
                       std::to_string(s.size()),
                   f);
      for (size_t i = 0; i < s.size(); ++i)
        if (static_cast<int>(i) != *axis && t[i] != s[i])
          return err("size " + std::to_string(t[i]) + " at dimension " + std::to_string(i) +
                         " differs from the first input's " + std::to_string(s[i]),
                     f);
      if (__builtin_add_overflow(total, t[*axis], &total))
        return err("concatenated size overflows", "axis");
    }
    Shape dom = s;
    dom[*axis] = 1;
    Shape out = s;
    out[*axis] = total;
    if (!element_count(out)) return err("the output has too many elements", "inputs");
    Vertex& v = new_vertex(l, index, Op::kConcat, generic_dims(s.size()), dom);
    for (Slot& slot : in) slot.map = identity_map(s.size());
    v.inputs = std::move(in);
    v.outputs.push_back(Output{out, identity_map(s.size())});
    publish(l.name, v, false);
    return {};
  }

  Error split(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    Shape s = in[0].shape;
    auto axis = norm_axis(l.axis, s.size());
    if (!axis)
      return err("axis " + std::to_string(l.axis) + " is out of range for shape " + shape_str(s),
                 "axis");
    if (l.num <= 0 || l.num > kMaxOutputs)
      return err("must be an integer from 1 to " + std::to_string(kMaxOutputs), "num");
    if (s[*axis] % l.num != 0)
      return err(std::to_string(l.num) + " does not divide size " + std::to_string(s[*axis]) +
                     " of axis " + std::to_string(*axis),
                 "num");
    Shape dom = s;
    dom[*axis] = 1;
    Vertex& v = new_vertex(l, index, Op::kSplit, generic_dims(s.size()), dom);
    in[0].map = identity_map(s.size());
    v.inputs = std::move(in);
    Shape out = s;
    out[*axis] = s[*axis] / l.num;
    for (int64_t k = 0; k < l.num; ++k) v.outputs.push_back(Output{out, identity_map(s.size())});
    publish(l.name, v, true);
    return {};
  }

  Error stack(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 2, SIZE_MAX); !e.message.empty()) return e;
    Shape s = in[0].shape;
    for (size_t k = 1; k < in.size(); ++k)
      if (in[k].shape != s)
        return err(
            "shape " + shape_str(in[k].shape) + " differs from the first input's " + shape_str(s),
            "inputs[" + std::to_string(k) + "]");
    auto axis = norm_axis(l.axis, s.size() + 1);
    if (!axis)
      return err("axis " + std::to_string(l.axis) + " is out of range for stacking " + shape_str(s),
                 "axis");
    if (s.size() + 1 > kMaxRank)
      return err("the output would have " + std::to_string(s.size() + 1) +
                     " dimensions; a tensor has at most " + std::to_string(kMaxRank),
                 "inputs");
    Shape dom = s;
    dom.insert(dom.begin() + *axis, 1);
    Shape out = s;
    out.insert(out.begin() + *axis, static_cast<int64_t>(in.size()));
    if (!element_count(out)) return err("the output has too many elements", "inputs");
    Vertex& v = new_vertex(l, index, Op::kStack, generic_dims(dom.size(), *axis), dom);
    for (Slot& slot : in) {
      slot.map.clear();
      for (size_t j = 0; j < s.size(); ++j)
        slot.map.push_back({static_cast<int>(j < static_cast<size_t>(*axis) ? j : j + 1)});
    }
    v.inputs = std::move(in);
    v.outputs.push_back(Output{out, identity_map(dom.size())});
    publish(l.name, v, false);
    return {};
  }

  Error unstack(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    Shape s = in[0].shape;
    auto axis = norm_axis(l.axis, s.size());
    if (!axis)
      return err("axis " + std::to_string(l.axis) + " is out of range for shape " + shape_str(s),
                 "axis");
    if (s.size() < 2) return err("Unstack needs an input of rank 2 or more", "inputs[0]");
    if (s[*axis] > kMaxOutputs)
      return err("would make " + std::to_string(s[*axis]) + " outputs; the limit is " +
                     std::to_string(kMaxOutputs),
                 "axis");
    Shape dom = s;
    dom[*axis] = 1;
    Vertex& v = new_vertex(l, index, Op::kUnstack, generic_dims(s.size(), *axis), dom);
    in[0].map = identity_map(s.size());
    v.inputs = std::move(in);
    Output out;
    for (size_t i = 0; i < s.size(); ++i)
      if (static_cast<int>(i) != *axis) {
        out.shape.push_back(s[i]);
        out.map.push_back({static_cast<int>(i)});
      }
    for (int64_t k = 0; k < s[*axis]; ++k) v.outputs.push_back(out);
    publish(l.name, v, true);
    return {};
  }

  Error lstm(int index, const LayerSpec& l, std::vector<Slot>& in) {
    if (Error e = want_inputs(l, 1, 1); !e.message.empty()) return e;
    const Shape& x = in[0].shape;
    if (x.size() != 3) return err("LSTM input must be (b, s, u), got " + shape_str(x), "inputs[0]");
    if (l.units <= 0) return err("must be a positive integer", "units");
    if (l.units != x[2])
      return err("units " + std::to_string(l.units) + " does not match input features " +
                     std::to_string(x[2]),
                 "units");
    if (l.layers <= 0) return err("must be a positive integer", "layers");
    Vertex& v = new_vertex(l, index, Op::kLSTM, {"l", "s", "b", "n", "k"},
                           {l.layers, x[1], x[0], x[2], x[2]});
    if (Error e = check_dom(v); !e.message.empty()) return e;
    v.pinned[1] = true;  // the sequence is processed in order
    in[0].map = {{2}, {1}, {4}};
    v.inputs = std::move(in);
    v.outputs.push_back(Output{{x[0], x[1], x[2]}, {{2}, {1}, {3}}});
    v.gemm.batch = {0};
    v.gemm.m = {1, 2};
    v.gemm.n = {3};
    v.gemm.k = {4};
    v.gemm.pw = 3;
    v.gemm.n_scale = 4;  // the four gates
    v.gemm.k_scale = 2;  // input and recurrent state
    publish(l.name, v, false);
    return {};
  }

  Graph g_;
  std::string where_;
  std::unordered_map<std::string, Tensor> tensors_;
  std::set<std::string> all_names_, defined_, multi_;
};

}  // namespace

Result<Graph> build_graph(GraphSpec spec) { return Builder(std::move(spec)).run(); }

}  // namespace pase
