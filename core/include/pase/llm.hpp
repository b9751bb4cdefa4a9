// Decoder-only language models from a Hugging Face `config.json` (no weights
// needed): the model's hyper-parameters, its exact parameter count and its
// training graph as a pase-graph/1 GraphSpec of Einsum layers
// (core/docs/llm.md).
//
// USAGE
//   Result<LlmConfig> config = parse_llm_config(text);     // a config.json
//   llm_parameters(*config);                               // 8,030,261,248
//   Result<GraphSpec> spec = llm_spec(*config, "llama3-8b", 32, 8192);
//   // or in one step, with batch and sequence from the import options:
//   Result<GraphSpec> spec = import_llm_config(text, options);
//
// Supported `model_type`s: llama, mistral, qwen2, gpt2, mixtral (mixture of
// experts). Grouped-query attention, gated MLPs (SwiGLU), RMSNorm or
// LayerNorm, biases, tied embeddings and learned position tables follow the
// model type and the config's fields as Hugging Face's own model classes do.
//
// ERRORS
//   Error{message, where}: `where` names the config field ("hidden_size",
//   "num_key_value_heads", "model_type"), the option ("batch", "seq", "dims"),
//   or is empty for the document as a whole (not JSON, not an object).
//   Nothing throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "pase/graph.hpp"
#include "pase/import.hpp"
#include "pase/result.hpp"

namespace pase {

struct LlmConfig {
  std::string model_type;  // "llama", "mistral", "qwen2", "gpt2", "mixtral"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;         // d
  int64_t num_layers = 0;          // decoder layers
  int64_t num_heads = 0;           // query heads
  int64_t num_kv_heads = 0;        // key and value heads (grouped-query attention)
  int64_t head_dim = 0;            // hidden_size / num_heads unless the config says
  int64_t intermediate_size = 0;   // the MLP's (each expert's) hidden size
  int64_t max_positions = 0;       // longest sequence the model is made for
  bool learned_positions = false;  // a position table of max_positions rows (gpt2)
  bool gated_mlp = true;           // gate, up, down (SwiGLU); else up, down
  bool rms_norm = true;            // RMSNorm (a scale); else LayerNorm (scale and shift)
  bool tied_embeddings = false;    // the output projection is the embedding table
  bool qkv_bias = false;           // biases of the query, key and value projections
  bool out_bias = false;           // bias of the attention's output projection
  bool mlp_bias = false;           // biases of the MLP's projections
  int64_t num_experts = 0;         // experts per MLP (0: a dense MLP)
  int64_t experts_per_token = 0;   // top-k routing
  // Not in the graph's shapes, but what an engine's launch needs
  // (core/docs/export.md): the rotary embedding's base (rope_theta; 0 for
  // learned positions) and the norms' epsilon (rms_norm_eps, gpt2's
  // layer_norm_epsilon), Hugging Face's class defaults when absent.
  double rope_theta = 10000;
  double norm_eps = 1e-6;
  // The MLP's activation as the config names it (hidden_act, gpt2's
  // activation_function); empty: the model type's, silu for a gated MLP
  // (SwiGLU), gelu_new for gpt2. Only the exported JAX program reads it.
  std::string hidden_act;
};

// The activation of `config`'s MLP: its hidden_act, else the model type's.
std::string llm_activation(const LlmConfig& config);

// The defaults of a model's batch and sequence length when the request gives
// none: kLlmDefaultBatch sequences of the model's max_positions tokens, at
// most kLlmMaxDefaultSeq.
inline constexpr int64_t kLlmDefaultBatch = 32;
inline constexpr int64_t kLlmMaxDefaultSeq = 8192;
int64_t llm_default_seq(const LlmConfig& config);

// The most decoder layers a config may have: twice the deepest published
// dense model (Llama 3 405B's 126). The search's time grows with the layers
// (core/docs/performance.md, "Deep models"): a config of 500 layers at
// Llama 3 8B's width plans in minutes on 64 devices, one of 5,000 in hours.
// Each decoder layer is at most 10 layers of attention and 10 of a mixture
// of experts, well within a graph's kMaxLayers (graph.hpp).
inline constexpr int64_t kLlmMaxDecoderLayers = 256;
static_assert(kLlmMaxDecoderLayers * 20 + 8 <= kMaxLayers);

// Reads a config.json: the fields its model_type uses, with Hugging Face's
// defaults for the optional ones. Unknown fields are ignored (configs carry
// many that do not shape the graph).
Result<LlmConfig> parse_llm_config(std::string_view json_text);

// Checks a config built in code (the built-in models): sizes positive, heads
// divisible by key-value heads, and so on; the same checks as parsing.
std::optional<Error> check_llm_config(const LlmConfig& config);

// True when `prefix` (a file's first bytes) starts with '{' after an
// optional UTF-8 byte order mark and white space: a JSON object, which no
// ONNX file is (content detection of the importers).
bool starts_like_json_object(std::string_view prefix);

// True when `text` is a JSON object with no pase-graph/1 "layers" and either
// a string "model_type" or, with no "format" either, a field that every
// Hugging Face config has (hidden_size, num_attention_heads, vocab_size,
// n_embd, architectures, ...): a Hugging Face config rather than a graph
// document. One without its model_type is then refused at "model_type",
// saying that it looks like a config and what to add.
bool looks_like_llm_config(std::string_view text);

// The exact parameter count, as PyTorch's sum(p.numel()) over the Hugging
// Face model (a tied table counted once); saturates at 2^63 - 1.
int64_t llm_parameters(const LlmConfig& config);

// The vocabulary as the engines run it (core/docs/llm.md, "Vocabulary
// padding"): Megatron-LM pads the tokenizer's vocabulary up to a multiple of
// --make-vocab-size-divisible-by (128) x tp, so that the embedding, the head
// and the loss split evenly. A graph is built with the vocabulary padded to
// a multiple of `vocab_multiple`: kLlmVocabMultiple for a plan that chooses
// its splits per layer (every power-of-two split up to 128 divides it),
// that times tp for a layout; 1 keeps the exact vocabulary.
inline constexpr int64_t kLlmVocabMultiple = 128;
// The largest multiple accepted (larger ones are errors at "vocab_padding").
inline constexpr int64_t kLlmMaxVocabMultiple = int64_t{1} << 20;
// `vocab` rounded up to a multiple of `multiple` (>= 1).
int64_t padded_vocab(int64_t vocab, int64_t multiple);

// A graph's padded vocabulary: the tokenizer's `vocab`, the graph's `padded`
// (> vocab), and the `multiple` it was rounded up to.
struct VocabPadding {
  int64_t vocab = 0;
  int64_t padded = 0;
  int64_t multiple = 0;
};

// The padding that llm_spec() recorded in a graph's document (its "meta":
// vocab_size, padded_vocab_size, vocab_multiple) when the embedding's
// vocabulary is the padded one; nullopt for an exact vocabulary and for
// any graph that is not a padded language model (the paper's networks, an
// ONNX model, a document without that record).
std::optional<VocabPadding> vocab_padding(const GraphSpec& spec);
std::optional<VocabPadding> vocab_padding(const Graph& graph);

// What a result says of it: "the vocabulary is padded from 50257 to 51200
// rows (a multiple of 1024), as Megatron-LM pads it so that its splits
// divide; the padded rows count in the cost and the memory".
std::string vocab_padding_text(const VocabPadding& padding);

// The training graph for `batch` sequences of `seq` tokens (0: the defaults
// above), named `name`, with the vocabulary padded to a multiple of
// `vocab_multiple` (above) and `parameters` set to llm_parameters() of the
// config: the model's own count, the padded rows being in the weights'
// shapes (so in memory and cost) but not in the model. Errors: batch or seq
// not positive ("batch", "seq"), a sequence longer than a learned position
// table ("seq"), a multiple below 1 or above kLlmMaxVocabMultiple
// ("vocab_padding").
Result<GraphSpec> llm_spec(const LlmConfig& config, const std::string& name, int64_t batch = 0,
                           int64_t seq = 0, int64_t vocab_multiple = kLlmVocabMultiple);

// parse_llm_config() then llm_spec() with the options' batch, seq, name
// (empty: the config's model_type) and vocab_multiple (0: kLlmVocabMultiple). `dims` has no meaning
// for a config and is an error at "dims.<its first name>".
Result<GraphSpec> import_llm_config(std::string_view json_text, const ImportOptions& options);
Result<GraphSpec> import_llm_config(const LlmConfig& config, const ImportOptions& options);

}  // namespace pase
