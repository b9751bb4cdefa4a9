// The layout search (pase/layout_search.hpp, core/docs/layouts.md): every
// layout of the space priced by the composed evaluation (layout_pricer.hpp)
// and the fastest kept.
#include "pase/layout_search.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "export/engine_model.hpp"
#include "export/engine_rules.hpp"
#include "layouts/layout_pricer.hpp"
#include "model/cost_model.hpp"
#include "util/divisors.hpp"

namespace pase {
namespace {

using layout_detail::LayoutPricer;
using layout_detail::PricedLayout;

// The stage shapes a pipeline of pp stages takes for `blocks` blocks: every
// stage alike (as even as they go), and a first stage, a last stage or both
// holding fewer blocks than the others, the others alike (as Megatron-LM's
// --decoder-first/last-pipeline-num-layers split them).
std::vector<std::pair<int64_t, int64_t>> stage_shapes(int64_t pp, int64_t blocks) {
  std::vector<std::pair<int64_t, int64_t>> out = {{0, 0}};
  if (pp < 2) return out;
  const int64_t even = (blocks + pp - 1) / pp;
  for (int64_t x = 1; x < even; ++x) {
    if ((blocks - x) % (pp - 1) == 0 && (blocks - x) / (pp - 1) > x) {
      out.emplace_back(x, 0);
      out.emplace_back(0, x);
    }
    if (pp > 2 && blocks - 2 * x >= pp - 2 && (blocks - 2 * x) % (pp - 2) == 0 &&
        (blocks - 2 * x) / (pp - 2) > x)
      out.emplace_back(x, x);
  }
  return out;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// Why `l` loses to `best`: how much slower, and the parts that grow most.
std::string versus(const RankedLayout& l, const RankedLayout& best) {
  if (!l.fits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "does not fit: %.1f GiB over the cap",
                  (l.memory.total() - l.capacity_bytes) / 0x1p30);
    return buf;
  }
  const double slower = l.step_time_s / best.step_time_s - 1;
  if (slower <= 1e-12) return "as fast as the first";
  const std::pair<const char*, double> deltas[] = {
      {"compute", l.parts.compute_s - best.parts.compute_s},
      {"recomputation", l.parts.recompute_s - best.parts.recompute_s},
      {"exposed communication", l.parts.communication_s - best.parts.communication_s},
      {"bubble", l.parts.bubble_s - best.parts.bubble_s}};
  std::vector<std::pair<const char*, double>> grown;
  for (const auto& d : deltas)
    if (d.second > 1e-9 * best.step_time_s) grown.push_back(d);
  std::sort(grown.begin(), grown.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f%% slower", 100 * slower);
  std::string out = pct;
  for (size_t i = 0; i < grown.size() && i < 2; ++i)
    out += std::string(i == 0 ? ": " : ", ") + "+" + seconds_text(grown[i].second) + " " +
           grown[i].first;
  return out;
}

// The fastest `limit` entries seen, fastest first (ties: the one met first).
struct Best {
  size_t limit;
  std::vector<std::pair<double, Layout>> items = {};
  bool offer(double key, const Layout& l) {
    if (limit == 0 || (items.size() == limit && key >= items.back().first)) return false;
    const auto at = std::upper_bound(items.begin(), items.end(), key,
                                     [](double k, const auto& item) { return k < item.first; });
    items.insert(at, {key, l});
    if (items.size() > limit) items.pop_back();
    return true;
  }
};

EngineVerdict verdict(ExportTarget target, const LayoutModel& m, const Layout& l,
                      const Cluster& cluster) {
  const std::vector<EngineRefusal> r =
      engine_refusals(target, m.config, m.seq, l, cluster.devices, cluster.gpus_per_node);
  if (r.empty()) return {};
  return EngineVerdict{r.front().rule, r.front().message, r.front().source};
}

}  // namespace

Result<LayoutSearch> search_layouts(const LayoutModel& model, const Cluster& cluster,
                                    const LayoutSearchOptions& o) {
  return layout_detail::search_layouts(model, cluster, o, layout_detail::SearchSwitches{});
}

Result<LayoutSearch> layout_detail::search_layouts(const LayoutModel& model, const Cluster& cluster,
                                                   const LayoutSearchOptions& o,
                                                   const SearchSwitches& switches) {
  const auto start = std::chrono::steady_clock::now();
  if (o.gbs < 1) return Error{"must be a positive number of sequences", "gbs"};
  if (std::optional<Error> e = check_llm_config(model.config)) return *e;
  if (cluster.cost_model != CostModel::kPractice)
    return Error{
        "the layout search prices layouts by the practice cost model: give a preset or "
        "set cost_model to practice",
        "cluster.cost_model"};
  // The whole model once: the cluster's checks, and the throughput's FLOPs.
  Result<GraphSpec> spec = llm_spec(model.config, model.name, o.gbs, model.seq,
                                    model.vocab_multiple == 1 ? 1 : model.vocab_multiple);
  if (!spec) return spec.error();
  Result<Graph> whole = build_graph(*spec);
  if (!whole)
    return Error{"the model does not build at this global batch: " + whole.error().to_string(),
                 "gbs"};
  if (std::optional<Error> e = check_inputs(*whole, cluster)) return *e;
  const std::optional<Throughput> unit = throughput(*whole, cluster, 1.0);

  const int64_t n = cluster.devices, blocks = model.config.num_layers;
  const int64_t experts = model.config.num_experts;
  LayoutPricer pricer(model, cluster, o.gbs, switches.share_configs);
  LayoutSearch out;
  Best fitting{o.top}, over{o.over};
  std::vector<std::pair<std::string, int64_t>>& why = out.refused_why;
  const auto refuse = [&](const Error& e) {
    ++out.refused;
    for (auto& [reason, count] : why)
      if (reason.rfind(e.where + ":", 0) == 0) {
        ++count;
        return;
      }
    why.emplace_back(e.where + ": " + e.message, 1);
  };
  std::optional<PricedLayout> given;
  if (o.given) {
    Result<PricedLayout> g = pricer.price(*o.given);
    if (!g) return g.error();
    given = *g;
  }
  int64_t faster_than_given = 0;
  int64_t no_engine = 0;

  // The step time below which a layout may still rank (or be faster than
  // the given one): a layout whose lower bound is above it is ruled out
  // without being priced.
  const auto threshold = [&] {
    if (!switches.bounds) return std::numeric_limits<double>::infinity();
    double t = fitting.items.size() < fitting.limit ? std::numeric_limits<double>::infinity()
                                                    : fitting.items.back().first;
    if (given) t = std::max(t, given->step_time_s);
    return t * (1 + 1e-12);
  };
  // Every layout of the degrees of `base` at micro-batch size `mbs`.
  const auto search_micro_batch = [&](Layout l, int64_t mbs) {
    l.mbs = mbs;
    const int64_t dp = l.dp, pp = l.pp;
    const int64_t microbatches = o.gbs / (mbs * dp);
    // The pipeline's shapes, each with its count of recomputations: none,
    // selective, full, and full on k blocks of each (virtual) stage.
    struct Shape {
      int64_t first, last, vpp, options;
    };
    std::vector<Shape> shapes;
    int64_t per_zero = 0;
    for (const auto& [first, last] : stage_shapes(pp, blocks)) {
      std::vector<int64_t> vpps = {1};
      if (pp > 1 && first == 0 && last == 0 && blocks % pp == 0 && microbatches % pp == 0)
        for (int64_t v : divisors(blocks / pp))
          if (v > 1) vpps.push_back(v);
      for (int64_t vpp : vpps) {
        l.pp_first = first;
        l.pp_last = last;
        Result<std::vector<int64_t>> st = stage_blocks(l, blocks);
        if (!st) continue;
        const int64_t fewest = *std::min_element(st->begin(), st->end()) / vpp;
        shapes.push_back(Shape{first, last, vpp, 3 + std::max<int64_t>(0, fewest - 1)});
        per_zero += shapes.back().options;
      }
    }
    const std::vector<int64_t> shards = divisors(dp), whole_dp = {dp};
    const int64_t all = per_zero * (3 + static_cast<int64_t>(shards.size()));
    l.pp_first = l.pp_last = 0;
    l.vpp = 1;
    // The compute bounds need only the two-block model, no placement.
    Result<const LayoutPricer::Reduced*> parts = pricer.parts(l);
    if (!parts) {
      refuse(parts.error());
      return;
    }
    if (pricer.compute_bound(**parts, l) > threshold()) {
      out.bounded += all;
      return;
    }
    // Shapes whose compute alone is slower than the threshold are ruled out
    // for every ZeRO stage.
    std::vector<Shape> open;
    for (const Shape& shape : shapes) {
      l.pp_first = shape.first;
      l.pp_last = shape.last;
      l.vpp = shape.vpp;
      if (pricer.shape_compute_bound(**parts, l) > threshold()) {
        out.bounded += shape.options * (3 + static_cast<int64_t>(shards.size()));
      } else {
        open.push_back(shape);
      }
    }
    // Per open shape, a lower bound of its step under every ZeRO stage, once
    // ZeRO 0's parts are priced (none yet: 0).
    std::vector<double> any_zero(open.size(), 0.0);
    for (int64_t zero = 0; zero <= 3 && !open.empty(); ++zero)
      for (int64_t shard : zero == 3 ? shards : whole_dp) {
        l.zero = zero;
        l.dp_shard = shard == dp ? 0 : shard;
        // A layout that neither engine starts is not one of the space
        // (their rules do not look at the recomputation).
        std::vector<const Shape*> started;
        for (const Shape& shape : open) {
          l.pp_first = shape.first;
          l.pp_last = shape.last;
          l.vpp = shape.vpp;
          l.recompute = Recompute::kNone;
          l.recompute_blocks = 0;
          if (!engine_refusals(ExportTarget::kMegatron, model.config, model.seq, l, n,
                               cluster.gpus_per_node)
                   .empty() &&
              !engine_refusals(ExportTarget::kTorchtitan, model.config, model.seq, l, n,
                               cluster.gpus_per_node)
                   .empty()) {
            out.refused += shape.options;
            no_engine += shape.options;
          } else {
            started.push_back(&shape);
          }
        }
        // Shapes that ZeRO 0's bound for every ZeRO stage rules out, before
        // this stage's parts are priced.
        std::vector<const Shape*> priced;
        for (const Shape* shape : started)
          if (any_zero[static_cast<size_t>(shape - open.data())] > threshold()) {
            out.bounded += shape->options;
          } else {
            priced.push_back(shape);
          }
        if (priced.empty()) continue;
        Result<const LayoutPricer::Context*> c = pricer.context(l);
        if (!c) {
          refuse(c.error());
          continue;
        }
        if (zero == 0)
          for (size_t i = 0; i < open.size(); ++i) {
            l.pp_first = open[i].first;
            l.pp_last = open[i].last;
            l.vpp = open[i].vpp;
            l.recompute = Recompute::kNone;
            l.recompute_blocks = 0;
            any_zero[i] = pricer.compose(**c, l, LayoutPricer::Bound::kAnyZero).step_time_s;
          }
        for (const Shape* shape : priced) {
          l.pp_first = shape->first;
          l.pp_last = shape->last;
          l.vpp = shape->vpp;
          l.recompute = Recompute::kNone;
          l.recompute_blocks = 0;
          if (pricer.compose(**c, l, LayoutPricer::Bound::kRecompute).step_time_s > threshold()) {
            out.bounded += shape->options;
            continue;
          }
          for (int64_t r = 0; r < shape->options; ++r) {
            l.recompute = r == 0   ? Recompute::kNone
                          : r == 1 ? Recompute::kSelective
                                   : Recompute::kFull;
            l.recompute_blocks = r < 3 ? 0 : r - 2;
            const PricedLayout p = pricer.compose(**c, l, LayoutPricer::Bound::kNone);
            ++out.priced;
            if (!p.fits) {
              ++out.ruled_out;
              over.offer(p.step_time_s, l);
              continue;
            }
            fitting.offer(p.step_time_s, l);
            if (given && p.step_time_s < given->step_time_s) ++faster_than_given;
          }
        }
      }
  };

  const std::vector<int64_t> tps = divisors(n);
  for (size_t ti = 0; ti < tps.size(); ++ti) {
    if (o.on_progress && !o.on_progress(static_cast<double>(ti) / static_cast<double>(tps.size())))
      return Error{"cancelled", ""};
    const int64_t tp = tps[ti];
    for (int64_t cp : divisors(n / tp))
      for (int64_t dp : divisors(n / tp / cp)) {
        const int64_t pp = n / tp / cp / dp;
        std::vector<int64_t> eps = {1};
        if (experts > 0) eps = divisors(std::gcd(dp * cp, experts));
        for (int64_t ep : eps)
          for (int64_t etp : experts > 0 ? divisors(tp) : std::vector<int64_t>{tp})
            for (int sp = 0; sp <= (tp > 1 ? 1 : 0); ++sp) {
              Layout base;
              base.tp = tp;
              base.pp = pp;
              base.dp = dp;
              base.cp = cp;
              base.ep = ep;
              base.etp = etp == tp ? 0 : etp;
              base.sp = sp == 1;
              base.gbs = o.gbs;
              if (std::optional<Error> e = pricer.check(base)) {
                refuse(*e);
                continue;
              }
              for (int64_t mbs : o.gbs % dp == 0 ? divisors(o.gbs / dp) : std::vector<int64_t>{})
                search_micro_batch(base, mbs);
            }
      }
  }
  if (o.on_progress && !o.on_progress(1.0)) return Error{"cancelled", ""};
  if (no_engine > 0)
    why.emplace_back(
        "no engine starts it: both Megatron-LM and torchtitan refuse it at start-up "
        "(core/docs/export.md, \"The engines' start-up rules\")",
        no_engine);

  const double peak_all = cluster.tflops * 1e12 * static_cast<double>(n);
  const auto ranked = [&](const Layout& l, const PricedLayout& p, int64_t rank) {
    RankedLayout r;
    r.layout = l;
    r.rank = rank;
    r.step_time_s = p.step_time_s;
    r.parts = p.parts;
    r.memory = p.memory;
    r.capacity_bytes = cluster.memory_gib > 0 ? cluster.capacity_bytes() : 0;
    r.fits = p.fits;
    if (unit) {
      r.tokens_per_s = unit->tokens / p.step_time_s;
      r.mfu = unit->model_flops / (peak_all * p.step_time_s);
    }
    r.megatron = verdict(ExportTarget::kMegatron, model, l, cluster);
    r.torchtitan = verdict(ExportTarget::kTorchtitan, model, l, cluster);
    if (o.tokens > 0 && r.tokens_per_s > 0) {
      r.days = o.tokens / r.tokens_per_s / 86400;
      r.cost = o.gpu_hour_price * r.days * 24 * static_cast<double>(n);
    }
    return r;
  };
  for (size_t i = 0; i < fitting.items.size(); ++i) {
    const Layout& l = fitting.items[i].second;
    out.ranked.push_back(ranked(l, *pricer.price(l), static_cast<int64_t>(i) + 1));
  }
  // The layouts that do not fit and are faster than the best that does
  // (every one of them priced: none is ruled out by a bound).
  for (const auto& item : over.items)
    if (fitting.items.empty() || item.first < fitting.items.front().first)
      out.over.push_back(ranked(item.second, *pricer.price(item.second), 0));
  if (given) {
    out.given = ranked(*o.given, *given, given->fits ? faster_than_given + 1 : 0);
  }
  if (!out.ranked.empty()) {
    for (RankedLayout& r : out.ranked) r.versus_best = versus(r, out.ranked.front());
    for (RankedLayout& r : out.over) r.versus_best = versus(r, out.ranked.front());
    if (out.given) out.given->versus_best = versus(*out.given, out.ranked.front());
  } else {
    for (RankedLayout& r : out.over) r.versus_best = versus(r, r);
    if (out.given && !out.given->fits) out.given->versus_best = versus(*out.given, *out.given);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

Result<LayoutModel> layout_model_of(const Graph& graph, int64_t vocab_multiple, int64_t* gbs) {
  Result<EngineModel> m = engine_model(graph, "the layout search");
  if (!m) return Error{m.error().message, "model"};
  if (gbs != nullptr) *gbs = graph.model->spec->inputs[0].second[0];
  // A built-in model keeps its own config (its longest sequence, top-k).
  return LayoutModel{m->config, graph.name, m->seq, vocab_multiple};
}

Result<Graph> layout_graph(const LayoutModel& model, const Layout& layout) {
  const int64_t multiple = model.vocab_multiple == 1 ? 1 : model.vocab_multiple * layout.tp;
  Result<GraphSpec> spec = llm_spec(model.config, model.name, layout.gbs, model.seq, multiple);
  if (!spec) return spec.error();
  return build_graph(*spec);
}

}  // namespace pase
