// The layout target (pase_fuzz_layout): the input is the text of
// `pase eval --layout`. It is parsed by parse_layout(); a layout that parses
// is written by layout_text() and parses again to the same text, and is laid
// out by layout_strategy() on two small language models (tiny_llm(),
// dense and with experts) at its global batch (the batch of its degrees when
// it gives none) and the device count of its degrees, then evaluated by
// evaluate_pipeline() as the CLI does. Nothing may crash, throw or hang, and:
//   - every error has a message, and a parse error is at "layout" or one of
//     its fields ("layout.tp", ...);
//   - an evaluated layout has a finite, positive cost, its plan-result
//     document is valid JSON, and that document read back as a strategy
//     (parse_any_strategy(), as `pase eval --strategy` reads it) evaluates to
//     the same cost.
// A layout whose degrees multiply past kMaxLayoutDevices, or whose batch is
// past kMaxLayoutBatch, is laid out at 8 devices and batch 8, where it must
// be refused with an error.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "fuzz_target.hpp"
#include "pase/layout.hpp"
#include "pase/pipeline.hpp"

namespace pase_fuzz {

inline constexpr int64_t kMaxLayoutDevices = 256;
inline constexpr int64_t kMaxLayoutBatch = 64;

// The graphs, built once per (experts, batch, vocabulary multiple).
inline const pase::Result<pase::Graph>& layout_graph(bool moe, int64_t batch, int64_t tp) {
  static std::map<std::tuple<bool, int64_t, int64_t>, pase::Result<pase::Graph>> graphs;
  // Megatron-LM's vocabulary padding, as `pase eval --layout` builds it.
  const int64_t multiple = pase::kLlmVocabMultiple * tp;
  auto found = graphs.find({moe, batch, multiple});
  if (found == graphs.end())
    found =
        graphs
            .emplace(std::tuple{moe, batch, multiple}, tiny_llm_graph(moe, batch, "fuzz", multiple))
            .first;
  return found->second;
}

// a * b when both are positive and it is at most `limit`; else 0.
inline int64_t small_product(int64_t a, int64_t b, int64_t limit) {
  if (a <= 0 || b <= 0 || a > limit || b > limit / a) return 0;
  return a * b;
}

inline std::string fuzz_layout(std::string_view text) {
  pase::Result<pase::Layout> layout = pase::parse_layout(text);
  if (!layout) {
    if (std::string e = check_error(layout.error(), "parse_layout"); !e.empty()) return e;
    if (layout.error().where.rfind("layout", 0) != 0)
      return "parse_layout: an error at '" + layout.error().where + "', not at layout";
    return "";
  }
  const std::string written = pase::layout_text(*layout);
  if (std::string e = check_text(written, "layout_text", ""); !e.empty()) return e;
  pase::Result<pase::Layout> again = pase::parse_layout(written);
  if (!again) return "layout_text() output does not parse: " + again.error().to_string();
  if (pase::layout_text(*again) != written) return "layout_text() round trip changes the layout";

  int64_t devices = small_product(layout->tp, layout->pp, kMaxLayoutDevices);
  devices = small_product(devices, layout->dp, kMaxLayoutDevices);
  devices = small_product(devices, layout->cp, kMaxLayoutDevices);
  const int64_t of_degrees = small_product(layout->mbs, layout->dp, kMaxLayoutBatch);
  int64_t batch = layout->gbs == 0 ? of_degrees : layout->gbs;
  const bool small =
      devices != 0 && batch > 0 && batch <= kMaxLayoutBatch && layout->tp <= kMaxLayoutDevices;
  if (!small) {
    devices = 8;
    batch = 8;
  }
  const pase::Cluster base{.devices = devices};
  for (bool moe : {false, true}) {
    const pase::Result<pase::Graph>& graph = layout_graph(moe, batch, small ? layout->tp : 1);
    if (!graph) return "the layout target's graph does not build: " + graph.error().to_string();
    pase::Result<pase::LayoutStrategy> laid = pase::layout_strategy(*graph, base, *layout);
    if (!laid) {
      if (std::string e = check_error(laid.error(), "layout_strategy"); !e.empty()) return e;
      continue;
    }
    if (!small) return "layout_strategy: a layout of " + written + " accepted on 8 devices";
    pase::Result<pase::PipelinePlan> piped =
        pase::evaluate_pipeline(*graph, laid->cluster, laid->strategy);
    if (!piped) {
      if (std::string e = check_error(piped.error(), "evaluate_pipeline"); !e.empty()) return e;
      continue;
    }
    const double cost = piped->plan.cost;
    if (!std::isfinite(cost) || cost <= 0)
      return "evaluate_pipeline: the cost is not finite and positive";
    const std::string doc = pase::pipeline_plan_to_json(laid->cluster, *piped);
    if (json_of(doc).is_discarded()) return "pipeline_plan_to_json() is not valid JSON";
    pase::Result<pase::PipelineStrategy> read = pase::parse_any_strategy(doc);
    if (!read)
      return "a layout's plan result does not read as a strategy: " + read.error().to_string();
    if (read->configs != laid->strategy.configs || read->stage_of != laid->strategy.stage_of ||
        read->microbatches != laid->strategy.microbatches ||
        read->schedule != laid->strategy.schedule ||
        read->virtual_stages != laid->strategy.virtual_stages)
      return "a layout's plan result reads back as another strategy";
    pase::Result<pase::PipelinePlan> priced = pase::evaluate_pipeline(*graph, laid->cluster, *read);
    if (!priced) return "a layout's plan result is refused: " + priced.error().to_string();
    if (!close(priced->plan.cost, cost)) return "a layout's plan result evaluates to another cost";
  }
  return "";
}

}  // namespace pase_fuzz
