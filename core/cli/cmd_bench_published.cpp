// pase bench --published FILE: the practice cost model against published,
// measured training runs (core/docs/practice-model.md, "Checked against
// published runs"): each run's layout evaluated on its model and cluster,
// its predicted step time beside the measured one, and its memory beside the
// GPU's.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "pase/import.hpp"
#include "pase/layout.hpp"
#include "pase/llm.hpp"
#include "pase/pipeline.hpp"
#include "pase/presets.hpp"
#include "report.hpp"

namespace pase_cli {
namespace {

using Json = nlohmann::json;

struct RunResult {
  std::string id, layout;
  int64_t devices = 0;
  double predicted_s = 0, measured_s = 0, error = 0;  // error: predicted / measured - 1
  double mfu = 0, memory_gib = 0, capacity_gib = 0;
  std::string note;
};

pase::Error at(const std::string& id, std::string message) {
  return pase::Error{std::move(message), "runs[" + id + "]"};
}

pase::Result<RunResult> evaluate_run(const Json& run) {
  RunResult r;
  r.id = run.value("id", std::string("?"));
  const Json& cl = run.at("cluster");
  const pase::GpuPreset* preset = pase::find_preset(cl.at("preset").get<std::string>());
  if (preset == nullptr) return at(r.id, "unknown preset " + cl.at("preset").dump());
  pase::Cluster cluster = pase::apply_preset(pase::Cluster{}, *preset);
  cluster.devices = cl.at("devices").get<int64_t>();
  if (cl.contains("gpus_per_node")) cluster.gpus_per_node = cl.at("gpus_per_node").get<int64_t>();
  cluster.cost_model = pase::CostModel::kPractice;
  cluster.memory_gib = 0;  // the memory is reported, not a cap

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
  if (lay.contains("vpp") && lay["vpp"].is_number() && lay["vpp"].get<int64_t>() > 1)
    r.note = "vpp " + std::to_string(lay["vpp"].get<int64_t>()) + " run as 1F1B; ";
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
  pase::Result<pase::GraphSpec> spec = pase::import_llm_config(run.at("config").dump(), options);
  if (!spec) return at(r.id, spec.error().to_string());
  pase::Result<pase::Graph> graph = pase::build_graph(std::move(*spec));
  if (!graph) return at(r.id, graph.error().to_string());
  pase::Result<pase::LayoutStrategy> laid = pase::layout_strategy(*graph, cluster, layout);
  if (!laid) return at(r.id, laid.error().to_string());
  pase::Result<pase::PipelinePlan> plan =
      pase::evaluate_pipeline(*graph, laid->cluster, laid->strategy);
  if (!plan) return at(r.id, plan.error().to_string());
  r.predicted_s = plan->plan.step_time_s;
  std::optional<pase::Throughput> t =
      pase::throughput(plan->graph, laid->cluster, r.predicted_s, plan->pipeline.microbatches);
  r.mfu = t ? t->mfu : 0;
  const Json& measured = run.at("measured");
  if (measured.contains("iteration_s")) {
    r.measured_s = measured["iteration_s"].get<double>();
  } else if (measured.contains("mfu") && t) {
    // The step the published MFU means, by the same count of model FLOPs.
    r.measured_s = t->model_flops / (measured["mfu"].get<double>() * cluster.tflops * 1e12 *
                                     static_cast<double>(cluster.devices));
    r.note += "measured step from the published MFU; ";
  } else {
    return at(r.id, "no iteration_s or mfu measured");
  }
  r.error = r.predicted_s / r.measured_s - 1;
  r.memory_gib = plan->plan.memory.total() / 0x1p30;
  r.capacity_gib = preset->memory_gib;
  return r;
}

}  // namespace

int run_bench_published(const std::string& path, bool json) {
  pase::Result<std::string> text = read_file(path);
  if (!text) return input_error(text.error());
  Json doc = Json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.contains("runs") || !doc["runs"].is_array())
    return input_error(pase::Error{"not a published-runs/1 document with a list 'runs'", path});
  std::vector<RunResult> results;
  for (const Json& run : doc["runs"]) {
    pase::Result<RunResult> r = [&]() -> pase::Result<RunResult> {
      try {
        return evaluate_run(run);
      } catch (const Json::exception& e) {
        return pase::Error{std::string("malformed run: ") + e.what(),
                           "runs[" + run.value("id", std::string("?")) + "]"};
      }
    }();
    if (!r) return input_error(r.error());
    results.push_back(std::move(*r));
  }
  std::vector<double> errors;
  for (const RunResult& r : results) errors.push_back(std::fabs(r.error));
  std::vector<double> sorted = errors;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median =
      n == 0 ? 0 : (n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2);
  const double worst = n == 0 ? 0 : sorted.back();
  if (json) {
    Json out = Json::object();
    Json list = Json::array();
    for (const RunResult& r : results)
      list.push_back(Json{{"id", r.id},
                          {"devices", r.devices},
                          {"layout", r.layout},
                          {"predicted_s", r.predicted_s},
                          {"measured_s", r.measured_s},
                          {"error", r.error},
                          {"mfu", r.mfu},
                          {"memory_gib", r.memory_gib},
                          {"capacity_gib", r.capacity_gib},
                          {"note", r.note}});
    out["runs"] = list;
    out["median_abs_error"] = median;
    out["max_abs_error"] = worst;
    return write_stdout(out.dump(2) + "\n") ? kExitOk : kExitError;
  }
  std::string out = "run     GPUs  predicted   measured   error    MFU   memory GiB  layout\n";
  for (const RunResult& r : results) {
    out += pad_right(r.id, 6) + pad_left(std::to_string(r.devices), 6) +
           pad_left(format("%.3f s", r.predicted_s), 11) +
           pad_left(format("%.3f s", r.measured_s), 11) +
           pad_left(format("%+.1f%%", 100 * r.error), 8) +
           pad_left(format("%.1f%%", 100 * r.mfu), 7) +
           pad_left(format("%.1f", r.memory_gib) + "/" + format("%g", r.capacity_gib), 13) + "  " +
           r.layout + "\n";
    if (!r.note.empty()) out += "      " + r.note.substr(0, r.note.size() - 2) + "\n";
  }
  out += "median |error| " + format("%.1f%%", 100 * median) + ", largest " +
         format("%.1f%%", 100 * worst) + " over " + std::to_string(n) + " runs\n";
  return write_stdout(out) ? kExitOk : kExitError;
}

}  // namespace pase_cli
