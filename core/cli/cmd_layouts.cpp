// pase layouts: the layout search (pase/layout_search.hpp,
// core/docs/layouts.md): the fastest layouts the engines run, ranked, a
// user's layout placed among them, and the best exported.
#include <cstdio>
#include <optional>
#include <string>

#include "commands.hpp"
#include "flags.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "pase/export.hpp"
#include "pase/json_api.hpp"
#include "pase/layout.hpp"
#include "pase/layout_import.hpp"
#include "pase/layout_search.hpp"
#include "pase/presets.hpp"
#include "report.hpp"

namespace pase_cli {

std::string layouts_usage() {
  return "usage: pase layouts (--model NAME | --graph FILE) [--batch GBS] [--seq S]\n"
         "                    [--preset NAME | cluster options] [--memory GIB] [options]\n\n"
         "Searches every layout that Megatron-LM and torchtitan run for a language model\n"
         "on the cluster (tensor, sequence, pipeline with virtual and uneven stages,\n"
         "data, context, expert degrees; ZeRO 0-3 and HSDP; recomputation; micro-batch\n"
         "size and gradient accumulation) at the global batch --batch, priced by the\n"
         "practice model as 'pase eval --layout' prices one, and prints the fastest that\n"
         "fit (core/docs/layouts.md).\n\n" +
         std::string(kGraphHelp) + std::string(kClusterHelp) +
         "  --memory GIB        memory of one device in GiB (default: the preset's)\n" +
         std::string(kHeadroomHelp) +
         "  --top N             layouts to print (default 10)\n"
         "  --tokens T          a training budget in tokens (15T, 300B, 2e12): the days\n"
         "                      and the cost of each layout\n"
         "  --gpu-hour-price USD\n"
         "                      price of one GPU-hour (default: the preset's)\n"
         "  --layout L          a layout to place in the ranking: name=value items as\n"
         "                      'pase eval --layout' takes, a Megatron-LM argument list or\n"
         "                      a torchtitan TOML ('@FILE' reads it from a file)\n"
         "  --format FORMAT     text (default) or json\n"
         "  --emit TARGET       write the best layout as megatron (a launch script) or\n"
         "                      torchtitan (its TOML) instead\n"
         "  --output FILE, -o FILE\n"
         "                      where --emit writes (default: standard output)\n";
}

namespace {

// "M T", "M -", "- T": which engines start the layout.
std::string engine_marks(const pase::RankedLayout& r) {
  return std::string(r.megatron.accepted() ? "M" : "-") + " " +
         (r.torchtitan.accepted() ? "T" : "-");
}

std::string row(const pase::RankedLayout& r) {
  const std::string margin = r.capacity_bytes > 0
                                 ? " (" + gib_text(std::abs(r.capacity_bytes - r.memory.total())) +
                                       (r.fits ? " free)" : " over)")
                                 : "";
  std::string line = pad_left(r.rank > 0 ? std::to_string(r.rank) : "-", 3) + "  " +
                     pad_right(seconds_text(r.step_time_s), 10) +
                     pad_left(format("%.1f%%", 100 * r.mfu), 6) + "  " +
                     pad_right(format("%.3g", r.tokens_per_s), 9) +
                     pad_right(gib_text(r.memory.total()) + margin, 26) +
                     pad_right(seconds_text(r.parts.compute_s), 10) +
                     pad_right(seconds_text(r.parts.recompute_s), 10) +
                     pad_right(seconds_text(r.parts.communication_s), 10) +
                     pad_right(seconds_text(r.parts.bubble_s), 10) + pad_right(engine_marks(r), 5);
  if (r.days > 0)
    line += pad_right(format("%.1f d", r.days), 9) +
            (r.cost > 0 ? pad_right(format("$%.3g", r.cost), 10) : std::string());
  return line + pase::layout_text(r.layout) + "\n";
}

std::string ranking_text(const pase::LayoutModel& m, const pase::Cluster& c, int64_t gbs,
                         const pase::LayoutSearch& s) {
  std::string out = pad_right("layouts", 17) + m.name + ", batch " + std::to_string(gbs) + " x " +
                    std::to_string(m.seq) + " on " + cluster_text(c) + "\n";
  out += pad_right("searched", 17) + grouped(static_cast<uint64_t>(s.priced)) +
         " layouts priced (" + grouped(static_cast<uint64_t>(s.ruled_out)) +
         " over the memory cap), " + grouped(static_cast<uint64_t>(s.bounded)) +
         " ruled out by a bound, " + grouped(static_cast<uint64_t>(s.refused)) + " refused, in " +
         seconds_text(s.seconds) + "\n\n";
  const std::string head =
      "  #  step       MFU  tokens/s memory per GPU            compute   recompute "
      "comm      bubble    M T  ";
  const bool budget = !s.ranked.empty() && s.ranked.front().days > 0;
  const std::string money = budget ? "days     cost      " : "";
  if (s.ranked.empty()) {
    out += "no layout fits the memory cap\n";
  } else {
    out += head + money + "layout\n";
    for (const pase::RankedLayout& r : s.ranked) out += row(r);
    out += "\n";
    for (size_t i = 1; i < s.ranked.size() && i < 4; ++i)
      out += "  " + std::to_string(s.ranked[i].rank) + ": " + s.ranked[i].versus_best + "\n";
  }
  if (!s.over.empty()) {
    out += "\nthe fastest that do not fit:\n";
    for (const pase::RankedLayout& r : s.over) out += row(r);
  }
  // The engines' refusals of the ranked layouts, once per rule.
  std::string refusals;
  for (const pase::RankedLayout& r : s.ranked)
    for (const auto& [engine, v] :
         {std::pair{"Megatron-LM", &r.megatron}, std::pair{"torchtitan", &r.torchtitan}}) {
      if (v->accepted()) continue;
      const std::string line =
          "  " + std::string(engine) + " " + v->rule + ": " + v->message + " (" + v->source + ")\n";
      if (refusals.find(line) == std::string::npos) refusals += line;
    }
  if (!refusals.empty()) out += "\nengines that refuse a ranked layout (- above):\n" + refusals;
  if (!s.refused_why.empty()) {
    out += "\nrefused:\n";
    for (const auto& [why, count] : s.refused_why)
      out += pad_left(grouped(static_cast<uint64_t>(count)), 8) + "  " + why + "\n";
  }
  if (s.given) {
    out += "\nyour layout:\n" + row(*s.given);
    out += "  " +
           (s.given->rank > 0 ? "rank " + std::to_string(s.given->rank) + ": " : std::string()) +
           s.given->versus_best + "\n";
  }
  return out;
}

}  // namespace

int run_layouts(const Args& args) {
  Flags flags;
  if (auto message = parse_planning_flags(args,
                                          {{"--top", true},
                                           {"--tokens", true},
                                           {"--gpu-hour-price", true},
                                           {"--layout", true},
                                           {"--format", true},
                                           {"--emit", true},
                                           {"--output", true}},
                                          flags))
    return usage_error("layouts", *message);
  bool json = false;
  if (auto failure = format_from_flags(flags, json)) return failure->report("layouts");
  GraphSource source;
  if (auto failure = graph_source_from_flags(flags, source)) return failure->report("layouts");
  pase::Cluster cluster;
  if (auto failure = cluster_from_flags(flags, cluster)) return failure->report("layouts");
  pase::LayoutSearchOptions o;
  if (std::optional<std::string> top = flags.get("--top")) {
    std::optional<int64_t> n = parse_int(*top);
    if (!n || *n < 1 || *n > 1000)
      return usage_error("layouts", "--top: '" + *top + "' is not a count from 1 to 1000");
    o.top = static_cast<size_t>(*n);
  }
  if (auto message = budget_from_flags(flags, o.tokens, o.gpu_hour_price))
    return usage_error("layouts", *message);
  std::optional<pase::ExportTarget> emit;
  if (std::optional<std::string> to = flags.get("--emit")) {
    pase::Result<pase::ExportTarget> t = pase::parse_export_target(*to);
    if (!t || *t == pase::ExportTarget::kJax)
      return usage_error("layouts", "--emit: a layout goes to megatron or torchtitan");
    emit = *t;
  }
  // The model at the global batch, as a plan builds it.
  const int64_t vocab = source.vocab_padding > 0 ? source.vocab_padding : pase::kLlmVocabMultiple;
  pase::Result<pase::Graph> graph = load_source(source);
  if (!graph) return input_error(graph.error());
  int64_t gbs = 0;
  pase::Result<pase::LayoutModel> model = pase::layout_model_of(*graph, vocab, &gbs);
  if (!model) return input_error(model.error());
  o.gbs = gbs;
  if (std::optional<std::string> given = flags.get("--layout")) {
    std::string text = *given;
    if (text.rfind('@', 0) == 0) {
      pase::Result<std::string> file = read_file(text.substr(1));
      if (!file) return input_error(file.error());
      text = *file;
    }
    pase::Result<pase::Layout> l =
        pase::read_any_layout(text, cluster.devices, model->config.num_layers);
    if (!l) return input_error(l.error());
    if (l->gbs == 0) l->gbs = gbs;
    o.given = *l;
  }
  pase::Result<pase::LayoutSearch> s = pase::search_layouts(*model, cluster, o);
  if (!s) return input_error(s.error());
  if (emit) {
    if (s->ranked.empty())
      return input_error(pase::Error{"no layout fits the memory cap: nothing to emit", "emit"});
    const pase::Layout& best = s->ranked.front().layout;
    pase::Result<pase::Graph> g = pase::layout_graph(*model, best);
    if (!g) return input_error(g.error());
    pase::Result<pase::Exported> x = pase::export_layout(*emit, *g, cluster, best);
    if (!x) return input_error(x.error());
    return write_output(flags.get("--output"), x->text);
  }
  const std::string out =
      json ? pase::layout_search_to_json(*s) : ranking_text(*model, cluster, gbs, *s);
  return write_output(flags.get("--output"), out);
}

}  // namespace pase_cli
