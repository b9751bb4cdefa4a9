// The subcommands of pase, one file each (cmd_<name>.cpp); main.cpp
// dispatches to them.
//
// run_<name>(args) takes the arguments after the command name, prints the
// result on standard output and any error on standard error, and returns the
// exit status: 0 success, 1 bad input, 2 usage error (report.hpp).
// <name>_usage() is the text of 'pase <name> --help'.
//
// A new command is a cmd_<name>.cpp with these two functions, their
// declarations here and one entry in main.cpp's table.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "flags.hpp"
#include "pase/answers.hpp"
#include "pase/export.hpp"

namespace pase_cli {

// pase plan: the PaSE search (cmd_plan.cpp).
int run_plan(const Args& args);
std::string plan_usage();

// pase eval: the cost of a given strategy (cmd_eval.cpp).
int run_eval(const Args& args);
std::string eval_usage();

// pase emit: a saved plan as a JAX program, Megatron-LM arguments or
// torchtitan TOML; and --emit of plan and eval (cmd_emit.cpp).
int run_emit(const Args& args);
std::string emit_usage();
// The help of --emit and --output.
extern const char* const kEmitHelp;
// A plan result with the graph and cluster flags of `args` as its "source".
std::string with_source(const std::string& json_text, const Args& args);
// A bad --emit target, reported before any planning (the exit status), or
// nullopt.
std::optional<int> check_emit_flag(const Flags& flags, std::string_view command);
// What plan and eval print: `plan_out` (the table or, with `json`, the
// result with its source), or with --emit the export, to --output or
// standard output (and then the plan is not printed). With `answers` (a
// language model's, pase/answers.hpp) the export is export_answers()'s.
int finish_planning(const Flags& flags, const Args& args, const pase::PlanView& view,
                    const std::string& plan_out, bool json,
                    const pase::PlanAnswers* answers = nullptr);
// pase layouts: the layout search, ranked (cmd_layouts.cpp).
int run_layouts(const Args& args);
std::string layouts_usage();

// pase export: a built-in network as a pase-graph/1 document (cmd_export.cpp).
int run_export(const Args& args);
std::string export_usage();

// pase import: an ONNX model as a pase-graph/1 document (cmd_import.cpp).
int run_import(const Args& args);
std::string import_usage();

// pase models: the built-in networks (cmd_models.cpp).
int run_models(const Args& args);
std::string models_usage();

// pase presets: the GPU presets of --preset (cmd_presets.cpp).
int run_presets(const Args& args);
std::string presets_usage();

// pase compare: the plan next to the baselines (cmd_compare.cpp).
int run_compare(const Args& args);
std::string compare_usage();

// pase bench: timing the search over a grid of cases (cmd_bench.cpp).
int run_bench(const Args& args);
// pase bench --published FILE (cmd_bench_published.cpp).
int run_bench_published(const std::string& path, bool json, bool fit, double plan_limit_s);
// pase bench --goals (cmd_bench_goals.cpp).
int run_bench_goals(const std::optional<std::string>& published);
// pase bench --json: the JSON reader's time by document size (cmd_bench_json.cpp).
int run_bench_json(bool json);
std::string bench_usage();

}  // namespace pase_cli
