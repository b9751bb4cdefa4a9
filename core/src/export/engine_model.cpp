// A language model's hyper-parameters read back from its graph
// (export/engine_model.hpp).
#include "export/engine_model.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "model/cost_model.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "util/json_util.hpp"
#include "util/text.hpp"

namespace pase {
namespace {

const LayerSpec* engine_layer(const GraphSpec& spec, const std::string& name) {
  for (const LayerSpec& l : spec.layers)
    if (l.name == name) return &l;
  return nullptr;
}

// The shape of a layer's weight operand (empty when it has none).
Shape engine_weight(const GraphSpec& spec, const std::string& name) {
  if (const LayerSpec* l = engine_layer(spec, name))
    for (const Operand& o : l->inputs)
      if (o.is_weight()) return o.weight_shape;
  return {};
}

}  // namespace

Result<EngineModel> engine_model(const Graph& g, const char* engine) {
  const GraphSpec* spec = g.model == nullptr ? nullptr : g.model->spec.get();
  int blocks = 0;
  for (size_t v = 0; v < g.vertices.size() && spec != nullptr; ++v)
    blocks = std::max(blocks, model_of(g, static_cast<int>(v)).block + 1);
  const LayerSpec* embed = spec == nullptr ? nullptr : engine_layer(*spec, "embed");
  const Shape q = spec == nullptr ? Shape{} : engine_weight(*spec, "layer0_q");
  if (spec == nullptr || blocks == 0 || embed == nullptr || q.size() < 3 || spec->inputs.empty() ||
      spec->inputs[0].first != "tokens" || spec->inputs[0].second.size() != 2)
    return Error{std::string(engine) + " export needs a language model's graph " +
                     "(core/docs/llm.md: decoder blocks named layer<N>_...); " +
                     quoted_text(g.name) + " is not one",
                 "emit"};
  EngineModel m;
  LlmConfig& c = m.config;
  m.seq = spec->inputs[0].second[1];
  // What llm_spec() records beside the shapes (its "meta"); a document
  // without it gets the model type's defaults, as a config without them.
  Result<json_detail::Json> meta = json_detail::parse_document(spec->meta_json);
  const auto recorded = [&](const char* key) -> const json_detail::Json* {
    if (!meta || !meta->is_object() || !meta->contains(key)) return nullptr;
    const json_detail::Json& v = (*meta)[key];
    return v.is_number() || v.is_string() ? &v : nullptr;
  };
  const json_detail::Json* type = recorded("model_type");
  c.model_type = type != nullptr && type->is_string() ? type->get<std::string>() : "llama";
  Result<LlmConfig> defaults =
      parse_llm_config("{\"model_type\": " + json_detail::Json(c.model_type).dump() + "}");
  if (!defaults) defaults = parse_llm_config(R"({"model_type": "llama"})");
  c.rope_theta = defaults->rope_theta;
  c.norm_eps = defaults->norm_eps;
  for (const auto& [field, key] :
       {std::pair{&c.rope_theta, "rope_theta"}, {&c.norm_eps, "norm_eps"}})
    if (const json_detail::Json* v = recorded(key); v != nullptr && v->is_number())
      *field = v->get<double>();
  // The tokenizer's vocabulary, which the engine pads itself; the graph
  // holds the padded rows.
  m.padded_vocab = embed->vocab;
  const std::optional<VocabPadding> padding = vocab_padding(*spec);
  c.vocab_size = padding ? padding->vocab : embed->vocab;
  c.hidden_size = embed->dim;
  c.num_layers = blocks;
  c.num_kv_heads = q[1];
  c.num_heads = q.size() == 4 ? q[1] * q[2] : q[1];
  c.head_dim = q.back();
  c.gated_mlp = engine_layer(*spec, "layer0_gate") != nullptr;
  const Shape up = engine_weight(*spec, "layer0_up");
  c.intermediate_size = up.empty() ? 0 : up.back();
  // A bias is a fused point-wise operation of v, o or down.
  for (const auto& [bias, name] : {std::pair{&c.qkv_bias, "layer0_v"},
                                   {&c.out_bias, "layer0_o"},
                                   {&c.mlp_bias, "layer0_down"}})
    *bias = engine_layer(*spec, name) != nullptr && engine_layer(*spec, name)->pw > 0;
  const LayerSpec* positions = engine_layer(*spec, "embed_positions");
  const json_detail::Json* longest = recorded("max_positions");
  c.learned_positions = positions != nullptr;
  m.positions_known = positions != nullptr || (longest != nullptr && longest->is_number_integer());
  c.max_positions = positions != nullptr ? positions->vocab
                    : m.positions_known  ? longest->get<int64_t>()
                                         : m.seq;
  if (c.learned_positions) c.rope_theta = 0;
  const Shape router = engine_weight(*spec, "layer0_router");
  const Shape slots = engine_weight(*spec, "layer0_slots");
  if (router.size() == 2 && slots.size() == 1) {
    // Top-k: the least k whose ceil(seq * k / experts) is the experts' slots.
    c.num_experts = router[1];
    c.experts_per_token = (slots[0] - 1) * c.num_experts / m.seq + 1;
  }
  // The norm and the tied table: the first pair whose parameter count is
  // the graph's, the model type's own first.
  const bool gpt2 = c.model_type == "gpt2";
  for (int i = 3; i >= 0 && (i == 3 || llm_parameters(c) != g.parameters); --i) {
    LlmConfig k = c;
    k.tied_embeddings = (i % 2 == 1) == gpt2;
    k.rms_norm = (i / 2 == 1) != gpt2;
    if (i == 3 || llm_parameters(k) == g.parameters) c = k;
  }
  if (const LlmConfig* b = llm_config(g.name);
      b != nullptr && llm_parameters(*b) == g.parameters && b->num_layers == c.num_layers &&
      b->hidden_size == c.hidden_size && b->num_kv_heads == c.num_kv_heads) {
    c = *b;
    m.positions_known = true;
  }
  return m;
}

}  // namespace pase
