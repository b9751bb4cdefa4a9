// A language model's hyper-parameters read back from its graph, for the
// Megatron-LM and torchtitan exports (export/engines.cpp; core/docs/llm.md,
// "The graph").
#pragma once

#include <cstdint>

#include "pase/graph.hpp"
#include "pase/llm.hpp"

namespace pase {

// The model's hyper-parameters, read back from its graph (core/docs/llm.md,
// "The graph"): the weights' shapes give the sizes, the fused point-wise
// counts the biases, and the parameter count the norm and whether the
// embedding is tied. A built-in model of the same name and shape gives its
// own config (its longest sequence and top-k exactly).
struct EngineModel {
  LlmConfig config;  // the tokenizer's vocabulary
  int64_t seq = 0;
  bool positions_known = true;
  int64_t padded_vocab = 0;  // the graph's rows (core/docs/llm.md, "Vocabulary padding")
};

// The model of `g`, or an error naming `engine` ("Megatron-LM") when `g` is
// not a language model's graph (decoder blocks named layer<N>_...).
Result<EngineModel> engine_model(const Graph& g, const char* engine);

}  // namespace pase
