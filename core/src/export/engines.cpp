// Megatron-LM arguments and torchtitan's TOML for a plan of a language model
// (export/engines.hpp; core/docs/export.md, "Megatron-LM and torchtitan").
// The plan's layout is found by building the strategy of every candidate
// layout (layout_strategy(): the degrees the plan's pipeline and device
// count allow) and comparing it with the plan vertex by vertex: a candidate
// that matches every vertex is the plan; else the one that matches most is
// the nearest uniform layout, priced beside the plan.
#include "export/engines.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "export/engine_model.hpp"
#include "export/engine_rules.hpp"
#include "export/engine_text.hpp"
#include "export/escape.hpp"
#include "model/cost_model.hpp"
#include "pase/layout.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "util/divisors.hpp"
#include "util/json_util.hpp"
#include "util/text.hpp"

namespace pase {
namespace {

// At most this many candidate layouts are built, and this many that match
// equally well are priced to break the tie.
constexpr size_t kEngineMaxCandidates = 4096;
constexpr size_t kEngineMaxPriced = 8;

Error engine_error(const std::string& message) { return Error{message, "emit"}; }
std::string engine_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g s", s);
  return buf;
}

// The plan's stage of vertex `v` (0 without a pipeline).
int engine_plan_stage(const PlanView& view, size_t v) {
  const PipelineInfo* p = view.pipeline;
  return p == nullptr || v >= p->stage_of.size() ? 0 : p->stage_of[v];
}

// How many vertices the layout's strategy configures and stages as the
// plan does; the others go to `differing` when given.
size_t engine_matches(const PlanView& view, const PipelineStrategy& s,
                      std::vector<int>* differing) {
  const Strategy& plan = view.plan->strategy;
  size_t matched = 0;
  for (size_t v = 0; v < plan.size(); ++v) {
    const bool same = v < s.configs.size() && plan[v] == s.configs[v] &&
                      engine_plan_stage(view, v) == s.stage_of[v];
    if (same) ++matched;
    if (!same && differing != nullptr) differing->push_back(static_cast<int>(v));
  }
  return matched;
}

// How a vertex differs: "heads (h) split 2 ways, the layout splits it 4
// ways; on stage 1, the layout's stage 0".
std::string engine_difference(const PlanView& view, const PipelineStrategy& s, int v) {
  const Vertex& vx = view.plan_graph->vertices[v];
  const Config& p = view.plan->strategy[v];
  const int64_t seq = view.graph->model->spec->inputs[0].second[1];
  std::string out;
  for (size_t i = 0; i < vx.dims.size() && i < p.size(); ++i) {
    const int64_t l = s.configs[v][i];
    if (p[i] == l) continue;
    // A norm's or a sum's dimensions have no kind: the sequence's is the
    // one of its length (as layout_strategy() finds it).
    const bool is_seq = vx.kinds[i] == DimKind::kOther && vx.dom[i] == seq;
    out += std::string(out.empty() ? "" : "; ") +
           (is_seq ? "sequence" : dim_kind_name(vx.kinds[i])) + " (" + vx.dims[i] + ") " +
           (p[i] == 1 ? "not split" : "split " + engine_num(p[i]) + " ways") + ", the layout " +
           (l == 1 ? "does not split it" : "splits it " + engine_num(l) + " ways");
  }
  const int stage = engine_plan_stage(view, static_cast<size_t>(v));
  if (stage != s.stage_of[v])
    out += std::string(out.empty() ? "" : "; ") + "on stage " + std::to_string(stage) +
           ", the layout's stage " + std::to_string(s.stage_of[v]);
  return out;
}

// The differing vertices, those of one role in several decoder blocks that
// differ alike in one line: "layer0_q .. layer11_q: ...".
std::vector<std::string> engine_differences(const PlanView& view, const PipelineStrategy& s,
                                            const std::vector<int>& differing) {
  struct Group {
    std::string role, how;
    std::vector<int> blocks;  // empty: a vertex outside the blocks, named by `role`
  };
  std::vector<Group> groups;
  for (int v : differing) {
    const std::string& name = view.plan_graph->vertices[v].name;
    std::string role;
    const int block = ops::decoder_block(name, &role);
    const bool in_block = block >= 0;
    Group g{in_block ? role : name, engine_difference(view, s, v), {}};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& x) {
      return in_block && !x.blocks.empty() && x.role == g.role && x.how == g.how;
    });
    if (it == groups.end()) it = groups.insert(groups.end(), g);
    if (in_block) it->blocks.push_back(block);
  }
  std::vector<std::string> out;
  for (const Group& g : groups) {
    std::string names = g.blocks.empty() ? g.role : "";
    const auto name = [&](size_t k) { return "layer" + engine_num(g.blocks[k]) + "_" + g.role; };
    for (size_t i = 0, j = 0; i < g.blocks.size(); i = ++j) {
      while (j + 1 < g.blocks.size() && g.blocks[j + 1] == g.blocks[j] + 1) ++j;
      names += (i == 0 ? "" : ", ") + name(i) + (j > i ? " .. " + name(j) : "");
    }
    out.push_back(names + ": " + g.how);
  }
  return out;
}

// The layout of the plan into `e` (layout, uniform, differences, step
// times): the plan's own when uniform, else the nearest; among the layouts
// that the engine's start-up rules accept when there are any (else
// engine_check() says which rule the nearest breaks).
std::optional<Error> engine_fit(ExportTarget target, const PlanView& view, const Training& training,
                                const EngineModel& m, Exported& e) {
  const Cluster& cluster = *view.cluster;
  const PipelineInfo* pipe = view.pipeline;
  // What the plan fixes: the pipeline, the micro-batch, ZeRO and the
  // recomputation; the degrees are searched.
  Layout base{.pp = pipe == nullptr ? 1 : pipe->stages,
              .zero = training.zero,
              .recompute = Recompute::kNone,  // engine_runs() sets it
              .gbs = view.graph->model->spec->inputs[0].second[0],
              .vpp = pipe == nullptr ? 1 : pipe->virtual_stages};
  const int64_t micro_batch =
      base.gbs / (pipe == nullptr ? 1 : std::max<int64_t>(pipe->microbatches, 1));
  if (base.pp < 1 || cluster.devices % base.pp != 0)
    return engine_error("the pipeline's stages do not divide the devices");
  const int64_t per_stage = cluster.devices / base.pp, experts = m.config.num_experts;
  // Every tp x cp x dp of a stage's devices whose dp divides the
  // micro-batch, each ep of the experts, with and without sp.
  // The best matches among the accepted layouts, and among all.
  struct Tier {
    std::vector<Layout> best;
    size_t matched = 0;
  } tiers[2];
  size_t tried = 0;
  Error last = engine_error("no layout of " + engine_num(cluster.devices) + " devices");
  for (int64_t tp : divisors(per_stage)) {
    for (int64_t cp : divisors(per_stage / tp)) {
      const int64_t dp = per_stage / (tp * cp);
      for (int64_t ep : divisors(dp * cp)) {
        if (micro_batch % dp != 0 || (experts == 0 && ep > 1) || (experts > 0 && experts % ep != 0))
          continue;
        for (int sp = 0; sp < (tp > 1 ? 2 : 1) && ++tried <= kEngineMaxCandidates; ++sp) {
          Layout l = base;
          l.tp = tp, l.dp = dp, l.cp = cp, l.ep = ep, l.sp = sp == 1, l.mbs = micro_batch / dp;
          // Hybrid sharding: one copy of the weights per zero_replicas groups.
          if (training.zero == 3 && training.zero_replicas > 1 && dp % training.zero_replicas == 0)
            l.dp_shard = dp / training.zero_replicas;
          Result<LayoutStrategy> s = layout_strategy(*view.graph, cluster, l);
          if (!s) last = s.error();
          if (!s) continue;
          const size_t matched = engine_matches(view, s->strategy, nullptr);
          const bool accepted =
              engine_refusals(target, m.config, m.seq, l, cluster.devices, cluster.gpus_per_node)
                  .empty();
          for (Tier* t : {&tiers[1], accepted ? &tiers[0] : nullptr}) {
            if (t == nullptr) continue;
            if (matched > t->matched || t->best.empty()) t->best.clear();
            if (matched >= t->matched || t->best.empty()) t->best.push_back(l);
            t->matched = std::max(t->matched, matched);
          }
        }
      }
    }
  }
  const std::vector<Layout>& best = tiers[tiers[0].best.empty() ? 1 : 0].best;
  const size_t best_matched = tiers[tiers[0].best.empty() ? 1 : 0].matched;
  if (best.empty())
    return engine_error("no uniform layout of " + quoted_text(view.graph->name) + " on " +
                        engine_num(cluster.devices) + " devices with this pipeline (" + last.where +
                        ": " + last.message + ")");
  e.layout = best[0];
  e.uniform = best_matched == view.plan->strategy.size();
  e.plan_step_time_s = e.layout_step_time_s = view.plan->step_time_s;
  if (e.uniform) return std::nullopt;
  // The nearest: the least step time among those that match most, priced
  // with the plan's own recomputation of each block.
  LayoutStrategy chosen;
  bool priced = false;
  for (size_t i = 0; i < best.size() && i < kEngineMaxPriced; ++i) {
    Result<LayoutStrategy> s = layout_strategy(*view.graph, cluster, best[i]);
    if (!s) continue;
    s->cluster.training = training;
    Result<PipelinePlan> p = evaluate_pipeline(*view.graph, s->cluster, s->strategy);
    if (!p || (priced && p->plan.step_time_s >= e.layout_step_time_s)) continue;
    e.layout = best[i];
    e.layout_step_time_s = p->plan.step_time_s;
    chosen = std::move(s).value();
    priced = true;
  }
  if (!priced) return engine_error("the nearest uniform layout cannot be priced");
  std::vector<int> differing;
  engine_matches(view, chosen.strategy, &differing);
  e.differences = engine_differences(view, chosen.strategy, differing);
  return std::nullopt;
}

// "full on the first 4 blocks of each stage", "selective on every block".
std::string engine_recompute_text(const Layout& l) {
  if (l.recompute_blocks == 0) return std::string(recompute_name(l.recompute)) + " on every block";
  return std::string(recompute_name(l.recompute)) + " on the first " +
         engine_num(l.recompute_blocks) + " blocks of each " +
         (l.vpp > 1 ? "virtual stage" : "stage") + ", none on the others";
}

// The layout the engine runs in place of `e.layout` when it cannot run the
// plan's recomputation `modes` (engine_runs()), priced by its own strategy
// and training; the header and a note say so.
std::optional<Error> engine_heavier(ExportTarget target, const std::vector<Recompute>& modes,
                                    const Graph& graph, const Cluster& cluster, EngineJob& job,
                                    Exported& e) {
  EngineRecompute runs = engine_runs(target, modes, *e.layout);
  e.layout = runs.layout;
  if (runs.exact) return std::nullopt;
  Result<LayoutStrategy> s = layout_strategy(graph, cluster, runs.layout);
  if (!s)
    return engine_error("the layout with the engine's recomputation cannot be built (" +
                        s.error().where + ": " + s.error().message + ")");
  Result<PipelinePlan> p = evaluate_pipeline(graph, s->cluster, s->strategy);
  if (!p)
    return engine_error("the layout with the engine's recomputation cannot be priced (" +
                        p.error().where + ": " + p.error().message + ")");
  e.layout_step_time_s = p->plan.step_time_s;
  job.heavier_than = engine_modes_text(modes);
  const char* engine = target == ExportTarget::kMegatron ? "Megatron-LM" : "torchtitan";
  e.notes.push_back(std::string(engine) + " cannot run the recomputation planned (" +
                    job.heavier_than + "): it runs " + engine_recompute_text(runs.layout) +
                    ", which recomputes at least as much in every stage, priced at " +
                    engine_seconds(e.layout_step_time_s) + " a step");
  return std::nullopt;
}

Result<EngineModel> engine_model_for(ExportTarget target, const Graph& graph) {
  const bool megatron = target == ExportTarget::kMegatron;
  if (!megatron && target != ExportTarget::kTorchtitan)
    return engine_error("not a Megatron-LM or torchtitan target");
  return engine_model(graph, megatron ? "Megatron-LM" : "torchtitan");
}

// The engine's start-up rules (export/engine_rules.hpp) on the layout it
// would run: an error at "emit" naming the first rule it breaks, its source
// and the nearest layout that breaks none.
std::optional<Error> engine_check(ExportTarget target, const EngineJob& job, const Layout& l) {
  const EngineModel& m = *job.model;
  const Cluster& c = *job.cluster;
  const std::vector<EngineRefusal> refused =
      engine_refusals(target, m.config, m.seq, l, c.devices, c.gpus_per_node);
  if (refused.empty()) return std::nullopt;
  const EngineRefusal& r = refused.front();
  const std::optional<Layout> nearest =
      nearest_accepted_layout(target, m.config, m.seq, l, c.devices, c.gpus_per_node);
  return engine_error(
      std::string(target == ExportTarget::kMegatron ? "Megatron-LM" : "torchtitan") +
      " refuses the layout " + layout_text(l) + " at start-up: rule " + r.rule + ", " + r.message +
      " (" + r.source + ")" +
      (refused.size() > 1
           ? "; and " + engine_num(static_cast<int64_t>(refused.size() - 1)) + " more rule(s)"
           : "") +
      (nearest ? "; the nearest layout it accepts: " + layout_text(*nearest)
               : "; no layout near it is accepted"));
}

void engine_write(ExportTarget target, const EngineJob& job, Exported& e) {
  const bool megatron = target == ExportTarget::kMegatron;
  e.target = target;
  e.file_name = megatron ? "megatron_args.sh" : "torchtitan.toml";
  e.text = megatron ? engine_megatron(job, e) : engine_torchtitan(job, e);
}

}  // namespace

std::string engine_num(int64_t n) { return std::to_string(n); }
std::string engine_double(double d) { return json_detail::Json(d).dump(); }

std::vector<Recompute> engine_block_modes(const Training& t, int64_t blocks) {
  const auto resolved = [](Recompute r) { return r == Recompute::kAuto ? Recompute::kNone : r; };
  std::vector<Recompute> modes(static_cast<size_t>(std::max<int64_t>(blocks, 0)), Recompute::kNone);
  for (size_t b = 0; b < modes.size(); ++b) {
    if (!t.recompute_of_block.empty()) {
      if (b < t.recompute_of_block.size()) modes[b] = resolved(t.recompute_of_block[b]);
    } else {
      const bool first = t.recompute_blocks < 0 || static_cast<int64_t>(b) < t.recompute_blocks;
      modes[b] = resolved(first ? t.recompute : t.recompute_rest);
    }
  }
  return modes;
}

std::string engine_modes_text(const std::vector<Recompute>& modes) {
  std::string out;
  for (size_t i = 0, j = 0; i < modes.size(); i = ++j) {
    while (j + 1 < modes.size() && modes[j + 1] == modes[i]) ++j;
    if (i == 0 && j + 1 == modes.size())
      return std::string(recompute_name(modes[i])) + " on every block";
    out += (out.empty() ? "" : ", ") + std::string(recompute_name(modes[i])) + " on block" +
           (j > i ? "s " + engine_num(static_cast<int64_t>(i)) + "-" : " ") +
           engine_num(static_cast<int64_t>(j));
  }
  return out.empty() ? "none on every block" : out;
}

EngineRecompute engine_runs(ExportTarget target, const std::vector<Recompute>& modes,
                            const Layout& layout) {
  EngineRecompute out{layout, true};
  Layout& l = out.layout;
  l.recompute_blocks = 0;
  const bool same =
      std::all_of(modes.begin(), modes.end(), [&](Recompute r) { return r == modes[0]; });
  const bool any_full = std::find(modes.begin(), modes.end(), Recompute::kFull) != modes.end();
  l.recompute = modes.empty() ? Recompute::kNone : modes[0];
  if (same) return out;
  out.exact = false;
  // torchtitan has one mode for every block; Megatron-LM's selective is on
  // every block too: a mix without full is selective on all of them.
  l.recompute = any_full ? Recompute::kFull : Recompute::kSelective;
  if (target == ExportTarget::kTorchtitan || !any_full) return out;
  // Megatron-LM's block method: full on the first k blocks of each
  // (virtual) stage, none on the others. k the most blocks that a chunk
  // recomputes in the plan (full or selective), so that no chunk holds more
  // activations than planned; exact when every chunk is full on its first
  // k blocks and none on the rest.
  Result<std::vector<int64_t>> stages = stage_blocks(layout, static_cast<int64_t>(modes.size()));
  if (!stages) return out;
  int64_t k = 0, fewest = INT64_MAX, at = 0, first = -1;
  bool block = true;
  for (int64_t stage : *stages) {
    const int64_t chunks = stage % layout.vpp == 0 ? layout.vpp : 1, size = stage / chunks;
    for (int64_t c = 0; c < chunks; ++c, at += size) {
      int64_t recomputed = 0;
      for (int64_t b = at; b < at + size; ++b)
        recomputed += modes[static_cast<size_t>(b)] != Recompute::kNone ? 1 : 0;
      for (int64_t b = at; b < at + size; ++b)
        block = block && modes[static_cast<size_t>(b)] ==
                             (b - at < recomputed ? Recompute::kFull : Recompute::kNone);
      if (first < 0) first = recomputed;
      block = block && recomputed == first;
      k = std::max(k, recomputed);
      fewest = std::min(fewest, size);
    }
  }
  if (k < fewest) l.recompute_blocks = k;
  out.exact = block && k < fewest;
  return out;
}

std::string engine_header(const char* engine, const EngineJob& job, const Exported& e) {
  const EngineModel& m = *job.model;
  const LlmConfig& c = m.config;
  const Cluster& cluster = *job.cluster;
  std::string h = std::string("# ") + engine + " for " + comment_text(job.graph->name) + " on " +
                  engine_num(cluster.devices) + " devices, from a PaSE Planner " +
                  (job.from_plan ? "plan" : "layout") + "\n" +
                  "# model: " + engine_num(c.num_layers) + " layers, width " +
                  engine_num(c.hidden_size) + ", " + engine_num(c.num_heads) + " heads (" +
                  engine_num(c.num_kv_heads) + " key-value), MLP " +
                  engine_num(c.intermediate_size) + ", vocabulary " + engine_num(c.vocab_size);
  if (m.padded_vocab != c.vocab_size) h += " (padded to " + engine_num(m.padded_vocab) + ")";
  if (c.num_experts > 0)
    h +=
        ", " + engine_num(c.num_experts) + " experts (top " + engine_num(c.experts_per_token) + ")";
  h += ", sequence " + engine_num(m.seq) + "\n# layout: " + layout_text(*e.layout) + "\n";
  const std::string model =
      std::string(" (") + cost_model_name(cluster.cost_model) + " cost model)\n";
  if (!job.from_plan)
    h += "# the layout's predicted step time " + engine_seconds(e.plan_step_time_s) + model;
  else if (e.uniform)
    h += "# the plan is uniform; predicted step time " + engine_seconds(job.plan_step_time_s) +
         model;
  else
    h += "# the plan is not uniform; the nearest uniform layout's predicted step time is " +
         engine_seconds(e.layout_step_time_s) + ", the plan's " +
         engine_seconds(job.plan_step_time_s) + model;
  if (!job.heavier_than.empty())
    h += "# recomputation: " + std::string(job.from_plan ? "the plan's" : "the layout's") + " (" +
         job.heavier_than + ") is not one " +
         (e.target == ExportTarget::kMegatron ? "Megatron-LM" : "torchtitan") +
         " runs; this file runs " + engine_recompute_text(*e.layout) +
         ", heavier, at a predicted " + engine_seconds(e.layout_step_time_s) + " a step\n";
  for (const std::string& d : e.differences)
    h += "#   the plan differs at " + comment_text(d) + "\n";
  for (const std::string& n : e.notes) h += "# note: " + comment_text(n) + "\n";
  return h;
}

Result<Exported> export_engine(ExportTarget target, const PlanView& view) {
  if (view.graph == nullptr || view.plan_graph == nullptr || view.cluster == nullptr ||
      view.plan == nullptr)
    return engine_error("nothing to export: no plan");
  Result<EngineModel> m = engine_model_for(target, *view.graph);
  if (!m) return m.error();
  if (view.plan->strategy.size() != view.plan_graph->vertices.size())
    return engine_error("the plan's strategy is not over the graph's vertices");
  const Training training = view.plan->training ? *view.plan->training : view.cluster->training;
  Exported e;
  if (std::optional<Error> error = engine_fit(target, view, training, *m, e)) return *error;
  EngineJob job{view.graph,
                view.cluster,
                &*m,
                true,
                view.plan->step_time_s,
                view.pipeline != nullptr && view.pipeline->schedule == Schedule::kGPipe,
                {}};
  const std::vector<Recompute> modes = engine_block_modes(training, m->config.num_layers);
  if (std::optional<Error> error =
          engine_heavier(target, modes, *view.graph, *view.cluster, job, e))
    return *error;
  if (std::optional<Error> error = engine_check(target, job, *e.layout)) return *error;
  engine_write(target, job, e);
  return e;
}

Result<Exported> export_engine_layout(ExportTarget target, const Graph& graph,
                                      const Cluster& cluster, const Layout& layout) {
  Result<EngineModel> m = engine_model_for(target, graph);
  if (!m) return m.error();
  Result<LayoutStrategy> s = layout_strategy(graph, cluster, layout);
  if (!s) return s.error();
  Result<PipelinePlan> p = evaluate_pipeline(graph, s->cluster, s->strategy);
  if (!p) return p.error();
  Exported e;
  e.layout = layout;
  e.plan_step_time_s = e.layout_step_time_s = p->plan.step_time_s;
  EngineJob job{&graph, &cluster, &*m, false, p->plan.step_time_s, false, {}};
  const std::vector<Recompute> modes =
      engine_block_modes(s->cluster.training, m->config.num_layers);
  if (std::optional<Error> error = engine_heavier(target, modes, graph, cluster, job, e))
    return *error;
  if (std::optional<Error> error = engine_check(target, job, *e.layout)) return *error;
  engine_write(target, job, e);
  return e;
}

}  // namespace pase
