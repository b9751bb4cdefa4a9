// pase compare: the PaSE plan next to data parallelism, the expert strategy
// and a FlexFlow-style MCMC search, on the same cost model and machine
// (compare.hpp); with --sweep, the speedups over data parallelism per device
// count (the paper's Fig. 6).
//
// Everything goes through the public API (compare(), comparison_to_json(),
// sweep_to_json()); this file only turns flags into options and results into
// tables.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "flags.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "pase/compare.hpp"
#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "plan_text.hpp"
#include "report.hpp"
#include "util/text.hpp"

namespace pase_cli {

namespace {

// Under a memory cap: "!" after a strategy that does not fit (a space when
// it does); nothing without a cap.
std::string fit_mark(const pase::StrategyReport& r) {
  if (!(r.plan.capacity_bytes > 0)) return "";
  return r.plan.fits ? " " : "!";
}

std::string speedup_text(const pase::StrategyReport& r) {
  return format("%.2fx", r.speedup) + (r.in_enumeration() ? " " : "*") + fit_mark(r);
}

// "61.2 GiB" and, under a cap, "does not fit" after a strategy over it.
std::string memory_cell(const pase::StrategyReport& r) {
  return pad_left(pase::bytes_text(r.plan.memory.total()), 12) +
         (r.plan.capacity_bytes > 0 && !r.plan.fits ? "  does not fit" : "");
}

// The memory lines under the table: what the model counts, and under a cap
// the capacity and what PaSE's plan proves.
std::string memory_notes(const pase::Comparison& c) {
  std::string out = "memory: device 0's (" + training_text(c.cluster.training) + ")";
  const pase::Plan& p = c.pase.plan;
  if (!(p.capacity_bytes > 0)) return out + "\n";
  out += "; capacity " + format("%g", c.cluster.memory_gib) + " GiB per device";
  // The practice model's reserve and headroom (pase::Cluster::capacity_bytes()).
  if (p.capacity_bytes < c.cluster.memory_gib * 0x1p30)
    out += ", " + format("%g", p.capacity_bytes / 0x1p30) + " GiB of it for a plan (" +
           pase::bytes_text(c.cluster.reserve_gib() * 0x1p30) + " reserved, " +
           pase::bytes_text(c.cluster.headroom_gib() * 0x1p30) + " headroom)";
  out += "\npase is the cheapest strategy found that fits, " +
         (p.optimal ? std::string("proven optimal among those that fit")
                    : "not proven optimal (every strategy that fits costs at least " +
                          format("%.4e", p.lower_bound) + ")") +
         "\n";
  return out;
}

std::vector<const pase::StrategyReport*> reports(const pase::Comparison& c) {
  std::vector<const pase::StrategyReport*> all = {&c.pase, &c.data_parallel};
  if (c.expert) all.push_back(&*c.expert);
  if (c.mcmc) all.push_back(&*c.mcmc);
  if (c.pipeline) all.push_back(&*c.pipeline);
  return all;
}

// "b/8 n/4": the split dimensions only; "-" when nothing is split.
std::string splits_text(const pase::Vertex& v, const pase::Config& c) {
  std::string text;
  for (size_t d = 0; d < c.size() && d < v.dims.size(); ++d) {
    if (c[d] == 1) continue;
    if (!text.empty()) text += ' ';
    text += v.dims[d] + "/" + std::to_string(c[d]);
  }
  return text.empty() ? "-" : text;
}

std::string comparison_text(const pase::Graph& graph, const pase::Comparison& c, bool layers) {
  std::string out =
      graph.name + ": " + graph_text(graph) + " on " + cluster_text(c.cluster) + "\n\n";
  const auto all = reports(c);
  bool outside = false;
  out += pad_right("strategy", 15) + pad_left("cost", 12) + pad_left("step time", 13) +
         pad_left("speedup", 10) + pad_left("memory", 12) + "\n";
  for (const pase::StrategyReport* r : all) {
    outside |= !r->in_enumeration();
    out += pad_right(r->name, 15) + pad_left(format("%.4e", r->plan.cost), 12) +
           pad_left(seconds_text(r->plan.step_time_s), 13) +
           pad_left(format("%.2fx", r->speedup) + (r->in_enumeration() ? " " : "*"), 10) +
           memory_cell(*r) + "\n";
  }
  out += "\nspeedup: data-parallel cost / strategy cost (predicted step time = cost / peak)\n";
  out += memory_notes(c);
  if (outside) {
    out +=
        "*: uses configurations outside the enumeration that plan() searches (priced all "
        "the same)\n";
  }
  out += "\n";
  for (const pase::StrategyReport* r : all) {
    out += pad_right(r->name, 15) + r->description + "\n";
    for (const std::string& note : r->notes) out += pad_right("", 15) + "- " + note + "\n";
  }
  if (!c.notes.empty()) {
    out += "\nnotes\n";
    for (const std::string& note : c.notes) out += "  - " + note + "\n";
  }
  if (layers) {
    size_t name_width = 5;
    for (const pase::Vertex& v : graph.vertices) name_width = std::max(name_width, v.name.size());
    out += "\n" + pad_left("id", 5) + "  " + pad_right("layer", name_width);
    for (const pase::StrategyReport* r : all) out += "  " + pad_right(r->name, 16);
    out += "\n";
    for (const pase::Vertex& v : graph.vertices) {
      out += pad_left(std::to_string(v.id), 5) + "  " + pad_right(v.name, name_width);
      for (const pase::StrategyReport* r : all)
        out += "  " + pad_right(splits_text(v, r->plan.strategy[v.id]), 16);
      out += "\n";
    }
  }
  return out;
}

std::string sweep_text(const pase::Graph& graph, const std::vector<pase::Comparison>& rows) {
  const pase::Cluster& k = rows.front().cluster;
  const bool capped = k.memory_gib > 0;
  std::string out = graph.name + " (" + machine_text(k) +
                    (capped ? ", " + format("%g", k.memory_gib) + " GiB per device" : "") +
                    "): speedup over data parallelism\n" + graph_text(graph) + "\n\n";
  const bool expert = rows.front().expert.has_value();
  const bool mcmc = rows.front().mcmc.has_value();
  out += pad_left("devices", 7) + pad_left("data_parallel", 15) + pad_left("step time", 12) +
         pad_left("pase", 9) + (expert ? pad_left("expert", 9) : "") +
         (mcmc ? pad_left("mcmc", 9) : "") + "\n";
  bool outside = false, over = false;
  for (const pase::Comparison& c : rows) {
    for (const pase::StrategyReport* r : reports(c)) {
      outside |= !r->in_enumeration();
      over |= !r->plan.fits;
    }
    out += pad_left(std::to_string(c.cluster.devices), 7) +
           pad_left(format("%.4e", c.data_parallel.plan.cost) +
                        (c.data_parallel.in_enumeration() ? " " : "*") + fit_mark(c.data_parallel),
                    15) +
           pad_left(seconds_text(c.data_parallel.plan.step_time_s), 12) +
           pad_left(speedup_text(c.pase), 9) +
           (c.expert ? pad_left(speedup_text(*c.expert), 9) : "") +
           (c.mcmc ? pad_left(speedup_text(*c.mcmc), 9) : "") + "\n";
  }
  out += "\nspeedup: data-parallel cost / strategy cost, same cost model and machine\n";
  if (outside) {
    out +=
        "*: uses configurations outside the enumeration that plan() searches (the cutoff "
        "forbids them); priced all the same\n";
  }
  if (over) {
    out += "!: does not fit in " + format("%g", k.memory_gib) + " GiB per device (" +
           training_text(k.training) + ")\n";
  }
  // The findings per device count; the missing expert strategy only once.
  for (const pase::Comparison& c : rows)
    for (const std::string& note : c.notes)
      if (c.expert || &c == &rows.front() || note.rfind("no expert strategy", 0) != 0)
        out += "P=" + std::to_string(c.cluster.devices) + ": " + note + "\n";
  return out;
}

}  // namespace

std::string compare_usage() {
  return "usage: pase compare (--model NAME | --graph FILE [--dim NAME=SIZE ...])\n"
         "                    [--batch B] [--seq S] [options]\n\n"
         "Compares the PaSE plan with data parallelism, the expert strategy (built-in\n"
         "networks only) and a FlexFlow-style MCMC search, on the same cost model and\n"
         "machine: cost, predicted step time, speedup over data parallelism and memory\n"
         "per device.\n\n"
         "  --model NAME          a built-in network (see 'pase models')\n"
         "  --graph FILE          a pase-graph/1 document, an ONNX model or a Hugging Face\n"
         "                        config.json, told apart by content ('-': standard input)\n"
         "  --batch B             batch size of --model, an ONNX model or a config\n"
         "                        (default: the model's)\n"
         "  --seq S               sequence length of --model or a config (default: the\n"
         "                        model's; none for the CNNs)\n"
         "  --dim NAME=SIZE       size of a named (dynamic) dimension of an ONNX --graph;\n"
         "                        repeatable\n"
         "  --procs P             number of devices (default 8)\n"
         "  --preset NAME         a GPU's TFLOP/s, bandwidths, node size and memory (see\n"
         "                        'pase presets'); the flags below override it\n"
         "  --flops TF            peak TFLOP/s of one device (default 10)\n"
         "  --bandwidth GBS       link bandwidth in GB/s (default 16); with nodes, the\n"
         "                        bandwidth between nodes\n"
         "  --gpus-per-node G     devices per node, with --intra-bandwidth (default: one\n"
         "                        flat network)\n"
         "  --intra-bandwidth GBS bandwidth inside a node in GB/s\n"
         "  --memory GIB          memory of one device in GiB: PaSE plans the cheapest\n"
         "                        strategy found that fits, and every strategy that\n"
         "                        does not is marked (default: no limit; 0: none)\n"
         "  --headroom F          with --memory, the share of it a plan leaves free under\n"
         "                        the practice model, besides the framework's 3 GiB\n"
         "                        (default 0.1: 10%, the margin runs launch with; 0: none)\n"
         "  --zero Z              ZeRO stage, 0 to 3 (default 0)\n"
         "  --param-bytes N       bytes per weight element (default 2); likewise\n"
         "                        --grad-bytes (2), --optimizer-bytes (12) and\n"
         "                        --activation-bytes (2, per saved activation element)\n"
         "  --sweep P1,P2,...     compare at each device count (instead of --procs) and\n"
         "                        print the table of speedups (the paper's Fig. 6)\n"
         "  --mcmc-iterations N   MCMC proposals (default 100000; 0: no MCMC)\n"
         "  --mcmc-time S         MCMC time limit in seconds (default 5; 0: none)\n"
         "  --mcmc-beta B         MCMC inverse temperature per vertex (default 10)\n"
         "  --seed S              MCMC seed (default 1)\n"
         "  --threads N           threads for the PaSE search (default: every core); the\n"
         "                        plan does not depend on it\n"
         "  --stages S|auto --microbatches M|auto --schedule 1f1b|gpipe\n"
         "                        also plan with a pipeline (its row: \"pipeline\"; pase\n"
         "                        stays the best plan without one)\n"
         "  --layers              also list every layer's configuration per strategy\n"
         "  --format FORMAT       text (default) or json\n";
}

int run_compare(const Args& args) {
  Flags flags;
  if (auto message = parse_planning_flags(args,
                                          {{"--sweep", true},
                                           {"--mcmc-iterations", true},
                                           {"--mcmc-time", true},
                                           {"--mcmc-beta", true},
                                           {"--seed", true},
                                           {"--threads", true},
                                           {"--format", true},
                                           {"--layers", false},
                                           {"--stages", true},
                                           {"--microbatches", true},
                                           {"--schedule", true}},
                                          flags))
    return usage_error("compare", *message);
  bool json = false;
  GraphSource source;
  pase::Cluster cluster;
  if (auto failure = format_from_flags(flags, json)) return failure->report("compare");
  if (auto failure = graph_source_from_flags(flags, source)) return failure->report("compare");
  const bool sweeping = flags.has("--sweep");
  if (sweeping && flags.has("--procs")) {
    return usage_error("compare", "give either --procs or --sweep, not both");
  }
  if (auto failure = cluster_from_flags(flags, cluster)) return failure->report("compare");
  std::vector<int64_t> sweep;
  if (std::optional<std::string> text = flags.get("--sweep")) {
    for (const std::string& item : split_list(*text)) {
      std::optional<int64_t> n = parse_int(item);
      if (!n) {
        return usage_error("compare",
                           "--sweep: '" + *text + "' is not a list of integers (4,8,16)");
      }
      pase::Cluster c = cluster;
      c.devices = *n;
      if (std::optional<pase::Error> e = pase::check_cluster(c)) {
        e->where = "sweep";
        return input_error(*e);
      }
      sweep.push_back(*n);
    }
  } else {
    sweep.push_back(cluster.devices);
  }

  pase::CompareOptions options;
  if (auto message = threads_from_flags(flags, options.plan.threads))
    return usage_error("compare", *message);
  if (auto message = pipeline_from_flags(flags, options.pipeline))
    return usage_error("compare", *message);
  if (options.pipeline && sweeping)
    return usage_error("compare",
                       "a pipeline (--stages, --microbatches) is not swept: use --procs");
  const std::pair<std::string_view, uint64_t*> counts[] = {
      {"--mcmc-iterations", &options.mcmc_iterations}, {"--seed", &options.mcmc_seed}};
  for (const auto& [name, out] : counts) {
    if (std::optional<std::string> text = flags.get(name)) {
      std::optional<int64_t> n = parse_int(*text);
      if (!n || *n < 0) {
        return usage_error("compare",
                           std::string(name) + ": '" + *text + "' is not a non-negative integer");
      }
      *out = static_cast<uint64_t>(*n);
    }
  }
  const std::pair<std::string_view, double*> reals[] = {{"--mcmc-time", &options.mcmc_time_limit_s},
                                                        {"--mcmc-beta", &options.mcmc_beta}};
  for (const auto& [name, out] : reals) {
    if (std::optional<std::string> text = flags.get(name)) {
      std::optional<double> d = parse_double(*text);
      if (!d || !(*d >= 0) || !std::isfinite(*d)) {
        return usage_error("compare",
                           std::string(name) + ": '" + *text + "' is not a non-negative number");
      }
      *out = *d;
    }
  }

  pase::Result<pase::Graph> graph = load_source(source);
  if (!graph) return input_error(graph.error());

  std::vector<pase::Comparison> rows;
  for (int64_t p : sweep) {
    pase::Cluster c = cluster;
    c.devices = p;
    pase::Result<pase::Comparison> result = pase::compare(*graph, c, options);
    if (!result) {
      pase::Error e = with_memory_hint(result.error(), c);
      if (sweeping) e.message += " (at " + std::to_string(p) + " devices)";
      return input_error(e);
    }
    rows.push_back(std::move(*result));
  }

  std::string out;
  if (sweeping) {
    out = json ? pase::sweep_to_json(*graph, rows) : trim_line_ends(sweep_text(*graph, rows));
  } else {
    out = json ? pase::comparison_to_json(*graph, rows.front())
               : trim_line_ends(comparison_text(*graph, rows.front(), flags.has("--layers")));
  }
  if (!write_stdout(out)) return input_error(pase::Error{"cannot write the output", ""});
  return kExitOk;
}

}  // namespace pase_cli
