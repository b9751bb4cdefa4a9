// A plan result's "exports" (core/docs/export.md, "JSON and the module"):
// the plan as a JAX program, Megatron-LM arguments or torchtitan TOML, each
// with its notes, or the error that kept it from being exported.
#include <string>
#include <vector>

#include "api/entry.hpp"
#include "pase/export.hpp"
#include "pase/layout.hpp"

namespace pase {

json_detail::Json export_entry(ExportTarget target, const Result<Exported>& out) {
  using json_detail::Json;
  Json e = Json::object();
  e["to"] = export_target_name(target);
  if (!out) {
    e["error"] = Json{{"message", out.error().message}, {"where", out.error().where}};
    return e;
  }
  e["file"] = out->file_name;
  e["text"] = out->text;
  e["notes"] = out->notes;
  if (target != ExportTarget::kJax) {
    e["uniform"] = out->uniform;
    e["differences"] = out->differences;
    if (out->layout) e["layout"] = layout_text(*out->layout);
    if (!out->uniform) {
      e["layout_step_time_s"] = out->layout_step_time_s;
      e["plan_step_time_s"] = out->plan_step_time_s;
    }
  }
  return e;
}

std::string with_exports(json_detail::Json result, const std::vector<ExportTarget>& emit,
                         const PlanView& view) {
  using json_detail::Json;
  if (!emit.empty()) {
    Json exports = Json::array();
    for (ExportTarget target : emit)
      exports.push_back(export_entry(target, export_plan(target, view)));
    result["exports"] = std::move(exports);
  }
  return json_detail::dump_pretty(result) + "\n";
}

}  // namespace pase
