// Language models from Hugging Face configs (llm.hpp, core/docs/llm.md): the
// exact parameter counts, the graph of small configs layer by layer against
// core/docs/llm.md, the built-in models (plan at 8 devices, never above data
// parallelism), and every error a config can raise.
#include "pase/llm.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pase/compare.hpp"
#include "pase/import.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using json = nlohmann::json;
using namespace pase;

namespace {

// A config.json of examples/hf/.
std::string example_config(const std::string& model) {
  return testing::read_text(std::string(PASE_EXAMPLES_DIR) + "/../hf/" + model + "/config.json");
}

LlmConfig parsed(const std::string& text) {
  Result<LlmConfig> c = parse_llm_config(text);
  REQUIRE_MESSAGE(c.ok(), testing::why(c));
  return *c;
}

// The graph of a config at its exact vocabulary: the layers' tables and
// shapes below are the config's own sizes (the vocabulary padding that
// planning applies has its tests in vocab_padding_test.cpp).
GraphSpec spec_of(const std::string& text, int64_t batch, int64_t seq) {
  ImportOptions options;
  options.batch = batch;
  options.seq = seq;
  options.vocab_multiple = 1;
  Result<GraphSpec> spec = import_llm_config(text, options);
  REQUIRE_MESSAGE(spec.ok(), testing::why(spec));
  return *spec;
}

// The error of a config; `where` and a part of the message checked.
void check_config_error(const std::string& text, const std::string& where,
                        const std::string& part) {
  CAPTURE(text);
  Result<LlmConfig> c = parse_llm_config(text);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().where == where);
  CHECK_MESSAGE(testing::contains(c.error().message, part), c.error().message);
}

// One layer as core/docs/llm.md writes it: name, op, the named inputs, the
// weight's shape (empty: none), the equation and pw of an Einsum.
struct Expected {
  std::string name, op;
  std::vector<std::string> inputs;
  Shape weight;
  std::string equation;
  int64_t pw = 0;
};

void check_layers(const GraphSpec& spec, const std::vector<Expected>& expected) {
  REQUIRE(spec.layers.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    const Expected& e = expected[i];
    CAPTURE(i);
    CAPTURE(e.name);
    CHECK(l.name == e.name);
    CHECK(l.op == e.op);
    std::vector<std::string> names;
    Shape weight;
    for (const Operand& o : l.inputs) {
      if (o.is_weight()) {
        weight = o.weight_shape;
      } else {
        names.push_back(o.name);
      }
    }
    CHECK(names == e.inputs);
    CHECK(weight == e.weight);
    CHECK(l.equation == e.equation);
    CHECK(l.pw == e.pw);
  }
}

// A small Llama with grouped-query attention: 4 query heads share 2 key-value
// heads of width 3.
const char* kTinyLlama = R"({
  "model_type": "llama", "vocab_size": 11, "hidden_size": 12, "intermediate_size": 20,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "max_position_embeddings": 64, "tie_word_embeddings": false
})";

}  // namespace

// ---- Parameter counts ------------------------------------------------------------------------

TEST_CASE("llm: the parameter counts of real configs are exact") {
  const std::pair<const char*, int64_t> counts[] = {
      {"Meta-Llama-3-8B", 8030261248},
      {"Mistral-7B-v0.1", 7241732096},
      {"gpt2", 124439808},
      {"Mixtral-8x7B-v0.1", 46702792704},
      {"Qwen2-7B", 7615616512},
      {"Qwen2-0.5B", 494032768},
  };
  for (const auto& entry : counts) {
    // Named, not a structured binding: CAPTURE reads them in a lambda.
    const auto& model = entry.first;
    const auto& count = entry.second;
    CAPTURE(model);
    const std::string text = example_config(model);
    CHECK(llm_parameters(parsed(text)) == count);
    // The graph carries the count, and so does the built graph.
    GraphSpec spec = spec_of(text, 2, 16);
    CHECK(spec.parameters == count);
    Result<Graph> g = build_graph(spec);
    REQUIRE_MESSAGE(g.ok(), testing::why(g));
    CHECK(g->parameters == count);
  }
}

TEST_CASE("llm: the built-in language models have their published parameter counts") {
  const std::pair<const char*, int64_t> counts[] = {
      {"gpt2", 124439808},           {"llama3-8b", 8030261248},   {"llama3-70b", 70553706496},
      {"mixtral-8x7b", 46702792704}, {"gpt3-175b", 174604259328},
  };
  for (const auto& entry : counts) {
    // Named, not a structured binding: CAPTURE reads them in a lambda.
    const auto& name = entry.first;
    const auto& count = entry.second;
    CAPTURE(name);
    const LlmConfig* config = llm_config(name);
    REQUIRE(config != nullptr);
    CHECK(llm_parameters(*config) == count);
    Result<Graph> g = build_model(name, 1, 16);
    REQUIRE_MESSAGE(g.ok(), testing::why(g));
    CHECK(g->parameters == count);
  }
  CHECK(llm_config("alexnet") == nullptr);
  CHECK(llm_config("llama") == nullptr);
}

TEST_CASE("llm: the parameter count is the graph's weights plus norms and biases") {
  // The format has no place for biases and norm scales (core/docs/graph-format.md,
  // "Parameters"), so the graph's weight operands and tables hold the rest:
  // with a tied table once more, and a MoE layer's slot constant.
  for (const char* model : {"Meta-Llama-3-8B", "gpt2", "Mixtral-8x7B-v0.1", "Qwen2-0.5B"}) {
    CAPTURE(model);
    const LlmConfig c = parsed(example_config(model));
    const int64_t seq = 16;
    GraphSpec spec = spec_of(example_config(model), 2, seq);
    int64_t weights = 0;
    for (const LayerSpec& l : spec.layers) {
      if (l.op == "Embedding") weights += l.vocab * l.dim;
      for (const Operand& o : l.inputs) {
        if (!o.is_weight()) continue;
        int64_t n = 1;
        for (int64_t s : o.weight_shape) n *= s;
        weights += n;
      }
    }
    const int64_t d = c.hidden_size, norm = c.rms_norm ? d : 2 * d;
    int64_t rest = (2 * c.num_layers + 1) * norm;
    if (c.qkv_bias) rest += c.num_layers * (c.num_heads + 2 * c.num_kv_heads) * c.head_dim;
    if (c.out_bias) rest += c.num_layers * d;
    if (c.mlp_bias) rest += c.num_layers * ((c.gated_mlp ? 2 : 1) * c.intermediate_size + d);
    int64_t extra = c.tied_embeddings ? c.vocab_size * d : 0;
    if (c.num_experts > 0) {
      extra += c.num_layers * ((seq * c.experts_per_token + c.num_experts - 1) / c.num_experts);
    }
    CHECK(weights == llm_parameters(c) - rest + extra);
  }
}

TEST_CASE("llm: a config too large for a graph is refused before it is built") {
  check_config_error(R"({"model_type": "llama", "num_hidden_layers": 1000000000})",
                     "num_hidden_layers", "at most 256 decoder layers");
  // The largest allowed builds (a mixture of experts has the most layers).
  LlmConfig c = parsed(R"({"model_type": "mixtral", "vocab_size": 5, "hidden_size": 4,
    "intermediate_size": 4, "num_attention_heads": 2, "num_key_value_heads": 1,
    "num_local_experts": 2})");
  c.num_layers = kLlmMaxDecoderLayers;
  Result<GraphSpec> spec = llm_spec(c, "deep", 1, 2);
  REQUIRE(spec.ok());
  CHECK(spec->layers.size() <= static_cast<size_t>(kMaxLayers));
  CHECK(build_graph(*spec).ok());
  // A sequence whose routed tokens overflow is an error, not undefined.
  CHECK(llm_spec(c, "deep", 1, std::numeric_limits<int64_t>::max()).error().where == "seq");
}

TEST_CASE("llm: a count beyond 2^63 - 1 is refused, not wrapped") {
  LlmConfig c = parsed(kTinyLlama);
  c.hidden_size = c.intermediate_size = int64_t{1} << 40;
  c.head_dim = c.hidden_size / c.num_heads;
  CHECK(llm_parameters(c) == std::numeric_limits<int64_t>::max());
  std::optional<Error> e = check_llm_config(c);
  REQUIRE(e.has_value());
  CHECK(e->where == "hidden_size");
}

TEST_CASE("llm: a gpt2 config too large is refused at the field it has") {
  // n_inner's default, 4 x n_embd, overflows: n_embd, not intermediate_size.
  check_config_error(R"({"model_type": "gpt2", "n_embd": 2305843009213693952, "n_head": 16})",
                     "n_embd", "4 x n_embd");
  // A parameter count beyond 2^63 - 1 from GPT-2's own names.
  check_config_error(R"({"model_type": "gpt2", "n_embd": 1099511627776, "n_head": 1})", "n_embd",
                     "2^63 - 1");
  const std::string layers = "at most " + std::to_string(kLlmMaxDecoderLayers) + " decoder layers";
  check_config_error(R"({"model_type": "gpt2", "n_layer": 1000000000})", "n_layer", layers);
  // A gpt2 config written with the common names keeps them.
  check_config_error(R"({"model_type": "gpt2", "num_hidden_layers": 1000000000})",
                     "num_hidden_layers", layers);
  check_config_error(R"({"model_type": "gpt2", "n_embd": 10, "n_head": 3})", "n_head",
                     "n_embd 10 is not a multiple of n_head 3");
  check_config_error(R"({"model_type": "gpt2", "n_embd": 4096, "n_head": 16,
                      "n_inner": 2305843009213693952})",
                     "n_embd", "2^63 - 1");
}

TEST_CASE("llm: an unsupported model_type is echoed cut, its control characters escaped") {
  Result<LlmConfig> c = parse_llm_config(R"({"model_type": "llama\u001b]0;owned\u0007"})");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().where == "model_type");
  CHECK_MESSAGE(testing::contains(c.error().message, "'llama\\u001b]0;owned\\u0007'"),
                c.error().message);
  const std::string long_type = std::string(131000, 'x');
  c = parse_llm_config(R"({"model_type": ")" + long_type + R"("})");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.size() < 200);
  CHECK(testing::contains(c.error().message, "xxx...'"));
  for (char ch : c.error().message) CHECK(static_cast<unsigned char>(ch) >= 0x20);
}

// ---- The graph, layer by layer ----------------------------------------------------------------

TEST_CASE("llm: a small Llama with grouped-query attention, layer by layer") {
  GraphSpec spec = spec_of(kTinyLlama, 2, 5);
  CHECK(spec.name == "llama");
  CHECK(spec.cutoff == 1);
  REQUIRE(spec.inputs.size() == 1);
  CHECK(spec.inputs[0].first == "tokens");
  CHECK(spec.inputs[0].second == Shape{2, 5});
  // Beside the shapes, what an engine's launch needs (LlamaConfig's defaults
  // for the RoPE base and the norm's epsilon, the config's longest sequence).
  CHECK(json::parse(spec.meta_json) == json{{"model_type", "llama"},
                                            {"batch", 2},
                                            {"seq", 5},
                                            {"max_positions", 64},
                                            {"rope_theta", 10000.0},
                                            {"norm_eps", 1e-6},
                                            // and what the JAX export runs the layers with
                                            {"norm", "rms"},
                                            {"hidden_act", "silu"},
                                            {"gated_mlp", true},
                                            {"qkv_bias", false},
                                            {"out_bias", false},
                                            {"mlp_bias", false},
                                            {"tied_embeddings", false},
                                            {"num_heads", 4},
                                            {"num_kv_heads", 2}});
  std::vector<Expected> expected = {{"embed", "Embedding", {"tokens"}, {}, "", 0}};
  std::string x = "embed";
  for (int i = 0; i < 2; ++i) {
    const std::string p = "layer" + std::to_string(i) + "_";
    // d 12, 2 key-value heads h of width k 3, 2 query heads r per key-value head.
    expected.push_back({p + "attn_norm", "Norm", {x}, {}, "", 0});
    expected.push_back({p + "q", "Einsum", {p + "attn_norm"}, {12, 2, 2, 3}, "ble,ehrk->bhrlk", 1});
    expected.push_back({p + "k", "Einsum", {p + "attn_norm"}, {12, 2, 3}, "ble,ehk->bhlk", 1});
    expected.push_back({p + "v", "Einsum", {p + "attn_norm"}, {12, 2, 3}, "ble,ehk->bhlk", 0});
    expected.push_back({p + "scores", "Einsum", {p + "q", p + "k"}, {}, "bhrlk,bhmk->bhrlm", 3});
    expected.push_back(
        {p + "context", "Einsum", {p + "scores", p + "v"}, {}, "bhrlm,bhmk->bhrlk", 0});
    expected.push_back({p + "o", "Einsum", {p + "context"}, {2, 2, 3, 12}, "bhrlk,hrke->ble", 0});
    expected.push_back({p + "attn_add", "Elementwise", {x, p + "o"}, {}, "", 0});
    expected.push_back({p + "mlp_norm", "Norm", {p + "attn_add"}, {}, "", 0});
    expected.push_back({p + "gate", "Einsum", {p + "mlp_norm"}, {12, 20}, "ble,ef->blf", 1});
    expected.push_back({p + "up", "Einsum", {p + "mlp_norm"}, {12, 20}, "ble,ef->blf", 0});
    expected.push_back({p + "gate_up", "Elementwise", {p + "gate", p + "up"}, {}, "", 0});
    expected.push_back({p + "down", "Einsum", {p + "gate_up"}, {20, 12}, "blf,fe->ble", 0});
    expected.push_back({p + "mlp_add", "Elementwise", {p + "attn_add", p + "down"}, {}, "", 0});
    x = p + "mlp_add";
  }
  expected.push_back({"final_norm", "Norm", {x}, {}, "", 0});
  expected.push_back({"lm_head", "Einsum", {"final_norm"}, {12, 11}, "ble,ev->blv", 0});
  expected.push_back({"loss", "SoftmaxCrossEntropy", {"lm_head"}, {}, "", 0});
  check_layers(spec, expected);
  for (const LayerSpec& l : spec.layers) {
    if (l.op == "Norm") CHECK(l.axis == -1);
  }

  // The vertices: one per layer, with the iteration spaces of the equations.
  Result<Graph> g = build_graph(spec);
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  REQUIRE(g->vertices.size() == spec.layers.size());
  const Vertex& q = g->vertices[2];
  CHECK(q.name == "layer0_q");
  CHECK(q.dims == std::vector<std::string>{"b", "h", "r", "l", "k", "e"});
  CHECK(q.dom == Shape{2, 2, 2, 5, 3, 12});
  CHECK(q.kinds[1] == DimKind::kHeads);
  const Vertex& scores = g->vertices[5];
  CHECK(scores.outputs[0].shape == Shape{2, 2, 2, 5, 5});
  CHECK(g->vertices.back().inputs[0].shape == Shape{2, 5, 11});
}

TEST_CASE("llm: multi-head attention has no query-group letter") {
  // Mistral's layout with as many key-value heads as query heads.
  GraphSpec spec = spec_of(R"({"model_type": "mistral", "vocab_size": 7, "hidden_size": 8,
    "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_key_value_heads": 2, "max_position_embeddings": 32})",
                           3, 4);
  std::vector<std::string> equations;
  for (const LayerSpec& l : spec.layers) {
    if (l.op == "Einsum") equations.push_back(l.name + " " + l.equation);
  }
  CHECK(equations ==
        std::vector<std::string>{"layer0_q ble,ehk->bhlk", "layer0_k ble,ehk->bhlk",
                                 "layer0_v ble,ehk->bhlk", "layer0_scores bhlk,bhmk->bhlm",
                                 "layer0_context bhlm,bhmk->bhlk", "layer0_o bhlk,hke->ble",
                                 "layer0_gate ble,ef->blf", "layer0_up ble,ef->blf",
                                 "layer0_down blf,fe->ble", "lm_head ble,ev->blv"});
  CHECK(build_graph(spec).ok());
}

TEST_CASE("llm: a small GPT-2, layer by layer") {
  // Learned positions, LayerNorm, biases on every projection, an MLP without
  // a gate, the output projection tied to the table.
  GraphSpec spec = spec_of(R"({"model_type": "gpt2", "vocab_size": 9, "n_embd": 6,
    "n_layer": 1, "n_head": 2, "n_positions": 8})",
                           2, 4);
  CHECK(spec.inputs ==
        std::vector<std::pair<std::string, Shape>>{{"tokens", {2, 4}}, {"positions", {2, 4}}});
  check_layers(
      spec,
      {
          {"embed", "Embedding", {"tokens"}, {}, "", 0},
          {"embed_positions", "Embedding", {"positions"}, {}, "", 0},
          {"embed_add", "Elementwise", {"embed", "embed_positions"}, {}, "", 0},
          {"layer0_attn_norm", "Norm", {"embed_add"}, {}, "", 0},
          {"layer0_q", "Einsum", {"layer0_attn_norm"}, {6, 2, 3}, "ble,ehk->bhlk", 1},
          {"layer0_k", "Einsum", {"layer0_attn_norm"}, {6, 2, 3}, "ble,ehk->bhlk", 1},
          {"layer0_v", "Einsum", {"layer0_attn_norm"}, {6, 2, 3}, "ble,ehk->bhlk", 1},
          {"layer0_scores", "Einsum", {"layer0_q", "layer0_k"}, {}, "bhlk,bhmk->bhlm", 3},
          {"layer0_context", "Einsum", {"layer0_scores", "layer0_v"}, {}, "bhlm,bhmk->bhlk", 0},
          {"layer0_o", "Einsum", {"layer0_context"}, {2, 3, 6}, "bhlk,hke->ble", 1},
          {"layer0_attn_add", "Elementwise", {"embed_add", "layer0_o"}, {}, "", 0},
          {"layer0_mlp_norm", "Norm", {"layer0_attn_add"}, {}, "", 0},
          {"layer0_up", "Einsum", {"layer0_mlp_norm"}, {6, 24}, "ble,ef->blf", 2},
          {"layer0_down", "Einsum", {"layer0_up"}, {24, 6}, "blf,fe->ble", 1},
          {"layer0_mlp_add", "Elementwise", {"layer0_attn_add", "layer0_down"}, {}, "", 0},
          {"final_norm", "Norm", {"layer0_mlp_add"}, {}, "", 0},
          {"lm_head", "Einsum", {"final_norm"}, {6, 9}, "ble,ev->blv", 0},
          {"loss", "SoftmaxCrossEntropy", {"lm_head"}, {}, "", 0},
      });
  CHECK(spec.layers[1].vocab == 8);  // the position table has n_positions rows
  // Counted by hand: table 54, positions 48, norms 2*12 + final 12,
  // attention 4*36 + biases 3*6 + 6, MLP 2*144 + biases 24 + 6.
  CHECK(spec.parameters == 54 + 48 + 24 + 12 + 144 + 18 + 6 + 288 + 24 + 6);
}

TEST_CASE("llm: a small Mixtral, layer by layer, with experts as a dimension") {
  // 4 experts, top 2: each sequence's 6 tokens make 12 routed tokens, 3 slots
  // per expert.
  GraphSpec spec = spec_of(R"({"model_type": "mixtral", "vocab_size": 7, "hidden_size": 8,
    "intermediate_size": 10, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_key_value_heads": 1, "max_position_embeddings": 32, "num_local_experts": 4,
    "num_experts_per_tok": 2})",
                           2, 6);
  std::vector<Expected> moe = {
      {"layer0_mlp_norm", "Norm", {"layer0_attn_add"}, {}, "", 0},
      {"layer0_router", "Einsum", {"layer0_mlp_norm"}, {8, 4}, "ble,ex->blx", 2},
      {"layer0_slots", "Einsum", {"layer0_router"}, {3}, "blx,t->blxt", 0},
      {"layer0_dispatch", "Einsum", {"layer0_slots", "layer0_mlp_norm"}, {}, "blxt,ble->bxte", 0},
      {"layer0_gate", "Einsum", {"layer0_dispatch"}, {4, 8, 10}, "bxte,xef->bxtf", 1},
      {"layer0_up", "Einsum", {"layer0_dispatch"}, {4, 8, 10}, "bxte,xef->bxtf", 0},
      {"layer0_gate_up", "Elementwise", {"layer0_gate", "layer0_up"}, {}, "", 0},
      {"layer0_down", "Einsum", {"layer0_gate_up"}, {4, 10, 8}, "bxtf,xfe->bxte", 0},
      {"layer0_combine", "Einsum", {"layer0_slots", "layer0_down"}, {}, "blxt,bxte->ble", 0},
      {"layer0_mlp_add", "Elementwise", {"layer0_attn_add", "layer0_combine"}, {}, "", 0},
  };
  // The attention part is the Llama one (checked above): 8 layers from the
  // embedding on, then the mixture of experts, then the head.
  REQUIRE(spec.layers.size() == 1 + 8 + moe.size() + 3);
  GraphSpec part = spec;
  part.layers.assign(spec.layers.begin() + 9, spec.layers.begin() + 9 + moe.size());
  check_layers(part, moe);

  Result<Graph> g = build_graph(spec);
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  // The experts' MLP works on (b, x, t, .): 2 sequences x 4 experts x 3 slots,
  // the work of top-2 routing.
  const Vertex& gate = g->vertices[13];
  CHECK(gate.name == "layer0_gate");
  CHECK(gate.dims == std::vector<std::string>{"b", "x", "t", "f", "e"});
  CHECK(gate.dom == Shape{2, 4, 3, 10, 8});
  CHECK(gate.kinds[1] == DimKind::kExperts);
  CHECK(g->vertices[16].outputs[0].shape == Shape{2, 4, 3, 8});
}

TEST_CASE("llm: slots per expert round up when the routed tokens do not divide") {
  // 5 tokens, top 1 of 3 experts: 5 / 3 rounds up to 2 slots.
  GraphSpec spec = spec_of(R"({"model_type": "mixtral", "vocab_size": 7, "hidden_size": 4,
    "intermediate_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_key_value_heads": 2, "max_position_embeddings": 32, "num_local_experts": 3,
    "num_experts_per_tok": 1})",
                           1, 5);
  for (const LayerSpec& l : spec.layers) {
    if (l.name == "layer0_slots") CHECK(l.inputs[1].weight_shape == Shape{2});
  }
}

TEST_CASE("llm: the Llama-3-8B config builds exactly the built-in llama3-8b") {
  GraphSpec imported = spec_of(example_config("Meta-Llama-3-8B"), 0, 0);
  Result<GraphSpec> builtin = model_spec("llama3-8b");
  REQUIRE(builtin.ok());
  imported.name = builtin->name;
  imported.meta_json = builtin->meta_json;
  CHECK(write_graph(imported) == write_graph(*builtin));
  // The defaults: batch 32, sequence max_position_embeddings (8192).
  CHECK(imported.inputs[0].second == Shape{32, 8192});
  // GPT-2's sequence is capped by its 1024 positions.
  CHECK(spec_of(example_config("gpt2"), 0, 0).inputs[0].second == Shape{32, 1024});
}

TEST_CASE("llm: batch and sequence length come from the request") {
  for (const ModelInfo& info : list_models()) {
    if (!info.llm) continue;
    CAPTURE(info.name);
    Result<GraphSpec> spec = model_spec(info.name, 3, 64);
    REQUIRE_MESSAGE(spec.ok(), testing::why(spec));
    CHECK(spec->inputs[0].second == Shape{3, 64});
    CHECK(info.default_batch == kLlmDefaultBatch);
    CHECK(info.default_seq == llm_default_seq(*llm_config(info.name)));
    CHECK(info.cutoff == 1);
  }
  // The paper's sequence models take a sequence length too; the CNNs do not.
  Result<GraphSpec> t = model_spec("transformer", 2, 32);
  REQUIRE(t.ok());
  CHECK(t->inputs[0].second == Shape{2, 32});
  CHECK(t->inputs[2].second == Shape{2, 32, 512});
  Result<GraphSpec> cnn = model_spec("alexnet", 0, 32);
  REQUIRE_FALSE(cnn.ok());
  CHECK(cnn.error().where == "seq");
  CHECK(model_spec("gpt2", 0, -1).error().where == "seq");
  // GPT-2 has 1024 learned positions.
  Result<GraphSpec> too_long = model_spec("gpt2", 1, 2048);
  REQUIRE_FALSE(too_long.ok());
  CHECK(too_long.error().where == "seq");
  CHECK(testing::contains(too_long.error().message, "1024"));
}

// ---- Planning ----------------------------------------------------------------------------------

TEST_CASE("llm: every built-in language model plans at 8 devices, at most data parallelism") {
  for (const ModelInfo& info : list_models()) {
    if (!info.llm) continue;
    CAPTURE(info.name);
    Result<Graph> g = build_model(info.name);
    REQUIRE_MESSAGE(g.ok(), testing::why(g));
    const Cluster cluster{.devices = 8};
    Result<Plan> p = plan(*g, cluster);
    REQUIRE_MESSAGE(p.ok(), testing::why(p));
    Result<StrategyReport> dp = data_parallel(*g, cluster);
    REQUIRE_MESSAGE(dp.ok(), testing::why(dp));
    CHECK(p->cost > 0);
    CHECK(p->cost <= dp->plan.cost * (1 + 1e-12));
    // The planned strategy is priced the same by evaluate().
    Result<Plan> again = evaluate(*g, cluster, p->strategy);
    REQUIRE(again.ok());
    CHECK(again->cost == doctest::Approx(p->cost).epsilon(1e-12));
  }
}

TEST_CASE("llm: an imported config plans through the JSON request like a built-in") {
  GraphSpec spec = spec_of(example_config("Mixtral-8x7B-v0.1"), 4, 256);
  json request = {{"graph", json::parse(write_graph(spec))}, {"cluster", {{"devices", 8}}}};
  json result = json::parse(plan_json(request.dump()));
  REQUIRE_MESSAGE(!result.contains("error"), result.dump());
  CHECK(result["parameters"] == 46702792704);
  json builtin = json::parse(
      plan_json(R"({"model": "mixtral-8x7b", "batch": 4, "seq": 256, "cluster": {"devices": 8}})"));
  REQUIRE_MESSAGE(!builtin.contains("error"), builtin.dump());
  CHECK(builtin["cost"] == result["cost"]);
  json seq_alone = json::parse(plan_json(R"({"graph": {"layers": []}, "seq": 8})"));
  CHECK(seq_alone["error"]["where"] == "seq");
}

// ---- The import entry of the module
// ---------------------------------------------------------------

TEST_CASE("llm: import_model_json reads a config.json") {
  const std::string text = example_config("Meta-Llama-3-8B");
  MemorySource source(text);
  json result = json::parse(import_model_json(source, R"({"batch": 4, "seq": 128})"));
  REQUIRE_MESSAGE(!result.contains("error"), result.dump());
  CHECK(result["format"] == "hf-config");
  CHECK(result["parameters"] == 8030261248);
  CHECK(result["batch"] == 4);
  CHECK(result["seq"] == 128);
  CHECK(result["graph"]["name"] == "llama");
  CHECK(result["graph"]["inputs"]["tokens"] == json::array({4, 128}));
  CHECK(result["config"]["num_kv_heads"] == 8);
  CHECK(result["config"]["num_layers"] == 32);
  CHECK(result["layers"] == result["graph"]["layers"].size());
  CHECK(result["layer_outputs"].size() == result["layers"]);
  CHECK(result["dynamic_dims"] == json::array());

  // The defaults, a name, and a byte order mark before the document.
  const std::string marked = "\xEF\xBB\xBF" + text;
  MemorySource bom(marked);
  json named = json::parse(import_model_json(bom, R"({"name": "l3"})"));
  REQUIRE_MESSAGE(!named.contains("error"), named.dump());
  CHECK(named["graph"]["name"] == "l3");
  CHECK(named["batch"] == 32);
  CHECK(named["seq"] == 8192);
}

TEST_CASE("llm: import_model_json errors name the field") {
  struct Case {
    std::string text, options, where;
  };
  const std::vector<Case> cases = {
      {R"({"model_type": "bert", "hidden_size": 8})", "", "model_type"},
      {R"({"model_type": "llama", "hidden_size": -8})", "", "hidden_size"},
      {R"({"model_type": "llama"})", R"({"seq": 0})", "seq"},
      {R"({"model_type": "llama"})", R"({"dims": {"batch": 2}})", "dims.batch"},
      {R"({"model_type": "gpt2"})", R"({"seq": 4096})", "seq"},
      {R"({"format": "pase-graph/1", "layers": []})", "", ""},
      {R"({"model_type": "llama", )", "", ""},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    MemorySource source(c.text);
    json result = json::parse(import_model_json(source, c.options));
    REQUIRE(result.contains("error"));
    CHECK(result["error"]["where"] == c.where);
  }
  MemorySource graph(R"({"format": "pase-graph/1", "layers": []})");
  json result = json::parse(import_model_json(graph, ""));
  CHECK(testing::contains(result["error"]["message"], "pase-graph/1"));
}

// ---- Reading configs: every error names its field
// --------------------------------------------------

TEST_CASE("llm: config errors name the field") {
  check_config_error("[1, 2]", "", "JSON object");
  check_config_error("{", "", "parse error");
  check_config_error(R"({"hidden_size": 8})", "model_type", "has no \"model_type\"; add");
  check_config_error(R"({"model_type": 3})", "model_type", "a string");
  check_config_error(R"({"model_type": "t5"})", "model_type",
                     "supported: llama, mistral, qwen2, gpt2, mixtral");
  check_config_error(R"({"model_type": "llama", "hidden_size": 0})", "hidden_size", "positive");
  check_config_error(R"({"model_type": "llama", "hidden_size": 8.5})", "hidden_size", "integer");
  check_config_error(R"({"model_type": "llama", "vocab_size": "big"})", "vocab_size", "integer");
  check_config_error(R"({"model_type": "llama", "tie_word_embeddings": 1})", "tie_word_embeddings",
                     "true or false");
  check_config_error(R"({"model_type": "llama", "hidden_size": 10, "num_attention_heads": 4})",
                     "num_attention_heads", "not a multiple");
  check_config_error(R"({"model_type": "gpt2", "n_embd": 10, "n_head": 4})", "n_head",
                     "not a multiple");
  check_config_error(R"({"model_type": "llama", "num_attention_heads": 32,
                         "num_key_value_heads": 6})",
                     "num_key_value_heads", "not a multiple");
  check_config_error(R"({"model_type": "mixtral", "num_local_experts": 2,
                         "num_experts_per_tok": 3})",
                     "num_experts_per_tok", "from 1 to num_local_experts");
}

TEST_CASE("llm: configs follow Hugging Face's defaults, aliases and nulls") {
  // null is the same as absent (head_dim, n_inner, num_key_value_heads).
  LlmConfig c = parsed(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 8,
    "num_key_value_heads": null, "head_dim": null, "intermediate_size": 100})");
  CHECK(c.num_kv_heads == 8);
  CHECK(c.head_dim == 8);
  CHECK(c.vocab_size == 32000);  // LlamaConfig's default
  CHECK_FALSE(c.tied_embeddings);
  // An explicit head_dim wins over hidden_size / heads.
  CHECK(parsed(R"({"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 8,
    "head_dim": 32})")
            .head_dim == 32);
  // GPT-2 reads its own names or the common ones; n_inner null is 4 * n_embd.
  LlmConfig g = parsed(R"({"model_type": "gpt2", "hidden_size": 32, "num_hidden_layers": 3,
    "n_head": 4, "n_inner": null})");
  CHECK(g.hidden_size == 32);
  CHECK(g.num_layers == 3);
  CHECK(g.intermediate_size == 128);
  CHECK(g.tied_embeddings);
  CHECK(g.learned_positions);
  // Llama's attention_bias puts biases on all four projections, mlp_bias on the MLP's.
  LlmConfig b = parsed(R"({"model_type": "llama", "attention_bias": true, "mlp_bias": true})");
  CHECK(b.qkv_bias);
  CHECK(b.out_bias);
  CHECK(b.mlp_bias);
  // Qwen2 always has biases on q, k and v only.
  LlmConfig q = parsed(R"({"model_type": "qwen2"})");
  CHECK(q.qkv_bias);
  CHECK_FALSE(q.out_bias);
  // Fields that do not shape the graph are ignored.
  CHECK(parsed(R"({"model_type": "mistral", "rope_theta": 1e6, "sliding_window": 4096,
    "architectures": ["MistralForCausalLM"]})")
            .model_type == "mistral");
}

TEST_CASE("llm: the RoPE base and the norm's epsilon, read or Hugging Face's defaults") {
  // The published configs.
  const LlmConfig llama3 = parsed(example_config("Meta-Llama-3-8B"));
  CHECK(llama3.rope_theta == 500000);
  CHECK(llama3.norm_eps == 1e-5);
  const LlmConfig qwen2 = parsed(example_config("Qwen2-7B"));
  CHECK(qwen2.rope_theta == 1e6);
  CHECK(qwen2.norm_eps == 1e-6);
  const LlmConfig gpt2 = parsed(example_config("gpt2"));
  CHECK(gpt2.rope_theta == 0);  // learned positions
  CHECK(gpt2.norm_eps == 1e-5);
  // The classes' defaults when absent: 10000 and 1e-6, Mixtral's 1e6 and 1e-5.
  for (const char* type : {"llama", "mistral", "qwen2"}) {
    CAPTURE(type);
    const LlmConfig c = parsed(std::string(R"({"model_type": ")") + type + "\"}");
    CHECK(c.rope_theta == 10000);
    CHECK(c.norm_eps == 1e-6);
  }
  const LlmConfig mixtral = parsed(R"({"model_type": "mixtral"})");
  CHECK(mixtral.rope_theta == 1e6);
  CHECK(mixtral.norm_eps == 1e-5);
  CHECK(parsed(R"({"model_type": "gpt2", "layer_norm_epsilon": 1e-6})").norm_eps == 1e-6);
  // The built-in models carry the published values.
  CHECK(llm_config("llama3-70b")->rope_theta == 500000);
  CHECK(llm_config("llama3-70b")->norm_eps == 1e-5);
  CHECK(llm_config("mixtral-8x7b")->rope_theta == 1e6);
  CHECK(llm_config("mixtral-8x7b")->norm_eps == 1e-5);
  CHECK(llm_config("gpt3-175b")->rope_theta == 0);
  CHECK(llm_config("gpt3-175b")->norm_eps == 1e-5);
  // Errors name the field.
  // (a pair, not a structured binding: clang 14 cannot CAPTURE one)
  for (const auto& bad :
       {std::pair{R"({"model_type": "llama", "rope_theta": 0})", "rope_theta"},
        {R"({"model_type": "llama", "rope_theta": "big"})", "rope_theta"},
        {R"({"model_type": "qwen2", "rms_norm_eps": -1e-6})", "rms_norm_eps"},
        {R"({"model_type": "gpt2", "layer_norm_epsilon": 0})", "layer_norm_epsilon"}}) {
    const char* text = bad.first;
    const char* field = bad.second;
    CAPTURE(text);
    Result<LlmConfig> c = parse_llm_config(text);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().where == field);
  }
  LlmConfig learned = parsed(R"({"model_type": "gpt2"})");
  learned.rope_theta = 10000;
  REQUIRE(check_llm_config(learned).has_value());
  CHECK(check_llm_config(learned)->where == "rope_theta");
}

TEST_CASE("llm: looks_like_llm_config tells configs from graph documents") {
  CHECK(looks_like_llm_config(example_config("gpt2")));
  CHECK(looks_like_llm_config("  \n{\"model_type\": \"llama\"}"));
  CHECK(looks_like_llm_config("\xEF\xBB\xBF{\"model_type\": \"llama\"}"));
  CHECK_FALSE(looks_like_llm_config(R"({"format": "pase-graph/1", "layers": []})"));
  CHECK_FALSE(looks_like_llm_config(R"({"model_type": "llama", "layers": []})"));
  CHECK_FALSE(looks_like_llm_config(R"({"model_type": 3})"));
  CHECK_FALSE(looks_like_llm_config("[]"));
  CHECK_FALSE(looks_like_llm_config("{\"model_type\": "));
  CHECK_FALSE(looks_like_llm_config(""));
}

TEST_CASE("llm: an ONNX import refuses seq") {
  const std::string bytes =
      testing::read_text(std::string(PASE_TEST_DATA_DIR) + "/onnx/tiny_cnn.onnx");
  MemorySource source(bytes);
  ImportOptions options;
  options.seq = 16;
  Result<GraphSpec> spec = import_onnx(source, options);
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.error().where == "seq");
}

// ---- The invalid-config corpus (tests/invalid/configs/cases.json)
// --------------------------------

TEST_CASE("llm: every config of the invalid corpus is refused with its error") {
  const std::string dir = std::string(PASE_INVALID_DIR) + "/configs/";
  const json manifest = json::parse(testing::read_text(dir + "cases.json"));
  REQUIRE(manifest["cases"].size() >= 10);
  for (const json& c : manifest["cases"]) {
    CAPTURE(c["name"].get<std::string>());
    const std::string text = testing::read_text(dir + c["file"].get<std::string>());
    ImportOptions options;
    options.seq = c.value("seq", int64_t{0});
    Result<GraphSpec> spec = import_llm_config(text, options);
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.error().where == c["where"]);
    CHECK_MESSAGE(testing::contains(spec.error().message, c["message"]), spec.error().message);
    // The module's entry gives the same error document.
    MemorySource source(text);
    json options_json = json::object();
    if (options.seq > 0) options_json["seq"] = options.seq;
    json result = json::parse(import_model_json(source, options_json.dump()));
    REQUIRE(result.contains("error"));
    CHECK(result["error"]["where"] == c["where"]);
    CHECK(testing::contains(result["error"]["message"], c["message"]));
  }
}
