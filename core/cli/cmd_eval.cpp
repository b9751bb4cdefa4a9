// pase eval: the cost of a given strategy (a list of configurations or a
// plan-result document) through evaluate(), as a table or JSON.
#include <optional>
#include <string>

#include "commands.hpp"
#include "flags.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/layout.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "plan_text.hpp"
#include "report.hpp"

namespace pase_cli {

std::string eval_usage() {
  return "usage: pase eval (--model NAME | --graph FILE [--dim NAME=SIZE ...])\n"
         "                 [--batch B] [--seq S] (--strategy FILE | --layout L) [options]\n\n"
         "Evaluates a strategy: a JSON list of configurations in vertex order, a\n"
         "pipeline strategy {\"configs\", \"stage_of\", \"microbatches\", \"schedule\"}, or a\n"
         "plan-result document (as written by 'pase plan --format json'); or a\n"
         "language model's layout in Megatron-LM's degrees, such as\n"
         "  --layout \"tp=8 pp=8 dp=16 cp=1 sp=on zero=1 recompute=selective mbs=1 gbs=1536\"\n"
         "(core/docs/practice-model.md; gbs builds a --model or a config.json at that\n"
         "batch).\n\n" +
         std::string(kGraphHelp) + std::string(kClusterHelp) +
         "  --memory GIB        memory of one device in GiB: says whether the strategy\n"
         "                      fits (default: no limit; 0: none)\n" +
         std::string(kHeadroomHelp) + std::string(kTrainingHelp) +
         "  --strategy FILE     the strategy ('-': standard input)\n"
         "  --layout L          a layout: tp, pp, dp, cp, ep, sp, zero, recompute, mbs,\n"
         "                      gbs, vpp as name=value items\n"
         "  --format FORMAT     text (default) or json\n" +
         std::string(kEmitHelp);
}

namespace {

// pase eval --layout: the layout's strategy on the graph at its global batch.
int run_layout(const Flags& flags, const Args& args, bool json, GraphSource source,
               const std::string& text) {
  pase::Result<pase::Layout> layout = pase::parse_layout(text);
  if (!layout) return input_error(layout.error());
  pase::Cluster cluster;
  if (auto failure = cluster_from_flags(flags, cluster)) return failure->report("eval");
  // A built-in model or a Hugging Face config is built at the layout's
  // global batch unless --batch says otherwise.
  const bool built = !source.model.empty() || (!source.path.empty() && is_config_file(source.path));
  const bool at_gbs = built && source.batch == 0 && layout->gbs > 0;
  if (at_gbs) source.batch = layout->gbs;
  // Its vocabulary padded as Megatron-LM pads it: to a multiple of 128 x tp.
  source.vocab_tp = layout->tp;
  pase::Result<pase::Graph> graph = load_source(source);
  if (!graph && at_gbs) {
    // Too large a gbs is the layout's error, not the graph's layers[0].
    GraphSource one = source;
    one.batch = 1;
    if (pase::Result<pase::Graph> small = load_source(one))
      if (auto e = pase::check_global_batch(*small, layout->gbs)) return input_error(*e);
  }
  if (!graph) return input_error(graph.error());
  pase::Result<pase::LayoutStrategy> laid = pase::layout_strategy(*graph, cluster, *layout);
  if (!laid) return input_error(laid.error());
  pase::Result<pase::PipelinePlan> piped =
      pase::evaluate_pipeline(*graph, laid->cluster, laid->strategy);
  if (!piped) return input_error(piped.error());
  const std::string out = json ? pase::pipeline_plan_to_json(laid->cluster, *piped)
                               : plan_text(piped->graph, laid->cluster, piped->plan,
                                           PlanSource::kEvaluated, &piped->pipeline) +
                                     pad_right("layout", 17) + pase::layout_text(*layout) + "\n";
  return finish_planning(
      flags, args,
      pase::PlanView{&*graph, &piped->graph, &laid->cluster, &piped->plan, &piped->pipeline}, out,
      json);
}

}  // namespace

int run_eval(const Args& args) {
  Flags flags;
  if (auto message = parse_planning_flags(args,
                                          {{"--strategy", true},
                                           {"--layout", true},
                                           {"--format", true},
                                           {"--emit", true},
                                           {"--output", true}},
                                          flags))
    return usage_error("eval", *message);
  if (std::optional<int> bad = check_emit_flag(flags, "eval")) return *bad;
  bool json = false;
  GraphSource source;
  pase::Cluster cluster;
  if (auto failure = format_from_flags(flags, json)) return failure->report("eval");
  if (auto failure = graph_source_from_flags(flags, source)) return failure->report("eval");
  std::optional<std::string> strategy_path = flags.get("--strategy");
  std::optional<std::string> layout_given = flags.get("--layout");
  if (strategy_path && layout_given)
    return usage_error("eval", "give --strategy or --layout, not both");
  if (layout_given) return run_layout(flags, args, json, source, *layout_given);
  if (!strategy_path) return usage_error("eval", "missing --strategy FILE (or --layout)");
  if (source.path == "-" && *strategy_path == "-") {
    return usage_error("eval", "--graph and --strategy cannot both read standard input");
  }
  if (auto failure = cluster_from_flags(flags, cluster)) return failure->report("eval");

  pase::Result<pase::Graph> graph = load_source(source);
  if (!graph) return input_error(graph.error());
  pase::Result<std::string> text = read_file(*strategy_path);
  if (!text) return input_error(text.error());
  pase::Result<pase::PipelineStrategy> strategy = pase::parse_any_strategy(*text);
  if (!strategy) return input_error(in_file(*strategy_path, strategy.error()));
  if (!strategy->stage_of.empty()) {
    pase::Result<pase::PipelinePlan> piped = pase::evaluate_pipeline(*graph, cluster, *strategy);
    if (!piped) return input_error(in_file(*strategy_path, piped.error()));
    const std::string out = json ? pase::pipeline_plan_to_json(cluster, *piped)
                                 : plan_text(piped->graph, cluster, piped->plan,
                                             PlanSource::kEvaluated, &piped->pipeline) +
                                       pad_right("strategy", 17) + display_name(*strategy_path) +
                                       "\n";
    return finish_planning(
        flags, args,
        pase::PlanView{&*graph, &piped->graph, &cluster, &piped->plan, &piped->pipeline}, out,
        json);
  }
  pase::Result<pase::Plan> result = pase::evaluate(*graph, cluster, strategy->configs);
  if (!result) return input_error(in_file(*strategy_path, result.error()));

  const std::string out = json
                              ? pase::plan_to_json(*graph, cluster, *result)
                              : plan_text(*graph, cluster, *result, PlanSource::kEvaluated) +
                                    pad_right("strategy", 17) + display_name(*strategy_path) + "\n";
  return finish_planning(flags, args, pase::PlanView{&*graph, &*graph, &cluster, &*result, nullptr},
                         out, json);
}

}  // namespace pase_cli
