// The two answers of a plan of a language model (pase/answers.hpp;
// core/docs/layouts.md, "Both answers").
#include "pase/answers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/parallel.hpp"
#include "model/cost_model.hpp"
#include "pase/layout.hpp"
#include "pase/summary.hpp"
#include "search/progress.hpp"
#include "search/stop.hpp"

namespace pase {
namespace {

constexpr double kInfinite = std::numeric_limits<double>::infinity();

// The best layout's own plan: its graph, its training and its pipeline, as
// `pase eval --layout` evaluates it.
struct LayoutPlan {
  Graph graph;
  Cluster cluster;
  PipelinePlan plan;
};

Result<LayoutPlan> layout_plan(const LayoutModel& model, const Cluster& cluster,
                               const Layout& layout) {
  Result<Graph> graph = layout_graph(model, layout);
  if (!graph) return graph.error();
  Result<LayoutStrategy> laid = layout_strategy(*graph, cluster, layout);
  if (!laid) return laid.error();
  Result<PipelinePlan> plan = evaluate_pipeline(*graph, laid->cluster, laid->strategy);
  if (!plan) return plan.error();
  return LayoutPlan{std::move(*graph), laid->cluster, std::move(*plan)};
}

// "attention" for "layer12_attention"; the name itself outside the blocks.
std::pair<std::string, bool> block_key(const std::string& name) {
  if (name.rfind("layer", 0) != 0) return {name, false};
  size_t i = 5;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  if (i == 5 || i >= name.size() || name[i] != '_') return {name, false};
  return {name.substr(i + 1), true};
}

std::string micro_batches_text(const PipelineInfo& p) {
  std::string s = std::to_string(p.microbatches);
  s.append(p.microbatches == 1 ? " micro-batch of " : " micro-batches of ");
  s.append(std::to_string(p.micro_batch));
  if (p.stages > 1) s.append(", pipeline x").append(std::to_string(p.stages));
  return s;
}

Recompute recompute_of(const PipelinePlan& p, const Cluster& cluster) {
  return p.plan.training ? p.plan.training->recompute : cluster.training.recompute;
}

// Where `mine` differs from the layout's plan (PlanAnswers::differs_at).
std::vector<std::string> differences(const PipelinePlan& mine, const Cluster& my_cluster,
                                     const LayoutPlan& layout, int64_t blocks) {
  std::vector<std::string> out;
  const auto differ = [&](std::string what, const std::string& here, const std::string& there) {
    if (here != there)
      out.push_back(what.append(here).append(" (the layout: ").append(there) + ")");
  };
  differ("ZeRO ", std::to_string(my_cluster.training.zero),
         std::to_string(layout.cluster.training.zero));
  differ("", micro_batches_text(mine.pipeline), micro_batches_text(layout.plan.pipeline));
  differ("recomputation ", recompute_name(recompute_of(mine, my_cluster)),
         recompute_name(recompute_of(layout.plan, layout.cluster)));
  std::unordered_map<std::string, int> theirs;
  for (const Vertex& v : layout.plan.graph.vertices) theirs.emplace(v.name, v.id);
  // (layer, its split, the layout's) -> blocks, in the order first met.
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<size_t, int64_t>> groups;
  std::vector<std::pair<std::tuple<std::string, std::string, std::string>, bool>> order;
  for (const Vertex& v : mine.graph.vertices) {
    const auto it = theirs.find(v.name);
    if (it == theirs.end()) continue;
    const Vertex& w = layout.plan.graph.vertices[static_cast<size_t>(it->second)];
    const std::string here = split_label(kind_degrees(v, mine.plan.strategy[v.id]));
    const std::string there = split_label(kind_degrees(w, layout.plan.plan.strategy[w.id]));
    if (here == there) continue;
    const auto [key, in_block] = block_key(v.name);
    auto id = std::make_tuple(key, here, there);
    auto [g, fresh] = groups.emplace(id, std::make_pair(order.size(), int64_t{0}));
    if (fresh) order.emplace_back(id, in_block);
    ++g->second.second;
  }
  for (const auto& [id, in_block] : order) {
    const auto& [key, here, there] = id;
    std::string line = key;
    if (in_block)
      line.append(" in ")
          .append(std::to_string(groups.at(id).second))
          .append(" of ")
          .append(std::to_string(blocks))
          .append(" blocks");
    line.append(": ").append(here).append(" (the layout: ").append(there).append(")");
    out.push_back(std::move(line));
  }
  return out;
}

// One ZeRO stage's per-layer search. One micro-batch without stages, as a
// request may set, is plan()'s (whose recomputation is searched block by
// block), priced as a pipeline of one stage; else plan_pipeline()'s.
Result<PipelinePlan> per_layer_search(const Graph& graph, const Cluster& cluster,
                                      const PipelineOptions& pipeline, const PlanOptions& options,
                                      PipelineBound& bound) {
  PipelineOptions po = pipeline;
  po.bound_out = &bound;
  if (pipeline.stages != 1 || pipeline.microbatches != 1)
    return plan_pipeline(graph, cluster, po, options);
  Result<Plan> p = plan(graph, cluster, options);
  if (!p) {
    // Stopped: the pipeline search of the same pair, stopped at once, says
    // what its floors prove.
    if (is_stop(p.error())) {
      Result<PipelinePlan> none = plan_pipeline(graph, cluster, po, options);
      if (!none && !is_stop(none.error()) && none.error().where != "pipeline.incumbent_cost")
        return none.error();
    }
    return p.error();
  }
  bound.lower_bound = std::min(pipeline.incumbent_cost, p->lower_bound);
  if (!(p->cost < pipeline.incumbent_cost))
    return Error{"the plan is not cheaper than the incumbent", "pipeline.incumbent_cost"};
  Cluster priced = cluster;
  if (p->training) priced.training = *p->training;
  const PipelineStrategy one{p->strategy, std::vector<int>(graph.vertices.size(), 0), 1};
  Result<PipelinePlan> out = evaluate_pipeline(graph, priced, one);
  if (!out) return out.error();
  out->plan.training = p->training;
  out->plan.search = p->search;
  out->plan.optimal = p->optimal;
  out->plan.lower_bound = p->lower_bound;
  return out;
}

// PlanAnswers::set_by_hand: the knobs the request states that `layout`
// sets otherwise.
std::vector<std::string> set_by_hand(const Layout& layout, const Cluster& cluster,
                                     const AnswerOptions& a) {
  std::vector<std::string> out;
  const Training& t = cluster.training;
  if (t.recompute != Recompute::kAuto &&
      (layout.recompute != t.recompute || layout.recompute_blocks != 0))
    out.emplace_back("the recomputation");
  if (!a.zero_auto && (layout.zero != t.zero || layout.dp_shard != 0))
    out.emplace_back("the ZeRO stage");
  const PipelineOptions& p = a.pipeline;
  const int64_t microbatches = layout.gbs / (layout.mbs * layout.dp);
  // The default (no stages, the micro-batches searched) leaves the
  // layout's pipeline free, and so do stages and micro-batches both
  // "auto": the layout's own pipeline (interleaved, or with uneven ends)
  // is one of the answers they ask for.
  const bool given = !(p.stages == 1 && p.microbatches == kAuto) &&
                     !(p.stages == kAuto && p.microbatches == kAuto);
  if (given &&
      ((p.stages != kAuto && p.stages != layout.pp) || layout.vpp > 1 || layout.pp_first > 0 ||
       layout.pp_last > 0 || (p.microbatches != kAuto && p.microbatches != microbatches)))
    out.emplace_back("the pipeline");
  return out;
}

}  // namespace

Result<Exported> export_answers(ExportTarget target, const PlanAnswers& answers) {
  // The fastest ranked layout that the engine starts.
  const std::vector<RankedLayout>& ranked = answers.layouts.ranked;
  for (size_t i = 0; target != ExportTarget::kJax && i < ranked.size(); ++i) {
    const EngineVerdict& v =
        target == ExportTarget::kMegatron ? ranked[i].megatron : ranked[i].torchtitan;
    if (!v.accepted()) continue;
    Result<Graph> graph = layout_graph(answers.model, ranked[i].layout);
    if (!graph) return graph.error();
    Result<Exported> out = export_layout(target, *graph, answers.cluster, ranked[i].layout);
    if (out && i > 0) {
      const EngineVerdict& first =
          target == ExportTarget::kMegatron ? ranked[0].megatron : ranked[0].torchtitan;
      out->notes.insert(out->notes.begin(),
                        std::string(export_target_name(target)) + " refuses the best layout (" +
                            first.rule + ": " + first.message +
                            "); this is the fastest ranked layout it starts, rank " +
                            std::to_string(ranked[i].rank) + ": " + ranked[i].versus_best);
    }
    return out;
  }
  return export_plan(target, PlanView{&answers.graph, &answers.per_layer.graph, &answers.cluster,
                                      &answers.per_layer.plan, &answers.per_layer.pipeline});
}

bool has_layout_answers(const Graph& graph, const Cluster& cluster) {
  if (cluster.cost_model != CostModel::kPractice || graph.model == nullptr ||
      graph.model->spec == nullptr)
    return false;
  int64_t gbs = 0;
  return static_cast<bool>(layout_model_of(graph, kLlmVocabMultiple, &gbs));
}

Result<PlanAnswers> plan_answers(const Graph& graph, const Cluster& cluster,
                                 const AnswerOptions& answers, const PlanOptions& options) {
  RequestProgress progress(options);
  const PlanOptions& request = progress.options();
  int64_t gbs = 0;
  Result<LayoutModel> model = layout_model_of(graph, answers.vocab_multiple, &gbs);
  if (!model) return model.error();

  // The layout search: the first tenth of the progress.
  constexpr double kLayoutShare = 0.1;
  LayoutSearchOptions lo = answers.layouts;
  lo.gbs = gbs;
  lo.on_progress = [&request](double fraction) {
    // The layout search is the incumbent: only a cancel stops it, not the
    // time limit (it takes a second at most).
    if (cancel_requested(request)) return false;
    if (request.on_progress) {
      Progress p;
      p.fraction = kLayoutShare * fraction;
      p.phase = "the layout search";
      request.on_progress(p);
    }
    return true;
  };
  Result<LayoutSearch> search = search_layouts(*model, cluster, lo);
  if (!search) return search.error();
  PlanAnswers out;
  out.model = *model;
  out.layouts = std::move(*search);

  std::optional<LayoutPlan> best;
  if (!out.layouts.ranked.empty()) {
    Result<LayoutPlan> b = layout_plan(*model, cluster, out.layouts.ranked.front().layout);
    if (!b) return b.error();
    best = std::move(*b);
  }

  // What the request sets by hand that the best layout sets otherwise: the
  // per-layer search then honours it and does not start from the layout
  // (it may be slower than the layout).
  if (best) out.set_by_hand = set_by_hand(out.layouts.ranked.front().layout, cluster, answers);
  // Splits a device mesh expresses: a per-layer plan the JAX program runs
  // whole, which a layout's pipeline is not.
  if (best && options.enumeration.mesh_only) out.set_by_hand.emplace_back("mesh splits only");
  const bool from_layout = best && out.set_by_hand.empty();

  // The per-layer search, once per ZeRO stage, each starting from the
  // least step found so far (the best layout's first).
  std::vector<int64_t> zeros = {cluster.training.zero};
  if (answers.zero_auto) {
    // A stage priced as a higher one that holds less (zero_alike()) steps
    // no faster than it: its search is the higher stage's, so it has none.
    zeros.clear();
    for (int64_t z = 0; z <= 3; ++z) {
      bool dominated = false;
      for (int64_t above = z + 1; above <= 3; ++above)
        dominated = dominated || zero_alike(cluster, z, above);
      if (!dominated) zeros.push_back(z);
    }
  }
  // Every ZeRO stage's floors first (core/docs/pipeline.md, "A time
  // limit"): a stage whose floors are above the step to beat is proven
  // without a search, and a stop anywhere after has every stage's bound at
  // hand, so that the search ends at its time limit. (floor 0: not known.)
  // The stages' floors are independent: they share the request's threads,
  // the first range (the calling thread's) reporting the progress.
  constexpr double kFloorsShare = 0.05;
  std::vector<PipelineBound> floors(zeros.size());
  detail::parallel_ranges(
      std::max(1, request.threads), static_cast<int64_t>(zeros.size()),
      [&](int64_t from, int64_t to) {
        for (int64_t i = from; i < to; ++i) {
          Cluster c = cluster;
          c.training.zero = zeros[i];
          PipelineOptions po = answers.pipeline;
          po.floors_only = true;
          po.bound_out = &floors[i];
          const double share = kFloorsShare / static_cast<double>(zeros.size());
          PlanOptions o = progress_part(
              request, kLayoutShare + share * static_cast<double>(i),
              kLayoutShare + share * static_cast<double>(i + 1),
              zeros.size() > 1 ? "the floors at ZeRO " + std::to_string(zeros[i]) : "the floors");
          if (from > 0) o.on_progress = nullptr;
          Result<PipelinePlan> r = plan_pipeline(graph, c, po, o);
          // (An error, the search's below says it.)
          if (r || r.error().where != "pipeline.floors_only") floors[i].floor = 0;
        }
      });
  std::optional<PipelinePlan> found;
  Cluster found_cluster = cluster;
  std::optional<Error> failure;
  // What the searches proved (core/docs/pipeline.md, "A time limit"): the
  // least of their bounds, each over its ZeRO stage's plans, and of the
  // best layout's step when it is the incumbent. After a stop, the stages
  // after it stop at once, with their floors' bounds.
  double lower = from_layout ? best->plan.plan.cost : kInfinite;
  bool bound_known = true;
  // The stages in the order of their floors, the least first (a floor not
  // known, 0, first; ties in ZeRO's order): the stage whose floor is the
  // answer's bound is searched first, so that a stop closes the gap it
  // can, and a plan found there proves the stages above it.
  std::vector<size_t> order(zeros.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return floors[a].floor < floors[b].floor; });
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    Cluster c = cluster;
    c.training.zero = zeros[i];
    PipelineOptions po = answers.pipeline;
    po.incumbent_cost = std::min(from_layout ? best->plan.plan.cost : kInfinite,
                                 found ? found->plan.cost : po.incumbent_cost);
    po.known_floors = &floors[i];
    // Proven by its floors (within the gap accepted), or stopped before
    // it: its floors bound it. (Not one micro-batch without stages, plan()'s
    // search: it mixes the recomputations block by block, and the floors
    // are each recomputation's on every block.)
    const bool one_plan = po.stages == 1 && po.microbatches == 1;
    if (floors[i].floor > 0 &&
        (!out.stopped.empty() ||
         (!one_plan && !(floors[i].floor < po.incumbent_cost * (1 - request.max_gap))))) {
      lower = std::min(lower, floors[i].floor);
      continue;
    }
    const double first = kLayoutShare + kFloorsShare;
    const double share = (1 - first) / static_cast<double>(zeros.size());
    const PlanOptions o = progress_part(
        request, first + share * static_cast<double>(k), first + share * static_cast<double>(k + 1),
        // One stage: the search's own phases, as a plan without layouts.
        zeros.size() > 1 ? "the per-layer plan at ZeRO " + std::to_string(zeros[i]) : "");
    PipelineBound bound;
    Result<PipelinePlan> p = per_layer_search(graph, c, po, o, bound);
    const bool nothing_fits = !p && p.error().where == "cluster.memory_gib";
    if (!nothing_fits) {
      if (!(bound.lower_bound > 0)) bound_known = false;
      lower = std::min(lower, bound.lower_bound);
    }
    if (!bound.stopped.empty() && out.stopped.empty()) {
      out.stopped = bound.stopped;
      out.stopped_in = "the per-layer plan at ZeRO " + std::to_string(zeros[i]) +
                       (bound.phase.empty() ? std::string() : ": " + bound.phase);
    }
    if (!p) {
      const std::string& where = p.error().where;
      if (where == "pipeline.incumbent_cost" || is_stop(p.error())) continue;
      // A stage under which nothing fits leaves the others (and the
      // layout) their chance.
      if (where == "cluster.memory_gib") {
        failure = p.error();
        continue;
      }
      return p.error();
    }
    if (!p->plan.fits) continue;
    found = std::move(*p);
    found_cluster = c;
  }

  const int64_t blocks = model->config.num_layers;
  if (found) {
    out.graph = graph;
    out.cluster = found_cluster;
    out.per_layer = std::move(*found);
    if (best) {
      const double layout_s = best->plan.plan.step_time_s;
      out.gain_s = layout_s - out.per_layer.plan.step_time_s;
      out.gain_fraction = out.gain_s / layout_s;
      out.differs_at = differences(out.per_layer, out.cluster, *best, blocks);
    }
  } else if (from_layout || (best && !out.stopped.empty())) {
    // (Stopped with no per-layer plan: the best layout stands, even where
    // the request sets by hand what it sets otherwise.)
    out.layout_wins = true;
    out.graph = std::move(best->graph);
    out.cluster = best->cluster;
    out.per_layer = std::move(best->plan);
    // Its recomputation, as the search chose it (the layout search's).
    out.per_layer.plan.training = out.cluster.training;
    out.cluster.training.recompute = cluster.training.recompute;
  } else if (!out.stopped.empty()) {
    return stop_error(request, "a per-layer plan that fits was found, and no layout fits");
  } else {
    return failure
               ? *failure
               : Error{"no layout and no per-layer plan fits the memory cap", "cluster.memory_gib"};
  }
  // The proven gap of the per-layer answer.
  const double answer = out.per_layer.plan.cost;
  if (bound_known && lower > 0 && lower < kInfinite && answer > 0) {
    out.lower_bound_s = out.per_layer.plan.step_time_s * std::min(1.0, lower / answer);
    out.gap = std::max(0.0, (answer - lower) / answer);
  } else {
    out.gap = -1;
  }
  if (lo.tokens > 0) {
    const int64_t m = out.per_layer.pipeline.microbatches;
    const std::optional<Throughput> t =
        throughput(out.per_layer.graph, cluster, out.per_layer.plan.step_time_s, m);
    if (t && t->tokens_per_s > 0) {
      out.days = lo.tokens / t->tokens_per_s / 86400;
      out.cost = lo.gpu_hour_price * out.days * 24 * static_cast<double>(cluster.devices);
    }
  }
  progress.finish();
  return out;
}

}  // namespace pase
