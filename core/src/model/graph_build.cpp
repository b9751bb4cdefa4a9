// build_graph(): resolves layer inputs by name, checks the order is
// topological and names are unique, and hands each layer to its op's lowering
// (op_table.hpp, core/src/model/ops/); then publishes the outputs to later layers
// and collects the edges.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "model/cost_model.hpp"
#include "model/op_table.hpp"
#include "pase/graph.hpp"

namespace pase {

const char* dim_kind_name(DimKind kind) {
  switch (kind) {
    case DimKind::kBatch:
      return "batch";
    case DimKind::kSequence:
      return "sequence";
    case DimKind::kSpatial:
      return "spatial";
    case DimKind::kHeads:
      return "heads";
    case DimKind::kHidden:
      return "hidden";
    case DimKind::kReduction:
      return "reduction";
    case DimKind::kExperts:
      return "experts";
    case DimKind::kVocabulary:
      return "vocabulary";
    case DimKind::kLayers:
      return "layers";
    case DimKind::kOther:
      return "other";
  }
  return "other";  // not reached: every kind is listed above
}

namespace {

// A tensor visible to later layers: a graph input (vertex -1) or a layer output.
struct Tensor {
  int vertex = -1;
  int output = 0;
  Shape shape;
};

class GraphBuilder final : public Lowering {
 public:
  explicit GraphBuilder(const GraphSpec& spec) : spec_(spec) {}

  Result<Graph> run() {
    g_.name = spec_.name;
    g_.cutoff = spec_.cutoff;
    if (spec_.cutoff < 1) return Error{"must be a positive integer", "cutoff"};
    for (const auto& [name, shape] : spec_.inputs) {
      std::string where = "inputs." + name;
      if (name.empty()) return Error{"an input needs a non-empty name", "inputs"};
      if (name.find(':') != std::string::npos) return Error{"names may not contain ':'", where};
      if (tensors_.count(name)) return Error{"duplicate input name " + quoted(name), where};
      if (auto e = check_shape(shape, where)) return *e;
      tensors_[name] = Tensor{-1, 0, shape};
    }
    if (spec_.layers.empty()) return Error{"the graph has no layers", "layers"};
    if (spec_.layers.size() > static_cast<size_t>(kMaxLayers))
      return Error{"too many layers (" + std::to_string(spec_.layers.size()) + "; the limit is " +
                       std::to_string(kMaxLayers) + ")",
                   "layers"};
    for (const LayerSpec& l : spec_.layers) all_names_.insert(l.name);
    for (size_t i = 0; i < spec_.layers.size(); ++i) {
      where_ = "layers[" + std::to_string(i) + "]";
      index_ = static_cast<int>(i);
      if (auto e = add_layer(spec_.layers[i])) return *e;
    }
    for (const Vertex& v : g_.vertices)
      for (size_t s = 0; s < v.inputs.size(); ++s)
        if (v.inputs[s].producer >= 0)
          g_.edges.push_back(
              Edge{v.inputs[s].producer, v.inputs[s].output, v.id, static_cast<int>(s)});
    resolve_batch();
    mark_practice_roles();
    if (spec_.parameters < -1)
      return Error{"must be a non-negative integer (or -1: count the layers' weights)",
                   "parameters"};
    g_.parameters = spec_.parameters >= 0 ? spec_.parameters : weight_elements();
    // The spec is kept so that the graph can be lowered again at another
    // batch (a pipeline's micro-batch graph, core/docs/pipeline.md).
    model_.spec = std::make_shared<const GraphSpec>(spec_);
    g_.model = std::make_shared<const GraphModel>(std::move(model_));
    return std::move(g_);
  }

  // The practice model's roles (VertexModel::attention, first_input_readers):
  // a product of two layer outputs whose result outgrows both and whose
  // result a second such product reads first is attention's scores, that
  // reader its context.
  void mark_practice_roles() {
    const auto weightless_product = [&](int v) {
      const VertexModel& m = model_.vertices[v];
      const Vertex& x = g_.vertices[v];
      return m.cost == ops::gemm_cost && m.weight_elements == 0 && x.inputs.size() == 2 &&
             x.inputs[0].producer >= 0 && x.inputs[1].producer >= 0;
    };
    const auto elements = [](const Shape& shape) {
      double e = 1;
      for (int64_t d : shape) e *= static_cast<double>(d);
      return e;
    };
    std::vector<std::vector<int>> readers(g_.vertices.size());  // first-slot readers
    std::map<std::pair<int, int>, int> products_reading;        // (producer, output) -> count
    for (const Edge& e : g_.edges) {
      if (e.dst_slot == 0) readers[e.src].push_back(e.dst);
      if (model_.vertices[e.dst].cost == ops::gemm_cost) ++products_reading[{e.src, e.src_output}];
    }
    for (size_t i = 0; i + 1 < g_.vertices.size(); ++i) {
      const int block = ops::decoder_block(g_.vertices[i]);
      model_.vertices[i].block = block;
      model_.vertices[i].in_block_body =
          block >= 0 && ops::decoder_block(g_.vertices[i + 1]) == block;
    }
    if (!g_.vertices.empty()) model_.vertices.back().block = ops::decoder_block(g_.vertices.back());
    for (const Vertex& v : g_.vertices) {
      if (!v.inputs.empty() && v.inputs[0].producer >= 0) {
        auto it = products_reading.find({v.inputs[0].producer, v.inputs[0].output});
        if (it != products_reading.end() && model_.vertices[v.id].cost == ops::gemm_cost)
          model_.vertices[v.id].first_input_readers = it->second;
      }
      if (!weightless_product(v.id) || v.outputs.size() != 1) continue;
      const double out = elements(v.outputs[0].shape);
      if (!(out > elements(v.inputs[0].shape) && out > elements(v.inputs[1].shape))) continue;
      for (int r : readers[v.id]) {
        if (!weightless_product(r)) continue;
        model_.vertices[v.id].attention = VertexModel::Attention::kScores;
        model_.vertices[r].attention = VertexModel::Attention::kContext;
        break;
      }
    }
  }

  // ---- Lowering ----

  const LayerSpec& layer() const override { return *layer_; }
  const std::vector<Slot>& inputs() const override { return slots_; }

  int emit(VertexPlan p) override {
    Vertex v;
    v.id = static_cast<int>(g_.vertices.size());
    v.name = p.name.empty() ? layer_->name : std::move(p.name);
    v.op = std::move(p.op);
    v.layer = index_;
    v.dims = std::move(p.dims);
    v.kinds =
        p.kinds.empty() ? std::vector<DimKind>(p.dom.size(), DimKind::kOther) : std::move(p.kinds);
    v.dom = std::move(p.dom);
    VertexModel m = std::move(p.model);
    if (m.pinned.empty()) m.pinned.assign(v.dom.size(), false);
    // Not a silent default: an op whose lowering forgets its cost formula
    // fails every graph that uses it (and so its tests).
    if (m.cost == nullptr && !bug_)
      bug_ = err("internal error: op " + pase::quoted(layer_->op) + " made vertex " +
                 pase::quoted(v.name) + " without a cost formula");
    for (Port& port : p.inputs) {
      v.inputs.push_back(std::move(port.slot));
      m.in_maps.push_back(std::move(port.map));
    }
    for (OutPort& out : p.outputs) {
      v.outputs.push_back(Output{std::move(out.shape)});
      m.out_maps.push_back(std::move(out.map));
    }
    g_.vertices.push_back(std::move(v));
    model_.vertices.push_back(std::move(m));
    return g_.vertices.back().id;
  }

  void publish(int id, bool multi) override {
    const Vertex& v = g_.vertices[id];
    const std::string& name = layer_->name;
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

  std::string where(const std::string& field) const override {
    return field.empty() ? where_ : where_ + "." + field;
  }

 private:
  // The batch dimension of every vertex (compare.hpp, batch_dimensions): the
  // op's own, else followed from the first layer input, else the first.
  void resolve_batch() {
    std::vector<int> batch =
        follow_dimension(g_, model_, [this](int v) { return model_.vertices[v].batch_dim; });
    for (Vertex& v : g_.vertices) {
      const int b = batch[v.id] < 0 ? 0 : batch[v.id];
      model_.vertices[v.id].batch_dim = b;
      v.kinds[b] = DimKind::kBatch;
    }
  }

  // The weights' elements of every vertex (graph-format.md, "Parameters"),
  // saturating at the int64 limit rather than wrapping.
  int64_t weight_elements() const {
    int64_t sum = 0;
    for (const VertexModel& m : model_.vertices)
      if (__builtin_add_overflow(sum, m.weight_elements, &sum))
        return std::numeric_limits<int64_t>::max();
    return sum;
  }

  // Resolves the operands of a layer into slots.
  std::optional<Error> resolve(const LayerSpec& l) {
    slots_.clear();
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      const Operand& o = l.inputs[i];
      std::string field = "inputs[" + std::to_string(i) + "]";
      Slot s;
      if (o.is_weight()) {
        if (auto e = check_shape(o.weight_shape, where_ + "." + field)) return *e;
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
      slots_.push_back(std::move(s));
    }
    return std::nullopt;
  }

  std::optional<Error> add_layer(const LayerSpec& l) {
    layer_ = &l;
    if (l.name.empty()) return err("a layer needs a non-empty name", "name");
    if (l.name.find(':') != std::string::npos) return err("names may not contain ':'", "name");
    if (tensors_.count(l.name) || defined_.count(l.name))
      return err("duplicate name " + quoted(l.name), "name");
    const OpDef* def = op_table().find(l.op);
    if (def == nullptr)
      return err("unknown op " + quoted(l.op) + "; known: " + op_table().names(), "op");
    if (auto e = resolve(l)) return e;
    if (l.pw < 0) return err("must be a non-negative integer", "pw");
    const size_t first = g_.vertices.size();
    if (auto e = def->lower(*this)) return e;
    // The layer's weight operands ({"shape": [..]}, each below 2^62 by
    // check_shape) belong to its first vertex, whatever the op.
    if (first < g_.vertices.size())
      for (const Operand& o : l.inputs)
        if (o.is_weight()) {
          int64_t& w = model_.vertices[first].weight_elements;
          if (__builtin_add_overflow(w, *element_count(o.weight_shape), &w))
            w = std::numeric_limits<int64_t>::max();
        }
    return bug_;  // set when the lowering emitted a vertex without a cost formula
  }

  const GraphSpec& spec_;
  Graph g_;
  GraphModel model_;
  const LayerSpec* layer_ = nullptr;
  int index_ = 0;
  std::vector<Slot> slots_;
  std::string where_;
  std::optional<Error> bug_;
  std::unordered_map<std::string, Tensor> tensors_;
  std::set<std::string> all_names_, defined_, multi_;
};

}  // namespace

Result<Graph> build_graph(const GraphSpec& spec) { return GraphBuilder(spec).run(); }

}  // namespace pase
