// The nodes that take parts of a tensor (core/docs/import.md, "Ops"):
// Split, Slice and Gather. On constants they fold; on activations they are
// outputs of the format's Split or Unstack; Gather of a weight by token ids
// is an Embedding.
#include <algorithm>
#include <numeric>

#include "model/onnx/onnx_import.hpp"
#include "model/op_table.hpp"

namespace pase::onnx {
namespace {

using Table = std::map<std::string, Handler, std::less<>>;

// The part [begin, begin + size) along `axis` of activation `x`: one output
// of a Split into equal parts (shared by all the slices of `x` that cut it
// the same way).
Result<Value> part_of(Importer& im, const Node& node, const Value& x, int axis, int64_t begin,
                      int64_t size, bool keep_axis) {
  int64_t total = x.shape[axis];
  if (size <= 0 || total % size != 0 || begin % size != 0)
    return im.err(node, "taking [" + std::to_string(begin) + ", " + std::to_string(begin + size) +
                            ") of axis " + std::to_string(axis) + " (size " +
                            std::to_string(total) +
                            ") is not supported: only equal parts of an axis are");
  int64_t num = total / size;
  if (num > kMaxOutputs)
    return im.err(node, "the axis has too many parts (" + std::to_string(num) + ")");
  LayerSpec l;
  l.op = keep_axis ? "Split" : "Unstack";
  l.inputs.push_back(Operand{x.operand, {}});
  l.axis = axis;
  l.num = keep_axis ? num : 0;
  std::string key = l.op + "|" + x.operand + "|" + std::to_string(axis) + "|" + std::to_string(num);
  std::string& layer = im.parts()[key];
  Shape shape = x.shape;
  if (keep_axis)
    shape[axis] = size;
  else
    shape.erase(shape.begin() + axis);
  if (layer.empty()) {
    Value made = im.add_layer(node, std::move(l), shape);
    layer = made.operand;
  }
  Value out;
  out.kind = Kind::kActivation;
  out.type = x.type;
  out.shape = shape;
  out.operand = layer + ":" + std::to_string(begin / size);
  return out;
}

std::optional<Error> slice(Importer& im, const Node& node) {
  Result<const Value*> x = im.input(node, 0);
  if (!x) return x.error();
  const Shape& s = (*x)->shape;
  Result<std::vector<int64_t>> starts = im.ints(node, 1), ends = im.ints(node, 2);
  if (!starts) return starts.error();
  if (!ends) return ends.error();
  std::vector<int64_t> axes(starts->size()), steps(starts->size(), 1);
  std::iota(axes.begin(), axes.end(), 0);
  if (im.has_input(node, 3)) {
    Result<std::vector<int64_t>> a = im.ints(node, 3);
    if (!a) return a.error();
    axes = *a;
  }
  if (im.has_input(node, 4)) {
    Result<std::vector<int64_t>> st = im.ints(node, 4);
    if (!st) return st.error();
    steps = *st;
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return im.err(node, "starts, ends, axes and steps differ in length");
  std::vector<int64_t> begin(s.size(), 0), step(s.size(), 1);
  Shape out = s;
  for (size_t i = 0; i < axes.size(); ++i) {
    std::optional<int> a = norm_axis(axes[i], s.size());
    if (!a || steps[i] == 0) return im.err(node, "axis or step out of range");
    int64_t n = s[*a], st = steps[i];
    auto clampi = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v += n;
      return std::clamp(v, lo, hi);
    };
    int64_t b = st > 0 ? clampi((*starts)[i], 0, n) : clampi((*starts)[i], -1, n - 1);
    int64_t e = st > 0 ? clampi((*ends)[i], 0, n) : clampi((*ends)[i], -1, n - 1);
    int64_t len =
        st > 0 ? (e > b ? (e - b + st - 1) / st : 0) : (b > e ? (b - e - st - 1) / -st : 0);
    if (len <= 0) return im.err(node, "the slice of axis " + std::to_string(*a) + " is empty");
    begin[*a] = b;
    step[*a] = st;
    out[*a] = len;
  }
  const Value& v = **x;
  if (!v.is_activation()) {
    std::vector<int64_t> index;
    if (v.has_values && elements(out) <= kMaxConstantElements)
      index = source_indices(out, [&](const std::vector<int64_t>& pos) {
        int64_t j = 0;
        for (size_t d = 0; d < out.size(); ++d) j = j * s[d] + begin[d] + pos[d] * step[d];
        return j;
      });
    im.set(node, 0, gather_values(v, out, index));
    return std::nullopt;
  }
  if (auto a = im.activation(node, 0); !a) return a.error();
  int cut = -1;
  for (size_t d = 0; d < s.size(); ++d)
    if (out[d] != s[d]) {
      if (cut >= 0 || step[d] != 1)
        return im.err(node, "a slice of an activation is supported along one axis with step 1");
      cut = static_cast<int>(d);
    }
  if (cut < 0) {
    im.set(node, 0, im.alias(node, v));
    return std::nullopt;
  }
  Result<Value> part = part_of(im, node, v, cut, begin[cut], out[cut], true);
  if (!part) return part.error();
  im.set(node, 0, std::move(*part));
  return std::nullopt;
}

std::optional<Error> gather(Importer& im, const Node& node) {
  Result<const Value*> data = im.input(node, 0), indices = im.input(node, 1);
  if (!data) return data.error();
  if (!indices) return indices.error();
  const Value& d = **data;
  const Value& idx = **indices;
  std::optional<int> axis = norm_axis(attr_int(node, "axis", 0), d.shape.size());
  if (!axis) return im.err(node, "axis is out of range for " + shape_str(d.shape));
  Shape out(d.shape.begin(), d.shape.begin() + *axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), d.shape.begin() + *axis + 1, d.shape.end());
  if (idx.is_activation()) {
    if (d.is_activation() || d.shape.size() != 2 || *axis != 0)
      return im.err(node,
                    "a Gather by computed indices is supported only as an embedding "
                    "lookup (a [vocab, dim] weight indexed by token ids)");
    LayerSpec l;
    l.op = "Embedding";
    l.inputs.push_back(Operand{idx.operand, {}});
    l.vocab = d.shape[0];
    l.dim = d.shape[1];
    im.use_weight(d);
    im.set(node, 0, im.add_layer(node, std::move(l), out));
    return std::nullopt;
  }
  if (!idx.has_values || idx.is_float())
    return im.err(node, "the indices must be constant integers");
  int64_t n = d.shape[*axis];
  std::vector<int64_t> picks;
  for (int64_t i : idx.ints) {
    if (i < -n || i >= n) return im.err(node, "index " + std::to_string(i) + " is out of range");
    picks.push_back(i < 0 ? i + n : i);
  }
  if (d.is_activation()) {
    if (auto a = im.activation(node, 0); !a) return a.error();
    if (picks.size() != 1)
      return im.err(node, "a Gather of an activation is supported for one index only");
    Result<Value> part = part_of(im, node, d, *axis, picks[0], 1, !idx.shape.empty());
    if (!part) return part.error();
    im.set(node, 0, std::move(*part));
    return std::nullopt;
  }
  std::vector<int64_t> index;
  if (d.has_values && elements(out) <= kMaxConstantElements) {
    int64_t outer = 1, inner = 1;
    for (int a = 0; a < *axis; ++a) outer *= d.shape[a];
    for (size_t a = *axis + 1; a < d.shape.size(); ++a) inner *= d.shape[a];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t p : picks)
        for (int64_t k = 0; k < inner; ++k) index.push_back((o * n + p) * inner + k);
  }
  im.set(node, 0, gather_values(d, out, index));
  return std::nullopt;
}

std::optional<Error> split(Importer& im, const Node& node) {
  Result<const Value*> x = im.activation(node, 0);
  if (!x) return x.error();
  const Shape& s = (*x)->shape;
  std::optional<int> axis = norm_axis(attr_int(node, "axis", 0), s.size());
  if (!axis) return im.err(node, "axis is out of range for " + shape_str(s));
  std::vector<int64_t> sizes;
  if (im.opset() >= 13 && im.has_input(node, 1)) {
    Result<std::vector<int64_t>> given = im.ints(node, 1);
    if (!given) return given.error();
    sizes = *given;
  } else if (auto a = attr_ints(node, "split")) {
    sizes = *a;
  }
  size_t parts = sizes.empty() ? node.outputs.size() : sizes.size();
  if (parts == 0) return im.err(node, "Split has no outputs");
  if (sizes.empty())
    sizes.assign(parts, (s[*axis] + static_cast<int64_t>(parts) - 1) / static_cast<int64_t>(parts));
  int64_t begin = 0;
  for (size_t k = 0; k < parts; ++k) {
    if (sizes[k] != sizes[0] || sizes[0] * static_cast<int64_t>(parts) != s[*axis])
      return im.err(node, "a Split into unequal parts " + shape_str(sizes) + " is not supported");
    Result<Value> part = part_of(im, node, **x, *axis, begin, sizes[k], true);
    if (!part) return part.error();
    im.set(node, k, std::move(*part));
    begin += sizes[k];
  }
  return std::nullopt;
}

}  // namespace

void add_part_handlers(Table& table) {
  table["Slice"] = slice;
  table["Gather"] = gather;
  table["Split"] = split;
}

}  // namespace pase::onnx
