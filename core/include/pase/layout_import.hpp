// A practitioner's layout read from what they launch: a Megatron-LM
// argument list or a torchtitan job TOML, as the Layout of layout.hpp
// (core/docs/practice-model.md, "Importing a layout").
//
// USAGE
//   Result<Layout> l = read_any_layout(pasted_text, cluster.devices, blocks);
//   Result<LayoutStrategy> s = layout_strategy(graph, cluster, *l);
//
// WHAT IS READ. Only what sets the layout; every other flag or key (the
// model's, the data's, the optimizer's) is ignored, so a whole launch script
// or job file can be pasted. The field-by-field mapping is in
// core/docs/practice-model.md. The Layout returned is as the engine would
// run it; whether it fits the model (degrees dividing heads, blocks, batch)
// is layout_strategy()'s to tell, at "layout.<item>".
//
// BLOCKS. Some of the engines' settings mean a count of decoder blocks only
// once the model's is known: Megatron-LM's
// --num-layers-per-virtual-pipeline-stage (when --num-layers is not in the
// list), torchtitan's split of the blocks over the pipeline stages, its
// pipeline_parallel_layers_per_stage and its selective_ac_option = "N"
// (every N-th block recomputed). `blocks` is the model's decoder blocks
// (its num_hidden_layers), 0 when unknown: then those settings are an
// error that says the blocks are needed.
//
// ERRORS name the engine and the field in the engine's own words, after a
// colon: "layout.megatron:--tensor-model-parallel-size" ('8x' is not a
// positive integer), "layout.torchtitan:parallelism.data_parallel_shard_degree"
// (the degrees do not make the device count); a TOML syntax error at
// "layout.torchtitan" with its line and column; "layout.megatron" or
// "layout.torchtitan" alone when nothing of a layout is found or the
// degrees do not divide `devices`. No function here throws; each is linear
// in the text's length.
#pragma once

#include <cstdint>
#include <string_view>

#include "pase/layout.hpp"
#include "pase/result.hpp"

namespace pase {

// A pasted Megatron-LM argument list (megatron/training/arguments.py): one
// line or many, backslash continuations, `--flag value` and `--flag=value`,
// single- or double-quoted values, `#` comments, bash array brackets; the
// launcher (`torchrun ... pretrain_gpt.py`) and its own flags are skipped.
// As argparse does, a flag given twice takes its last value. dp is
// devices / (tp x pp x cp).
Result<Layout> layout_from_megatron_args(std::string_view args, int64_t devices,
                                         int64_t blocks = 0);

// A torchtitan job TOML (torchtitan/config/job_config.py of the TOML
// releases), or only its [parallelism] table, with or without the header:
// its [parallelism], [activation_checkpoint] and [training] tables. Parsed
// with toml++ (Debian's libtomlplusplus-dev, header only).
Result<Layout> layout_from_torchtitan_toml(std::string_view toml, int64_t devices,
                                           int64_t blocks = 0);

// Which of the three a pasted text is, read_any_layout() tells apart: a
// line that opens a TOML table (`[parallelism]`) or assigns a key that is
// not one of parse_layout()'s (`tensor_parallel_degree = 8`): torchtitan;
// else a word that starts with `--`: Megatron-LM; else parse_layout()'s
// `tp=8 pp=2 ...`.
enum class LayoutSyntax { kLayout, kMegatron, kTorchtitan };
LayoutSyntax layout_syntax(std::string_view text);

// The layout of `text`, whichever of the three it is (layout_syntax()):
// parse_layout(), layout_from_megatron_args() or
// layout_from_torchtitan_toml(). parse_layout()'s layout keeps its own dp
// (devices and blocks unused).
Result<Layout> read_any_layout(std::string_view text, int64_t devices, int64_t blocks = 0);

}  // namespace pase
