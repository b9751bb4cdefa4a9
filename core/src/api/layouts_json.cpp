// The layout search as JSON (pase/json_api.hpp, layouts_json();
// core/docs/layouts.md, "JSON and the module"): a request as a plan
// request with the search's own fields, the ranking as a document.
#include <string>
#include <vector>

#include "api/entry.hpp"
#include "pase/export.hpp"
#include "pase/layout.hpp"
#include "pase/layout_import.hpp"
#include "pase/layout_search.hpp"
#include "pase/presets.hpp"

namespace pase {
namespace {

using json_detail::Json;
using json_detail::ObjectReader;

Json layout_items(const Layout& l) {
  return Json{{"tp", l.tp},
              {"pp", l.pp},
              {"dp", l.dp},
              {"cp", l.cp},
              {"ep", l.ep},
              {"etp", l.etp == 0 ? l.tp : l.etp},
              {"sp", l.sp},
              {"zero", l.zero},
              {"dp_shard", l.dp_shard == 0 ? l.dp : l.dp_shard},
              {"recompute", recompute_name(l.recompute)},
              {"recompute_blocks", l.recompute_blocks},
              {"mbs", l.mbs},
              {"gbs", l.gbs},
              {"vpp", l.vpp},
              {"pp_first", l.pp_first},
              {"pp_last", l.pp_last}};
}

Json verdict_json(const EngineVerdict& v) {
  Json j{{"accepted", v.accepted()}};
  if (!v.accepted()) {
    j["rule"] = v.rule;
    j["message"] = v.message;
    j["source"] = v.source;
  }
  return j;
}

}  // namespace

Json ranked_layout_json(const RankedLayout& r) {
  Json j = Json::object();
  j["rank"] = r.rank;
  j["layout"] = layout_text(r.layout);
  j["items"] = layout_items(r.layout);
  j["step_time_s"] = r.step_time_s;
  j["parts"] = Json{{"compute_s", r.parts.compute_s},
                    {"recompute_s", r.parts.recompute_s},
                    {"communication_s", r.parts.communication_s},
                    {"bubble_s", r.parts.bubble_s}};
  Json memory{{"per_device_bytes", r.memory.total()}, {"fits", r.fits}};
  if (r.capacity_bytes > 0) {
    memory["capacity_bytes"] = r.capacity_bytes;
    memory["margin_bytes"] = r.capacity_bytes - r.memory.total();
  }
  j["memory"] = std::move(memory);
  j["tokens_per_s"] = r.tokens_per_s;
  j["mfu"] = r.mfu;
  if (r.days > 0) {
    j["days"] = r.days;
    j["cost"] = r.cost;
  }
  j["engines"] =
      Json{{"megatron", verdict_json(r.megatron)}, {"torchtitan", verdict_json(r.torchtitan)}};
  j["versus_best"] = r.versus_best;
  return j;
}

namespace {

Json layout_search_json(const LayoutSearch& s) {
  Json j = Json::object();
  Json ranked = Json::array(), over = Json::array(), why = Json::array();
  for (const RankedLayout& r : s.ranked) ranked.push_back(ranked_layout_json(r));
  for (const RankedLayout& r : s.over) over.push_back(ranked_layout_json(r));
  for (const auto& [reason, count] : s.refused_why)
    why.push_back(Json{{"why", reason}, {"count", count}});
  j["ranked"] = std::move(ranked);
  j["over"] = std::move(over);
  if (s.given) j["given"] = ranked_layout_json(*s.given);
  j["priced"] = s.priced;
  j["ruled_out"] = s.ruled_out;
  j["bounded"] = s.bounded;
  j["refused"] = s.refused;
  j["refused_why"] = std::move(why);
  j["seconds"] = s.seconds;
  return j;
}

}  // namespace

std::string layout_search_to_json(const LayoutSearch& search) {
  return json_detail::dump_pretty(layout_search_json(search)) + "\n";
}

std::string layouts_json(std::string_view request_json,
                         const std::function<bool(double)>& on_progress) {
  return json_detail::guarded([&]() -> std::string {
    Result<Json> document = json_detail::parse_document(request_json);
    if (!document) return error_to_json(document.error());
    if (!document->is_object())
      return error_to_json(Error{"the request must be a JSON object", ""});
    // The search's own fields; the rest is a plan request's.
    Json request = *document;
    LayoutSearchOptions o;
    std::string given;
    std::vector<ExportTarget> emit;
    ObjectReader reader(*document, "");
    int64_t top = 10, over = 3;
    if (reader.read("top", top, json_detail::to_positive_int) && top > 1000)
      reader.fail(Error{"must be at most 1000", "top"});
    reader.read("over", over, json_detail::to_non_negative_int);
    reader.read("tokens", o.tokens, json_detail::to_non_negative_number);
    const bool priced =
        reader.read("gpu_hour_price", o.gpu_hour_price, json_detail::to_non_negative_number);
    reader.read("layout", given, json_detail::to_non_empty_string);
    if (const Json* e = reader.find("emit")) {
      const Json list = e->is_array() ? *e : Json::array({*e});
      for (size_t i = 0; i < list.size() && reader.ok(); ++i) {
        const std::string where = e->is_array() ? "emit[" + std::to_string(i) + "]" : "emit";
        Result<ExportTarget> t = list[i].is_string()
                                     ? parse_export_target(list[i].get<std::string>())
                                     : Result<ExportTarget>(Error{"", ""});
        if (!t || *t == ExportTarget::kJax) {
          reader.fail(Error{"must be \"megatron\" or \"torchtitan\" (a layout's engines)", where});
          break;
        }
        emit.push_back(*t);
      }
    }
    if (!reader.ok()) return error_to_json(reader.error());
    o.top = static_cast<size_t>(top);
    o.over = static_cast<size_t>(over);
    for (const char* key : {"top", "over", "tokens", "gpu_hour_price", "layout", "emit"})
      request.erase(key);
    Result<PlanRequest> r = search_request_from_json(request);
    if (!r) return error_to_json(r.error());
    int64_t vocab = kLlmVocabMultiple;
    if (document->contains("vocab_padding") && (*document)["vocab_padding"].is_number_integer())
      vocab = (*document)["vocab_padding"].get<int64_t>();
    int64_t gbs = 0;
    Result<LayoutModel> model = layout_model_of(r->graph, vocab, &gbs);
    if (!model) return error_to_json(model.error());
    o.gbs = gbs;
    // The preset's price of a GPU-hour unless the request gives one.
    if (!priced && document->contains("preset") && (*document)["preset"].is_string())
      if (const GpuPreset* p = find_preset((*document)["preset"].get<std::string>()))
        o.gpu_hour_price = p->gpu_hour_usd;
    if (!given.empty()) {
      Result<Layout> l = read_any_layout(given, r->cluster.devices, model->config.num_layers);
      if (!l) return error_to_json(l.error());
      if (l->gbs == 0) l->gbs = gbs;
      o.given = *l;
    }
    o.on_progress = on_progress;
    Result<LayoutSearch> s = search_layouts(*model, r->cluster, o);
    if (!s) return error_to_json(s.error());
    Json out = layout_search_json(*s);
    if (!emit.empty()) {
      Json exports = Json::array();
      for (ExportTarget target : emit) {
        Result<Exported> x = Error{"no layout fits the memory cap", "emit"};
        if (!s->ranked.empty()) {
          const Layout& best = s->ranked.front().layout;
          Result<Graph> g = layout_graph(*model, best);
          x = g ? export_layout(target, *g, r->cluster, best) : Result<Exported>(g.error());
        }
        exports.push_back(export_entry(target, x));
      }
      out["exports"] = std::move(exports);
    }
    return json_detail::dump_pretty(out) + "\n";
  });
}

}  // namespace pase
