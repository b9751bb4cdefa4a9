// What an imported model's layers run as ONNX defines them: the graph's
// meta.onnx_layers (core/docs/import.md, "What the layers run"), checked
// against the layers it names before a JAX program runs it
// (core/docs/export.md, "The graph"). A malformed entry is an error that
// names it, never a layer run otherwise than it says.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "export/jax_program.hpp"
#include "model/op_table.hpp"
#include "util/json_util.hpp"
#include "util/text.hpp"

namespace pase {
namespace {

using json_detail::Json;

// The point-wise ops of one input, and their attributes beside "op".
const std::map<std::string, std::set<std::string>, std::less<>>& unary_ops() {
  static const auto* ops = new std::map<std::string, std::set<std::string>, std::less<>>{
      {"Relu", {}},        {"LeakyRelu", {"alpha"}},
      {"Elu", {"alpha"}},  {"Selu", {"alpha", "gamma"}},
      {"Celu", {"alpha"}}, {"Gelu", {"approximate"}},
      {"Sigmoid", {}},     {"HardSigmoid", {"alpha", "beta"}},
      {"HardSwish", {}},   {"Softplus", {}},
      {"Softsign", {}},    {"Tanh", {}},
      {"Erf", {}},         {"Clip", {"min", "max"}},
      {"Sqrt", {}},        {"Neg", {}},
      {"Exp", {}},         {"Log", {}},
      {"Abs", {}},         {"Reciprocal", {}},
      {"Floor", {}},       {"Ceil", {}},
      {"Sin", {}},         {"Cos", {}},
      {"Mish", {}}};
  return *ops;
}

const std::set<std::string, std::less<>> kBinary = {"Add", "Sub", "Mul", "Div", "Pow"};

// The checks of one layer's entry; `where` is its path in the document.
class EntryCheck {
 public:
  EntryCheck(const LayerSpec& l, const Vertex& first, const Vertex& last, std::string where)
      : l_(l),
        in_(first.inputs.empty() ? Shape{} : first.inputs[0].shape),
        out_(last.outputs.empty() ? Shape{} : last.outputs[0].shape),
        where_(std::move(where)) {}

  std::optional<Error> run(const Json& e) {
    if (!e.is_object()) return fail(where_, "must be an object, got " + json_detail::describe(e));
    static const std::map<std::string, std::set<std::string>, std::less<>> kKeys = {
        {"Norm", {"norm", "epsilon", "axis", "scale", "bias"}},
        {"Pool", {"pool", "global", "count_include_pad", "pads", "zero_pads"}},
        {"Conv", {"pads", "pointwise"}},
        {"FC", {"alpha", "beta", "pointwise"}},
        {"Einsum", {"alpha", "beta", "pointwise"}},
        {"Activation", {"pointwise"}},
        {"Elementwise", {"elementwise", "pointwise"}},
        {"Softmax", {"softmax"}}};
    const auto keys = kKeys.find(l_.op);
    if (keys == kKeys.end())
      return fail(where_, "layer " + quoted_text(l_.name) + " is a " + l_.op +
                              ", which runs as it is: the entry has nothing to say of it");
    if (auto bad = only(e, where_, keys->second)) return bad;
    if (l_.op == "Norm") return norm(e);
    if (l_.op == "Pool") return pool(e);
    if (l_.op == "Softmax")
      return one_of(e, "softmax", std::set<std::string>{"softmax", "log"}, true);
    if (l_.op == "Elementwise") {  // absent: Add
      if (auto bad = one_of(e, "elementwise", kBinary, true)) return bad;
    }
    if (l_.op == "Conv" && e.contains("pads")) {
      if (auto bad = pads(e, "pads")) return bad;
      if (auto bad = window_fits(e["pads"], Json(), {l_.filter[2], l_.filter[3]})) return bad;
    }
    for (const char* k : {"alpha", "beta"})
      if (e.contains(k) && !e[k].is_number())
        return fail(json_detail::field_path(where_, k),
                    "must be a number, got " + json_detail::describe(e[k]));
    if (e.contains("beta") && !(e.contains("pointwise") && e["pointwise"].size() > 0 &&
                                e["pointwise"][0].value("op", "") == "Add"))
      return fail(json_detail::field_path(where_, "beta"),
                  "scales a Gemm's C: the first point-wise op must be its Add");
    if (e.contains("pointwise")) return pointwise(e["pointwise"]);
    return std::nullopt;
  }

 private:
  static std::optional<Error> fail(const std::string& where, const std::string& what) {
    return Error{what, where};
  }

  static std::optional<Error> only(const Json& e, const std::string& where,
                                   const std::set<std::string>& allowed) {
    for (const auto& [key, value] : e.items())
      if (!allowed.count(key)) {
        std::string list;
        for (const std::string& k : allowed) list += (list.empty() ? "" : ", ") + k;
        return fail(json_detail::field_path(where, key),
                    "is not a field of this entry (" + list + ")");
      }
    return std::nullopt;
  }

  template <class Set>
  std::optional<Error> one_of(const Json& e, const char* key, const Set& values, bool optional) {
    const std::string at = json_detail::field_path(where_, key);
    if (!e.contains(key)) return optional ? std::nullopt : fail(at, "is required");
    const Json& v = e[key];
    if (!v.is_string() || !values.count(v.get<std::string>())) {
      std::string list;
      for (const auto& k : values) list += (list.empty() ? "" : ", ") + std::string(k);
      return fail(at, "must be one of " + list + ", got " + json_detail::describe(v));
    }
    return std::nullopt;
  }

  std::optional<Error> flags(const Json& e, std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (e.contains(k) && !e[k].is_boolean())
        return fail(json_detail::field_path(where_, k),
                    "must be true or false, got " + json_detail::describe(e[k]));
    return std::nullopt;
  }

  std::optional<Error> norm(const Json& e) {
    if (auto bad = one_of(e, "norm", std::set<std::string>{"batch", "layer"}, false)) return bad;
    const Json eps = e.value("epsilon", Json(1e-5));
    if (!eps.is_number() || !(eps.get<double>() >= 0))
      return fail(json_detail::field_path(where_, "epsilon"),
                  "must be a number of at least 0, got " + json_detail::describe(eps));
    const Json axis = e.value("axis", Json());
    if (!axis.is_number_integer() || axis.get<int64_t>() < 0 ||
        axis.get<int64_t>() >= static_cast<int64_t>(out_.size()))
      return fail(json_detail::field_path(where_, "axis"), "must be an axis of the layer's " +
                                                               shape_str(out_) + " output, got " +
                                                               json_detail::describe(axis));
    return flags(e, {"scale", "bias"});
  }

  std::optional<Error> pads(const Json& e, const char* key) {
    const Json& p = e[key];
    bool ok = p.is_array() && p.size() == 4;
    for (size_t i = 0; ok && i < 4; ++i) ok = p[i].is_number_integer() && p[i].get<int64_t>() >= 0;
    if (!ok)
      return fail(json_detail::field_path(where_, key),
                  "must be 4 sizes of at least 0 ([h begin, w begin, h end, w end]), got " +
                      json_detail::describe(p));
    return std::nullopt;
  }

  // The window over the input padded by `own` and `zeros` (ONNX's order;
  // null: the layer's symmetric pad, or none) gives the layer's output.
  std::optional<Error> window_fits(const Json& own, const Json& zeros,
                                   const std::array<int64_t, 2>& window) {
    if (in_.size() != 4 || out_.size() != 4) return std::nullopt;
    for (int d = 0; d < 2; ++d) {
      int64_t total =
          own.is_null() ? 2 * l_.pad[d] : own[d].get<int64_t>() + own[2 + d].get<int64_t>();
      if (!zeros.is_null()) total += zeros[d].get<int64_t>() + zeros[2 + d].get<int64_t>();
      const int64_t span = in_[2 + d] + total - window[d];
      if (span < 0 || span / l_.stride[d] + 1 != out_[2 + d])
        return fail(json_detail::field_path(where_, own.is_null() ? "zero_pads" : "pads"),
                    "with it the window gives another output than the layer's " + shape_str(out_));
    }
    return std::nullopt;
  }

  std::optional<Error> pool(const Json& e) {
    if (auto bad = one_of(e, "pool", std::set<std::string>{"max", "average"}, false)) return bad;
    if (auto bad = flags(e, {"global", "count_include_pad"})) return bad;
    for (const char* k : {"pads", "zero_pads"})
      if (e.contains(k))
        if (auto bad = pads(e, k)) return bad;
    return window_fits(e.value("pads", Json()), e.value("zero_pads", Json()),
                       {l_.window[0], l_.window[1]});
  }

  // A learned or constant operand of shape `s`, broadcast against the
  // layer's output from the right.
  std::optional<Error> broadcasts(const Json& s, const std::string& at) {
    bool ok = s.is_array() && s.size() <= out_.size();
    for (size_t i = 0; ok && i < s.size(); ++i) {
      const int64_t want = out_[out_.size() - s.size() + i];
      ok = s[i].is_number_integer() && (s[i].get<int64_t>() == 1 || s[i].get<int64_t>() == want);
    }
    if (!ok)
      return fail(at, "must be a shape that broadcasts to the layer's output " + shape_str(out_) +
                          " from the right, got " + json_detail::dump_compact(s));
    return std::nullopt;
  }

  std::optional<Error> operand(const Json& p, const std::string& at, bool binary) {
    if (p.contains("weight") == p.contains("constant"))
      return fail(at, "needs its operand: one of weight (a shape) and constant");
    if (p.contains("weight")) {
      if (p.contains("shape")) return fail(json_detail::field_path(at, "shape"), "is a constant's");
      return broadcasts(p["weight"], json_detail::field_path(at, "weight"));
    }
    if (binary && p.contains("swapped") && !p["swapped"].is_boolean())
      return fail(json_detail::field_path(at, "swapped"), "must be true or false");
    const Json& c = p["constant"];
    if (c.is_number()) return std::nullopt;
    int64_t n = 1;
    const Json shape = p.value("shape", Json());
    if (auto bad = broadcasts(shape, json_detail::field_path(at, "shape"))) return bad;
    for (const Json& d : shape) n *= d.get<int64_t>();
    bool ok = c.is_array() && static_cast<int64_t>(c.size()) == n;
    for (size_t i = 0; ok && i < c.size(); ++i) ok = c[i].is_number();
    if (!ok)
      return fail(json_detail::field_path(at, "constant"),
                  "must be a number, or the " + std::to_string(n) + " numbers of its shape");
    return std::nullopt;
  }

  std::optional<Error> pointwise(const Json& list) {
    const std::string at = json_detail::field_path(where_, "pointwise");
    const int64_t want = l_.op == "Activation" ? l_.pw + 1 : l_.pw;
    if (!list.is_array() || static_cast<int64_t>(list.size()) != want)
      return fail(at, "must list the layer's " + std::to_string(want) +
                          " point-wise operation(s) (its pw " + std::to_string(l_.pw) +
                          (l_.op == "Activation" ? ", and the Activation's own" : "") + ")");
    for (size_t i = 0; i < list.size(); ++i) {
      const Json& p = list[i];
      const std::string here = json_detail::index_path(at, i);
      if (!p.is_object() || !p.contains("op") || !p["op"].is_string())
        return fail(here, "must be an object with its ONNX op (\"op\": \"Relu\")");
      const std::string op = p["op"];
      const auto unary = unary_ops().find(op);
      const bool binary = kBinary.count(op) > 0;
      if (unary == unary_ops().end() && !binary && op != "PRelu") {
        std::string list_of = "PRelu";
        for (const auto& [name, attrs] : unary_ops()) list_of += ", " + name;
        for (const std::string& name : kBinary) list_of += ", " + name;
        return fail(json_detail::field_path(here, "op"), quoted_text(op) +
                                                             " is not a point-wise op the program "
                                                             "runs (" +
                                                             list_of + ")");
      }
      std::set<std::string> allowed{"op"};
      if (binary || op == "PRelu") {
        allowed.insert({"weight", "constant", "shape"});
        if (binary) allowed.insert("swapped");
      } else {
        allowed.insert(unary->second.begin(), unary->second.end());
      }
      if (auto bad = only(p, here, allowed)) return bad;
      if (binary || op == "PRelu") {
        if (auto bad = operand(p, here, binary)) return bad;
        continue;
      }
      for (const std::string& a : unary->second) {
        if (!p.contains(a)) continue;
        const bool ok = a == "approximate" ? p[a] == "none" || p[a] == "tanh" : p[a].is_number();
        if (!ok)
          return fail(json_detail::field_path(here, a),
                      std::string(a == "approximate" ? "must be \"none\" or \"tanh\""
                                                     : "must be a number") +
                          ", got " + json_detail::describe(p[a]));
      }
    }
    return std::nullopt;
  }

  const LayerSpec& l_;
  Shape in_, out_;
  std::string where_;
};

}  // namespace

Result<std::map<std::string, Json>> jax_onnx_layers(const GraphSpec& spec, const Graph& g) {
  std::map<std::string, Json> out;
  Result<Json> meta = json_detail::parse_document(spec.meta_json);
  if (!meta || !meta->is_object() || !meta->contains("onnx_layers")) return out;
  const Json& entries = (*meta)["onnx_layers"];
  if (!entries.is_object())
    return Error{
        "must be an object of entries by layer name, got " + json_detail::describe(entries),
        "meta.onnx_layers"};
  std::map<std::string, size_t> of_name;
  for (size_t li = 0; li < spec.layers.size(); ++li) of_name[spec.layers[li].name] = li;
  std::vector<std::vector<int>> of_layer(spec.layers.size());
  for (const Vertex& v : g.vertices) of_layer[v.layer].push_back(v.id);
  for (const auto& [name, entry] : entries.items()) {
    const std::string where = json_detail::field_path("meta.onnx_layers", name);
    const auto found = of_name.find(name);
    if (found == of_name.end() || of_layer[found->second].empty())
      return Error{"names no layer of the graph", where};
    const std::vector<int>& ids = of_layer[found->second];
    EntryCheck check(spec.layers[found->second], g.vertices[ids.front()], g.vertices[ids.back()],
                     where);
    if (auto bad = check.run(entry)) return *bad;
    out[name] = entry;
  }
  return out;
}

}  // namespace pase
