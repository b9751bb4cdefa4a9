// Megatron-LM arguments and torchtitan's TOML for a plan of a language model
// (export/engines.hpp; core/docs/export.md, "Megatron-LM and torchtitan").
// The plan's layout is found by building the strategy of every candidate
// layout (layout_strategy(): the degrees the plan's pipeline and device
// count allow) and comparing it with the plan vertex by vertex: a candidate
// that matches every vertex is the plan; else the one that matches most is
// the nearest uniform layout, priced beside the plan.
#include "export/engines.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "export/engine_model.hpp"
#include "export/escape.hpp"
#include "model/cost_model.hpp"
#include "pase/layout.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "util/text.hpp"

namespace pase {
namespace {

// At most this many candidate layouts are built, and this many that match
// equally well are priced to break the tie.
constexpr size_t kEngineMaxCandidates = 4096;
constexpr size_t kEngineMaxPriced = 8;

Error engine_error(const std::string& message) { return Error{message, "emit"}; }
std::string engine_num(int64_t n) { return std::to_string(n); }

std::string engine_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g s", s);
  return buf;
}

// The recomputation of each decoder block as the plan trains: `first` on
// blocks [0, count), `rest` on the others (count = blocks when uniform).
struct EngineRecompute {
  Recompute first = Recompute::kNone, rest = Recompute::kNone;
  int64_t count = 0;
  bool uniform() const { return first == rest; }
  // "full on blocks 0-11, selective on the others"
  std::string text() const {
    return std::string(recompute_name(first)) + " on blocks 0-" + engine_num(count - 1) + ", " +
           recompute_name(rest) + " on the others";
  }
};

EngineRecompute engine_recompute(const Training& t, int64_t blocks) {
  const auto resolved = [](Recompute r) { return r == Recompute::kAuto ? Recompute::kNone : r; };
  EngineRecompute r{resolved(t.recompute), resolved(t.recompute_rest), t.recompute_blocks};
  if (r.count < 0 || r.count >= blocks) r.rest = r.first;
  if (r.count == 0) r.first = r.rest;
  if (r.uniform()) r.count = blocks;
  return r;
}

std::vector<int64_t> engine_divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
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
// times): the plan's own when uniform, else the nearest.
std::optional<Error> engine_fit(const PlanView& view, const Training& training,
                                const EngineModel& m, Exported& e) {
  const Cluster& cluster = *view.cluster;
  const PipelineInfo* pipe = view.pipeline;
  // What the plan fixes: the pipeline, the micro-batch, ZeRO and the
  // recomputation; the degrees are searched.
  Layout base{.pp = pipe == nullptr ? 1 : pipe->stages,
              .zero = training.zero,
              .recompute = engine_recompute(training, m.config.num_layers).first,
              .gbs = view.graph->model->spec->inputs[0].second[0],
              .vpp = pipe == nullptr ? 1 : pipe->virtual_stages};
  const int64_t micro_batch =
      base.gbs / (pipe == nullptr ? 1 : std::max<int64_t>(pipe->microbatches, 1));
  if (base.pp < 1 || cluster.devices % base.pp != 0)
    return engine_error("the pipeline's stages do not divide the devices");
  const int64_t per_stage = cluster.devices / base.pp, experts = m.config.num_experts;
  // Every tp x cp x dp of a stage's devices whose dp divides the
  // micro-batch, each ep of the experts, with and without sp.
  std::vector<Layout> best;
  size_t best_matched = 0, tried = 0;
  Error last = engine_error("no layout of " + engine_num(cluster.devices) + " devices");
  for (int64_t tp : engine_divisors(per_stage)) {
    for (int64_t cp : engine_divisors(per_stage / tp)) {
      const int64_t dp = per_stage / (tp * cp);
      for (int64_t ep : engine_divisors(dp * cp)) {
        if (micro_batch % dp != 0 || (experts == 0 && ep > 1) || (experts > 0 && experts % ep != 0))
          continue;
        for (int sp = 0; sp < (tp > 1 ? 2 : 1) && ++tried <= kEngineMaxCandidates; ++sp) {
          Layout l = base;
          l.tp = tp, l.dp = dp, l.cp = cp, l.ep = ep, l.sp = sp == 1, l.mbs = micro_batch / dp;
          Result<LayoutStrategy> s = layout_strategy(*view.graph, cluster, l);
          if (!s) last = s.error();
          if (!s) continue;
          const size_t matched = engine_matches(view, s->strategy, nullptr);
          if (matched > best_matched || best.empty()) best.clear();
          if (matched >= best_matched || best.empty()) best.push_back(l);
          best_matched = std::max(best_matched, matched);
        }
      }
    }
  }
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

// The block counts of the layout's stages when they differ: "7 or 8".
std::string engine_uneven(const Layout& l, int64_t blocks) {
  return l.vpp > 1 || blocks % l.pp == 0
             ? ""
             : engine_num(blocks / l.pp) + " or " + engine_num(blocks / l.pp + 1);
}

// The header both files start with, as comment lines; the graph's name and
// the lines that quote the input's names escaped (comment_text()).
std::string engine_header(const char* engine, const PlanView& view, const EngineModel& m,
                          const Exported& e) {
  const LlmConfig& c = m.config;
  std::string h = std::string("# ") + engine + " for " + comment_text(view.graph->name) + " on " +
                  engine_num(view.cluster->devices) + " devices, from a PaSE Planner plan\n" +
                  "# model: " + engine_num(c.num_layers) + " layers, width " +
                  engine_num(c.hidden_size) + ", " + engine_num(c.num_heads) + " heads (" +
                  engine_num(c.num_kv_heads) + " key-value), MLP " +
                  engine_num(c.intermediate_size) + ", vocabulary " + engine_num(c.vocab_size);
  if (m.padded_vocab != c.vocab_size) h += " (padded to " + engine_num(m.padded_vocab) + ")";
  if (c.num_experts > 0)
    h +=
        ", " + engine_num(c.num_experts) + " experts (top " + engine_num(c.experts_per_token) + ")";
  h += ", sequence " + engine_num(m.seq) + "\n# layout: " + layout_text(*e.layout) +
       "\n# the plan is ";
  h += (e.uniform ? "uniform; predicted step time " + engine_seconds(view.plan->step_time_s)
                  : "not uniform; the nearest uniform layout's predicted step time is " +
                        engine_seconds(e.layout_step_time_s) + ", the plan's " +
                        engine_seconds(view.plan->step_time_s)) +
       " (" + cost_model_name(view.cluster->cost_model) + " cost model)\n";
  for (const std::string& d : e.differences)
    h += "#   the plan differs at " + comment_text(d) + "\n";
  for (const std::string& n : e.notes) h += "# note: " + comment_text(n) + "\n";
  return h;
}

std::string engine_megatron(const PlanView& view, const EngineModel& m, const EngineRecompute& rc,
                            Exported& e) {
  const Layout& l = *e.layout;
  const LlmConfig& c = m.config;
  std::vector<std::string> a;
  const auto arg = [&](std::string f, int64_t n) { a.push_back(f + ' ' + engine_num(n)); };
  arg("--tensor-model-parallel-size", l.tp);
  arg("--pipeline-model-parallel-size", l.pp);
  if (l.vpp > 1) arg("--num-layers-per-virtual-pipeline-stage", c.num_layers / (l.pp * l.vpp));
  if (l.cp > 1) arg("--context-parallel-size", l.cp);
  if (l.sp) a.push_back("--sequence-parallel");
  if (c.num_experts > 0) arg("--expert-model-parallel-size", l.ep);
  if (l.zero >= 1) a.push_back("--use-distributed-optimizer");
  if (l.zero >= 2)
    e.notes.push_back("ZeRO-" + engine_num(l.zero) + " is --use-distributed-optimizer only " +
                      "approximately: it shards optimizer state and gradients, not weights");
  // Recomputation: full on the first blocks of each stage (the block
  // method), or one granularity for every block.
  if (rc.first == Recompute::kFull && !rc.uniform()) {
    const int64_t count = (rc.count + l.pp * l.vpp - 1) / (l.pp * l.vpp);
    a.insert(a.end(), {"--recompute-granularity full", "--recompute-method block"});
    arg("--recompute-num-layers", count);
    if (l.pp * l.vpp > 1 || rc.rest != Recompute::kNone)
      e.notes.push_back("the plan recomputes " + rc.text() + "; Megatron-LM recomputes the first " +
                        engine_num(count) + " blocks of each pipeline stage fully and keeps the " +
                        "others' activations");
  } else if (rc.first != Recompute::kNone || rc.rest != Recompute::kNone) {
    const Recompute every = rc.first != Recompute::kNone ? rc.first : rc.rest;
    a.push_back(std::string("--recompute-granularity ") + recompute_name(every));
    if (every == Recompute::kFull)
      a.insert(a.end(), {"--recompute-method uniform", "--recompute-num-layers 1"});
    if (!rc.uniform())
      e.notes.push_back("the plan recomputes " + rc.text() + "; Megatron-LM's " +
                        recompute_name(every) + " recomputation applies to every block");
  }
  arg("--micro-batch-size", l.mbs);
  arg("--global-batch-size", l.gbs);
  arg("--seq-length", m.seq);
  arg("--num-layers", c.num_layers);
  arg("--hidden-size", c.hidden_size);
  arg("--ffn-hidden-size", c.intermediate_size);
  arg("--num-attention-heads", c.num_heads);
  if (c.num_kv_heads != c.num_heads) a.push_back("--group-query-attention");
  if (c.num_kv_heads != c.num_heads) arg("--num-query-groups", c.num_kv_heads);
  if (c.head_dim * c.num_heads != c.hidden_size) arg("--kv-channels", c.head_dim);
  arg("--max-position-embeddings", c.max_positions);
  if (!m.positions_known)
    e.notes.push_back("--max-position-embeddings is the planned sequence: the graph has no other");
  a.push_back(std::string("--position-embedding-type ") +
              (c.learned_positions ? "learned_absolute" : "rope"));
  a.push_back(std::string("--normalization ") + (c.rms_norm ? "RMSNorm" : "LayerNorm"));
  if (c.gated_mlp) a.push_back("--swiglu");
  if (!c.tied_embeddings) a.push_back("--untie-embeddings-and-output-weights");
  if (!c.out_bias && !c.mlp_bias) a.push_back("--disable-bias-linear");
  if (c.qkv_bias && !c.out_bias && !c.mlp_bias) a.push_back("--add-qkv-bias");
  if (c.out_bias != c.mlp_bias || (c.out_bias && !c.qkv_bias))
    e.notes.push_back("the model's biases (on some projections only) have no exact form");
  if (c.num_experts > 0) arg("--num-experts", c.num_experts);
  if (c.num_experts > 0) arg("--moe-router-topk", c.experts_per_token);
  if (c.num_experts > 0 && l.tp > 1 && !l.sp)
    e.notes.push_back("Megatron-LM needs --sequence-parallel with tensor and expert parallelism");
  // Megatron-LM pads the tokenizer's vocabulary to a multiple of this x tp:
  // the largest power of two up to its default 128 that gives the graph's
  // rows, else the rows over tp (the layout's tp divides them).
  int64_t divisible = m.padded_vocab / l.tp;
  for (int64_t d = 128; d >= 1; d /= 2)
    if (padded_vocab(c.vocab_size, d * l.tp) == m.padded_vocab) {
      divisible = d;
      break;
    }
  arg("--make-vocab-size-divisible-by", divisible);
  a.push_back("--bf16");
  e.notes.push_back("the vocabulary (" + engine_num(c.vocab_size) + ") comes from the tokenizer; " +
                    "--make-vocab-size-divisible-by " + engine_num(divisible) + " x tp " +
                    engine_num(l.tp) +
                    (m.padded_vocab == c.vocab_size
                         ? " divides it, as the plan has it"
                         : " pads it to the plan's " + engine_num(m.padded_vocab) + " rows"));
  if (view.pipeline != nullptr && view.pipeline->schedule == Schedule::kGPipe && l.pp > 1)
    e.notes.push_back("the plan's GPipe schedule runs as 1F1B (the same step time, less memory)");
  if (const std::string uneven = engine_uneven(l, c.num_layers); !uneven.empty())
    e.notes.push_back("the layout's stages hold " + uneven + " blocks: give them with " +
                      "--decoder-first/last-pipeline-num-layers");
  std::string args;
  for (size_t i = 0; i < a.size(); ++i) args += a[i] + (i + 1 < a.size() ? " \\\n" : "\n");
  return engine_header("Megatron-LM arguments", view, m, e) +
         "# append to: torchrun ... pretrain_gpt.py \\\n" + args;
}

std::string engine_torchtitan(const PlanView& view, const EngineModel& m, const EngineRecompute& rc,
                              Exported& e) {
  const Layout& l = *e.layout;
  const LlmConfig& c = m.config;
  std::string t = "[parallelism]\n";
  const auto key = [&](const std::string& name, const std::string& value) {
    t += name + " = " + value + "\n";
  };
  // ZeRO-3 is FSDP, none is replication; 1 and 2 are nearest to FSDP.
  const int64_t shard = l.zero == 0 ? 1 : l.dp;
  key("data_parallel_replicate_degree", engine_num(l.zero == 0 ? l.dp : 1));
  key("data_parallel_shard_degree", engine_num(shard));
  if (l.zero == 1 || l.zero == 2)
    e.notes.push_back("ZeRO-" + engine_num(l.zero) + " has no exact torchtitan form: FSDP " +
                      "(data_parallel_shard_degree) shards the weights too, as ZeRO-3 does");
  key("tensor_parallel_degree", engine_num(l.tp));
  key("enable_async_tensor_parallel", "false");
  if (l.tp > 1 && !l.sp)
    e.notes.push_back(
        "torchtitan's tensor parallelism is always sequence-parallel; the layout's not");
  key("context_parallel_degree", engine_num(l.cp));
  key("pipeline_parallel_degree", engine_num(l.pp));
  if (l.pp > 1) {
    const bool gpipe = view.pipeline != nullptr && view.pipeline->schedule == Schedule::kGPipe;
    key("pipeline_parallel_schedule",
        l.vpp > 1 ? "\"Interleaved1F1B\"" : (gpipe ? "\"GPipe\"" : "\"1F1B\""));
    key("pipeline_parallel_microbatch_size", engine_num(l.mbs));
  }
  // The blocks of each (virtual) stage, the embedding and head beside them.
  if (l.pp > 1 && c.num_layers % (l.pp * l.vpp) == 0) {
    key("pipeline_parallel_layers_per_stage", engine_num(c.num_layers / (l.pp * l.vpp)));
    key("pipeline_parallel_first_stage_less_layers", "0");
    key("pipeline_parallel_last_stage_less_layers", "0");
  } else if (l.pp > 1) {
    e.notes.push_back("the layout's stages hold " + engine_uneven(l, c.num_layers) +
                      " blocks: give pipeline_parallel_split_points for them");
  }
  if (c.num_experts > 0) key("expert_parallel_degree", engine_num(l.ep));
  if (c.num_experts > 0 && l.ep > 1 && (l.ep < l.cp || l.ep > shard * l.cp))
    e.notes.push_back(
        "torchtitan takes expert_parallel_degree from context_parallel_degree to "
        "data_parallel_shard_degree times it; this one is outside");
  // Without a pipeline torchtitan accumulates the gradients of
  // global / (local x data-parallel) micro-batches.
  t += "\n[training]\n";
  key("local_batch_size", engine_num(l.pp > 1 ? l.gbs / l.dp : l.mbs));
  key("global_batch_size", engine_num(l.gbs));
  key("seq_len", engine_num(m.seq));
  const Recompute mode = rc.uniform() || 2 * rc.count >= c.num_layers ? rc.first : rc.rest;
  if (!rc.uniform())
    e.notes.push_back("the plan recomputes " + rc.text() +
                      "; torchtitan takes one mode for every " + "block, and " +
                      recompute_name(mode) + " (that of most blocks) is the nearest");
  t += "\n[activation_checkpoint]\n";
  key("mode", std::string("\"") + recompute_name(mode) + "\"");
  if (mode == Recompute::kSelective) key("selective_ac_option", "\"op\"");
  if (mode == Recompute::kSelective)
    e.notes.push_back(
        "torchtitan's op-level selective checkpointing (keeping attention and some "
        "matrix products) is near the planner's selective, not the same");
  if (m.padded_vocab != c.vocab_size)
    e.notes.push_back("torchtitan keeps the tokenizer's vocabulary (" + engine_num(c.vocab_size) +
                      "); the plan priced it padded to " + engine_num(m.padded_vocab) + " rows");
  return engine_header("torchtitan job configuration", view, m, e) +
         "# with [model] name and flavor set to the model\n" + t;
}

}  // namespace

Result<Exported> export_engine(ExportTarget target, const PlanView& view) {
  const bool megatron = target == ExportTarget::kMegatron;
  if (!megatron && target != ExportTarget::kTorchtitan)
    return engine_error("not a Megatron-LM or torchtitan target");
  if (view.graph == nullptr || view.plan_graph == nullptr || view.cluster == nullptr ||
      view.plan == nullptr)
    return engine_error("nothing to export: no plan");
  Result<EngineModel> m = engine_model(*view.graph, megatron ? "Megatron-LM" : "torchtitan");
  if (!m) return m.error();
  if (view.plan->strategy.size() != view.plan_graph->vertices.size())
    return engine_error("the plan's strategy is not over the graph's vertices");
  const Training training = view.plan->training ? *view.plan->training : view.cluster->training;
  Exported e;
  if (std::optional<Error> error = engine_fit(view, training, *m, e)) return *error;
  const EngineRecompute rc = engine_recompute(training, m->config.num_layers);
  e.target = target;
  e.file_name = megatron ? "megatron_args.sh" : "torchtitan.toml";
  e.text = megatron ? engine_megatron(view, *m, rc, e) : engine_torchtitan(view, *m, rc, e);
  return e;
}

}  // namespace pase
