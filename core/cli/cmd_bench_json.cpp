// `pase bench --json`: the JSON reader on documents of growing size, a
// config.json and a strategy with 10^4, 10^5 and 10^6 extra keys, each read
// (parsed and its fields looked up) as `pase plan` reads it. Linear reading
// keeps the time per MB flat (core/docs/performance.md, "Reading JSON").
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "pase/json_api.hpp"
#include "pase/llm.hpp"
#include "pase/result.hpp"
#include "report.hpp"
#include "util/text.hpp"

namespace pase_cli {

namespace {

struct JsonCase {
  const char* document;
  int64_t keys = 0;
  size_t bytes = 0;
  double time_s = 0;  // the best of three reads
};

}  // namespace

int run_bench_json(bool json) {
  // tiny-llama's config (examples/hf) and a strategy of two vertices; the
  // extra keys go after their own.
  const std::string config =
      R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,)"
      R"( "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,)"
      R"( "num_hidden_layers": 2, "max_position_embeddings": 256, "vocab_size": 256,)"
      R"( "rms_norm_eps": 1e-05, "tie_word_embeddings": false)";
  const std::string strategy = R"({"vertices": [{"config": [2, 1]}, {"config": [1, 4]}])";
  std::vector<JsonCase> cases;
  for (const char* document : {"config", "strategy"}) {
    const bool is_config = std::string_view(document) == "config";
    for (int64_t keys : {10000, 100000, 1000000}) {
      std::string text = is_config ? config : strategy;
      for (int64_t i = 0; i < keys; ++i) {
        text += ", \"extra_field_";
        text += std::to_string(i);
        text += "\": ";
        text += std::to_string(i);
      }
      text += '}';
      JsonCase c{document, keys, text.size(), 0};
      for (int rep = 0; rep < 3; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        std::optional<pase::Error> error;
        if (is_config) {
          if (auto read = pase::parse_llm_config(text); !read) error = read.error();
        } else if (auto read = pase::parse_any_strategy(text); !read) {
          error = read.error();
        }
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (error) return input_error(*error);
        if (rep == 0 || s < c.time_s) c.time_s = s;
      }
      cases.push_back(c);
    }
  }
  const auto per_mb = [](const JsonCase& c) {
    return c.time_s / (static_cast<double>(c.bytes) / (1 << 20));
  };
  if (json) {
    nlohmann::ordered_json doc;
    doc["json_cases"] = nlohmann::ordered_json::array();
    for (const JsonCase& c : cases) {
      doc["json_cases"].push_back({{"document", c.document},
                                   {"keys", c.keys},
                                   {"bytes", c.bytes},
                                   {"time_s", c.time_s},
                                   {"s_per_mib", per_mb(c)},
                                   {"ns_per_key", c.time_s * 1e9 / static_cast<double>(c.keys)}});
    }
    return write_stdout(doc.dump(2) + "\n") ? kExitOk : kExitError;
  }
  std::printf("%-9s %10s %10s %10s %10s %8s\n", "document", "keys", "size", "time", "per MiB",
              "ns/key");
  for (const JsonCase& c : cases) {
    std::printf("%-9s %10s %10s %10s %10s %8.0f\n", c.document,
                grouped(static_cast<uint64_t>(c.keys)).c_str(),
                pase::bytes_text(static_cast<double>(c.bytes)).c_str(),
                seconds_text(c.time_s).c_str(), seconds_text(per_mb(c)).c_str(),
                c.time_s * 1e9 / static_cast<double>(c.keys));
  }
  // Linear: the time per MiB of the largest document over the smallest's, 1
  // up to the caches; a reader quadratic in the keys gives 100.
  for (size_t i = 0; i + 2 < cases.size(); i += 3) {
    std::printf("%s: time per MiB at 1,000,000 keys is %.2fx that at 10,000\n", cases[i].document,
                per_mb(cases[i + 2]) / per_mb(cases[i]));
  }
  return kExitOk;
}

}  // namespace pase_cli
