// Reading a Hugging Face config.json into an LlmConfig, checking it, and the
// exact parameter count (llm.hpp; core/docs/llm.md, "Reading config.json" and
// "Parameters").
#include <cctype>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "model/llm/llm_json.hpp"
#include "util/text.hpp"

namespace pase {
namespace {

using json_detail::Json;

// The model types, each with Hugging Face's defaults for the fields a config
// may leave out (the defaults of LlamaConfig, MistralConfig, Qwen2Config,
// GPT2Config and MixtralConfig).
struct ConfigFamily {
  std::string_view type;
  LlmConfig defaults;
};

LlmConfig family_defaults(std::string_view type, int64_t vocab, int64_t hidden, int64_t inter,
                          int64_t layers, int64_t heads, int64_t kv_heads, int64_t positions) {
  LlmConfig c;
  c.model_type = std::string(type);
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = inter;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.max_positions = positions;
  return c;
}

const std::vector<ConfigFamily>& families() {
  static const std::vector<ConfigFamily> kFamilies = [] {
    std::vector<ConfigFamily> f;
    // kv_heads 0: as many as the query heads.
    f.push_back({"llama", family_defaults("llama", 32000, 4096, 11008, 32, 32, 0, 2048)});
    f.push_back({"mistral", family_defaults("mistral", 32000, 4096, 14336, 32, 32, 8, 131072)});
    LlmConfig qwen2 = family_defaults("qwen2", 151936, 4096, 22016, 32, 32, 32, 32768);
    qwen2.qkv_bias = true;
    f.push_back({"qwen2", qwen2});
    LlmConfig gpt2 = family_defaults("gpt2", 50257, 768, 0, 12, 12, 0, 1024);
    gpt2.learned_positions = true;
    gpt2.gated_mlp = false;
    gpt2.rms_norm = false;
    gpt2.tied_embeddings = true;
    gpt2.qkv_bias = gpt2.out_bias = gpt2.mlp_bias = true;
    gpt2.rope_theta = 0;   // learned positions
    gpt2.norm_eps = 1e-5;  // GPT2Config's layer_norm_epsilon
    f.push_back({"gpt2", gpt2});
    LlmConfig mixtral = family_defaults("mixtral", 32000, 4096, 14336, 32, 32, 8, 131072);
    mixtral.num_experts = 8;
    mixtral.experts_per_token = 2;
    mixtral.rope_theta = 1e6;  // MixtralConfig's, unlike the others' 10000
    mixtral.norm_eps = 1e-5;
    f.push_back({"mixtral", mixtral});
    return f;
  }();
  return kFamilies;
}

std::string supported_types() {
  std::string out;
  for (const ConfigFamily& f : families()) out += (out.empty() ? "" : ", ") + std::string(f.type);
  return out;
}

// Fields that Hugging Face writes into every language model's config.json
// and that no pase-graph/1 document has: an object with one of them (and no
// "layers" or "format") is a config, even without its model_type.
constexpr std::string_view kConfigFields[] = {"hidden_size",
                                              "num_attention_heads",
                                              "num_hidden_layers",
                                              "vocab_size",
                                              "intermediate_size",
                                              "n_embd",
                                              "n_head",
                                              "n_layer",
                                              "architectures",
                                              "transformers_version"};

// The config fields of `object`, in kConfigFields' order, as "a, b, c".
std::string config_fields_of(const Json& object) {
  std::string out;
  for (std::string_view field : kConfigFields) {
    if (object.contains(std::string(field))) out += (out.empty() ? "" : ", ") + std::string(field);
  }
  return out;
}

// The first name of the config's "architectures" ("LlamaForCausalLM"), or
// empty.
std::string architecture_of(const Json& object) {
  auto it = object.find("architectures");
  if (it == object.end() || !it->is_array() || it->empty() || !(*it)[0].is_string()) return "";
  return (*it)[0].get<std::string>();
}

// The model_type that an architecture names: the family whose type starts
// it, ignoring case, before a capital ("LlamaForCausalLM" is llama,
// "GPT2LMHeadModel" gpt2); empty when none does.
std::string type_of_architecture(const std::string& architecture) {
  for (const ConfigFamily& f : families()) {
    const size_t n = f.type.size();
    if (architecture.size() <= n || !std::isupper(static_cast<unsigned char>(architecture[n]))) {
      continue;
    }
    bool same = true;
    for (size_t i = 0; i < n; ++i) {
      same = same && std::tolower(static_cast<unsigned char>(architecture[i])) == f.type[i];
    }
    if (same) return std::string(f.type);
  }
  return "";
}

// The error for a config without a model_type: what makes it look like a
// config, and what to add.
Error missing_model_type(const Json& object) {
  const std::string fields = config_fields_of(object);
  const std::string architecture = architecture_of(object);
  const std::string guess = type_of_architecture(architecture);
  std::string message = fields.empty() ? std::string("missing required field 'model_type'")
                                       : "this looks like a Hugging Face config.json (it has " +
                                             fields + ") but has no \"model_type\"";
  message += guess.empty() ? "; add \"model_type\": one of " + supported_types()
                           : "; add \"model_type\": \"" + guess + "\" (for " + architecture +
                                 "; supported: " + supported_types() + ")";
  return Error{std::move(message), "model_type"};
}

// Reads the fields of one config object. Hugging Face writes `null` for an
// optional field it leaves at its default (head_dim, n_inner), so null is
// the same as absent. The first error is kept.
class ConfigReader {
 public:
  explicit ConfigReader(const Json& object) : object_(object) {}

  const Json* find(std::string_view key) const {
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  // The first of `keys` present (a field and its alias, e.g. n_embd and
  // hidden_size in a gpt2 config) read with `convert` (a json_detail reader)
  // into `out`.
  template <class T, class Convert>
  void read(std::initializer_list<std::string_view> keys, T& out, Convert convert) {
    if (error_) return;
    for (std::string_view key : keys) {
      const Json* value = find(key);
      if (value == nullptr) continue;
      auto converted = convert(*value, std::string(key));
      if (!converted) {
        error_ = converted.error();
      } else {
        out = *converted;
      }
      return;
    }
  }
  void positive(std::initializer_list<std::string_view> keys, int64_t& out) {
    read(keys, out, json_detail::to_positive_int);
  }
  void boolean(std::string_view key, bool& out) { read({key}, out, json_detail::to_bool); }
  void positive_number(std::string_view key, double& out) {
    read({key}, out, json_detail::to_positive_number);
  }

  const std::optional<Error>& error() const { return error_; }

 private:
  const Json& object_;
  std::optional<Error> error_;
};

// check_llm_config() names Hugging Face's common fields; an error is moved
// to the field the config has: GPT-2's own names (n_embd for hidden_size)
// when it has those, and n_embd for an intermediate_size that a gpt2 config
// without n_inner takes from it.
Error written_field(const Json& document, Error e) {
  constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"hidden_size", "n_embd"},
      {"num_hidden_layers", "n_layer"},
      {"num_attention_heads", "n_head"},
      {"max_position_embeddings", "n_positions"},
      {"intermediate_size", "n_inner"}};
  if (document.value("model_type", "") != "gpt2") return e;
  for (const auto& [common, own] : kAliases) {
    if (e.where != common) continue;
    const bool has_own = document.contains(own) && !document[std::string(own)].is_null();
    const bool has_common = document.contains(common) && !document[std::string(common)].is_null();
    if (has_own || !has_common) e.where = own;
    if (common == "intermediate_size" && !has_own) {
      e.where = document.contains("n_embd") ? "n_embd" : "hidden_size";
      e.message = "is too large: n_inner's default, 4 x n_embd, exceeds 2^63 - 1";
    }
    break;
  }
  return e;
}

bool add_overflows(int64_t& sum, int64_t term) { return __builtin_add_overflow(sum, term, &sum); }

// a * b, or -1 when it overflows.
int64_t product(int64_t a, int64_t b) {
  int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? -1 : out;
}

}  // namespace

int64_t llm_default_seq(const LlmConfig& config) {
  return config.max_positions < kLlmMaxDefaultSeq ? config.max_positions : kLlmMaxDefaultSeq;
}

std::optional<Error> check_llm_config(const LlmConfig& c) {
  const std::pair<const char*, int64_t> sizes[] = {
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden_size},
      {"num_hidden_layers", c.num_layers},
      {"num_attention_heads", c.num_heads},
      {"num_key_value_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"intermediate_size", c.intermediate_size},
      {"max_position_embeddings", c.max_positions},
  };
  for (const auto& [field, size] : sizes) {
    if (size <= 0) return Error{"must be a positive integer", field};
  }
  // What plans in minutes (kLlmMaxDecoderLayers, pase/llm.hpp).
  if (c.num_layers > kLlmMaxDecoderLayers) {
    return Error{"at most " + std::to_string(kLlmMaxDecoderLayers) +
                     " decoder layers (twice the deepest published model; deeper ones take "
                     "hours to plan), not " +
                     std::to_string(c.num_layers),
                 "num_hidden_layers"};
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return Error{"num_attention_heads " + std::to_string(c.num_heads) +
                     " is not a multiple of num_key_value_heads " + std::to_string(c.num_kv_heads),
                 "num_key_value_heads"};
  }
  if (c.num_experts < 0 || c.experts_per_token < 0) {
    return Error{"must be a non-negative integer", "num_local_experts"};
  }
  if (c.num_experts > 0 && (c.experts_per_token < 1 || c.experts_per_token > c.num_experts)) {
    return Error{"must be from 1 to num_local_experts (" + std::to_string(c.num_experts) + ")",
                 "num_experts_per_tok"};
  }
  // Finite, and positive where they apply: a rotary base for rotary
  // positions only, an epsilon always.
  if (!std::isfinite(c.rope_theta) || c.rope_theta < 0 ||
      (c.rope_theta > 0) == c.learned_positions) {
    return Error{c.learned_positions ? "must be absent: the model has learned positions"
                                     : "must be a positive number",
                 "rope_theta"};
  }
  if (!std::isfinite(c.norm_eps) || c.norm_eps <= 0) {
    return Error{"must be a positive number", c.rms_norm ? "rms_norm_eps" : "layer_norm_epsilon"};
  }
  if (llm_parameters(c) == std::numeric_limits<int64_t>::max()) {
    return Error{"the model's parameter count exceeds 2^63 - 1", "hidden_size"};
  }
  return std::nullopt;
}

Result<LlmConfig> parse_llm_config(std::string_view json_text) {
  Result<Json> document = json_detail::parse_document(json_text);
  if (!document) return document.error();
  return llm_config_from_json(*document);
}

Result<LlmConfig> llm_config_from_json(const Json& document) {
  if (!document.is_object()) {
    return json_detail::type_error("a JSON object (a Hugging Face config.json)", document, "");
  }
  ConfigReader reader(document);
  const Json* type = reader.find("model_type");
  if (type == nullptr) {
    return missing_model_type(document);
  }
  if (!type->is_string()) return json_detail::type_error("a string", *type, "model_type");
  const std::string name = type->get<std::string>();
  const ConfigFamily* family = nullptr;
  for (const ConfigFamily& f : families()) {
    if (f.type == name) family = &f;
  }
  if (family == nullptr) {
    return Error{
        "unsupported model_type " + quoted_text(name) + "; supported: " + supported_types(),
        "model_type"};
  }

  LlmConfig c = family->defaults;
  // gpt2 configs use GPT-2's own names; Hugging Face maps the common names to
  // them, so either is read.
  reader.positive({"vocab_size"}, c.vocab_size);
  reader.positive({"n_embd", "hidden_size"}, c.hidden_size);
  reader.positive({"n_layer", "num_hidden_layers"}, c.num_layers);
  reader.positive({"n_head", "num_attention_heads"}, c.num_heads);
  reader.positive({"n_positions", "max_position_embeddings"}, c.max_positions);
  if (name == "gpt2") {
    // n_inner's default, 4 x n_embd; an n_embd too large for it is an error
    // when the config has no n_inner.
    if (__builtin_mul_overflow(c.hidden_size, 4, &c.intermediate_size)) c.intermediate_size = 0;
    reader.positive({"n_inner"}, c.intermediate_size);
  } else {
    reader.positive({"intermediate_size"}, c.intermediate_size);
    reader.positive({"num_key_value_heads"}, c.num_kv_heads);
  }
  reader.positive({"head_dim"}, c.head_dim);
  reader.boolean("tie_word_embeddings", c.tied_embeddings);
  if (name == "gpt2") {
    reader.positive_number("layer_norm_epsilon", c.norm_eps);
  } else {
    reader.positive_number("rope_theta", c.rope_theta);
    reader.positive_number("rms_norm_eps", c.norm_eps);
  }
  // The activation's name, kept as the config writes it (a string; the JAX
  // export maps the ones it knows and says so of any other).
  if (const Json* act = reader.find(name == "gpt2" ? "activation_function" : "hidden_act");
      act != nullptr && act->is_string())
    c.hidden_act = act->get<std::string>();
  if (name == "llama") {
    reader.boolean("attention_bias", c.qkv_bias);
    c.out_bias = c.qkv_bias;
    reader.boolean("mlp_bias", c.mlp_bias);
  }
  if (name == "mixtral") {
    reader.positive({"num_local_experts"}, c.num_experts);
    reader.positive({"num_experts_per_tok"}, c.experts_per_token);
  }
  if (reader.error()) return *reader.error();

  if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
  if (c.head_dim == 0) {
    if (c.hidden_size % c.num_heads != 0) {
      const bool gpt2 = name == "gpt2";
      return Error{std::string(gpt2 ? "n_embd " : "hidden_size ") + std::to_string(c.hidden_size) +
                       " is not a multiple of " + (gpt2 ? "n_head " : "num_attention_heads ") +
                       std::to_string(c.num_heads) + " (and the config has no head_dim)",
                   gpt2 ? "n_head" : "num_attention_heads"};
    }
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (auto e = check_llm_config(c)) return written_field(document, *e);
  return c;
}

std::string llm_activation(const LlmConfig& config) {
  if (!config.hidden_act.empty()) return config.hidden_act;
  return config.gated_mlp ? "silu" : "gelu_new";
}

bool starts_like_json_object(std::string_view prefix) {
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (prefix.substr(0, kByteOrderMark.size()) == kByteOrderMark) {
    prefix.remove_prefix(kByteOrderMark.size());
  }
  const size_t start = prefix.find_first_not_of(" \t\r\n");
  return start != std::string_view::npos && prefix[start] == '{';
}

bool looks_like_llm_config(std::string_view text) {
  if (!starts_like_json_object(text)) return false;
  Result<Json> document = json_detail::parse_document(text);
  if (!document || !document->is_object()) return false;
  if (document->contains("layers")) return false;
  auto type = document->find("model_type");
  if (type != document->end() && type->is_string()) return true;
  // A config without its model_type (or with one that is not a string),
  // which llm_config_from_json() then refuses saying what to add.
  return !document->contains("format") && !config_fields_of(*document).empty();
}

int64_t llm_parameters(const LlmConfig& c) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t d = c.hidden_size, hd = c.head_dim, inter = c.intermediate_size;
  const int64_t q_width = product(c.num_heads, hd), kv_width = product(c.num_kv_heads, hd);
  const int64_t norm = c.rms_norm ? d : product(2, d);  // scale, and shift for LayerNorm

  int64_t layer = 0;
  bool overflow = false;
  auto add = [&](int64_t& sum, int64_t term) {
    if (term < 0 || add_overflows(sum, term)) overflow = true;
  };
  // Attention: query, key, value and output projections and their biases.
  add(layer, product(d, q_width));
  add(layer, product(2, product(d, kv_width)));
  add(layer, product(q_width, d));
  if (c.qkv_bias) {
    add(layer, q_width);
    add(layer, product(2, kv_width));
  }
  if (c.out_bias) add(layer, d);
  // MLP: dense (gate, up, down or up, down), or num_experts of them behind a
  // router (a bias-free Linear(d, experts)).
  const int64_t matrices = c.gated_mlp ? 3 : 2;
  int64_t mlp = product(matrices, product(d, inter));
  if (c.mlp_bias) {
    add(mlp, product(matrices - 1, inter));
    add(mlp, d);
  }
  if (c.num_experts > 0) {
    mlp = product(c.num_experts, mlp);
    add(mlp, product(d, c.num_experts));
  }
  add(layer, mlp);
  add(layer, product(2, norm));  // before attention and before the MLP

  int64_t total = product(c.num_layers, layer);
  if (total < 0) overflow = true;
  const int64_t table = product(c.vocab_size, d);
  add(total, table);
  if (!c.tied_embeddings) add(total, table);
  if (c.learned_positions) add(total, product(c.max_positions, d));
  add(total, norm);  // the final norm
  return overflow ? kMax : total;
}

Result<GraphSpec> import_llm_config(std::string_view json_text, const ImportOptions& options) {
  Result<LlmConfig> config = parse_llm_config(json_text);
  if (!config) return config.error();
  return import_llm_config(*config, options);
}

Result<GraphSpec> import_llm_config(const LlmConfig& config, const ImportOptions& options) {
  if (!options.dims.empty()) {
    return Error{"a Hugging Face config has no named dimensions; give batch and seq",
                 "dims." + options.dims.front().first};
  }
  return llm_spec(config, options.name.empty() ? config.model_type : options.name, options.batch,
                  options.seq,
                  options.vocab_multiple == 0 ? kLlmVocabMultiple : options.vocab_multiple);
}

}  // namespace pase
