// The emit target (pase_fuzz_emit): the three emitters (export.hpp: the JAX
// program, Megatron-LM's arguments, torchtitan's TOML) on what a user names
// and writes. The input is read as
//   - a pase-graph/1 document (it starts with '{' and parses as one): planned
//     at 4 devices on the JAX mesh when the search is small, as `pase plan
//     --emit` plans it;
//   - else, starting with '{' or '[', a saved plan as `pase emit --plan`
//     reads it (parse_any_strategy()), evaluated on tiny_llm()'s graph of 8
//     sequences at 8 devices;
//   - else a model's name: tiny_llm()'s graph named so, with the layout
//     kEmitLayout (a pipeline of 2 stages).
// Each is exported to all three targets. Nothing may crash, throw or hang,
// and:
//   - every error has a message; every emitted text is valid UTF-8 with no
//     control character but the line break, every note and difference none;
//   - a graph document or a name exports as the same graph named
//     kNeutralName does: both or neither, with the same notes, and the same
//     lines but those that carry the name, which stay one line each; so the
//     name cannot add or remove a line or change one that does not carry it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fuzz_target.hpp"
#include "pase/export.hpp"
#include "pase/layout.hpp"
#include "pase/pipeline.hpp"

namespace pase_fuzz {

inline constexpr std::string_view kNeutralName = "fuzz-neutral-name";
inline constexpr std::string_view kEmitLayout = "tp=2 pp=2 dp=2 sp=on mbs=1 gbs=8";
inline constexpr pase::ExportTarget kEmitTargets[] = {
    pase::ExportTarget::kJax, pase::ExportTarget::kMegatron, pase::ExportTarget::kTorchtitan};

// "" when an export (or its error) holds only clean text.
inline std::string check_export(const pase::Result<pase::Exported>& e, std::string_view what) {
  if (!e) {
    if (std::string f = check_error(e.error(), what); !f.empty()) return f;
    return check_text(e.error().message, std::string(what) + " error", "");
  }
  if (std::string f = check_text(e->text, what); !f.empty()) return f;
  for (const std::vector<std::string>* list : {&e->notes, &e->differences})
    for (const std::string& n : *list)
      if (std::string f = check_text(n, std::string(what) + " note", ""); !f.empty()) return f;
  return "";
}

// "" when `fuzzed` has the lines of `neutral` but those that carry
// kNeutralName there.
inline std::string check_lines(std::string_view fuzzed, std::string_view neutral,
                               std::string_view what) {
  const auto lines = [](std::string_view text) {
    std::vector<std::string_view> out;
    for (size_t at = 0;;) {
      const size_t end = text.find('\n', at);
      out.push_back(text.substr(at, end == std::string_view::npos ? end : end - at));
      if (end == std::string_view::npos) return out;
      at = end + 1;
    }
  };
  const std::vector<std::string_view> a = lines(fuzzed), b = lines(neutral);
  if (a.size() != b.size())
    return std::string(what) + ": the name makes " + std::to_string(a.size()) + " lines, not " +
           std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && b[i].find(kNeutralName) == std::string_view::npos)
      return std::string(what) + ": the name changes line " + std::to_string(i + 1) + " (" +
             std::string(b[i].substr(0, 120)) + ")";
  return "";
}

// Exports `view` to every target and checks each; with `neutral` (the same
// plan of the graph named kNeutralName), compares with it as well.
inline std::string check_emitted(const pase::PlanView& view, const pase::PlanView* neutral) {
  for (pase::ExportTarget target : kEmitTargets) {
    const std::string what = std::string("export_plan ") + pase::export_target_name(target);
    const pase::Result<pase::Exported> e = pase::export_plan(target, view);
    if (std::string f = check_export(e, what); !f.empty()) return f;
    if (neutral == nullptr) continue;
    const pase::Result<pase::Exported> n = pase::export_plan(target, *neutral);
    if (e.ok() != n.ok())
      return what + (e ? ": exports, but not under a neutral name: " + n.error().to_string()
                       : ": refused, but exports under a neutral name: " + e.error().to_string());
    if (!e) continue;
    if (std::string f = check_lines(e->text, n->text, what); !f.empty()) return f;
    if (e->notes.size() != n->notes.size() || e->differences != n->differences ||
        e->file_name != n->file_name || e->uniform != n->uniform)
      return what + ": the name changes the notes, differences or file name";
  }
  return "";
}

// tiny_llm()'s graph named `name`, its kEmitLayout strategy and evaluation.
struct EmitPlan {
  pase::Graph graph;
  pase::LayoutStrategy laid;
  pase::PipelinePlan piped;
  pase::PlanView view() const {
    return {&graph, &piped.graph, &laid.cluster, &piped.plan, &piped.pipeline};
  }
};

inline pase::Result<EmitPlan> emit_plan(std::string_view name) {
  pase::Result<pase::Layout> layout = pase::parse_layout(kEmitLayout);
  if (!layout) return layout.error();
  pase::Result<pase::Graph> graph =
      tiny_llm_graph(false, 8, name, pase::kLlmVocabMultiple * layout->tp);
  if (!graph) return graph.error();
  pase::Result<pase::LayoutStrategy> laid =
      pase::layout_strategy(*graph, pase::Cluster{.devices = 8}, *layout);
  if (!laid) return laid.error();
  pase::Result<pase::PipelinePlan> piped =
      pase::evaluate_pipeline(*graph, laid->cluster, laid->strategy);
  if (!piped) return piped.error();
  return EmitPlan{std::move(graph).value(), std::move(laid).value(), std::move(piped).value()};
}

inline std::string fuzz_emit_name(std::string_view name) {
  static const pase::Result<EmitPlan> neutral = emit_plan(kNeutralName);
  if (!neutral) return "the emit target's plan fails: " + neutral.error().to_string();
  const pase::Result<EmitPlan> named = emit_plan(name);
  if (!named) return check_error(named.error(), "a tiny model named by the input");
  if (named->piped.plan.cost != neutral->piped.plan.cost) return "the name changes the plan's cost";
  const pase::PlanView n = neutral->view();
  return check_emitted(named->view(), &n);
}

inline std::string fuzz_emit_graph(const pase::GraphSpec& spec) {
  pase::Result<pase::Graph> graph = pase::build_graph(spec);
  if (!graph) return check_error(graph.error(), "build_graph");
  if (graph->vertices.size() > kMaxVertices) return "";
  const pase::Cluster cluster{.devices = 4};
  pase::PlanOptions options;
  options.max_memory = kMaxMemory;
  options.enumeration.mesh_only = true;  // as `pase plan --emit jax` plans
  pase::Result<pase::SearchStats> stats = pase::estimate(*graph, cluster, options);
  if (!stats) return check_error(stats.error(), "estimate");
  if (static_cast<double>(stats->pairs) > kMaxPairs || stats->peak_bytes > kMaxMemory) return "";
  pase::Result<pase::Plan> plan = pase::plan(*graph, cluster, options);
  if (!plan) return check_error(plan.error(), "plan");
  pase::GraphSpec renamed = spec;
  renamed.name = kNeutralName;
  pase::Result<pase::Graph> neutral = pase::build_graph(renamed);
  if (!neutral)
    return "a graph that builds does not under a neutral name: " + neutral.error().to_string();
  pase::Result<pase::Plan> same = pase::evaluate(*neutral, cluster, plan->strategy);
  if (!same) return "a graph's plan is refused under a neutral name: " + same.error().to_string();
  const pase::PlanView n{&*neutral, &*neutral, &cluster, &*same, nullptr};
  return check_emitted(pase::PlanView{&*graph, &*graph, &cluster, &*plan, nullptr}, &n);
}

// As `pase emit --plan` reads a saved plan, on tiny_llm()'s graph.
inline std::string fuzz_emit_plan(std::string_view text) {
  static const pase::Result<pase::Graph> graph = tiny_llm_graph(false, 8, "fuzz");
  if (!graph) return "the emit target's graph does not build: " + graph.error().to_string();
  pase::Result<pase::PipelineStrategy> strategy = pase::parse_any_strategy(text);
  if (!strategy) return check_error(strategy.error(), "parse_any_strategy");
  const pase::Cluster cluster{.devices = 8};
  if (!strategy->stage_of.empty()) {
    pase::Result<pase::PipelinePlan> piped = pase::evaluate_pipeline(*graph, cluster, *strategy);
    if (!piped) return check_error(piped.error(), "evaluate_pipeline");
    return check_emitted(
        pase::PlanView{&*graph, &piped->graph, &cluster, &piped->plan, &piped->pipeline}, nullptr);
  }
  pase::Result<pase::Plan> plan = pase::evaluate(*graph, cluster, strategy->configs);
  if (!plan) return check_error(plan.error(), "evaluate");
  return check_emitted(pase::PlanView{&*graph, &*graph, &cluster, &*plan, nullptr}, nullptr);
}

inline std::string fuzz_emit(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  const char lead = first == std::string_view::npos ? '\0' : text[first];
  if (lead == '{') {
    if (pase::Result<pase::GraphSpec> spec = pase::parse_graph_spec(text))
      return fuzz_emit_graph(*spec);
  }
  if (lead == '{' || lead == '[') return fuzz_emit_plan(text);
  return fuzz_emit_name(text);
}

}  // namespace pase_fuzz
