// The DNN computation graph: the `pase-graph/1` document (GraphSpec) and the
// validated vertex graph (Graph) that the cost model and the search work on.
//
// USAGE
//   Result<Graph> g = load_graph(json_text);          // parse + validate
//   Result<Graph> g = build_graph(spec);              // validate a spec built in code
//   std::string text = write_graph(spec);             // back to pase-graph/1
//
// A GraphSpec mirrors the JSON document field for field (layers with op
// attributes, graph inputs, cutoff). build_graph() checks it and lowers it to
// vertices through the op table (core/docs/architecture.md): one vertex per
// layer, except Reshape which becomes the two vertices Ravel and Unravel.
// Vertex ids are creation order, starting at 0.
//
// ERRORS
//   Every problem is returned as Error{message, where} with `where` naming the
//   field: "layers[3].filter", "inputs.x", "cutoff". Nothing throws.
//   Limits: at most kMaxLayers layers, tensor element counts below 2^62, at
//   most 32 dimensions per tensor, at most 4096 outputs per Split or Unstack,
//   every size a positive integer.
//
// COMPLEXITY
//   Linear in the number of layers and their operands.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pase/result.hpp"

namespace pase {

using Shape = std::vector<int64_t>;

// One operand of a layer: a named tensor (a graph input, a layer output "fc1",
// or one output of a multi-output layer "split:1"), or a weight / constant
// given only by its shape (`{"shape": [..]}` in JSON; no edge).
struct Operand {
  std::string name;  // empty for a weight
  Shape weight_shape;
  bool is_weight() const { return name.empty(); }
};

// A layer as written in the document. Only the attributes of `op` are
// meaningful; the others keep their defaults and are not written back.
struct LayerSpec {
  std::string name;
  std::string op;  // the op's name in the format ("FC", "Conv", ...)
  std::vector<Operand> inputs;
  int64_t units = 0;                    // FC, LSTM
  int64_t pw = 0;                       // FC, Einsum, Conv, Elementwise, Activation: point-wise ops
  bool causal = false;                  // Einsum: attention scores under a causal mask
  std::string equation;                 // Einsum, "in1,in2->out"
  int64_t vocab = 0, dim = 0;           // Embedding
  Shape filter;                         // Conv: [n, c, r, s]
  Shape window;                         // Pool: [r, s]
  std::array<int64_t, 2> stride{1, 1};  // Conv, Pool: [h, w]
  std::array<int64_t, 2> pad{0, 0};     // Conv, Pool: [h, w]
  int64_t group = 1;                    // Conv: channel groups (filter is [n, c / group, r, s])
  int64_t axis = 0;                     // Norm, Softmax (-1), Concat, Split, Stack, Unstack (0)
  std::vector<int64_t> axes;            // ReduceMean; empty with has_axes=false means all
  bool has_axes = false;
  bool keepdims = false;      // ReduceMean
  Shape shape;                // Reshape target
  std::vector<int64_t> perm;  // Transpose
  int64_t num = 0;            // Split
  int64_t layers = 0;         // LSTM
};

// The pase-graph/1 document.
struct GraphSpec {
  std::string name;
  int64_t cutoff = 4;
  std::vector<std::pair<std::string, Shape>> inputs;  // in document order
  std::vector<LayerSpec> layers;                      // topological order
  std::string meta_json = "{}";                       // free-form, kept verbatim
  // The model's parameter count as its source reports it (an imported model:
  // its weights' elements, core/docs/import.md); -1 when the document has
  // none, and then build_graph() counts the layers' weights.
  int64_t parameters = -1;
};

// What a dimension of a vertex means to a practitioner, set by its op
// (core/docs/graph-format.md, "Dimension kinds"). The batch dimension of a
// vertex is the one the data-parallel baseline splits (compare.hpp,
// batch_dimensions), also where its op cannot tell by itself.
enum class DimKind : uint8_t {
  kBatch,
  kSequence,
  kSpatial,
  kHeads,
  kHidden,     // output features, channels, units
  kReduction,  // input features, reduced over
  kExperts,
  kVocabulary,
  kLayers,  // stacked layers (LSTM)
  kOther,
};

// "batch", "sequence", "spatial", "heads", "hidden", "reduction", "experts",
// "vocabulary", "layers", "other".
const char* dim_kind_name(DimKind kind);

// An input slot of a vertex. `producer` is the vertex whose output `output`
// feeds it, or -1 for a graph input or weight (no edge).
struct Slot {
  int producer = -1;
  int output = 0;
  Shape shape;
};

struct Output {
  Shape shape;
};

struct Vertex {
  int id = 0;
  std::string name;  // the layer name; a Reshape's vertices are "name/ravel" and "name"
  std::string op;    // the layer's op, or "Ravel" / "Unravel" for a Reshape's vertices
  int layer = 0;     // index into GraphSpec::layers
  std::vector<std::string> dims;  // dimension names, in configuration order
  std::vector<DimKind> kinds;     // what each dimension is
  Shape dom;                      // iteration space
  std::vector<Slot> inputs;
  std::vector<Output> outputs;
};

// The cost model's private view of every vertex (tensor maps, pinned
// dimensions, cost parameters), set by the ops' lowerings.
struct GraphModel;

// A tensor edge: output `src_output` of vertex `src` feeds input slot
// `dst_slot` of vertex `dst`. Two slots fed by the same producer are two edges.
struct Edge {
  int src = 0, src_output = 0, dst = 0, dst_slot = 0;
};

struct Graph {
  std::string name;
  int64_t cutoff = 4;
  std::vector<Vertex> vertices;
  std::vector<Edge> edges;  // ordered by (dst, dst_slot)
  // GraphSpec::parameters when the document has it, else the elements of
  // the layers' weights (core/docs/graph-format.md, "Parameters").
  int64_t parameters = 0;
  // Set by build_graph(), immutable and shared by copies. A Graph put together
  // by hand has none, and plan(), evaluate() and the baselines refuse it.
  std::shared_ptr<const GraphModel> model;
};

inline constexpr int kMaxLayers = 100000;

// Validates `spec` (names, shapes, attributes) and lowers it to vertices.
Result<Graph> build_graph(const GraphSpec& spec);

// Parses a pase-graph/1 document: JSON syntax, field names and types. Limits:
// kMaxDocumentBytes of text, nesting depth kMaxJsonDepth.
Result<GraphSpec> parse_graph_spec(std::string_view json_text);

// parse_graph_spec() followed by build_graph(). A document without a "name"
// gets `default_name` (e.g. the file name).
Result<Graph> load_graph(std::string_view json_text, std::string_view default_name = {});

// Writes `spec` as a pase-graph/1 document (2-space indented JSON). Loading the
// text again gives an equal GraphSpec.
std::string write_graph(const GraphSpec& spec);

inline constexpr size_t kMaxDocumentBytes = 64u << 20;  // 64 MiB
inline constexpr int kMaxJsonDepth = 64;

}  // namespace pase
