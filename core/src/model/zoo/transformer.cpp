// Transformer, core/docs/models.md "Transformer": 6 encoder and 6 decoder layers over a
// 256-token sequence, model dim 512, 8 heads of 64, feed-forward 2048, vocab
// 50000 (204 vertices; 280 tensor edges between 256 vertex pairs), cutoff 1.
// The sequence length is the caller's (256 by default).
// Names are "<layer>_<block>_<role>", e.g. "enc3_attn_qkv", "dec6_cross_ln".
#include <string>
#include <vector>

#include "model/builder.hpp"
#include "model/zoo/zoo.hpp"

namespace pase::zoo {

using build::Builder;
namespace {

constexpr int64_t kVocab = 50000, kModel = 512, kHeads = 8, kHeadDim = 64, kFeedForward = 2048,
                  kLayers = 6;

// Attention(xs) of core/docs/models.md, xs = [x] (self-attention) or [x, m, m] (attention
// over the encoder output m). One fused projection makes q, k and v at once:
// W(3, 8, 512, 64) indexed (s, h, e, k); Unstack splits them along s.
std::string attention(Builder& b, const std::string& scope, const std::vector<std::string>& xs) {
  b.scope(scope);
  const Shape w_qkv{3, kHeads, kModel, kHeadDim};
  std::string qkv;
  if (xs.size() == 3) {
    const std::string s = b.named("stack").stack(xs, 0);
    qkv = b.named("qkv").einsum(s, w_qkv, "sble,shek->sbhlk");
  } else {
    qkv = b.named("qkv").einsum(xs[0], w_qkv, "ble,shek->sbhlk");
  }
  const std::vector<std::string> parts = b.named("unstack").unstack(qkv, 3, 0);
  const std::string& q = parts[0];
  const std::string& k = parts[1];
  const std::string& v = parts[2];

  // Scores (b, h, l, m), softmax over the key position m (axis 3).
  std::string y = b.named("scores").einsum(q, k, "bhlk,bhmk->bhlm");
  y = b.named("softmax").softmax(y, 3);
  y = b.named("context").einsum(y, v, "bhlm,bhmk->bhlk");
  // Output projection merges the heads back to (b, l, e); then residual + LN.
  y = b.named("proj").einsum(y, Shape{kHeads, kModel, kHeadDim}, "bhlk,hek->ble");
  y = b.named("add").elementwise(xs[0], y);
  return b.named("ln").ln(y);
}

// FeedForward(x) of core/docs/models.md: 512 -> 2048 (pw 2) -> 512, residual, LN.
std::string feed_forward(Builder& b, const std::string& scope, const std::string& x) {
  b.scope(scope);
  std::string y = b.named("expand").einsum(x, Shape{kModel, kFeedForward}, "ble,ef->blf", 2);
  y = b.named("contract").einsum(y, Shape{kFeedForward, kModel}, "blf,fe->ble");
  y = b.named("add").elementwise(x, y);
  return b.named("ln").ln(y);
}

}  // namespace

GraphSpec transformer(int64_t batch, int64_t seq) {
  Builder b("transformer", 1);
  const std::string enc_tokens = b.input("enc_tokens", {batch, seq});
  const std::string dec_tokens = b.input("dec_tokens", {batch, seq});
  const std::string positional = b.input("positional", {batch, seq, kModel});

  // Encoder: embedding + positional encoding, then FeedForward(Attention([x])).
  b.scope("enc_");
  std::string x = b.named("embed").embedding(enc_tokens, kVocab, kModel);
  x = b.named("pos").elementwise(x, positional);
  for (int64_t i = 1; i <= kLayers; ++i) {
    const std::string layer = "enc" + std::to_string(i) + "_";
    x = attention(b, layer + "attn_", {x});
    x = feed_forward(b, layer + "ff_", x);
  }
  const std::string enc = x;  // every decoder layer attends to the last encoder output

  // Decoder: self-attention, attention over enc, feed-forward.
  b.scope("dec_");
  x = b.named("embed").embedding(dec_tokens, kVocab, kModel);
  x = b.named("pos").elementwise(x, positional);
  for (int64_t i = 1; i <= kLayers; ++i) {
    const std::string layer = "dec" + std::to_string(i) + "_";
    x = attention(b, layer + "self_", {x});
    x = attention(b, layer + "cross_", {x, enc, enc});
    x = feed_forward(b, layer + "ff_", x);
  }

  // Output projection onto the vocabulary and the loss.
  b.scope("");
  x = b.named("logits").einsum(x, Shape{kModel, kVocab}, "ble,ev->blv");
  b.named("loss").sce(x);
  return std::move(b).finish();
}

}  // namespace pase::zoo
