// The op table: every op of the graph format is one OpDef, registered by its
// own file in core/src/model/ops/. An OpDef holds all there is to know about an op:
// its name, its attributes and their JSON reading and writing, its shape
// checks and lowering to vertices (iteration space, tensor maps, pinned
// dimensions, the kind of each dimension, the batch dimension for the
// baselines) and, through the vertices it makes, its cost formula.
//
// Adding an op: core/docs/architecture.md, "Adding an op".
//
// Registration: CMake lists core/src/model/ops/*.cpp and generates a call of
// `register_<file stem>(OpTable&)` for each file (op_table.cpp), so a new
// family file is found without editing any other file, and a file that
// forgets its register function fails to link. OpTable::add() checks that
// every entry is complete (ops_test.cpp checks every registered op).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/cost_model.hpp"
#include "pase/graph.hpp"
#include "util/json_util.hpp"

namespace pase {

class Lowering;

// How an op lowers a checked layer to vertices: nothing, or the first problem.
using Lower = std::optional<Error> (*)(Lowering& lowering);

// An attribute of a layer as the document writes it, bound to its LayerSpec
// member. Reading and writing are generic (op_table.cpp): the attribute list
// of an op is all there is to its JSON.
struct Attr {
  enum class Type : uint8_t {
    kPositiveInt,     // int64_t member
    kNonNegativeInt,  // int64_t member
    kInt,             // int64_t member
    kString,          // std::string member, non-empty
    kShape,           // Shape member: positive integers; `rank` of them unless 0
    kIntList,         // std::vector<int64_t> member
    kBool,            // bool member
    kStride,          // std::array<int64_t, 2> member: a positive integer or [h, w]
    kPad,             // std::array<int64_t, 2> member: a non-negative integer or [h, w]
  };
  using Member = std::variant<int64_t LayerSpec::*, std::string LayerSpec::*,
                              std::vector<int64_t> LayerSpec::*, bool LayerSpec::*,
                              std::array<int64_t, 2> LayerSpec::*>;

  std::string_view name;
  Type type = Type::kInt;
  Member member;
  bool required = false;
  // Optional numbers: the format's default (both entries of a stride or pad),
  // set before reading and left out when writing.
  int64_t default_value = 0;
  // kShape: the rank it must have (0: any) and its layout ("[n, c, r, s]").
  size_t rank = 0;
  std::string_view layout;
  // Optional lists: set when the attribute is present; written only then.
  bool LayerSpec::*present = nullptr;
};

// A required attribute, and an optional one with the format's default.
inline Attr required(std::string_view name, Attr::Type type, Attr::Member member) {
  Attr a;
  a.name = name;
  a.type = type;
  a.member = member;
  a.required = true;
  return a;
}
inline Attr optional(std::string_view name, Attr::Type type, Attr::Member member,
                     int64_t default_value = 0) {
  Attr a = required(name, type, member);
  a.required = false;
  a.default_value = default_value;
  return a;
}

struct OpDef {
  std::string_view name;  // as written in documents ("FC")
  // Position in the format's op list (core/docs/graph-format.md) and in the
  // "known: ..." list of an unknown-op error; new ops take the next number.
  int listing = 0;
  // The attributes a layer of this op may carry besides name, op and inputs,
  // in the order they are read (the first error found is reported).
  std::vector<Attr> attributes;
  Lower lower = nullptr;
};

// Reads the attributes of `op` from the layer object `reader` reads into
// `layer`; the first error stays in the reader.
void read_attributes(const OpDef& op, json_detail::ObjectReader& reader, LayerSpec& layer);
// Writes the attributes of `op`: required ones always, optional ones when
// they differ from their default.
void write_attributes(const OpDef& op, const LayerSpec& layer, json_detail::Json& out);

class OpTable {
 public:
  // Adds `def`; asserts that it has a name and a lowering, and that the name is new.
  void add(OpDef def);
  // The op named `name`, or nullptr.
  const OpDef* find(std::string_view name) const;
  // Every op, in listing order.
  const std::vector<OpDef>& ops() const { return ops_; }
  // "FC, Einsum, ..." in listing order.
  std::string names() const;
  // Whether any op has the attribute `key`.
  bool is_attribute(std::string_view key) const;

 private:
  std::vector<OpDef> ops_;
};

// The table of every registered op (built once, on first use; thread-safe).
const OpTable& op_table();

// ---- Lowering ---------------------------------------------------------------------

// One input of a new vertex: the tensor that feeds it and, for each of its
// dimensions, the configuration positions whose splits multiply to that
// dimension's split.
struct Port {
  Slot slot;
  TensorMap map;
};

struct OutPort {
  Shape shape;
  TensorMap map;
};

// What an op's lower() makes of a layer: one vertex (two for Reshape).
struct VertexPlan {
  std::string op;    // report name ("FC", "Ravel")
  std::string name;  // empty: the layer's name
  std::vector<std::string> dims;
  std::vector<DimKind> kinds;  // empty: kOther for every dimension
  Shape dom;
  std::vector<Port> inputs;
  std::vector<OutPort> outputs;
  VertexModel model;  // cost formula (required) and parameters; pinned empty: none pinned
};

// The context of one layer's lowering, handed to OpDef::lower by the graph
// builder (graph_build.cpp). Errors name the layer's fields
// ("layers[3].filter").
class Lowering {
 public:
  virtual ~Lowering() = default;

  virtual const LayerSpec& layer() const = 0;
  // The resolved operands of the layer, in order (shape; producer -1 for a
  // graph input or weight).
  virtual const std::vector<Slot>& inputs() const = 0;
  // Adds a vertex; returns its id.
  virtual int emit(VertexPlan plan) = 0;
  // Makes the outputs of vertex `id` visible to later layers under the layer's
  // name ("name", or "name:0", "name:1", ... when `multi`).
  virtual void publish(int id, bool multi) = 0;

  // The path of the layer ("layers[3]") or of one of its fields ("layers[3].axis").
  virtual std::string where(const std::string& field = "") const = 0;

  // An error at where(field).
  Error err(std::string message, const std::string& field = "") const {
    return Error{std::move(message), where(field)};
  }

  // Fails unless the layer has from `lo` to `hi` inputs (SIZE_MAX: no limit).
  std::optional<Error> want_inputs(size_t lo, size_t hi) const;
  // Input `k` as a port with map `map`.
  Port port(size_t k, TensorMap map) const { return Port{inputs()[k], std::move(map)}; }
  // Fails when `dom` has 2^62 points or more.
  std::optional<Error> check_dom(const Shape& dom) const;
};

// ---- Helpers shared by the op files --------------------------------------------------

inline constexpr size_t kMaxRank = 32;        // dimensions of a tensor
inline constexpr int64_t kMaxOutputs = 4096;  // outputs of Split / Unstack
// An iteration space or a tensor has fewer points than this (element_count()).
inline constexpr int64_t kMaxElements = int64_t{1} << 62;

// A name or equation quoted for a message, shortened past 64 characters,
// control characters escaped (quoted_text() of util/text.hpp).
std::string quoted(const std::string& text);
// "[2, 3]".
std::string shape_str(const Shape& s);
// Element count, or nullopt when a size is not positive or the product
// reaches 2^62 (so every later product of splits and sizes fits).
std::optional<int64_t> element_count(const Shape& s);
// Checks a shape given in the document: rank 1..kMaxRank, positive sizes,
// fewer than 2^62 elements.
std::optional<Error> check_shape(const Shape& s, const std::string& where);
// Dimension i maps to configuration position i.
TensorMap identity_map(size_t rank);
// A possibly negative axis normalized into [0, rank), or nullopt.
std::optional<int> norm_axis(int64_t axis, size_t rank);
// Dimension names of shape-generic ops: "b", "d1", "d2", ...; a stacking
// axis (Stack, Unstack) is "n" and the others keep their names as if it were
// absent.
std::vector<std::string> generic_dims(size_t rank, int stack_axis = -1);

// `axis` normalized into [0, rank of s), or the error "axis 3 is out of range
// for shape [4, 6, 8]" at `field`.
Result<int> checked_axis(const Lowering& lowering, int64_t axis, const Shape& s,
                         const std::string& field = "axis");

// The whole lowering of a one-input op applied along the layer's `axis`,
// whose iteration space and output are its input's shape (Norm, Softmax).
std::optional<Error> lower_along_axis(Lowering& lowering, std::string_view op, CostFn cost);

// The lowering of a one-input op whose iteration space is its input's shape
// and whose output has that shape too (Norm, Softmax, Activation, ...).
// Returns the plan with dims, dom, input and output set.
VertexPlan same_shape_plan(const Lowering& lowering, std::string_view op);

}  // namespace pase
