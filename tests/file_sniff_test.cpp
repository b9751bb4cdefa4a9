// Content detection (import.hpp: sniff_file(), not_a_model_error()) and the
// error for a Hugging Face config without its model_type (llm.hpp): what a
// file that is no model looks like, said the same by the importer and the
// JSON entry point that the module and the page call.
#include <doctest/doctest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "pase/import.hpp"
#include "pase/json_api.hpp"
#include "pase/llm.hpp"
#include "test_util.hpp"

using namespace pase;
using pase::testing::contains;
using pase::testing::kOnnxDir;

namespace {

const std::string kModels = std::string(PASE_INVALID_DIR) + "/models/";

std::string bytes(const char* data, size_t n) { return std::string(data, n); }

// import_model_json()'s error document for `text`, as the module gets it.
nlohmann::json import_error(const std::string& text) {
  MemorySource source(text);
  nlohmann::json doc = nlohmann::json::parse(import_model_json(source, "{}"));
  REQUIRE(doc.contains("error"));
  return doc["error"];
}

}  // namespace

TEST_CASE("content detection: each kind from its first bytes") {
  CHECK(sniff_file("") == FileContent::kEmpty);
  CHECK(sniff_file(pase::testing::read_text(kModels + "png_image.onnx")) == FileContent::kPng);
  CHECK(sniff_file(pase::testing::read_text(kModels + "torch_checkpoint.onnx")) ==
        FileContent::kTorchZip);
  CHECK(sniff_file(pase::testing::read_text(kModels + "torch_legacy.onnx")) ==
        FileContent::kPickle);
  CHECK(sniff_file(pase::testing::read_text(kModels + "weights_safetensors.onnx")) ==
        FileContent::kSafetensors);
  CHECK(sniff_file(pase::testing::read_text(kModels + "zip_archive.onnx")) == FileContent::kZip);
  CHECK(sniff_file(pase::testing::read_text(kModels + "not_onnx.onnx")) == FileContent::kText);
  CHECK(sniff_file(pase::testing::read_text(kModels + "dilated_conv.onnx")) == FileContent::kOnnx);
  CHECK(sniff_file(pase::testing::read_text(kOnnxDir + "tiny_cnn.onnx")) == FileContent::kOnnx);
  // An older torch.save names the archive's folder after the file.
  std::string zip = bytes("PK\x03\x04", 4) + std::string(22, '\0') + bytes("\x0d\x00\x00\x00", 4) +
                    "ckpt/data.pkl";
  CHECK(sniff_file(zip) == FileContent::kTorchZip);
  CHECK(sniff_file(bytes("\xFF\xD8\xFF\xE0", 4)) == FileContent::kJpeg);
  CHECK(sniff_file("GIF89a...") == FileContent::kGif);
  CHECK(sniff_file("%PDF-1.7\n") == FileContent::kPdf);
  CHECK(sniff_file(bytes("\x89HDF\r\n\x1a\n", 8)) == FileContent::kHdf5);
  CHECK(sniff_file(bytes("\x1F\x8B\x08\x00", 4)) == FileContent::kGzip);
  // JSON texts of every kind stay JSON (the readers say what is wrong).
  for (const char* json : {"{\"format\": \"pase-graph/1\"}", "\xEF\xBB\xBF {}", "  [1]",
                           "\"pase-graph/1\"", "42", "-1", "null", "true", "  \n"}) {
    CAPTURE(json);
    CHECK(sniff_file(json) == FileContent::kJson);
  }
  CHECK(sniff_file("hello, world\n") == FileContent::kText);
  CHECK(sniff_file(bytes("\x0b\x30\x55\x7a\x00\x01", 6)) == FileContent::kBinary);
}

TEST_CASE("content detection: looks_like_onnx never throws and keeps every prefix of a model") {
  const std::string model = pase::testing::read_text(kOnnxDir + "tiny_cnn.onnx");
  for (size_t n = 1; n <= 64 && n <= model.size(); ++n) {
    CAPTURE(n);
    CHECK(looks_like_onnx(model.substr(0, n)));
  }
  // A varint longer than ten bytes, and a key cut in the first field.
  CHECK_FALSE(looks_like_onnx(std::string(12, '\xff')));
  CHECK_FALSE(looks_like_onnx("\x80"));
  std::mt19937 random(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string prefix(random() % 600, '\0');
    for (char& c : prefix) c = static_cast<char>(random());
    const FileContent content = sniff_file(prefix);  // no exception, no sanitizer report
    if (content != FileContent::kOnnx) {
      const Error e = not_a_model_error(prefix);
      CHECK(e.where.empty());
      CHECK(contains(e.message, "not an ONNX model"));
      CHECK(nlohmann::json(e.message).dump().size() > 2);  // valid UTF-8, or dump() throws
    }
  }
}

TEST_CASE("content detection: not_a_model_error says what the file is and what to give") {
  const std::string reads =
      "; give an ONNX model (export it with torch.onnx.export), a Hugging Face config.json or a "
      "pase-graph/1 document";
  CHECK(not_a_model_error(pase::testing::read_text(kModels + "png_image.onnx")).message ==
        "not an ONNX model: the file is a PNG image" + reads);
  CHECK(not_a_model_error(pase::testing::read_text(kModels + "zip_archive.onnx")).message ==
        "not an ONNX model: the file is a ZIP archive" + reads);
  const std::string weights =
      ", which holds the weights but not the graph; export the model with torch.onnx.export and "
      "give the .onnx file, or give the model's Hugging Face config.json";
  CHECK(not_a_model_error(pase::testing::read_text(kModels + "torch_checkpoint.onnx")).message ==
        "not an ONNX model: the file is a PyTorch checkpoint (torch.save)" + weights);
  CHECK(not_a_model_error(pase::testing::read_text(kModels + "weights_safetensors.onnx")).message ==
        "not an ONNX model: the file is a safetensors file" + weights);
  // Text is quoted up to the end of its first line, at most 40 characters,
  // printable ASCII only.
  CHECK(not_a_model_error("hello, world\nsecond line").message ==
        "not an ONNX model: the file is plain text ('hello, world')" + reads);
  CHECK(contains(not_a_model_error(std::string(100, 's')).message,
                 "plain text ('" + std::string(40, 's') + "...')"));
  CHECK(contains(not_a_model_error("caf\xC3\xA9 au lait").message, "plain text ('caf')"));
  CHECK(not_a_model_error("").message == "not an ONNX model: the file is empty");
}

TEST_CASE("content detection: the importer and import_model_json give the same message") {
  const std::string png = pase::testing::read_text(kModels + "png_image.onnx");
  MemorySource source(png);
  Result<GraphSpec> spec = import_onnx(source, {});
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.error().message == not_a_model_error(png).message);
  nlohmann::json error = import_error(png);
  CHECK(error["message"] == not_a_model_error(png).message);
  CHECK(error["where"] == "");
}

TEST_CASE("llm config: one without model_type says that it looks like a config and what to add") {
  const std::string config = R"({"hidden_size": 4096, "num_attention_heads": 32,
                                 "vocab_size": 32000})";
  CHECK(looks_like_llm_config(config));
  Result<LlmConfig> parsed = parse_llm_config(config);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().where == "model_type");
  CHECK(parsed.error().message ==
        "this looks like a Hugging Face config.json (it has hidden_size, num_attention_heads, "
        "vocab_size) but has no \"model_type\"; add \"model_type\": one of llama, mistral, qwen2, "
        "gpt2, mixtral");
  // The architecture names the type to add.
  Result<LlmConfig> gpt2 =
      parse_llm_config(R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 768})");
  REQUIRE_FALSE(gpt2.ok());
  CHECK(contains(gpt2.error().message, "add \"model_type\": \"gpt2\" (for GPT2LMHeadModel;"));
  // The module's entry point says the same.
  nlohmann::json error = import_error(config);
  CHECK(error["where"] == "model_type");
  CHECK(error["message"] == parsed.error().message);
  // A graph document is not taken for a config: it has layers, or a format.
  CHECK_FALSE(looks_like_llm_config(R"({"hidden_size": 1, "layers": []})"));
  CHECK_FALSE(looks_like_llm_config(R"({"format": "pase-graph/1", "vocab_size": 1})"));
  CHECK_FALSE(looks_like_llm_config(R"({"inputs": {}})"));
}
