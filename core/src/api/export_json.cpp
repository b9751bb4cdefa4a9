// A plan result's "exports" (core/docs/export.md, "JSON and the module"):
// the plan as a JAX program, Megatron-LM arguments or torchtitan TOML, each
// with its notes, or the error that kept it from being exported.
#include <string>
#include <vector>

#include "api/entry.hpp"
#include "pase/export.hpp"
#include "pase/layout.hpp"

namespace pase {

std::string with_exports(json_detail::Json result, const std::vector<ExportTarget>& emit,
                         const PlanView& view) {
  using json_detail::Json;
  if (!emit.empty()) {
    Json exports = Json::array();
    for (ExportTarget target : emit) {
      Json e = Json::object();
      e["to"] = export_target_name(target);
      Result<Exported> out = export_plan(target, view);
      if (!out) {
        e["error"] = Json{{"message", out.error().message}, {"where", out.error().where}};
        exports.push_back(std::move(e));
        continue;
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
      exports.push_back(std::move(e));
    }
    result["exports"] = std::move(exports);
  }
  return json_detail::dump_pretty(result) + "\n";
}

}  // namespace pase
