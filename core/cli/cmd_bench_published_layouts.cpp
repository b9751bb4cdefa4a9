// pase bench --published: each run's published layout placed among every
// layout of its space (search_layouts(), core/docs/layouts.md), the best
// beside it with the gain (core/docs/practice-model.md, "Checked against
// published runs").
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "bench_layouts.hpp"
#include "export/engine_rules.hpp"
#include "format.hpp"

namespace pase_cli {
namespace {

using Json = pase::json_detail::Json;

std::string num(int64_t n) { return std::to_string(n); }

// Why `l` is not one of the layouts search_layouts() enumerates for `m` on
// `c` (core/docs/layouts.md, "The space", stated here from the docs, not
// from the search's loops, so that a layout the search leaves out shows); ""
// when it is one.
std::string outside_space(const pase::LayoutModel& m, const pase::Cluster& c,
                          const pase::Layout& l) {
  const int64_t blocks = m.config.num_layers, experts = m.config.num_experts;
  if (l.tp * l.pp * l.dp * l.cp != c.devices)
    return "tp x pp x dp x cp is not the " + num(c.devices) + " devices";
  if (experts == 0 ? l.ep != 1 : std::gcd(l.dp * l.cp, experts) % l.ep != 0)
    return "ep=" + num(l.ep) + " does not divide gcd(dp x cp, experts)";
  if (l.etp != 0 && (experts == 0 || l.tp % l.etp != 0))
    return "etp=" + num(l.etp) + " is not a divisor of tp on a mixture of experts";
  if (l.sp && l.tp == 1) return "sp=on without tensor parallelism";
  if (l.gbs % l.dp != 0 || (l.gbs / l.dp) % l.mbs != 0)
    return "mbs=" + num(l.mbs) + " does not divide gbs / dp";
  pase::Result<std::vector<int64_t>> stages = pase::stage_blocks(l, blocks);
  if (!stages) return stages.error().message;
  if (l.pp_first > 0 || l.pp_last > 0) {
    // A first stage, a last stage or both (then alike) with fewer blocks
    // than the others, which are alike.
    const size_t from = l.pp_first > 0 ? 1 : 0, to = stages->size() - (l.pp_last > 0 ? 1 : 0);
    if (l.pp < 2 || from >= to || (l.pp_first > 0 && l.pp_last > 0 && l.pp_first != l.pp_last))
      return "pp_first and pp_last are not a first or last stage (or both, alike) before "
             "stages alike";
    for (size_t s = from; s < to; ++s)
      if ((*stages)[s] != (*stages)[from] || (*stages)[s] <= std::max(l.pp_first, l.pp_last))
        return "the stages between pp_first and pp_last are not alike and fuller";
  }
  if (l.vpp > 1) {
    const int64_t microbatches = l.gbs / (l.mbs * l.dp);
    if (l.pp < 2 || l.pp_first > 0 || l.pp_last > 0 || blocks % l.pp != 0 ||
        (blocks / l.pp) % l.vpp != 0 || microbatches % l.pp != 0)
      return "vpp=" + num(l.vpp) +
             " with stages not alike, or blocks or micro-batches that it does not divide";
  }
  if (l.zero < 0 || l.zero > 3) return "zero=" + num(l.zero) + " is not 0 to 3";
  if (l.dp_shard != 0 && (l.zero != 3 || l.dp % l.dp_shard != 0))
    return "dp_shard=" + num(l.dp_shard) + " without zero=3 or not dividing dp";
  if (l.recompute == pase::Recompute::kAuto) return "recompute=auto is not one layout";
  const int64_t fewest = *std::min_element(stages->begin(), stages->end()) / l.vpp;
  if (l.recompute_blocks != 0 &&
      (l.recompute != pase::Recompute::kFull || l.recompute_blocks >= fewest))
    return "recompute_blocks=" + num(l.recompute_blocks) +
           " is not full recomputation of fewer blocks than the smallest stage's";
  // The engines' rules do not look at the recomputation.
  pase::Layout bare = l;
  bare.recompute = pase::Recompute::kNone;
  bare.recompute_blocks = 0;
  std::string refused;
  for (pase::ExportTarget t : {pase::ExportTarget::kMegatron, pase::ExportTarget::kTorchtitan}) {
    const std::vector<pase::EngineRefusal> r =
        pase::engine_refusals(t, m.config, m.seq, bare, c.devices, c.gpus_per_node);
    if (r.empty()) return "";
    refused += (refused.empty() ? "" : "; ") + r.front().message + " (rule " + r.front().rule + ")";
  }
  return "no engine starts it: " + refused;
}

double gain_s(const PublishedSearch& s) { return s.published_s - s.best->step_time_s; }
double gain_fraction(const PublishedSearch& s) { return s.published_s / s.best->step_time_s - 1; }

// The search's best slower than the published layout, which is one of its
// space: a layout the search missed (it is exact over the space).
bool missed(const PublishedSearch& s) {
  return s.outside_space.empty() && s.fastest_s > s.published_s * (1 + 1e-9);
}

}  // namespace

pase::Result<PublishedSearch> search_beside_published(const pase::LayoutModel& model,
                                                      const pase::Cluster& cluster,
                                                      const pase::Layout& published) {
  pase::LayoutSearchOptions o;
  o.gbs = published.gbs;
  o.given = published;
  pase::Result<pase::LayoutSearch> found = pase::search_layouts(model, cluster, o);
  if (!found) return found.error();
  PublishedSearch s;
  s.published_s = found->given->step_time_s;
  s.published_rank = found->given->rank;
  s.published_fits = found->given->fits;
  if (!s.published_fits)
    s.published_over_bytes = found->given->memory.total() - found->given->capacity_bytes;
  s.outside_space = outside_space(model, cluster, published);
  if (!found->ranked.empty()) s.best = found->ranked.front();
  s.fastest_s = s.best ? s.best->step_time_s : std::numeric_limits<double>::infinity();
  for (const pase::RankedLayout& r : found->over)
    s.fastest_s = std::min(s.fastest_s, r.step_time_s);
  // Nothing priced: the space is empty, and the published layout its own fastest.
  if (!std::isfinite(s.fastest_s)) s.fastest_s = s.published_s;
  s.priced = found->priced;
  s.seconds = found->seconds;
  return s;
}

void add_published_search(Json& run, const PublishedSearch& s) {
  run["published_step_s"] = s.published_s;
  run["published_rank"] = s.published_rank;
  run["published_fits"] = s.published_fits;
  run["published_in_space"] = s.outside_space.empty();
  if (!s.outside_space.empty()) run["outside_space"] = s.outside_space;
  if (s.best) {
    run["best_layout"] = Json{{"layout", pase::layout_text(s.best->layout)},
                              {"step_time_s", s.best->step_time_s},
                              {"memory_bytes", s.best->memory.total()},
                              {"megatron", s.best->megatron.accepted()},
                              {"torchtitan", s.best->torchtitan.accepted()}};
    run["gain_s"] = gain_s(s);
    run["gain_fraction"] = gain_fraction(s);
  } else {
    run["best_layout"] = nullptr;
  }
  run["fastest_step_s"] = s.fastest_s;
  run["search_missed"] = missed(s);
  run["layouts_priced"] = s.priced;
  run["search_s"] = s.seconds;
}

std::string published_search_header() {
  return "\nthe best layout of each run's space (pase layouts, under the GPU's memory less "
         "the reserve):\n"
         "run    published     rank       best       gain      %    priced  search  best "
         "layout\n";
}

std::string published_search_row(const std::string& id, const PublishedSearch& s) {
  std::string line =
      pad_right(id, 6) + pad_left(format("%.3f s", s.published_s), 11) +
      pad_left(s.published_rank > 0 ? grouped(static_cast<uint64_t>(s.published_rank))
                                    : std::string("-"),
               9);
  if (s.best) {
    line += pad_left(format("%.3f s", s.best->step_time_s), 11) +
            pad_left(format("%+.3f s", gain_s(s)), 11) +
            pad_left(format("%+.1f%%", 100 * gain_fraction(s)), 7);
  } else {
    line += pad_left("-", 11) + pad_left("-", 11) + pad_left("-", 7);
  }
  line += pad_left(grouped(static_cast<uint64_t>(s.priced)), 10) +
          pad_left(format("%.2f s", s.seconds), 8) + "  " +
          (s.best ? pase::layout_text(s.best->layout) : std::string("no layout fits")) + "\n";
  std::string note;
  if (!s.outside_space.empty())
    note += "the published layout is not in the search's space: " + s.outside_space + "; ";
  if (!s.published_fits)
    note +=
        "the published layout does not fit (" + format("%.1f", s.published_over_bytes / 0x1p30) +
        " GiB over); the fastest of the space, fitting or not: " + format("%.3f s", s.fastest_s) +
        "; ";
  if (missed(s))
    note +=
        "the search's best is slower than the published layout, one of its space: a "
        "layout the search missed; ";
  if (!note.empty()) line += "      " + note.substr(0, note.size() - 2) + "\n";
  return line;
}

}  // namespace pase_cli
