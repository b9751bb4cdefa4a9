// The training graph of a decoder-only language model (llm.hpp), layer by
// layer as core/docs/llm.md "The graph" defines it. Letters of the Einsum
// equations: b batch, l and m positions (queries, keys), e the model width,
// h key-value heads, r query heads per key-value head, k the head width,
// f the MLP width, v the vocabulary, x experts, t an expert's token slots.
#include <limits>
#include <optional>
#include <string>

#include "model/builder.hpp"
#include "model/cost_model.hpp"
#include "pase/llm.hpp"
#include "util/json_util.hpp"

namespace pase {
namespace {

using build::Builder;

// Point-wise operations fused after a layer (the `pw` of core/docs/cost-model.md):
// one per bias, activation, rotary embedding or mask.
int64_t bias_pw(bool bias) { return bias ? 1 : 0; }
// The attention scores' scale and causal mask, exponential and normalisation.
constexpr int64_t kSoftmaxPw = 3;

class LlmBuilder {
 public:
  LlmBuilder(const LlmConfig& c, const std::string& name, int64_t batch, int64_t seq)
      : c_(c), b_(name, 1), batch_(batch), seq_(seq) {
    grouped_ = c.num_heads != c.num_kv_heads;
  }

  GraphSpec build() && {
    const std::string tokens = b_.input("tokens", {batch_, seq_});
    std::string x = b_.named("embed").embedding(tokens, c_.vocab_size, c_.hidden_size);
    if (c_.learned_positions) {
      const std::string positions = b_.input("positions", {batch_, seq_});
      const std::string table =
          b_.named("embed_positions").embedding(positions, c_.max_positions, c_.hidden_size);
      x = b_.named("embed_add").elementwise(x, table);
    }
    for (int64_t i = 0; i < c_.num_layers; ++i) {
      b_.scope("layer" + std::to_string(i) + "_");
      x = attention(x);
      x = c_.num_experts > 0 ? moe(x) : mlp(x);
    }
    b_.scope("");
    x = b_.named("final_norm").ln(x);
    x = b_.named("lm_head").einsum(x, Shape{c_.hidden_size, c_.vocab_size}, "ble,ev->blv");
    b_.named("loss").sce(x);
    return std::move(b_).finish();
  }

 private:
  // Pre-norm self-attention with its residual. With grouped-query attention
  // (fewer key-value heads than query heads) the queries carry both the
  // key-value head h and the query head within its group r.
  std::string attention(const std::string& x) {
    const int64_t d = c_.hidden_size, g = c_.num_kv_heads, k = c_.head_dim;
    const int64_t rotary = c_.learned_positions ? 0 : 1;
    // The query heads per key-value head: a letter `r` of the queries' terms
    // and a dimension of their weights, left out when there is one.
    const std::string r = grouped_ ? "r" : "";
    Shape q_weight{d, g}, o_weight{g};
    if (grouped_) {
      q_weight.push_back(c_.num_heads / c_.num_kv_heads);
      o_weight.push_back(c_.num_heads / c_.num_kv_heads);
    }
    q_weight.push_back(k);
    o_weight.insert(o_weight.end(), {k, d});
    const std::string n = b_.named("attn_norm").ln(x);
    const std::string q = b_.named("q").einsum(n, q_weight, "ble,eh" + r + "k->bh" + r + "lk",
                                               bias_pw(c_.qkv_bias) + rotary);
    const std::string key =
        b_.named("k").einsum(n, Shape{d, g, k}, "ble,ehk->bhlk", bias_pw(c_.qkv_bias) + rotary);
    const std::string value =
        b_.named("v").einsum(n, Shape{d, g, k}, "ble,ehk->bhlk", bias_pw(c_.qkv_bias));
    // Scores over every key position with the softmax over the keys m fused
    // in, as attention kernels do (core/docs/llm.md, "Attention").
    const std::string h = "bh" + r;  // the leading letters of the queries' terms
    std::string y =
        b_.named("scores").causal_einsum(q, key, h + "lk,bhmk->" + h + "lm", kSoftmaxPw);
    y = b_.named("context").einsum(y, value, h + "lm,bhmk->" + h + "lk");
    y = b_.named("o").einsum(y, o_weight, h + "lk,h" + r + "ke->ble", bias_pw(c_.out_bias));
    return b_.named("attn_add").elementwise(x, y);
  }

  // Pre-norm dense MLP with its residual: gate and up (the activation fused
  // into gate), their product, down; or up with the activation fused, down.
  std::string mlp(const std::string& x) {
    const int64_t d = c_.hidden_size, f = c_.intermediate_size;
    const std::string n = b_.named("mlp_norm").ln(x);
    const int64_t bias = bias_pw(c_.mlp_bias);
    std::string y;
    if (c_.gated_mlp) {
      const std::string gate = b_.named("gate").einsum(n, Shape{d, f}, "ble,ef->blf", bias + 1);
      const std::string up = b_.named("up").einsum(n, Shape{d, f}, "ble,ef->blf", bias);
      y = b_.named("gate_up").elementwise(gate, up);
    } else {
      y = b_.named("up").einsum(n, Shape{d, f}, "ble,ef->blf", bias + 1);
    }
    y = b_.named("down").einsum(y, Shape{f, d}, "blf,fe->ble", bias);
    return b_.named("mlp_add").elementwise(x, y);
  }

  // Pre-norm mixture of experts with its residual (core/docs/llm.md, "Mixture
  // of experts"): a router, each token's routing weights spread over the
  // experts' token slots, dispatch to the experts, a gated MLP per expert on
  // its slots, and the weighted combination back to the tokens.
  std::string moe(const std::string& x) {
    const int64_t d = c_.hidden_size, f = c_.intermediate_size, e = c_.num_experts;
    const std::string n = b_.named("mlp_norm").ln(x);
    // Softmax over the experts and the top-k choice, fused.
    const std::string router = b_.named("router").einsum(n, Shape{d, e}, "ble,ex->blx", 2);
    const std::string slots =
        b_.named("slots").einsum(router, Shape{slots_per_expert()}, "blx,t->blxt");
    const std::string in = b_.named("dispatch").einsum(slots, n, "blxt,ble->bxte");
    const std::string gate = b_.named("gate").einsum(in, Shape{e, d, f}, "bxte,xef->bxtf", 1);
    const std::string up = b_.named("up").einsum(in, Shape{e, d, f}, "bxte,xef->bxtf");
    std::string y = b_.named("gate_up").elementwise(gate, up);
    y = b_.named("down").einsum(y, Shape{e, f, d}, "bxtf,xfe->bxte");
    y = b_.named("combine").einsum(slots, y, "blxt,bxte->ble");
    return b_.named("mlp_add").elementwise(x, y);
  }

  // Each sequence's seq * k routed tokens shared evenly by the experts,
  // rounded up (capacity factor 1).
  int64_t slots_per_expert() const {
    const int64_t routed = seq_ * c_.experts_per_token;
    return (routed + c_.num_experts - 1) / c_.num_experts;
  }

  const LlmConfig& c_;
  Builder b_;
  int64_t batch_, seq_;
  bool grouped_ = false;
};

}  // namespace

int64_t padded_vocab(int64_t vocab, int64_t multiple) {
  return multiple <= 1 ? vocab : (vocab + multiple - 1) / multiple * multiple;
}

std::optional<VocabPadding> vocab_padding(const GraphSpec& spec) {
  Result<json_detail::Json> meta = json_detail::parse_document(spec.meta_json);
  if (!meta || !meta->is_object()) return std::nullopt;
  const auto number = [&](const char* key) -> int64_t {
    const auto it = meta->find(key);
    return it != meta->end() && it->is_number_integer() ? it->get<int64_t>() : 0;
  };
  const VocabPadding p{number("vocab_size"), number("padded_vocab_size"), number("vocab_multiple")};
  if (p.vocab <= 0 || p.padded <= p.vocab || p.multiple < 1) return std::nullopt;
  // Only a record that the graph bears out: its embedding has the padded rows.
  for (const LayerSpec& l : spec.layers)
    if (l.name == "embed")
      return l.op == "Embedding" && l.vocab == p.padded ? std::optional(p) : std::nullopt;
  return std::nullopt;
}

std::optional<VocabPadding> vocab_padding(const Graph& graph) {
  if (graph.model == nullptr || graph.model->spec == nullptr) return std::nullopt;
  return vocab_padding(*graph.model->spec);
}

std::string vocab_padding_text(const VocabPadding& p) {
  return "the vocabulary is padded from " + std::to_string(p.vocab) + " to " +
         std::to_string(p.padded) + " rows (a multiple of " + std::to_string(p.multiple) +
         "), as Megatron-LM pads it so that its splits divide; the padded rows count in the cost "
         "and the memory";
}

Result<GraphSpec> llm_spec(const LlmConfig& config, const std::string& name, int64_t batch,
                           int64_t seq, int64_t vocab_multiple) {
  if (auto e = check_llm_config(config)) return *e;
  if (batch < 0) return Error{"must be a positive integer", "batch"};
  if (seq < 0) return Error{"must be a positive integer", "seq"};
  if (vocab_multiple < 1 || vocab_multiple > kLlmMaxVocabMultiple) {
    return Error{"the vocabulary's multiple must be from 1 (no padding) to " +
                     std::to_string(kLlmMaxVocabMultiple) + ", not " +
                     std::to_string(vocab_multiple),
                 "vocab_padding"};
  }
  if (batch == 0) batch = kLlmDefaultBatch;
  if (seq == 0) seq = llm_default_seq(config);
  int64_t routed = 0;
  if (__builtin_mul_overflow(seq, config.experts_per_token, &routed) ||
      routed > std::numeric_limits<int64_t>::max() - config.num_experts) {
    return Error{"is too large (" + std::to_string(seq) + ")", "seq"};
  }
  if (config.learned_positions && seq > config.max_positions) {
    return Error{"sequence length " + std::to_string(seq) + " is longer than the model's " +
                     std::to_string(config.max_positions) + " learned positions",
                 "seq"};
  }
  // The graph has the padded rows; the model's parameter count does not.
  LlmConfig padded = config;
  padded.vocab_size = padded_vocab(config.vocab_size, vocab_multiple);
  if (padded.vocab_size != config.vocab_size &&
      llm_parameters(padded) == std::numeric_limits<int64_t>::max()) {
    return Error{"the padded vocabulary " + std::to_string(padded.vocab_size) + " is too large",
                 "vocab_padding"};
  }
  GraphSpec spec = LlmBuilder(padded, name.empty() ? config.model_type : name, batch, seq).build();
  spec.parameters = llm_parameters(config);
  spec.meta_json = "{\"model_type\": \"" + config.model_type +
                   "\", \"batch\": " + std::to_string(batch) + ", \"seq\": " + std::to_string(seq);
  if (padded.vocab_size != config.vocab_size) {
    spec.meta_json += ", \"vocab_size\": " + std::to_string(config.vocab_size) +
                      ", \"padded_vocab_size\": " + std::to_string(padded.vocab_size) +
                      ", \"vocab_multiple\": " + std::to_string(vocab_multiple);
  }
  if (config.num_experts > 0) {
    spec.meta_json += ", \"num_experts\": " + std::to_string(config.num_experts) +
                      ", \"experts_per_token\": " + std::to_string(config.experts_per_token);
  }
  // What an engine's launch needs and the shapes do not keep (engine_model()
  // reads them back); JSON numbers that read back as the same doubles.
  spec.meta_json += ", \"max_positions\": " + std::to_string(config.max_positions);
  if (config.rope_theta > 0)
    spec.meta_json += ", \"rope_theta\": " + json_detail::Json(config.rope_theta).dump();
  spec.meta_json += ", \"norm_eps\": " + json_detail::Json(config.norm_eps).dump();
  // What the exported JAX program needs to run the model's own layers
  // (core/docs/llm.md, "The graph's meta"): the norm, the MLP's activation,
  // the biases, a tied output projection, the heads.
  const auto flag = [](bool b) { return b ? std::string("true") : std::string("false"); };
  spec.meta_json +=
      ", \"norm\": \"" + std::string(config.rms_norm ? "rms" : "layer") + "\"" +
      ", \"hidden_act\": " + json_detail::Json(llm_activation(config)).dump() +
      ", \"gated_mlp\": " + flag(config.gated_mlp) + ", \"qkv_bias\": " + flag(config.qkv_bias) +
      ", \"out_bias\": " + flag(config.out_bias) + ", \"mlp_bias\": " + flag(config.mlp_bias) +
      ", \"tied_embeddings\": " + flag(config.tied_embeddings) +
      ", \"num_heads\": " + std::to_string(config.num_heads) +
      ", \"num_kv_heads\": " + std::to_string(config.num_kv_heads) + "}";
  return spec;
}

}  // namespace pase
