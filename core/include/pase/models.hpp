// The built-in networks: the benchmark networks of the PaSE paper
// (core/docs/models.md): alexnet, resnet101, inception3, rnnlm, transformer;
// and today's language models (core/docs/llm.md): gpt2, llama3-8b,
// llama3-70b, mixtral-8x7b, gpt3-175b.
//
// Vertex ids and dimension orders are exactly those of core/docs/models.md, so a
// strategy can be compared entry by entry with other implementations. Each
// network is built as a GraphSpec (the same document `pase export` writes), so
// planning an exported file gives exactly the built-in result.
//
// ERRORS: an unknown name ("unknown model 'x'; known: alexnet, ...") at
// "model", a batch or sequence length that is not a positive integer (at
// "batch", "seq"), a sequence length for a network that has none (the CNNs)
// at "seq".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pase/graph.hpp"
#include "pase/llm.hpp"
#include "pase/result.hpp"

namespace pase {

struct ModelInfo {
  std::string name;
  std::string description;
  int64_t default_batch = 0;
  // The default sequence length of a sequence model (rnnlm, transformer, the
  // language models); 0 for a network without one (the CNNs).
  int64_t default_seq = 0;
  int64_t cutoff = 4;
  // A language model of core/docs/llm.md (its config: llm_config()).
  bool llm = false;
};

// The built-in networks: the paper's in the order of core/docs/models.md, then
// the language models.
const std::vector<ModelInfo>& list_models();

// The network's document; batch 0 and seq 0 mean the model's defaults. A
// language model's vocabulary is padded to a multiple of `vocab_multiple`
// (0: kLlmVocabMultiple; 1: exact; llm.hpp), the paper's networks keep
// theirs whatever it is.
Result<GraphSpec> model_spec(std::string_view name, int64_t batch = 0, int64_t seq = 0,
                             int64_t vocab_multiple = 0);

// model_spec() followed by build_graph().
Result<Graph> build_model(std::string_view name, int64_t batch = 0, int64_t seq = 0,
                          int64_t vocab_multiple = 0);

// The config of a built-in language model, or nullptr for another name.
const LlmConfig* llm_config(std::string_view name);

}  // namespace pase
