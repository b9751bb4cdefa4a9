// pase bench --published FILE: the practice cost model against published,
// measured training runs (core/docs/practice-model.md, "Checked against
// published runs"): each run's layout evaluated on its model and cluster,
// its predicted step time beside the measured one, and its memory beside the
// GPU's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_layouts.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "pase/answers.hpp"
#include "pase/import.hpp"
#include "pase/layout.hpp"
#include "pase/llm.hpp"
#include "pase/pipeline.hpp"
#include "pase/presets.hpp"
#include "report.hpp"
#include "util/json_util.hpp"

namespace pase_cli {
namespace {

// Read with the library's parser, as every JSON input is (util/json_util.hpp).
using Json = pase::json_detail::Json;

struct RunResult {
  std::string id, layout, preset;
  int64_t devices = 0;
  double predicted_s = 0, measured_s = 0, error = 0;  // error: predicted / measured - 1
  double mfu = 0, memory_gib = 0, capacity_gib = 0;
  std::string note;
};

// A run ready to price: its graph and layout built once, so that the fit can
// price it again under other rates.
struct PreparedRun {
  RunResult base;
  pase::Graph graph;
  pase::LayoutStrategy laid;
  const Json* measured = nullptr;
  // What the layout search of the run takes: its model, its cluster before
  // the layout (the preset's memory is the cap there) and its layout.
  pase::LayoutModel model;
  pase::Cluster cluster;
  pase::Layout layout;
};

pase::Error at(const std::string& id, std::string message) {
  return pase::Error{std::move(message), "runs[" + id + "]"};
}

pase::Result<PreparedRun> prepare_run(const Json& run) {
  PreparedRun prepared;
  RunResult& r = prepared.base;
  r.id = run.value("id", std::string("?"));
  const Json& cl = run.at("cluster");
  r.preset = cl.at("preset").get<std::string>();
  const pase::GpuPreset* preset = pase::find_preset(r.preset);
  if (preset == nullptr) return at(r.id, "unknown preset " + cl.at("preset").dump());
  pase::Cluster cluster = pase::apply_preset(pase::Cluster{}, *preset);
  cluster.devices = cl.at("devices").get<int64_t>();
  if (cl.contains("gpus_per_node")) cluster.gpus_per_node = cl.at("gpus_per_node").get<int64_t>();
  cluster.cost_model = pase::CostModel::kPractice;
  cluster.memory_gib = 0;  // the memory is reported, not a cap
  r.capacity_gib = preset->memory_gib;
  // The layout search's: under the GPU's memory less the reserve, with no
  // headroom (as --plan, below).
  prepared.cluster = cluster;
  prepared.cluster.memory_gib = preset->memory_gib;
  prepared.cluster.headroom = 0;

  const Json& lay = run.at("layout");
  pase::Layout layout;
  layout.tp = lay.value("tp", 1);
  layout.pp = lay.value("pp", 1);
  layout.dp = lay.value("dp", 1);
  layout.cp = lay.value("cp", 1);
  layout.sp = lay.value("sp", false);
  layout.zero = lay.value("zero", 0);
  pase::Result<pase::Recompute> recompute =
      pase::parse_recompute(lay.value("recompute", std::string("none")));
  if (!recompute) return at(r.id, recompute.error().message);
  layout.recompute = *recompute;
  if (lay.contains("vpp") && lay["vpp"].is_number()) layout.vpp = lay["vpp"].get<int64_t>();
  if (layout.pp > 1 && !(lay.contains("vpp") && lay["vpp"].is_number()))
    r.note = "virtual stages not stated: 1; ";
  layout.gbs = run.at("global_batch").get<int64_t>();
  layout.mbs = run.contains("micro_batch") && run["micro_batch"].is_number()
                   ? run["micro_batch"].get<int64_t>()
                   : 1;
  if (!(run.contains("micro_batch") && run["micro_batch"].is_number()))
    r.note += "micro-batch not stated: 1; ";
  r.layout = pase::layout_text(layout);
  r.devices = cluster.devices;

  pase::ImportOptions options;
  options.batch = layout.gbs;
  options.seq = run.at("seq").get<int64_t>();
  options.name = r.id;
  pase::Result<pase::LlmConfig> config = pase::parse_llm_config(run.at("config").dump());
  if (!config) return at(r.id, config.error().to_string());
  prepared.model = pase::LayoutModel{*config, r.id, options.seq, pase::kLlmVocabMultiple};
  prepared.layout = layout;
  pase::Result<pase::GraphSpec> spec = pase::import_llm_config(*config, options);
  if (!spec) return at(r.id, spec.error().to_string());
  pase::Result<pase::Graph> graph = pase::build_graph(std::move(*spec));
  if (!graph) return at(r.id, graph.error().to_string());
  pase::Result<pase::LayoutStrategy> laid = pase::layout_strategy(*graph, cluster, layout);
  if (!laid) return at(r.id, laid.error().to_string());
  prepared.graph = std::move(*graph);
  prepared.laid = std::move(*laid);
  prepared.measured = &run.at("measured");
  if (!prepared.measured->contains("iteration_s") && !prepared.measured->contains("mfu"))
    return at(r.id, "no iteration_s or mfu measured");
  return prepared;
}

// The run priced with the device rates `device`.
pase::Result<RunResult> price_run(const PreparedRun& run, const pase::DeviceProfile& device) {
  RunResult r = run.base;
  pase::Cluster cluster = run.laid.cluster;
  cluster.device = device;
  pase::Result<pase::PipelinePlan> plan =
      pase::evaluate_pipeline(run.graph, cluster, run.laid.strategy);
  if (!plan) return at(r.id, plan.error().to_string());
  r.predicted_s = plan->plan.step_time_s;
  std::optional<pase::Throughput> t =
      pase::throughput(plan->graph, cluster, r.predicted_s, plan->pipeline.microbatches);
  r.mfu = t ? t->mfu : 0;
  const Json& measured = *run.measured;
  if (measured.contains("iteration_s")) {
    r.measured_s = measured["iteration_s"].get<double>();
  } else if (t) {
    // The step the published MFU means, by the same count of model FLOPs.
    r.measured_s = t->model_flops / (measured["mfu"].get<double>() * cluster.tflops * 1e12 *
                                     static_cast<double>(cluster.devices));
    r.note += "measured step from the published MFU; ";
  } else {
    return at(r.id, "an MFU is measured but the graph has no tokens to count");
  }
  r.error = r.predicted_s / r.measured_s - 1;
  // What the GPU holds: the plan's memory and the framework's reserve.
  r.memory_gib = plan->plan.memory.total() / 0x1p30 + device.reserved_gib;
  return r;
}

// ---- The fit ("Fitting the rates" in core/docs/practice-model.md) ----------

struct Parameter {
  const char* name;
  double pase::DeviceProfile::*field;
  double low, high;
  bool logarithmic;
};

// In the order they are fitted: a GPU kind with k runs fits the first k - 2
// (two runs more than parameters, so that no run is matched exactly); a
// kind with fewer than 3 runs keeps its rates.
constexpr Parameter kParameters[] = {
    {"matmul_efficiency", &pase::DeviceProfile::matmul_efficiency, 0.2, 1.0, false},
    {"link_efficiency", &pase::DeviceProfile::link_efficiency, 0.1, 1.0, false},
    {"matmul_half", &pase::DeviceProfile::matmul_half, 8, 2048, true},
    {"attention_efficiency", &pase::DeviceProfile::attention_efficiency, 0.1, 1.0, false},
    {"overlap", &pase::DeviceProfile::overlap, 0.0, 1.0, false},
    {"memory_efficiency", &pase::DeviceProfile::memory_efficiency, 0.1, 1.0, false},
};

struct KindFit {
  std::string kind;  // the preset of its runs
  std::vector<const PreparedRun*> runs;
  pase::DeviceProfile before, after;
  size_t fitted = 0;
  double loss_before = 0, loss_after = 0;
};

// The sum over the runs of log(predicted / measured) squared.
pase::Result<double> fit_loss(const KindFit& k, const pase::DeviceProfile& d) {
  double sum = 0;
  for (const PreparedRun* run : k.runs) {
    pase::Result<RunResult> r = price_run(*run, d);
    if (!r) return r.error();
    const double e = std::log(r->predicted_s / r->measured_s);
    sum += e * e;
  }
  return sum;
}

// Coordinate descent over the first `fitted` parameters: each in turn set to
// the best of a grid over its range, then of finer grids around it, until a
// sweep improves the loss by less than 1e-6.
pase::Result<pase::DeviceProfile> fit_kind(KindFit& k) {
  pase::DeviceProfile d = k.before;
  pase::Result<double> loss = fit_loss(k, d);
  if (!loss) return loss.error();
  k.loss_before = *loss;
  double best = *loss;
  for (int sweep = 0; sweep < 6; ++sweep) {
    const double start = best;
    for (size_t i = 0; i < k.fitted; ++i) {
      const Parameter& p = kParameters[i];
      double low = p.low, high = p.high;
      for (int level = 0; level < 3; ++level) {
        constexpr int kSteps = 12;
        double chosen = d.*p.field;
        for (int s = 0; s <= kSteps; ++s) {
          const double f = static_cast<double>(s) / kSteps;
          const double x = p.logarithmic ? low * std::pow(high / low, f) : low + (high - low) * f;
          pase::DeviceProfile trial = d;
          trial.*p.field = x;
          pase::Result<double> l = fit_loss(k, trial);
          if (!l) return l.error();
          if (*l < best) {
            best = *l;
            chosen = x;
          }
        }
        d.*p.field = chosen;
        const double span = (p.logarithmic ? std::log(high / low) : high - low) / kSteps;
        if (p.logarithmic) {
          low = std::max(p.low, chosen / std::exp(span));
          high = std::min(p.high, chosen * std::exp(span));
        } else {
          low = std::max(p.low, chosen - span);
          high = std::min(p.high, chosen + span);
        }
      }
    }
    std::fprintf(stderr, "fit %s: sweep %d, loss %.6f\n", k.kind.c_str(), sweep + 1, best);
    if (start - best < 1e-6) break;
  }
  k.loss_after = best;
  return d;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

// ---- The planner against the published layouts ("The planner against the
// experts" in core/docs/practice-model.md) ------------------------------------

struct PlannedRun {
  std::string id, plan;
  int64_t devices = 0;
  // The published layout's step, the best layout's and the per-layer
  // answer's (0: none fits), and the planning's seconds.
  double published_s = 0, layout_s = 0, planned_s = 0, seconds = 0;
  double gap = 0;          // the per-layer answer's proven gap (-1: no bound known)
  std::string stopped_in;  // where the time limit stopped it ("": it ended)
};

// `run` planned as `pase plan` answers it (the best layout, then the
// per-layer plan from it, with ZeRO searched) on its cluster under its GPU's
// memory, at its global batch and sequence: stages and micro-batches
// "auto", the recomputation searched; the search stopped after `limit_s`
// seconds with its best plan and proven gap (PlanOptions::time_limit_s).
pase::Result<PlannedRun> plan_run(const PreparedRun& run, double limit_s) {
  PlannedRun out;
  out.id = run.base.id;
  out.devices = run.base.devices;
  pase::Result<RunResult> published = price_run(run, run.laid.cluster.device);
  if (!published) return published.error();
  out.published_s = published->predicted_s;
  pase::Cluster cluster = run.laid.cluster;
  cluster.memory_gib = run.base.capacity_gib;
  // No headroom: the published layouts ran in the memory less the reserve,
  // and the planner is held to the same.
  cluster.headroom = 0;
  cluster.training.recompute = pase::Recompute::kAuto;
  cluster.training.recompute_blocks = -1;
  cluster.training.recompute_rest = pase::Recompute::kNone;
  pase::AnswerOptions answers;
  answers.pipeline = pase::PipelineOptions{.stages = pase::kAuto, .microbatches = pase::kAuto};
  pase::PlanOptions options;
  options.threads = pase::default_threads();
  options.time_limit_s = limit_s;
  const auto start = std::chrono::steady_clock::now();
  pase::Result<pase::PlanAnswers> planned =
      pase::plan_answers(run.graph, cluster, answers, options);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!planned) return at(out.id, planned.error().to_string());
  if (!planned->layouts.ranked.empty()) out.layout_s = planned->layouts.ranked.front().step_time_s;
  if (planned->per_layer.plan.fits) {
    out.planned_s = planned->per_layer.plan.step_time_s;
    out.plan = pase::pipeline_label(planned->per_layer.pipeline);
  }
  out.gap = planned->gap;
  out.stopped_in = planned->stopped.empty() ? "" : planned->stopped_in;
  return out;
}

std::string seconds_or_dash(double s) { return s > 0 ? format("%.4g s", s) : "-"; }

int run_bench_plans(const std::vector<PreparedRun>& runs, double limit_s) {
  std::string out =
      "run     GPUs   published      layout   per-layer     gain   planning      gap  plan\n";
  if (!write_stdout(out)) return kExitError;
  for (const PreparedRun& run : runs) {
    pase::Result<PlannedRun> r = plan_run(run, limit_s);
    if (!r) return input_error(r.error());
    std::string line = pad_right(r->id, 6) + pad_left(std::to_string(r->devices), 6) +
                       pad_left(format("%.4g s", r->published_s), 12) +
                       pad_left(seconds_or_dash(r->layout_s), 12) +
                       pad_left(seconds_or_dash(r->planned_s), 12);
    line += pad_left(r->planned_s > 0 ? format("%+.1f%%", 100 * (r->published_s / r->planned_s - 1))
                                      : std::string("-"),
                     9);
    line += pad_left(format("%.1f s", r->seconds), 11) +
            pad_left(r->gap < 0 ? std::string("?") : format("%.2f%%", 100 * r->gap), 9) + "  " +
            (r->plan.empty() ? "nothing fits" : r->plan) +
            (r->stopped_in.empty() ? "" : " (stopped at the limit in " + r->stopped_in + ")") +
            "\n";
    if (!write_stdout(line)) return kExitError;
  }
  return kExitOk;
}

}  // namespace

int run_bench_published(const std::string& path, bool json, bool fit, double plan_limit_s) {
  pase::Result<std::string> text = read_file(path);
  if (!text) return input_error(text.error());
  pase::Result<Json> parsed = pase::json_detail::parse_document(*text);
  if (!parsed) return input_error(in_file(path, parsed.error()));
  const Json& doc = *parsed;
  if (!doc.is_object() || !doc.contains("runs") || !doc["runs"].is_array())
    return input_error(pase::Error{"not a published-runs/1 document with a list 'runs'", path});
  std::vector<PreparedRun> runs;
  for (const Json& run : doc["runs"]) {
    pase::Result<PreparedRun> r = [&]() -> pase::Result<PreparedRun> {
      try {
        return prepare_run(run);
      } catch (const Json::exception& e) {
        return pase::Error{std::string("malformed run: ") + e.what(),
                           "runs[" + run.value("id", std::string("?")) + "]"};
      }
    }();
    if (!r) return input_error(r.error());
    runs.push_back(std::move(*r));
  }
  if (plan_limit_s > 0) return run_bench_plans(runs, plan_limit_s);
  // The rates of each run: its preset's, or under --fit its GPU kind's fit.
  std::vector<pase::DeviceProfile> rates;
  for (const PreparedRun& run : runs) rates.push_back(run.laid.cluster.device);
  std::vector<KindFit> kinds;
  if (fit) {
    for (const PreparedRun& run : runs) {
      const std::string kind(pase::practice_kind(run.base.preset));
      auto it = std::find_if(kinds.begin(), kinds.end(),
                             [&](const KindFit& k) { return k.kind == kind; });
      if (it == kinds.end()) {
        kinds.push_back(KindFit{kind, {}, run.laid.cluster.device, {}, 0, 0, 0});
        it = kinds.end() - 1;
      }
      it->runs.push_back(&run);
    }
    for (KindFit& k : kinds) {
      k.fitted = std::min(k.runs.size() < 3 ? 0 : k.runs.size() - 2, std::size(kParameters));
      pase::Result<pase::DeviceProfile> d = fit_kind(k);
      if (!d) return input_error(d.error());
      k.after = *d;
      for (size_t i = 0; i < runs.size(); ++i)
        if (pase::practice_kind(runs[i].base.preset) == k.kind) rates[i] = k.after;
    }
  }
  std::vector<RunResult> results;
  std::vector<PublishedSearch> searches;
  for (size_t i = 0; i < runs.size(); ++i) {
    pase::Result<RunResult> r = price_run(runs[i], rates[i]);
    if (!r) return input_error(r.error());
    results.push_back(std::move(*r));
    // Every layout of the run's space at the same rates.
    pase::Cluster cluster = runs[i].cluster;
    cluster.device = rates[i];
    pase::Result<PublishedSearch> s =
        search_beside_published(runs[i].model, cluster, runs[i].layout);
    if (!s) return input_error(at(runs[i].base.id, s.error().to_string()));
    searches.push_back(std::move(*s));
  }
  std::vector<double> errors;
  for (const RunResult& r : results) errors.push_back(std::fabs(r.error));
  const double median = median_of(errors);
  const double worst = errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end());
  if (json) {
    Json out = Json::object();
    Json list = Json::array();
    for (const RunResult& r : results) {
      list.push_back(Json{{"id", r.id},
                          {"devices", r.devices},
                          {"layout", r.layout},
                          {"predicted_s", r.predicted_s},
                          {"measured_s", r.measured_s},
                          {"error", r.error},
                          {"mfu", r.mfu},
                          {"memory_gib", r.memory_gib},
                          {"capacity_gib", r.capacity_gib},
                          {"fits", r.memory_gib <= r.capacity_gib},
                          {"note", r.note}});
      add_published_search(list.back(), searches[list.size() - 1]);
    }
    out["runs"] = list;
    out["median_abs_error"] = median;
    out["max_abs_error"] = worst;
    if (fit) {
      Json fits = Json::array();
      for (const KindFit& k : kinds) {
        Json f{{"kind", k.kind},
               {"runs", k.runs.size()},
               {"loss_before", k.loss_before},
               {"loss_after", k.loss_after}};
        for (size_t i = 0; i < k.fitted; ++i)
          f["fitted"][kParameters[i].name] = k.after.*kParameters[i].field;
        fits.push_back(f);
      }
      out["fit"] = fits;
    }
    return write_stdout(out.dump(2) + "\n") ? kExitOk : kExitError;
  }
  std::string out;
  for (const KindFit& k : kinds) {
    out += "fit for " + k.kind + " (" + std::to_string(k.runs.size()) + " runs, " +
           std::to_string(k.fitted) + " parameters): sum of squared log errors " +
           format("%.4f", k.loss_before) + " -> " + format("%.4f", k.loss_after) + "\n";
    for (size_t i = 0; i < k.fitted; ++i)
      out += "  " + pad_right(kParameters[i].name, 22) +
             pad_left(format("%.4g", k.before.*kParameters[i].field), 9) + " -> " +
             format("%.4g", k.after.*kParameters[i].field) + "\n";
  }
  if (!kinds.empty()) out += "\n";
  out += "run     GPUs  predicted   measured   error    MFU   memory GiB  layout\n";
  for (const RunResult& r : results) {
    out += pad_right(r.id, 6) + pad_left(std::to_string(r.devices), 6) +
           pad_left(format("%.3f s", r.predicted_s), 11) +
           pad_left(format("%.3f s", r.measured_s), 11) +
           pad_left(format("%+.1f%%", 100 * r.error), 8) +
           pad_left(format("%.1f%%", 100 * r.mfu), 7) +
           pad_left(format("%.1f", r.memory_gib) + "/" + format("%g", r.capacity_gib), 13) + "  " +
           r.layout + "\n";
    std::string note = r.note;
    if (r.memory_gib > r.capacity_gib) note += "does not fit in the GPU's memory; ";
    if (!note.empty()) out += "      " + note.substr(0, note.size() - 2) + "\n";
  }
  size_t fitting = 0;
  for (const RunResult& r : results) fitting += r.memory_gib <= r.capacity_gib ? 1 : 0;
  out += "median |error| " + format("%.1f%%", 100 * median) + ", largest " +
         format("%.1f%%", 100 * worst) + " over " + std::to_string(results.size()) + " runs; " +
         std::to_string(fitting) + " of them fit in memory\n";
  out += published_search_header();
  for (size_t i = 0; i < results.size(); ++i)
    out += published_search_row(results[i].id, searches[i]);
  return write_stdout(out) ? kExitOk : kExitError;
}

}  // namespace pase_cli
