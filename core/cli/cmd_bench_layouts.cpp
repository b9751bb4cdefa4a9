// pase bench --layouts: the top 10 layouts of every built-in language model
// on 8, 64 and 1,024 H100s, and the engines' verdicts on each, checked
// twice: against engine_refusals() on the layout, and by writing the
// Megatron-LM script and the torchtitan TOML of each layout an engine accepts
// (core/docs/layouts.md, "The engines' verdicts on the top layouts").
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_layouts.hpp"
#include "export/engine_rules.hpp"
#include "flags.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "pase/export.hpp"
#include "pase/models.hpp"
#include "report.hpp"

namespace pase_cli {
namespace {

using Json = pase::json_detail::Json;

constexpr pase::ExportTarget kEngines[] = {pase::ExportTarget::kMegatron,
                                           pase::ExportTarget::kTorchtitan};

const char* engine_name(pase::ExportTarget t) {
  return t == pase::ExportTarget::kMegatron ? "Megatron-LM" : "torchtitan";
}

// One ranked layout's verdict by one engine, and what checking it found.
struct Checked {
  pase::EngineVerdict verdict;
  // Empty when the verdict is engine_refusals()'s first refusal (or none)
  // and, accepted, export_layout() writes the layout; else what differs.
  std::string problem;
};

struct SweepCase {
  std::string model;
  int64_t devices = 0, gbs = 0, seq = 0;
  std::string error;  // the search's, when it fails
  std::vector<pase::RankedLayout> ranked;
  std::vector<std::vector<Checked>> checked;  // per ranked layout, per engine
  double seconds = 0;
};

Checked check(pase::ExportTarget target, const pase::LayoutModel& model,
              const pase::Cluster& cluster, const pase::RankedLayout& r,
              std::map<int64_t, pase::Result<pase::Graph>>& graphs) {
  Checked c;
  c.verdict = target == pase::ExportTarget::kMegatron ? r.megatron : r.torchtitan;
  const std::vector<pase::EngineRefusal> refused = pase::engine_refusals(
      target, model.config, model.seq, r.layout, cluster.devices, cluster.gpus_per_node);
  if (refused.empty() != c.verdict.accepted() ||
      (!refused.empty() && refused.front().rule != c.verdict.rule)) {
    c.problem = "the search's verdict (" +
                (c.verdict.accepted() ? std::string("accepted") : c.verdict.rule) +
                ") is not engine_refusals()'s (" +
                (refused.empty() ? std::string("accepted") : refused.front().rule) + ")";
    return c;
  }
  if (!c.verdict.accepted()) {
    if (c.verdict.message.empty() || c.verdict.source.empty())
      c.problem = "the refusal " + c.verdict.rule + " names no message or no source";
    return c;
  }
  // The graph depends on the layout through its global batch and tp (the
  // vocabulary's padding) only.
  auto g = graphs.find(r.layout.tp);
  if (g == graphs.end()) g = graphs.emplace(r.layout.tp, pase::layout_graph(model, r.layout)).first;
  if (!g->second) {
    c.problem = "its graph does not build: " + g->second.error().to_string();
    return c;
  }
  pase::Result<pase::Exported> x = pase::export_layout(target, *g->second, cluster, r.layout);
  if (!x) c.problem = "accepted, but export_layout() fails: " + x.error().to_string();
  return c;
}

SweepCase sweep(const std::string& name, int64_t seq, const pase::Cluster& cluster) {
  SweepCase k;
  k.model = name;
  k.devices = cluster.devices;
  k.gbs = 4 * cluster.devices;
  k.seq = seq;
  const pase::LayoutModel model{*pase::llm_config(name), name, seq, pase::kLlmVocabMultiple};
  pase::LayoutSearchOptions o;
  o.gbs = k.gbs;
  pase::Result<pase::LayoutSearch> s = pase::search_layouts(model, cluster, o);
  if (!s) {
    k.error = s.error().to_string();
    return k;
  }
  k.ranked = s->ranked;
  k.seconds = s->seconds;
  std::map<int64_t, pase::Result<pase::Graph>> graphs;
  for (const pase::RankedLayout& r : k.ranked) {
    k.checked.emplace_back();
    for (pase::ExportTarget t : kEngines)
      k.checked.back().push_back(check(t, model, cluster, r, graphs));
  }
  return k;
}

// "torchtitan zero-stage x6, Megatron-LM pipeline-layers x2": the refusals
// of a case's ranked layouts, per engine and rule, in order met.
std::vector<std::pair<std::string, int64_t>> refusals(const SweepCase& k) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const std::vector<Checked>& layout : k.checked)
    for (size_t e = 0; e < layout.size(); ++e) {
      if (layout[e].verdict.accepted()) continue;
      const std::string key = std::string(engine_name(kEngines[e])) + " " + layout[e].verdict.rule;
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == key; });
      if (it == out.end()) {
        out.emplace_back(key, 1);
      } else {
        ++it->second;
      }
    }
  return out;
}

int64_t accepted_by(const SweepCase& k, int engines_mask) {
  int64_t n = 0;
  for (const std::vector<Checked>& layout : k.checked) {
    int mask = 0;
    for (size_t e = 0; e < layout.size(); ++e)
      if (layout[e].verdict.accepted()) mask |= 1 << e;
    n += (mask & engines_mask) == engines_mask ? 1 : 0;
  }
  return n;
}

}  // namespace

int run_bench_layouts(const std::vector<std::string>& models,
                      const std::vector<int64_t>& device_counts, bool json) {
  std::vector<SweepCase> cases;
  int64_t problems = 0, exports = 0, verdicts = 0;
  for (const std::string& name : models) {
    const pase::ModelInfo* info = nullptr;
    for (const pase::ModelInfo& m : pase::list_models())
      if (m.name == name) info = &m;
    if (info == nullptr || !info->llm)
      return input_error(
          pase::Error{"'" + name + "' is not a built-in language model (pase models)", "models"});
    for (int64_t n : device_counts) {
      Flags h100;
      h100.set("--preset", "h100");
      h100.set("--procs", std::to_string(n));
      pase::Cluster cluster;
      if (auto failure = cluster_from_flags(h100, cluster)) return failure->report("bench");
      cases.push_back(sweep(name, info->default_seq, cluster));
      for (const std::vector<Checked>& layout : cases.back().checked)
        for (const Checked& c : layout) {
          ++verdicts;
          problems += c.problem.empty() ? 0 : 1;
          exports += c.verdict.accepted() ? 1 : 0;
        }
      if (!cases.back().error.empty()) ++problems;
    }
  }
  if (json) {
    Json out = Json::object();
    out["preset"] = "h100";
    out["gpus_per_node"] = 8;
    Json list = Json::array();
    for (const SweepCase& k : cases) {
      Json c{{"model", k.model},
             {"devices", k.devices},
             {"gbs", k.gbs},
             {"seq", k.seq},
             {"ranked", k.ranked.size()},
             {"both", accepted_by(k, 3)},
             {"megatron", accepted_by(k, 1)},
             {"torchtitan", accepted_by(k, 2)},
             {"search_s", k.seconds}};
      if (!k.error.empty()) c["error"] = k.error;
      Json layouts = Json::array();
      for (size_t i = 0; i < k.ranked.size(); ++i) {
        Json l{{"rank", k.ranked[i].rank},
               {"layout", pase::layout_text(k.ranked[i].layout)},
               {"step_time_s", k.ranked[i].step_time_s}};
        for (size_t e = 0; e < k.checked[i].size(); ++e) {
          const Checked& ch = k.checked[i][e];
          Json v{{"accepted", ch.verdict.accepted()}};
          if (!ch.verdict.accepted()) {
            v["rule"] = ch.verdict.rule;
            v["message"] = ch.verdict.message;
            v["source"] = ch.verdict.source;
          }
          if (!ch.problem.empty()) v["problem"] = ch.problem;
          l[pase::export_target_name(kEngines[e])] = v;
        }
        layouts.push_back(l);
      }
      c["layouts"] = layouts;
      list.push_back(c);
    }
    out["cases"] = list;
    out["verdicts"] = verdicts;
    out["exports"] = exports;
    out["problems"] = problems;
    if (!write_stdout(out.dump(2) + "\n")) return kExitError;
    return problems == 0 ? kExitOk : kExitError;
  }
  std::string out =
      "the engines' verdicts on the top 10 layouts (pase layouts on H100, nodes of 8, batch 4 x "
      "GPUs, the model's sequence):\n"
      "model          GPUs  batch   seq  ranked  both  M only  T only  search   refusals (engine "
      "rule x layouts)\n";
  for (const SweepCase& k : cases) {
    out += pad_right(k.model, 13) + pad_left(std::to_string(k.devices), 6) +
           pad_left(std::to_string(k.gbs), 7) + pad_left(std::to_string(k.seq), 6);
    if (!k.error.empty()) {
      out += "  the search fails: " + k.error + "\n";
      continue;
    }
    const int64_t both = accepted_by(k, 3);
    out += pad_left(std::to_string(k.ranked.size()), 8) + pad_left(std::to_string(both), 6) +
           pad_left(std::to_string(accepted_by(k, 1) - both), 8) +
           pad_left(std::to_string(accepted_by(k, 2) - both), 8) +
           pad_left(format("%.2f s", k.seconds), 8) + "  ";
    std::string why;
    for (const auto& [rule, count] : refusals(k))
      why += (why.empty() ? "" : ", ") + rule + " x" + std::to_string(count);
    out += (k.ranked.empty() ? std::string("no layout fits") : why.empty() ? "-" : why) + "\n";
    for (size_t i = 0; i < k.checked.size(); ++i)
      for (size_t e = 0; e < k.checked[i].size(); ++e)
        if (!k.checked[i][e].problem.empty())
          out += "      " + std::string(engine_name(kEngines[e])) + " on #" +
                 std::to_string(k.ranked[i].rank) + " " + pase::layout_text(k.ranked[i].layout) +
                 ": " + k.checked[i][e].problem + "\n";
  }
  // Each rule once, with what the engine says and where.
  std::string rules;
  for (const SweepCase& k : cases)
    for (const std::vector<Checked>& layout : k.checked)
      for (size_t e = 0; e < layout.size(); ++e) {
        const pase::EngineVerdict& v = layout[e].verdict;
        if (v.accepted()) continue;
        const std::string head = "  " + std::string(engine_name(kEngines[e])) + " " + v.rule + ": ";
        if (rules.find(head) == std::string::npos)
          rules += head + v.message + " (" + v.source + ")\n";
      }
  if (!rules.empty()) out += "\nthe rules, as first met:\n" + rules;
  out += "\n" + std::to_string(verdicts) + " verdicts checked against engine_refusals(), " +
         std::to_string(exports) + " accepted layouts exported; " + std::to_string(problems) +
         (problems == 1 ? " problem\n" : " problems\n");
  if (!write_stdout(out)) return kExitError;
  return problems == 0 ? kExitOk : kExitError;
}

}  // namespace pase_cli
