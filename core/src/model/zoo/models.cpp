// The public catalogue of built-in networks (models.hpp): names, defaults and
// the dispatch to the zoo builders (one per file in zoo/) and to the language
// model builder (llm/, core/docs/llm.md).
#include "pase/models.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/zoo/zoo.hpp"

namespace pase {
namespace {

struct Entry {
  ModelInfo info;
  // A paper network: built from its batch and sequence length (the
  // non-sequence CNNs ignore the latter; model_spec() refuses one for them).
  GraphSpec (*build)(int64_t batch, int64_t seq) = nullptr;
  // A language model: built by llm_spec() from this config.
  std::optional<LlmConfig> llm;
};

GraphSpec alexnet(int64_t batch, int64_t) { return zoo::alexnet(batch); }
GraphSpec resnet101(int64_t batch, int64_t) { return zoo::resnet101(batch); }
GraphSpec inception3(int64_t batch, int64_t) { return zoo::inception3(batch); }

LlmConfig llama(int64_t hidden, int64_t inter, int64_t layers, int64_t heads, int64_t kv_heads) {
  LlmConfig c;
  c.model_type = "llama";
  c.vocab_size = 128256;
  c.hidden_size = hidden;
  c.intermediate_size = inter;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.max_positions = 8192;
  // Llama 3's published config.json: rope_theta 500000, rms_norm_eps 1e-5.
  c.rope_theta = 500000;
  c.norm_eps = 1e-5;
  return c;
}

// GPT-2's architecture: learned positions, LayerNorm, biases, a GELU MLP of
// 4 * hidden, tied embeddings, vocabulary 50257.
LlmConfig gpt(int64_t hidden, int64_t layers, int64_t heads, int64_t positions) {
  LlmConfig c;
  c.model_type = "gpt2";
  c.vocab_size = 50257;
  c.hidden_size = hidden;
  c.intermediate_size = 4 * hidden;
  c.num_layers = layers;
  c.num_heads = c.num_kv_heads = heads;
  c.head_dim = hidden / heads;
  c.max_positions = positions;
  c.learned_positions = true;
  c.gated_mlp = c.rms_norm = false;
  c.tied_embeddings = c.qkv_bias = c.out_bias = c.mlp_bias = true;
  c.rope_theta = 0;   // learned positions
  c.norm_eps = 1e-5;  // GPT-2's layer_norm_epsilon (GPT-3's paper gives none other)
  return c;
}

LlmConfig mixtral_8x7b() {
  LlmConfig c = llama(4096, 14336, 32, 32, 8);
  c.model_type = "mixtral";
  c.vocab_size = 32000;
  c.max_positions = 32768;
  c.num_experts = 8;
  c.experts_per_token = 2;
  c.rope_theta = 1e6;  // Mixtral-8x7B-v0.1's config.json; rms_norm_eps 1e-5 as Llama 3's
  return c;
}

Entry language_model(std::string name, std::string description, LlmConfig config) {
  Entry e;
  e.info = {
      std::move(name), std::move(description), kLlmDefaultBatch, llm_default_seq(config), 1, true};
  e.llm = std::move(config);
  return e;
}

// core/docs/models.md order, then the language models of core/docs/llm.md.
// Default batch 128 for the CNNs and 64 for the paper's sequence models
// (sequence 256); cutoff 4 except the sequence models (cutoff 1).
const std::vector<Entry>& entries() {
  static const std::vector<Entry> kEntries = [] {
    std::vector<Entry> e;
    e.push_back(
        {{"alexnet", "AlexNet: 5 conv + 3 FC layers on 227x227 images", 128, 0, 4}, alexnet, {}});
    e.push_back(
        {{"resnet101", "ResNet-101: 33 bottleneck residual blocks on 227x227 images", 128, 0, 4},
         resnet101,
         {}});
    e.push_back({{"inception3", "Inception-v3: stem and modules A-E on 299x299 images", 128, 0, 4},
                 inception3,
                 {}});
    e.push_back(
        {{"rnnlm", "RNN language model: 2-layer LSTM, 2048 units, vocab 100000", 64, 256, 1},
         zoo::rnnlm,
         {}});
    e.push_back({{"transformer", "Transformer: 6+6 layers, model dim 512, 8 heads, vocab 50000", 64,
                  256, 1},
                 zoo::transformer,
                 {}});
    e.push_back(language_model(
        "gpt2", "GPT-2 (124M): 12 layers, d 768, 12 heads, GELU MLP 3072, vocab 50257",
        gpt(768, 12, 12, 1024)));
    e.push_back(language_model(
        "llama3-8b", "Llama 3 8B: 32 layers, d 4096, 32 heads (8 KV), SwiGLU 14336, vocab 128256",
        llama(4096, 14336, 32, 32, 8)));
    e.push_back(language_model(
        "llama3-70b", "Llama 3 70B: 80 layers, d 8192, 64 heads (8 KV), SwiGLU 28672, vocab 128256",
        llama(8192, 28672, 80, 64, 8)));
    e.push_back(language_model(
        "mixtral-8x7b",
        "Mixtral 8x7B: 32 layers, d 4096, 8 experts (top 2) of SwiGLU 14336, vocab 32000",
        mixtral_8x7b()));
    e.push_back(language_model(
        "gpt3-175b", "GPT-3 175B: 96 layers, d 12288, 96 heads, GELU MLP 49152, vocab 50257",
        gpt(12288, 96, 96, 2048)));
    return e;
  }();
  return kEntries;
}

}  // namespace

const std::vector<ModelInfo>& list_models() {
  static const std::vector<ModelInfo> kModels = [] {
    std::vector<ModelInfo> out;
    for (const Entry& e : entries()) out.push_back(e.info);
    return out;
  }();
  return kModels;
}

Result<GraphSpec> model_spec(std::string_view name, int64_t batch, int64_t seq,
                             int64_t vocab_multiple) {
  if (batch < 0) return Error{"batch must be a positive integer", "batch"};
  if (seq < 0) return Error{"seq must be a positive integer", "seq"};
  for (const Entry& e : entries()) {
    if (e.info.name != name) continue;
    if (e.llm)
      return llm_spec(*e.llm, e.info.name, batch, seq,
                      vocab_multiple == 0 ? kLlmVocabMultiple : vocab_multiple);
    if (seq > 0 && e.info.default_seq == 0) {
      return Error{"model '" + e.info.name + "' has no sequence length", "seq"};
    }
    return e.build(batch == 0 ? e.info.default_batch : batch, seq == 0 ? e.info.default_seq : seq);
  }
  // The known names come from the table, so the message cannot go stale.
  std::string known;
  for (const Entry& e : entries()) known += (known.empty() ? "" : ", ") + e.info.name;
  return Error{"unknown model '" + std::string(name) + "'; known: " + known, "model"};
}

Result<Graph> build_model(std::string_view name, int64_t batch, int64_t seq,
                          int64_t vocab_multiple) {
  Result<GraphSpec> spec = model_spec(name, batch, seq, vocab_multiple);
  if (!spec) return spec.error();
  return build_graph(std::move(*spec));
}

const LlmConfig* llm_config(std::string_view name) {
  for (const Entry& e : entries()) {
    if (e.info.name == name && e.llm) return &*e.llm;
  }
  return nullptr;
}

}  // namespace pase
