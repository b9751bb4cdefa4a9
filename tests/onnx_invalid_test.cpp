// The invalid ONNX models of tests/invalid/models/ (see its cases.json): each
// is refused by import_onnx() with the expected `where` and message.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "pase/import.hpp"
#include "test_util.hpp"

using namespace pase;
using pase::testing::contains;

TEST_CASE("invalid ONNX models: each is refused with its error") {
  const std::string dir = std::string(PASE_INVALID_DIR) + "/models/";
  nlohmann::json manifest = nlohmann::json::parse(pase::testing::read_text(dir + "cases.json"));
  REQUIRE(manifest["cases"].size() >= 10);
  for (const auto& c : manifest["cases"]) {
    const std::string name = c["name"];
    CAPTURE(name);
    FileSource file;
    REQUIRE_FALSE(file.open(dir + c["file"].get<std::string>()).has_value());
    Result<GraphSpec> spec = import_onnx(file, {});
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.error().where == c["where"].get<std::string>());
    CHECK_MESSAGE(contains(spec.error().message, c["message"].get<std::string>()),
                  spec.error().message);
  }
}

TEST_CASE("invalid ONNX models: every prefix of a valid model is refused or imported, no crash") {
  const std::string bytes =
      pase::testing::read_text(std::string(PASE_INVALID_DIR) + "/models/dilated_conv.onnx");
  for (size_t n = 0; n < bytes.size(); ++n) {
    MemorySource source(std::string_view(bytes).substr(0, n));
    Result<GraphSpec> spec = import_onnx(source, {});
    CHECK_FALSE(spec.ok());
  }
}
