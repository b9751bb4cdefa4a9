// Megatron-LM's launch script and torchtitan's TOML for a plan or a layout
// (export.hpp, core/docs/export.md, "Megatron-LM and torchtitan").
#pragma once

#include "pase/export.hpp"

namespace pase {

// ExportTarget::kMegatron or kTorchtitan.
Result<Exported> export_engine(ExportTarget target, const PlanView& view);
Result<Exported> export_engine_layout(ExportTarget target, const Graph& graph,
                                      const Cluster& cluster, const Layout& layout);

}  // namespace pase
