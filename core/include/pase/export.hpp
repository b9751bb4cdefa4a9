// Plans that run (core/docs/export.md): a plan as a JAX program that runs
// it sharded and checks itself, or, for a language model, as Megatron-LM's
// launch script or torchtitan's TOML of the plan's layout (the nearest
// uniform one when the plan is not) or of a layout given.
//
// USAGE
//   PlanView view{&graph, &graph, &cluster, &plan, nullptr};
//   Result<Exported> e = export_plan(ExportTarget::kJax, view);
//   write e->text to e->file_name; run `python plan.py --check`.
//
// ERRORS name the layer or the feature that cannot be exported, at "emit"
// ("layer lm_head splits its dimension e 3 ways on 8 devices: no axes of the
// JAX mesh (2 x 2 x 2) multiply to that split ..."; "Megatron-LM export
// needs a language model's graph ..."), or an unknown target.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pase/cluster.hpp"
#include "pase/graph.hpp"
#include "pase/layout.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase {

enum class ExportTarget : uint8_t { kJax, kMegatron, kTorchtitan };

// "jax", "megatron", "torchtitan"; an error at "emit" lists them.
Result<ExportTarget> parse_export_target(std::string_view name);
const char* export_target_name(ExportTarget target);

// What an export reads. `graph` is the graph planned (with a pipeline: at
// the global batch); `plan_graph` the graph the strategy is over (a
// pipeline's micro-batch graph, else `graph`); `pipeline` is null without
// a pipeline.
struct PlanView {
  const Graph* graph = nullptr;
  const Graph* plan_graph = nullptr;
  const Cluster* cluster = nullptr;
  const Plan* plan = nullptr;
  const PipelineInfo* pipeline = nullptr;
};

struct Exported {
  ExportTarget target = ExportTarget::kJax;
  std::string file_name;  // a suggested name: plan.py, megatron_args.sh, torchtitan.toml
  std::string text;       // the program, the launch script or the TOML
  // What is exported and what is not, in sentences (for example, a
  // pipeline's stages run one after the other in the JAX program).
  std::vector<std::string> notes;
  // Megatron-LM and torchtitan: whether the plan is uniform in the way the
  // engine expresses; if not, the layers that differ and how
  // ("layer3_q: heads split 2 ways, the layout splits them 4"), and the
  // emitted text is that of the nearest uniform layout, whose predicted
  // step time is given beside the plan's.
  bool uniform = true;
  std::vector<std::string> differences;
  std::optional<Layout> layout;
  double layout_step_time_s = 0;
  double plan_step_time_s = 0;
};

Result<Exported> export_plan(ExportTarget target, const PlanView& view);

// The Megatron-LM launch script or the torchtitan TOML of `layout` itself,
// with no plan to fit (what `pase layouts --emit` writes). `graph` is the
// language model's graph at the layout's global batch, its vocabulary padded
// as layout_strategy() expects (a multiple of kLlmVocabMultiple x tp); the
// layout is priced by evaluate_pipeline() of layout_strategy(): `layout`
// is what the engine runs (with the recomputation it runs: heavier than the
// layout's where the engine cannot express that, priced so, with a note),
// `uniform` is true, `plan_step_time_s` the given layout's step time and
// `layout_step_time_s` the emitted one's. Errors: the layout's own
// (layout_strategy(), at "layout.<field>"), a graph that is not a language
// model's or a JAX target (at "emit").
Result<Exported> export_layout(ExportTarget target, const Graph& graph, const Cluster& cluster,
                               const Layout& layout);

}  // namespace pase
