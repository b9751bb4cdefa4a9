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

#include <string>

#include "flags.hpp"

namespace pase_cli {

// pase plan: the PaSE search (cmd_plan.cpp).
int run_plan(const Args& args);
std::string plan_usage();

// pase eval: the cost of a given strategy (cmd_eval.cpp).
int run_eval(const Args& args);
std::string eval_usage();

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
std::string bench_usage();

}  // namespace pase_cli
