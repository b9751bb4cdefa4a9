// The two answers of a plan of a language model as JSON (pase/json_api.hpp,
// plan_answers_to_json(); core/docs/layouts.md, "Both answers"): the
// per-layer plan's document with "best_layout" and "per_layer" beside it.
#include <string>
#include <vector>

#include "api/entry.hpp"
#include "pase/answers.hpp"
#include "pase/layout.hpp"

namespace pase {

using json_detail::Json;

namespace {

Json plan_answers_object(const PlanAnswers& a, bool zero_searched) {
  Json j = pipeline_plan_object(a.cluster, a.per_layer);
  j["best_layout"] =
      a.layouts.ranked.empty() ? Json(nullptr) : ranked_layout_json(a.layouts.ranked.front());
  Json per_layer{{"runs_on", "JAX/GSPMD"},           {"step_time_s", a.per_layer.plan.step_time_s},
                 {"layout_wins", a.layout_wins},     {"gain_s", a.gain_s},
                 {"gain_fraction", a.gain_fraction}, {"differs_at", a.differs_at},
                 {"set_by_hand", a.set_by_hand},     {"zero", a.cluster.training.zero},
                 {"zero_searched", zero_searched}};
  // What the search proved (-1: no bound known) and, after a stop, where.
  per_layer["gap"] = a.gap >= 0 ? Json(a.gap) : Json();
  per_layer["lower_bound_s"] = a.gap >= 0 ? Json(a.lower_bound_s) : Json();
  if (!a.stopped.empty()) {
    per_layer["stopped"] = a.stopped;
    per_layer["stopped_in"] = a.stopped_in;
  }
  if (a.days > 0) {
    per_layer["days"] = a.days;
    per_layer["cost"] = a.cost;
  }
  j["per_layer"] = std::move(per_layer);
  j["layouts"] = Json{{"priced", a.layouts.priced},
                      {"ruled_out", a.layouts.ruled_out},
                      {"bounded", a.layouts.bounded},
                      {"refused", a.layouts.refused},
                      {"seconds", a.layouts.seconds}};
  return j;
}

}  // namespace

std::string plan_answers_to_json(const PlanAnswers& answers, bool zero_searched) {
  return json_detail::dump_pretty(plan_answers_object(answers, zero_searched)) + "\n";
}

std::string answers_json(const PlanRequest& request) {
  AnswerOptions a;
  if (request.pipeline) a.pipeline = *request.pipeline;
  a.zero_auto = !request.zero_given;
  a.vocab_multiple = request.vocab_padding;
  a.layouts.tokens = request.tokens;
  a.layouts.gpu_hour_price = request.gpu_hour_price;
  Result<PlanAnswers> answers = plan_answers(request.graph, request.cluster, a, request.options);
  if (!answers) return error_to_json(answers.error());
  Json j = plan_answers_object(*answers, a.zero_auto);
  const std::vector<ExportTarget>& emit = request.emit;
  if (!emit.empty()) {
    Json exports = Json::array();
    for (ExportTarget target : emit)
      exports.push_back(export_entry(target, export_answers(target, *answers)));
    j["exports"] = std::move(exports);
  }
  return json_detail::dump_pretty(j) + "\n";
}

}  // namespace pase
