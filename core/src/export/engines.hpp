// Megatron-LM arguments and torchtitan's TOML for a plan (export.hpp,
// core/docs/export.md, "Megatron-LM and torchtitan").
#pragma once

#include "pase/export.hpp"

namespace pase {

// ExportTarget::kMegatron or kTorchtitan.
Result<Exported> export_engine(ExportTarget target, const PlanView& view);

}  // namespace pase
