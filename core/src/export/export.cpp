// export_plan(): the target's emitter (export.hpp).
#include "pase/export.hpp"

#include "export/engines.hpp"
#include "export/jax_program.hpp"
#include "util/text.hpp"

namespace pase {

Result<ExportTarget> parse_export_target(std::string_view name) {
  if (name == "jax") return ExportTarget::kJax;
  if (name == "megatron") return ExportTarget::kMegatron;
  if (name == "torchtitan") return ExportTarget::kTorchtitan;
  return Error{"unknown export target " + quoted_text(name) + "; known: jax, megatron, torchtitan",
               "emit"};
}

const char* export_target_name(ExportTarget target) {
  switch (target) {
    case ExportTarget::kJax:
      return "jax";
    case ExportTarget::kMegatron:
      return "megatron";
    case ExportTarget::kTorchtitan:
      return "torchtitan";
  }
  return "jax";
}

Result<Exported> export_plan(ExportTarget target, const PlanView& view) {
  if (view.graph == nullptr || view.plan_graph == nullptr || view.cluster == nullptr ||
      view.plan == nullptr)
    return Error{"nothing to export: no plan", "emit"};
  if (target == ExportTarget::kJax) return export_jax(view);
  return export_engine(target, view);
}

Result<Exported> export_layout(ExportTarget target, const Graph& graph, const Cluster& cluster,
                               const Layout& layout) {
  if (target == ExportTarget::kJax)
    return Error{
        "a layout is exported to Megatron-LM or torchtitan; its JAX program is that of "
        "its strategy (pase eval --layout ... --emit jax)",
        "emit"};
  return export_engine_layout(target, graph, cluster, layout);
}

}  // namespace pase
