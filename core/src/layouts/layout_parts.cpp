// The two-block model of a layout at a micro-batch (layout_parts.hpp): its
// graph, the configurations layout_strategy() gives it, its parts and their
// compute.
#include "layouts/layout_parts.hpp"

#include <algorithm>
#include <string>

#include "pase/models.hpp"

namespace pase::layout_detail {

ops::Machine stage_machine(const Cluster& cluster, int64_t q, int64_t first_device, int64_t zero,
                           int64_t replicas, Recompute mode) {
  Cluster cs = cluster;
  cs.devices = q;
  cs.first_device = first_device;
  cs.memory_gib = 0;
  cs.training.zero = zero;
  cs.training.zero_replicas = replicas;
  cs.training.recompute = mode;
  cs.training.recompute_blocks = -1;
  cs.training.recompute_rest = Recompute::kNone;
  cs.training.recompute_of_block.clear();
  return ops::make_machine(cs);
}

Result<const LayoutPricer::Reduced*> LayoutPricer::reduced(const Layout& l, int64_t micro_batch) {
  const std::vector<int64_t> key = {l.tp, l.cp, l.dp, l.ep, l.etp, l.sp ? 1 : 0, micro_batch};
  if (auto it = reduced_.find(key); it != reduced_.end()) return it->second.get();
  if (auto it = refused_.find(key); it != refused_.end()) return it->second;
  Result<const Reduced*> made = make_reduced(l, micro_batch);
  if (!made) {
    refused_.emplace(key, made.error());
    return made.error();
  }
  return made;
}

// layout_strategy() reads a graph's sizes in three places only: a key-value
// head dimension h (the share of tp it takes), the sequence dimension (a
// dimension of the sequence's length), and whether each split divides its
// dimension; the rest it reads from the vertices' names, ops, dimensions,
// kinds, inputs and tensor maps. Two graphs alike in those, whose sizes
// differ only elsewhere than in h and never at the sequence's length, get
// the same configurations from it wherever the splits divide the sizes.
const LayoutPricer::Twins& LayoutPricer::twins(const Graph& a, const Graph& b) {
  const auto key = std::make_pair(&a, &b);
  if (auto it = twins_.find(key); it != twins_.end()) return *it->second;
  const auto seq_of = [](const Graph& g) -> int64_t {
    const auto& inputs = g.model->spec->inputs;
    return inputs.empty() || inputs[0].second.size() < 2 ? -1 : inputs[0].second[1];
  };
  auto t = std::make_unique<Twins>();
  const int64_t seq = seq_of(a);
  bool alike = a.name == b.name && a.vertices.size() == b.vertices.size() &&
               a.edges.size() == b.edges.size() && seq == seq_of(b);
  for (size_t v = 0; v < a.vertices.size() && alike; ++v) {
    const Vertex &x = a.vertices[v], &y = b.vertices[v];
    const VertexModel &mx = model_of(a, static_cast<int>(v)),
                      &my = model_of(b, static_cast<int>(v));
    alike = x.name == y.name && x.op == y.op && x.dims == y.dims && x.kinds == y.kinds &&
            x.dom.size() == y.dom.size() && x.inputs.size() == y.inputs.size() &&
            mx.in_maps == my.in_maps && mx.out_maps == my.out_maps && mx.block == my.block;
    for (size_t i = 0; i < x.inputs.size() && alike; ++i)
      alike =
          x.inputs[i].producer == y.inputs[i].producer && x.inputs[i].output == y.inputs[i].output;
    for (size_t i = 0; i < x.dom.size() && alike; ++i) {
      if (x.dom[i] == y.dom[i]) continue;
      alike = x.dims[i] != "h" && x.dom[i] != seq && y.dom[i] != seq;
      t->differ.emplace_back(v, i);
    }
  }
  for (size_t i = 0; i < a.edges.size() && alike; ++i) {
    const Edge &e = a.edges[i], &f = b.edges[i];
    alike = e.src == f.src && e.src_output == f.src_output && e.dst == f.dst &&
            e.dst_slot == f.dst_slot;
  }
  t->alike = alike;
  const Twins& out = *t;
  twins_.emplace(key, std::move(t));
  return out;
}

const LayoutPricer::Reduced* LayoutPricer::same_configs(const Layout& l, int64_t micro_batch,
                                                        const Graph& graph) {
  if (!share_configs_ || micro_batch == l.dp) return nullptr;
  Layout first = l;
  first.mbs = 1;
  Result<const Reduced*> base = reduced(first, l.dp);
  if (!base) return nullptr;
  const Twins& t = twins(*(*base)->graph, graph);
  if (!t.alike) return nullptr;
  for (const auto& [v, i] : t.differ)
    if (graph.vertices[v].dom[i] % (*base)->configs[v][i] != 0) return nullptr;
  return *base;
}

Result<const LayoutPricer::Reduced*> LayoutPricer::make_reduced(const Layout& l,
                                                                int64_t micro_batch) {
  const std::vector<int64_t> key = {l.tp, l.cp, l.dp, l.ep, l.etp, l.sp ? 1 : 0, micro_batch};
  // The graph at this micro-batch and vocabulary padding, shared by the
  // layouts of every other degree.
  const int64_t multiple = model_.vocab_multiple == 1 ? 1 : model_.vocab_multiple * l.tp;
  const std::pair<int64_t, int64_t> graph_key{micro_batch, multiple};
  auto known = graphs_.find(graph_key);
  if (known == graphs_.end()) {
    LlmConfig two = model_.config;
    two.num_layers = std::min<int64_t>(2, model_.config.num_layers);
    Result<GraphSpec> spec = llm_spec(two, model_.name, micro_batch, model_.seq, multiple);
    if (!spec) {
      Error e = spec.error();
      if (e.where == "vocab_padding")
        e = pricer_error(
            "the vocabulary padding of 128 x tp is above the largest allowed: " + e.message, "tp");
      return e;
    }
    Result<Graph> g = build_graph(*spec);
    if (!g) return g.error();
    known = graphs_.emplace(graph_key, std::make_shared<const Graph>(std::move(*g))).first;
  }
  auto r = std::make_unique<Reduced>();
  r->graph = known->second;
  const Graph& graph = *r->graph;
  const int64_t q = l.tp * l.dp * l.cp;
  const size_t n = graph.vertices.size();
  if (const Reduced* base = same_configs(l, micro_batch, graph)) {
    // The configurations (and so the parts) of the layout at one sequence
    // per data-parallel rank (twins() says why they are this one's).
    r->configs = base->configs;
    r->part_of = base->part_of;
    for (int part = 0; part < 4; ++part) r->inside[part] = base->inside[part];
    r->embed_link = base->embed_link;
    r->link = base->link;
    r->head_link = base->head_link;
    r->block_part = base->block_part;
  } else {
    // The configurations layout_strategy() gives on one stage of q devices.
    Layout one = l;
    one.pp = 1;
    one.vpp = 1;
    one.pp_first = one.pp_last = 0;
    one.recompute = Recompute::kNone;
    one.recompute_blocks = 0;
    one.dp_shard = 0;
    one.gbs = micro_batch;
    Cluster stage = cluster_;
    stage.devices = q;
    stage.memory_gib = 0;
    Result<LayoutStrategy> s = layout_strategy(graph, stage, one);
    if (!s) return s.error();
    r->configs = std::move(s->strategy.configs);
    r->part_of.resize(n);
    bool seen_block = false;
    for (size_t v = 0; v < n; ++v) {
      const int b = model_of(graph, static_cast<int>(v)).block;
      seen_block = seen_block || b >= 0;
      r->part_of[v] = b == 0 ? kBlock0 : b == 1 ? kBlock1 : seen_block ? kHead : kEmbed;
    }
    const bool one_block = model_.config.num_layers == 1;
    for (size_t i = 0; i < graph.edges.size(); ++i) {
      const Edge& e = graph.edges[i];
      const int a = r->part_of[static_cast<size_t>(e.src)],
                b = r->part_of[static_cast<size_t>(e.dst)];
      if (a == b) {
        r->inside[a].push_back(i);
      } else if (a == kEmbed && b == kBlock0) {
        r->embed_link.push_back(i);
      } else if (a == kBlock0 && b == kBlock1) {
        r->link.push_back(i);
      } else if (b == kHead && (a == kBlock1 || (one_block && a == kBlock0))) {
        r->head_link.push_back(i);
      } else {
        return Error{"the model's graph joins " + graph.vertices[e.src].name + " to " +
                         graph.vertices[e.dst].name +
                         ", which the layout search's blocks do not compose",
                     "model"};
      }
    }
    r->block_part = one_block ? kBlock0 : kBlock1;
  }
  // The compute alone, which the links do not change: priced on a machine
  // without nodes, whose collectives are cheaper to walk.
  ops::Machine flat = stage_machine(cluster_, q, 0, 0, 1, Recompute::kNone);
  flat.gpus_per_node = 0;
  for (size_t v = 0; v < n; ++v) {
    const int part = r->part_of[v];
    if (part != kEmbed && part != kHead && part != r->block_part) continue;
    const double compute =
        ops::layer_cost(graph, graph.vertices[v], r->configs[v].data(), flat).compute;
    (part == kEmbed  ? r->embed_compute
     : part == kHead ? r->head_compute
                     : r->block_compute) += compute;
  }
  const Reduced* out = r.get();
  reduced_.emplace(key, std::move(r));
  return out;
}

}  // namespace pase::layout_detail
