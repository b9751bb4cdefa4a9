// A layout's price composed from parts priced once (layout_pricer.hpp).
#include "layouts/layout_pricer.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "cost/cost_tables.hpp"
#include "layouts/layout_parts.hpp"
#include "model/cost_model.hpp"
#include "pase/models.hpp"
#include "pipeline/pipeline_model.hpp"

namespace pase::layout_detail {
namespace {

void add(PartSums& to, const PartSums& part, double times) {
  to.total += times * part.total;
  to.weight_sync += times * part.weight_sync;
  to.compute += times * part.compute;
  to.recompute += times * part.recompute;
  to.params += times * part.params;
  to.grads += times * part.grads;
  to.optimizer += times * part.optimizer;
  to.activations += times * part.activations;
  if (times > 0) to.working = std::max(to.working, part.working);
}

// The edges' costs between their ends' configurations.
double edge_sum(const Graph& g, const std::vector<size_t>& edges, const Strategy& configs,
                const ops::Machine& m) {
  double sum = 0;
  for (size_t i : edges) {
    const Edge& e = g.edges[i];
    sum += edge_cost(g, e, configs[static_cast<size_t>(e.src)].data(),
                     configs[static_cast<size_t>(e.dst)].data(), m);
  }
  return sum;
}

}  // namespace

LayoutPricer::LayoutPricer(const LayoutModel& model, const Cluster& cluster, int64_t gbs,
                           bool share_configs)
    : model_(model),
      cluster_(cluster),
      gbs_(gbs),
      whole_(ops::make_machine(cluster)),
      share_configs_(share_configs) {}

LayoutPricer::~LayoutPricer() = default;

const LayoutPricer::EdgeSums& LayoutPricer::edge_sums(const Reduced& r, int64_t q,
                                                      int64_t first_device) {
  const auto key = std::make_pair(&r, first_device);
  if (auto it = edge_sums_.find(key); it != edge_sums_.end()) return *it->second;
  const Graph& g = *r.graph;
  const ops::Machine m = stage_machine(cluster_, q, first_device, 0, 1, Recompute::kNone);
  auto e = std::make_unique<EdgeSums>();
  for (int part = 0; part < 4; ++part) e->inside[part] = edge_sum(g, r.inside[part], r.configs, m);
  e->embed_link = edge_sum(g, r.embed_link, r.configs, m);
  e->link = edge_sum(g, r.link, r.configs, m);
  e->head_link = edge_sum(g, r.head_link, r.configs, m);
  const EdgeSums& out = *e;
  edge_sums_.emplace(key, std::move(e));
  return out;
}

const LayoutPricer::Placement& LayoutPricer::placement(const Reduced& r, const Layout& l, int64_t q,
                                                       int64_t first_device) {
  const int64_t replicas = l.dp / (l.dp_shard == 0 ? l.dp : l.dp_shard);
  const auto key = std::make_tuple(&r, l.zero, replicas, first_device);
  if (auto it = placements_.find(key); it != placements_.end()) return *it->second;
  const Graph& g = *r.graph;
  const EdgeSums& edges = edge_sums(r, q, first_device);
  auto p = std::make_unique<Placement>();
  const auto machine = [&](Recompute mode) {
    return stage_machine(cluster_, q, first_device, l.zero, replicas, mode);
  };
  const auto sum_part = [&](int part, const ops::Machine& m) {
    PartSums s;
    for (size_t v = 0; v < g.vertices.size(); ++v) {
      if (r.part_of[v] != part) continue;
      const int64_t* c = r.configs[v].data();
      const LayerCost lc = ops::layer_cost(g, g.vertices[v], c, m);
      s.total += lc.total;
      s.weight_sync += lc.weight_sync;
      s.compute += lc.compute;
      s.recompute += lc.recompute;
      const MemoryBytes b = ops::vertex_memory(g, g.vertices[v], c, m);
      s.params += b.params;
      s.grads += b.grads;
      s.optimizer += b.optimizer;
      s.activations += b.activations;
      s.working = std::max(s.working, ops::working_bytes(g, g.vertices[v], c, m));
    }
    s.total += edges.inside[part];
    return s;
  };
  const ops::Machine plain = machine(Recompute::kNone);
  p->embed = sum_part(kEmbed, plain);
  p->head = sum_part(kHead, plain);
  const Recompute modes[] = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  for (int m = 0; m < 3; ++m) p->block[m] = sum_part(r.block_part, machine(modes[m]));
  p->embed_link = edges.embed_link;
  p->link = edges.link;
  p->head_link = edges.head_link;
  const Placement& out = *p;
  placements_.emplace(key, std::move(p));
  return out;
}

namespace {

// The blocks of stage s, as stage_blocks() deals them, without a vector.
int64_t stage_count(const Layout& l, int64_t blocks, int64_t s) {
  if (s == 0 && l.pp_first > 0) return l.pp_first;
  if (s == l.pp - 1 && l.pp_last > 0) return l.pp_last;
  // The middle stages as stage_blocks() deals them: block b of the rest to
  // middle stage floor(b * middle / rest).
  const int64_t offset = l.pp_first > 0 ? 1 : 0;
  const int64_t middle = l.pp - offset - (l.pp_last > 0 ? 1 : 0);
  const int64_t rest = blocks - l.pp_first - l.pp_last, i = s - offset;
  const auto first_of = [&](int64_t k) { return (k * rest + middle - 1) / middle; };
  return first_of(i + 1) - first_of(i);
}

}  // namespace

Result<const LayoutPricer::Context*> LayoutPricer::context(const Layout& l) {
  const int64_t micro_batch = l.mbs * l.dp;
  const int64_t replicas = l.dp / (l.dp_shard == 0 ? l.dp : l.dp_shard);
  const std::vector<int64_t> key = {l.tp,         l.cp,        l.dp,   l.ep,     l.etp,
                                    l.sp ? 1 : 0, micro_batch, l.zero, replicas, l.pp};
  if (auto it = contexts_.find(key); it != contexts_.end()) return it->second.get();
  Result<const Reduced*> r = reduced(l, micro_batch);
  if (!r) return r.error();
  auto c = std::make_unique<Context>();
  c->reduced = *r;
  c->q = l.tp * l.dp * l.cp;
  c->microbatches = gbs_ / micro_batch;
  const int64_t gpn = cluster_.gpus_per_node;
  // The placements stages see: stage s starts (s * q) mod gpn into a node.
  const int64_t aligns = gpn > 0 ? std::min(l.pp, gpn / std::gcd(c->q, gpn)) : 1;
  for (int64_t s = 0; s < aligns; ++s)
    c->by_stage.push_back(&placement(**r, l, c->q, gpn > 0 ? (s * c->q) % gpn : 0));
  const pipeline_detail::Sender sender{*(*r)->graph, whole_, c->q};
  for (size_t i : (*r)->link) {
    c->send_near += sender.price((*r)->graph->edges[i], whole_.r1);
    c->send_far += sender.price((*r)->graph->edges[i], whole_.r);
  }
  const Context* out = c.get();
  contexts_.emplace(key, std::move(c));
  return out;
}

PricedLayout LayoutPricer::compose(const Context& c, const Layout& l, Bound how) const {
  const bool bound = how != Bound::kNone;
  const int64_t S = l.pp, microbatches = c.microbatches, blocks = model_.config.num_layers;
  const int64_t gpn = cluster_.gpus_per_node, q = c.q;
  const int mode = l.recompute == Recompute::kFull ? 2 : l.recompute == Recompute::kSelective;
  const double cap =
      cluster_.memory_gib > 0 ? cluster_.capacity_bytes() : std::numeric_limits<double>::infinity();
  PricedLayout out;
  double sum_a = 0, max_a = -1, max_w = 0, first_total = 0;
  PartSums critical;
  MemoryBytes largest;
  bool fits = true;
  for (int64_t s = 0; s < S; ++s) {
    const Placement& p = *c.by_stage[static_cast<size_t>(s) % c.by_stage.size()];
    const int64_t n = stage_count(l, blocks, s);
    int64_t full = 0;  // blocks of full recomputation under recompute_blocks
    if (l.recompute_blocks > 0) {
      const int64_t chunk = n / l.vpp;
      full =
          n / chunk * std::min(l.recompute_blocks, chunk) + std::min(l.recompute_blocks, n % chunk);
    }
    PartSums st;
    if (s == 0) add(st, p.embed, 1);
    // A bound: the least any recomputation costs, A as without (its compute
    // and communication only grow with recomputation), W as with full (its
    // hidden share only grows).
    double w_less = 0;
    if (bound) {
      add(st, p.block[0], static_cast<double>(n));
      w_less = static_cast<double>(n) * (p.block[0].weight_sync - p.block[2].weight_sync);
    } else if (l.recompute_blocks > 0) {
      add(st, p.block[2], static_cast<double>(full));
      add(st, p.block[0], static_cast<double>(n - full));
    } else {
      add(st, p.block[mode], static_cast<double>(n));
    }
    if (s == S - 1) add(st, p.head, 1);
    st.total += (s == 0 ? p.embed_link : 0) + static_cast<double>(n - 1) * p.link +
                (s == S - 1 ? p.head_link : 0);
    double x = 0;
    if (s + 1 < S) {
      const bool near = gpn > 0 && (s * q) / gpn == ((s + 2) * q - 1) / gpn;
      x = near ? c.send_near : c.send_far;
    }
    const double a = st.total - st.weight_sync + static_cast<double>(l.vpp) * x;
    // Under any ZeRO stage, A_s is at least ZeRO 0's (the stages change the
    // weight's traffic alone, and ZeRO-3's gathers only add to A_s): W_s 0.
    if (how == Bound::kAnyZero) w_less = st.weight_sync;
    const double k =
        static_cast<double>(pipeline_detail::copies_of(Schedule::k1F1B, S, s, microbatches, l.vpp));
    const MemoryBytes mem{st.params, st.grads, st.optimizer, k * st.activations, st.working};
    fits = fits && mem.total() <= cap;
    if (s == 0 || mem.total() > largest.total()) largest = mem;
    sum_a += a;
    if (a > max_a) {
      max_a = a;
      critical = st;
    }
    max_w = std::max(max_w, st.weight_sync - w_less);
    if (s == 0) first_total = st.total;
  }
  const double m = static_cast<double>(microbatches);
  const double cost = S == 1 && microbatches == 1 && how == Bound::kNone
                          ? first_total
                          : m * max_a + (sum_a - max_a) / static_cast<double>(l.vpp) + max_w;
  const double peak = cluster_.tflops * 1e12;
  out.step_time_s = cost / peak;
  out.parts.compute_s = m * (critical.compute - critical.recompute) / peak;
  out.parts.recompute_s = m * critical.recompute / peak;
  out.parts.bubble_s = (sum_a - max_a) / static_cast<double>(l.vpp) / peak;
  out.parts.communication_s = std::max(
      0.0, out.step_time_s - out.parts.compute_s - out.parts.recompute_s - out.parts.bubble_s);
  out.memory = largest;
  out.fits = fits;
  return out;
}

double LayoutPricer::compute_bound(const Reduced& r, const Layout& l) const {
  const double compute = r.embed_compute +
                         static_cast<double>(model_.config.num_layers) * r.block_compute +
                         r.head_compute;
  const double microbatches = static_cast<double>(gbs_ / (l.mbs * l.dp));
  return microbatches / static_cast<double>(l.pp) * compute / (cluster_.tflops * 1e12);
}

double LayoutPricer::shape_compute_bound(const Reduced& r, const Layout& l) const {
  // compose()'s step with each A_s its stage's compute and no W_s.
  const int64_t S = l.pp, blocks = model_.config.num_layers;
  double sum_a = 0, max_a = -1;
  for (int64_t s = 0; s < S; ++s) {
    double a = 0;
    if (s == 0) a += r.embed_compute;
    a += static_cast<double>(stage_count(l, blocks, s)) * r.block_compute;
    if (s == S - 1) a += r.head_compute;
    sum_a += a;
    max_a = std::max(max_a, a);
  }
  const double m = static_cast<double>(gbs_ / (l.mbs * l.dp));
  return (m * max_a + (sum_a - max_a) / static_cast<double>(l.vpp)) / (cluster_.tflops * 1e12);
}

Result<const LayoutPricer::Reduced*> LayoutPricer::parts(const Layout& l) {
  return reduced(l, l.mbs * l.dp);
}

Result<PricedLayout> LayoutPricer::price(const Layout& l) {
  if (std::optional<Error> e = check(l)) return *e;
  Result<const Context*> c = context(l);
  if (!c) return c.error();
  return compose(**c, l, Bound::kNone);
}

std::optional<Error> LayoutPricer::check(const Layout& l) {
  const int64_t devices = cluster_.devices;
  const int64_t q = l.tp * l.dp * l.cp;
  if (q * l.pp != devices)
    return pricer_error("tp x pp x dp x cp = " + std::to_string(q * l.pp) +
                            ", but the cluster has " + std::to_string(devices) + " devices",
                        "tp");
  const int64_t micro_batch = l.mbs * l.dp;
  if (gbs_ % micro_batch != 0)
    return pricer_error(
        std::to_string(gbs_) + " is not a multiple of mbs x dp = " + std::to_string(micro_batch),
        "gbs");
  const int64_t microbatches = gbs_ / micro_batch;
  const int64_t blocks = model_.config.num_layers;
  Result<std::vector<int64_t>> stages = stage_blocks(l, blocks);
  if (!stages) return stages.error();
  if (l.vpp > 1) {
    if (l.pp < 2) return pricer_error("virtual stages need a pipeline (pp of at least 2)", "vpp");
    if (l.pp_first > 0 || l.pp_last > 0)
      return pricer_error("an interleaved schedule takes stages alike: no pp_first or pp_last",
                          "vpp");
    if (microbatches % l.pp != 0)
      return pricer_error("an interleaved schedule needs micro-batches (" +
                              std::to_string(microbatches) + ") a multiple of pp",
                          "vpp");
    if (blocks % (l.pp * l.vpp) != 0)
      return pricer_error(std::to_string(blocks) +
                              " decoder blocks do not divide into pp x vpp = " +
                              std::to_string(l.pp * l.vpp) + " chunks",
                          "vpp");
  }
  const int64_t fewest = *std::min_element(stages->begin(), stages->end()) / l.vpp;
  if (l.recompute_blocks > 0 && (l.recompute != Recompute::kFull || l.recompute_blocks > fewest))
    return pricer_error("at most " + std::to_string(fewest) + " blocks, with recompute=full",
                        "recompute_blocks");
  const int64_t shard = l.dp_shard == 0 ? l.dp : l.dp_shard;
  if (l.dp % shard != 0 || (shard != l.dp && l.zero != 3))
    return pricer_error("must divide dp, and be below it only with zero=3", "dp_shard");
  Result<const Reduced*> r = reduced(l, micro_batch);
  if (!r) return r.error();
  return std::nullopt;
}

}  // namespace pase::layout_detail
