// The layout search in `pase bench`: beside each published run (`--published`,
// cmd_bench_published_layouts.cpp) and over every built-in language model
// with the engines' verdicts (`--layouts`, cmd_bench_layouts.cpp;
// core/docs/layouts.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pase/cluster.hpp"
#include "pase/layout.hpp"
#include "pase/layout_search.hpp"
#include "pase/result.hpp"
#include "util/json_util.hpp"

namespace pase_cli {

// A published layout placed among every layout of its run's space.
struct PublishedSearch {
  // The published layout as the search prices it (the vocabulary padded to
  // 128 x tp, as Megatron-LM pads it): its step, its rank among the layouts
  // that fit (0: it does not fit) and how much over the cap it is.
  double published_s = 0;
  int64_t published_rank = 0;
  bool published_fits = true;
  double published_over_bytes = 0;
  // Why the published layout is not one of the layouts the search
  // enumerates (core/docs/layouts.md, "The space"); empty: it is one.
  std::string outside_space;
  std::optional<pase::RankedLayout> best;  // the fastest that fits; none: nothing fits
  // The fastest of the space, fitting or not: at most published_s when the
  // published layout is in the space (the search is exact over it).
  double fastest_s = 0;
  int64_t priced = 0;
  double seconds = 0;
};

// search_layouts() on `model` and `cluster` (its memory the cap) at the
// published layout's global batch, the layout given.
pase::Result<PublishedSearch> search_beside_published(const pase::LayoutModel& model,
                                                      const pase::Cluster& cluster,
                                                      const pase::Layout& published);

// The run's JSON fields of the search ("published_step_s", "best_layout",
// "gain_s", ...), added to `run`.
void add_published_search(pase::json_detail::Json& run, const PublishedSearch& s);

// The text table of the searches, one row (and its notes) per run.
std::string published_search_header();
std::string published_search_row(const std::string& id, const PublishedSearch& s);

// pase bench --layouts: the top layouts of every built-in language model on
// `device_counts` H100s, and the engines' verdicts on each, checked by
// engine_refusals() and export_layout().
int run_bench_layouts(const std::vector<std::string>& models,
                      const std::vector<int64_t>& device_counts, bool json);

}  // namespace pase_cli
