// pase emit, and --emit of pase plan and pase eval: a plan as a JAX program,
// Megatron-LM arguments or torchtitan TOML (core/docs/export.md).
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "flags.hpp"
#include "inputs.hpp"
#include "nlohmann/json.hpp"
#include "pase/answers.hpp"
#include "pase/export.hpp"
#include "pase/json_api.hpp"
#include "pase/layout.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "report.hpp"
#include "util/json_util.hpp"
#include "util/text.hpp"

namespace pase_cli {

namespace {

using pase::json_detail::Json;

// "--procs=8" -> "--procs".
std::string_view flag_name(std::string_view arg) { return arg.substr(0, arg.find('=')); }

// The spec of a graph or cluster flag (what "source" keeps), or null.
const FlagSpec* source_flag(std::string_view name) {
  for (const auto* group : {&kGraphFlags, &kClusterFlags})
    for (const FlagSpec& spec : *group)
      if (spec.name == name) return &spec;
  return nullptr;
}

// The flags that say which graph and which cluster, as given: a plan
// result keeps them ("source"), so that `pase emit` can rebuild both.
bool emit_source_flag(std::string_view name) { return source_flag(name) != nullptr; }

// The flags a saved plan's "source": {"args": [...]} keeps, checked as
// flags of their own: errors name source.args, not the command line, and a
// flag that is not a graph or cluster flag (--format, --output: a plan keeps
// only those) is refused rather than read as if typed. No "source" at all is
// no flags.
pase::Result<std::vector<std::string>> stored_source_args(const Json& doc) {
  std::vector<std::string> all;
  if (!doc.is_object()) return all;  // parse_any_strategy() says what is wrong
  auto source = doc.find("source");
  if (source == doc.end()) return all;
  if (!source->is_object()) return pase::json_detail::type_error("an object", *source, "source");
  auto args = source->find("args");
  if (args == source->end()) return all;
  pase::Result<std::vector<std::string>> strings = pase::json_detail::to_list<std::string>(
      *args, "source.args", "a list of strings", pase::json_detail::to_string);
  if (!strings) return strings.error();
  all = std::move(*strings);
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string where = pase::json_detail::index_path("source.args", i);
    const std::string_view name = flag_name(all[i]);
    const FlagSpec* spec = source_flag(name);
    if (spec == nullptr) {
      return pase::Error{pase::quoted_text(all[i]) +
                             " is not a graph or cluster flag (a plan's source keeps only those)",
                         where};
    }
    if (!spec->takes_value || all[i].find('=') != std::string::npos) continue;
    if (i + 1 >= all.size()) return pase::Error{std::string(name) + " needs a value", where};
    ++i;
  }
  Args view(all.begin(), all.end());
  Flags flags;
  if (auto message = parse_planning_flags(view, {}, flags))
    return pase::Error{*message, "source.args"};
  return all;
}

void print_explanation(const pase::Exported& e) {
  if (!e.uniform) {
    std::fprintf(stderr,
                 "emit: the plan is not uniform across the decoder blocks as %s expresses it; "
                 "emitted the nearest uniform layout (%s), predicted %.4g s per step against "
                 "the plan's %.4g s. The layers that differ:\n",
                 pase::export_target_name(e.target),
                 e.layout ? pase::layout_text(*e.layout).c_str() : "", e.layout_step_time_s,
                 e.plan_step_time_s);
    for (const std::string& d : e.differences) std::fprintf(stderr, "  %s\n", d.c_str());
  }
  for (const std::string& n : e.notes) std::fprintf(stderr, "emit: note: %s\n", n.c_str());
}

}  // namespace

const char* const kEmitHelp =
    "  --emit TARGET       write the plan as a program or configuration instead:\n"
    "                      jax (a Python program that runs the step sharded;\n"
    "                      --check runs it on CPU), megatron (Megatron-LM\n"
    "                      arguments), torchtitan (its TOML); core/docs/export.md\n"
    "  --output FILE, -o FILE\n"
    "                      where --emit writes (default: standard output; the plan\n"
    "                      is then not printed)\n";

std::string with_source(const std::string& json_text, const Args& args) {
  // Added as the document's last field, the rest of the text as written.
  const size_t close = json_text.rfind('}');
  if (close == std::string::npos || json_text.compare(0, 1, "{") != 0) return json_text;
  nlohmann::ordered_json kept = nlohmann::ordered_json::array();
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view name = args[i];
    const size_t eq = name.find('=');
    if (eq != std::string_view::npos) name = name.substr(0, eq);
    if (!emit_source_flag(name)) continue;
    kept.push_back(std::string(args[i]));
    if (eq == std::string_view::npos && i + 1 < args.size()) kept.push_back(std::string(args[++i]));
  }
  std::string head = json_text.substr(0, close);
  while (!head.empty() && (head.back() == '\n' || head.back() == ' ')) head.pop_back();
  // A path need not be UTF-8 (a folder's name): its bad bytes become U+FFFD.
  return head + ",\n  \"source\": {\"args\": " +
         kept.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "}\n}\n";
}

std::optional<int> check_emit_flag(const Flags& flags, std::string_view command) {
  if (std::optional<std::string> target = flags.get("--emit")) {
    pase::Result<pase::ExportTarget> parsed = pase::parse_export_target(*target);
    if (!parsed) return input_error(parsed.error());
  }
  if (flags.has("--output") && !flags.has("--emit"))
    return usage_error(command, "--output is where --emit writes: give --emit too");
  return std::nullopt;
}

int finish_planning(const Flags& flags, const Args& args, const pase::PlanView& view,
                    const std::string& plan_out, bool json, const pase::PlanAnswers* answers) {
  const std::string shown = json ? with_source(plan_out, args) : plan_out;
  std::optional<std::string> target = flags.get("--emit");
  if (!target) {
    if (!write_stdout(shown)) return input_error(pase::Error{"cannot write the output", ""});
    return kExitOk;
  }
  pase::Result<pase::ExportTarget> parsed = pase::parse_export_target(*target);
  if (!parsed) return input_error(parsed.error());
  pase::Result<pase::Exported> exported =
      answers ? pase::export_answers(*parsed, *answers) : pase::export_plan(*parsed, view);
  if (!exported) return input_error(exported.error());
  print_explanation(*exported);
  std::optional<std::string> path = flags.get("--output");
  if (path && !write_stdout(shown)) return input_error(pase::Error{"cannot write the output", ""});
  return write_output(path, exported->text);
}

std::string emit_usage() {
  return "usage: pase emit --plan FILE --to TARGET [-o FILE] [graph and cluster flags]\n\n"
         "Writes a saved plan (the JSON of 'pase plan --format json' or 'pase eval\n"
         "--format json') as a JAX program (--to jax), Megatron-LM arguments (megatron)\n"
         "or torchtitan TOML (torchtitan), core/docs/export.md. The graph and the\n"
         "cluster are those the plan was made with (its \"source\"); flags given here\n"
         "replace them (--model and --graph each other).\n\n"
         "  --plan FILE         the plan result ('-': standard input)\n"
         "  --to TARGET         jax, megatron or torchtitan\n"
         "  --output FILE, -o FILE\n"
         "                      where to write (default: standard output)\n";
}

int run_emit(const Args& args) {
  Flags own;
  Args rest;
  // --plan, --to and --output are read first; the others are the planning
  // flags, after the plan's own.
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    const bool own_flag = a == "--plan" || a == "--to" || a == "--output" || a == "-o";
    if (own_flag && i + 1 >= args.size())
      return usage_error("emit", std::string(a) + " needs a value");
    if (own_flag) {
      own.add(a == "-o" ? std::string_view("--output") : a, std::string(args[++i]));
      continue;
    }
    rest.push_back(a);
  }
  std::optional<std::string> plan_path = own.get("--plan");
  std::optional<std::string> target_name = own.get("--to");
  if (!plan_path) return usage_error("emit", "missing --plan FILE");
  if (!target_name) return usage_error("emit", "missing --to TARGET (jax, megatron, torchtitan)");
  pase::Result<pase::ExportTarget> target = pase::parse_export_target(*target_name);
  if (!target) return input_error(target.error());
  pase::Result<std::string> text = read_file(*plan_path);
  if (!text) return input_error(text.error());

  pase::Result<Json> parsed = pase::json_detail::parse_document(*text);
  if (!parsed) return input_error(in_file(*plan_path, parsed.error()));
  const Json& doc = *parsed;
  pase::Result<std::vector<std::string>> stored = stored_source_args(doc);
  if (!stored) return input_error(in_file(*plan_path, stored.error()));
  const std::vector<std::string>& all = *stored;
  // Flags given here replace the plan's.
  Args merged;
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string_view name = flag_name(all[i]);
    // --model and --graph name the same thing: either replaces both.
    const auto graph_source = [](std::string_view n) { return n == "--model" || n == "--graph"; };
    bool replaced = false;
    for (const std::string_view r : rest)
      replaced =
          replaced || flag_name(r) == name || (graph_source(name) && graph_source(flag_name(r)));
    const bool value = all[i].find('=') == std::string::npos && source_flag(name)->takes_value;
    if (!replaced && name == "--graph" && (value ? all[i + 1] == "-" : all[i] == "--graph=-")) {
      // The plan was made from standard input, which cannot be read again.
      return input_error(
          in_file(*plan_path,
                  pase::Error{"the plan's graph was read from standard input ('--graph -'), which "
                              "cannot be read again: give --graph FILE",
                              pase::json_detail::index_path("source.args", i)}));
    }
    if (!replaced) {
      merged.push_back(all[i]);
      if (value) merged.push_back(all[i + 1]);  // stored_source_args() checked it is there
    }
    if (value) ++i;
  }
  merged.insert(merged.end(), rest.begin(), rest.end());

  Flags flags;
  if (auto message = parse_planning_flags(merged, {}, flags)) return usage_error("emit", *message);
  GraphSource source;
  pase::Cluster cluster;
  if (auto failure = graph_source_from_flags(flags, source)) return failure->report("emit");
  if (source.model.empty() && source.path.empty())
    return usage_error("emit", "the plan names no graph (no \"source\"): give --model or --graph");
  if (auto failure = cluster_from_flags(flags, cluster)) return failure->report("emit");
  if (doc.is_object() && doc.contains("training") && doc["training"].is_object()) {
    // The recomputation the plan chose.
    const auto& t = doc["training"];
    if (t.contains("recompute") && t["recompute"].is_string())
      if (auto r = pase::parse_recompute(t["recompute"].get<std::string>()))
        cluster.training.recompute = *r;
    if (t.contains("recompute_blocks") && t["recompute_blocks"].is_number_integer())
      cluster.training.recompute_blocks = t["recompute_blocks"].get<int>();
    if (t.contains("recompute_rest") && t["recompute_rest"].is_string())
      if (auto r = pase::parse_recompute(t["recompute_rest"].get<std::string>()))
        cluster.training.recompute_rest = *r;
  }
  pase::Result<pase::Graph> graph = load_source(source);
  if (!graph) return input_error(graph.error());
  pase::Result<pase::PipelineStrategy> strategy = pase::parse_any_strategy(*text);
  if (!strategy) return input_error(in_file(*plan_path, strategy.error()));

  pase::Result<pase::Exported> exported = pase::Error{"", ""};
  if (!strategy->stage_of.empty()) {
    pase::Result<pase::PipelinePlan> piped = pase::evaluate_pipeline(*graph, cluster, *strategy);
    if (!piped) return input_error(in_file(*plan_path, piped.error()));
    exported = pase::export_plan(
        *target, pase::PlanView{&*graph, &piped->graph, &cluster, &piped->plan, &piped->pipeline});
  } else {
    pase::Result<pase::Plan> plan = pase::evaluate(*graph, cluster, strategy->configs);
    if (!plan) return input_error(in_file(*plan_path, plan.error()));
    exported =
        pase::export_plan(*target, pase::PlanView{&*graph, &*graph, &cluster, &*plan, nullptr});
  }
  if (!exported) return input_error(exported.error());
  print_explanation(*exported);
  return write_output(own.get("--output"), exported->text);
}

}  // namespace pase_cli
