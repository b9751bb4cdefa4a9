// The Megatron-LM launch script and the torchtitan TOML of one layout
// (export/megatron.cpp, export/torchtitan.cpp), and what both share: the
// header and the recomputation an engine can run (export/engines.cpp;
// core/docs/export.md, "Megatron-LM and torchtitan").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "export/engine_model.hpp"
#include "pase/cluster.hpp"
#include "pase/export.hpp"
#include "pase/graph.hpp"
#include "pase/layout.hpp"

namespace pase {

// What an emitter writes from: the model, the cluster, and in `e` the
// layout it runs (e.layout, with the recomputation the engine runs), its
// predicted step time and the notes so far.
struct EngineJob {
  const Graph* graph = nullptr;
  const Cluster* cluster = nullptr;
  const EngineModel* model = nullptr;
  bool from_plan = true;  // a plan's nearest layout (export_plan), else a layout (export_layout)
  double plan_step_time_s = 0;
  bool gpipe = false;  // the plan's schedule
  // The recomputation the plan needs was not expressible, and the layout
  // runs a heavier one: what the plan had, in words, for the header.
  std::string heavier_than;
};

// Each decoder block's recomputation under `training` (kAuto as none): its
// recompute_of_block when set, else `recompute` on the first
// recompute_blocks blocks and recompute_rest on the others.
std::vector<Recompute> engine_block_modes(const Training& training, int64_t blocks);

// The recomputation that Megatron-LM or torchtitan runs for `modes` on the
// stages of `layout` (its recompute and recompute_blocks set): the same when
// the engine expresses it, else the lightest it expresses that recomputes
// at least as much in every (virtual) stage (never less memory than the
// plan needs is held back: full on more blocks, or selective on all).
// `exact` says which.
struct EngineRecompute {
  Layout layout;
  bool exact = true;
};
EngineRecompute engine_runs(ExportTarget target, const std::vector<Recompute>& modes,
                            const Layout& layout);

// "full on blocks 0-11, selective on 12-31": the modes in words.
std::string engine_modes_text(const std::vector<Recompute>& modes);

// The comment lines every file starts with (the graph's name and the
// differences escaped, core/src/export/escape.cpp).
std::string engine_header(const char* engine, const EngineJob& job, const Exported& e);

// The files: megatron_args.sh (a torchrun launch of pretrain_gpt.py) and
// torchtitan.toml; notes go to e.notes.
std::string engine_megatron(const EngineJob& job, Exported& e);
std::string engine_torchtitan(const EngineJob& job, Exported& e);

std::string engine_num(int64_t n);
// A double as JSON writes it: the shortest text that reads back the same
// ("1e-05", "500000.0").
std::string engine_double(double d);

}  // namespace pase
