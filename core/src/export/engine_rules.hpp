// The start-up rules of Megatron-LM and torchtitan that a layout can break
// (core/docs/export.md, "The engines' start-up rules"): which of them a
// layout breaks, and the nearest layout that breaks none. The exports
// (export/engines.cpp) and the layout search (layouts/layout_search.cpp) call
// them before a layout is emitted or ranked as one an engine runs.
//
// The rules are those of Megatron-LM core_v0.19.0 and torchtitan v0.2.2
// (each with its file in the engine's repository, in `source`). How a
// layout maps to the engines' settings:
//   Megatron-LM: zero 0 its DDP, 1 --use-distributed-optimizer, 2 and 3
//   Megatron-FSDP (--use-megatron-fsdp with --data-parallel-sharding-strategy
//   optim_grads or optim_grads_params), dp_shard below dp with
//   --num-distributed-optimizer-instances dp / dp_shard; etp 0 is tp.
//   torchtitan: zero 0 data_parallel_replicate_degree = dp (DDP), 2 FSDP
//   with fsdp_reshard_after_forward = "never", 3 FSDP (data_parallel_shard_degree
//   = dp_shard, or dp) and HSDP (replicate dp / dp_shard); zero 1 has no form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pase/export.hpp"
#include "pase/layout.hpp"
#include "pase/llm.hpp"

namespace pase {

struct EngineRefusal {
  std::string rule;     // a short id: "world-size", "heads", "ddp", ...
  std::string message;  // what the engine says, with the layout's numbers
  std::string source;   // the engine's file that enforces it, e.g. "megatron/training/arguments.py"
};

// The rules of `target` (kMegatron or kTorchtitan; none for kJax) that
// `layout` breaks for the model `config` at sequence length `seq` on
// `devices` GPUs, `gpus_per_node` a node (0: one node); empty when the engine
// starts. The layout's gbs is set (not 0). In the order of the table of
// core/docs/export.md; each rule at most once.
std::vector<EngineRefusal> engine_refusals(ExportTarget target, const LlmConfig& config,
                                           int64_t seq, const Layout& layout, int64_t devices,
                                           int64_t gpus_per_node);

// The nearest layout that `target` accepts, `layout` itself when it breaks
// no rule; nullopt when none is found by changing the layout (a device
// count that no torchrun launch has, a sequence that no split divides, a
// global batch that the data-parallel degree does not divide). Each broken
// rule is mended by the smallest change that mends it, the first broken
// one first, until none is broken: tp or cp lowered to a divisor (the
// factor going to dp), mbs, vpp, ep or etp lowered to a divisor, sp set as
// the engine needs it, pp_first / pp_last set so that Megatron-LM's middle
// stages divide the blocks (the fewest blocks on the fullest stage, then
// the fewest fields changed), zero 1 as 2 for torchtitan, and DDP with
// another parallel dimension as HSDP over the fewest ranks
// (dp_shard = the least divisor of dp above 1 that still holds the
// experts' ranks).
std::optional<Layout> nearest_accepted_layout(ExportTarget target, const LlmConfig& config,
                                              int64_t seq, const Layout& layout, int64_t devices,
                                              int64_t gpus_per_node);

}  // namespace pase
