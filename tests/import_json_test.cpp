// import_model_json() (json_api.hpp): the options document, the import result
// over the committed ONNX fixtures (tests/data/onnx/, read into a
// MemorySource), and the error documents: bad options, bad files, a source
// that fails, and the dynamic dimensions left without a value.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "pase/graph.hpp"
#include "pase/import.hpp"
#include "pase/json_api.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;
using nlohmann::json;

namespace {

// The fixture's bytes; they must outlive the MemorySource over them.
std::string fixture(const std::string& name) { return read_text(kOnnxDir + name); }

json import_bytes(const std::string& bytes, const std::string& options = "") {
  MemorySource source(bytes);
  return json::parse(import_model_json(source, options));
}

// The error object of `doc`; fails the test when `doc` is not an error.
json error_of(const json& doc) {
  REQUIRE_MESSAGE(doc.contains("error"), doc.dump().substr(0, 300));
  const json& error = doc["error"];
  CHECK(error["message"].is_string());
  CHECK_FALSE(error["message"].get<std::string>().empty());
  CHECK(error["where"].is_string());
  return error;
}

std::string where_of(const json& doc) { return error_of(doc)["where"].get<std::string>(); }

// The fixtures of tests/data/onnx/manifest.json (tests/onnx/README.md).
json fixtures() { return json::parse(fixture("manifest.json"))["fixtures"]; }

json manifest_entry(const std::string& file) {
  for (const json& model : fixtures()) {
    if (model["file"] == file) return model;
  }
  FAIL("tests/data/onnx/manifest.json has no entry for " << file);
  return {};
}

// The first fixture with dynamic dimensions, and their names in the order
// of the file.
struct DynamicFixture {
  std::string file;
  std::vector<std::string> dims;
};

DynamicFixture dynamic_fixture() {
  for (const json& model : fixtures()) {
    if (model.contains("dynamic_dims") && !model["dynamic_dims"].empty()) {
      return {model["file"].get<std::string>(),
              model["dynamic_dims"].get<std::vector<std::string>>()};
    }
  }
  FAIL("tests/data/onnx/manifest.json lists no model with a dynamic dimension");
  return {};
}

// A source whose reads always fail (an I/O error, a file that shrank).
class FailingSource final : public ByteSource {
 public:
  explicit FailingSource(uint64_t size) : size_(size) {}
  uint64_t size() const override { return size_; }
  bool read(uint64_t, size_t, std::string&) override { return false; }

 private:
  uint64_t size_;
};

// A source whose reads throw (running out of memory, a bug): `raise` throws.
class ThrowingSource final : public ByteSource {
 public:
  explicit ThrowingSource(void (*raise)()) : raise_(raise) {}
  uint64_t size() const override { return 1 << 20; }
  bool read(uint64_t, size_t, std::string&) override {
    raise_();
    return false;
  }

 private:
  void (*raise_)();
};

}  // namespace

// ---- Bad options: reported before the file is read -------------------------------------

TEST_CASE("import json: bad options name the option") {
  const std::string garbage = "not a model";
  CHECK(where_of(import_bytes(garbage, "{")) == "options");
  CHECK(where_of(import_bytes(garbage, "[]")) == "options");
  CHECK(where_of(import_bytes(garbage, "8")) == "options");
  CHECK(where_of(import_bytes(garbage, R"({"dim": {"batch": 8}})")) == "dim");
  CHECK(contains(error_of(import_bytes(garbage, R"({"dim": {}})"))["message"], "unknown field"));
  CHECK(where_of(import_bytes(garbage, R"({"dims": []})")) == "dims");
  CHECK(where_of(import_bytes(garbage, R"({"dims": {"": 8}})")) == "dims");
  CHECK(where_of(import_bytes(garbage, R"({"dims": {"batch": 0}})")) == "dims.batch");
  CHECK(where_of(import_bytes(garbage, R"({"dims": {"batch": -2}})")) == "dims.batch");
  CHECK(where_of(import_bytes(garbage, R"({"dims": {"batch": 2.5}})")) == "dims.batch");
  CHECK(where_of(import_bytes(garbage, R"({"dims": {"batch": "8"}})")) == "dims.batch");
  CHECK(where_of(import_bytes(garbage, R"({"dims": {"a": 1, "b": null}})")) == "dims.b");
  CHECK(where_of(import_bytes(garbage, R"({"batch": 0})")) == "batch");
  CHECK(where_of(import_bytes(garbage, R"({"batch": 1e3})")) == "batch");
  CHECK(where_of(import_bytes(garbage, R"({"name": ""})")) == "name");
  CHECK(where_of(import_bytes(garbage, R"({"name": 7})")) == "name");
  CHECK(where_of(import_bytes(garbage, R"({"batch": 1, "batch": 2})")) == "batch");
}

// ---- Bad files ---------------------------------------------------------------------------

TEST_CASE("import json: a file that is not ONNX is an error, never a crash") {
  for (const std::string& bytes :
       {std::string(), std::string("garbage bytes, not a model"), std::string(4096, '\xff'),
        std::string("{\"format\": \"pase-graph/1\"}"), std::string(1, '\0')}) {
    CAPTURE(bytes.size());
    const json doc = import_bytes(bytes);
    error_of(doc);
    CHECK_FALSE(doc.contains("missing_dims"));
  }
}

TEST_CASE("import json: a truncated file is an error") {
  const std::string bytes = fixture("resnet50.onnx");
  for (size_t keep :
       {size_t{1}, size_t{16}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    CAPTURE(keep);
    error_of(import_bytes(bytes.substr(0, keep)));
  }
}

TEST_CASE("import json: a source that cannot be read, runs out of memory or throws") {
  FailingSource failing(1 << 20);
  error_of(json::parse(import_model_json(failing, "")));
  ThrowingSource out_of_memory([] { throw std::bad_alloc(); });
  json error = error_of(json::parse(import_model_json(out_of_memory, "{}")));
  CHECK(contains(error["message"].get<std::string>(), "out of memory"));
  CHECK(error["where"] == "");
  // Whatever else escapes is the guard's: an error document, not an exception.
  ThrowingSource throwing([] { throw std::runtime_error("a bug"); });
  error = error_of(json::parse(import_model_json(throwing, "{}")));
  CHECK(contains(error["message"].get<std::string>(), "internal error"));
}

// ---- Imports -----------------------------------------------------------------------------

TEST_CASE("import json: resnet50 imports to a graph that plans") {
  const std::string bytes = fixture("resnet50.onnx");
  const json doc = import_bytes(bytes);
  REQUIRE_MESSAGE(!doc.contains("error"), doc.dump());
  CHECK(doc["graph"]["format"] == "pase-graph/1");
  CHECK(doc["layers"] == doc["graph"]["layers"].size());
  CHECK(doc["parameters"] == manifest_entry("resnet50.onnx")["expected_parameters"]);
  CHECK(doc["graph"]["parameters"] == doc["parameters"]);
  CHECK(doc["dynamic_dims"] == json::array());
  // One list of output shapes per layer; the last layer's first output is
  // the logits' shape or a loss, never empty.
  REQUIRE(doc["layer_outputs"].size() == doc["layers"].get<size_t>());
  for (const json& outputs : doc["layer_outputs"]) CHECK_FALSE(outputs.empty());

  // The graph is a pase-graph/1 document that loads and plans as it is.
  Result<Graph> graph = load_graph(doc["graph"].dump());
  REQUIRE_MESSAGE(graph.ok(), why(graph));
  const json planned =
      json::parse(plan_json(json{{"graph", doc["graph"]}, {"cluster", {{"devices", 4}}}}.dump()));
  REQUIRE_MESSAGE(!planned.contains("error"), planned.dump());
  CHECK(planned["cost"].get<double>() > 0);
}

TEST_CASE("import json: every fixture of the manifest imports with its parameter count") {
  for (const json& model : fixtures()) {
    const std::string file = model["file"].get<std::string>();
    CAPTURE(file);
    json dims = json::object();
    if (model.contains("dynamic_dims")) {
      for (const json& dim : model["dynamic_dims"]) dims[dim.get<std::string>()] = 2;
    }
    const std::string bytes = fixture(file);
    const json doc = import_bytes(bytes, json{{"dims", dims}}.dump());
    REQUIRE_MESSAGE(!doc.contains("error"), doc.dump());
    CHECK(doc["parameters"] == model["expected_parameters"]);
    CHECK(doc["dynamic_dims"].size() == dims.size());
    CHECK(doc["layer_outputs"].size() == doc["layers"].get<size_t>());
    CHECK(load_graph(doc["graph"].dump()).ok());
  }
}

TEST_CASE("import json: options name the graph, no options is the same as {}") {
  const std::string bytes = fixture("mobilenet_v2.onnx");
  const json plain = import_bytes(bytes, "");
  REQUIRE_MESSAGE(!plain.contains("error"), plain.dump());
  CHECK(import_bytes(bytes, " {} ") == plain);
  const json named = import_bytes(bytes, R"({"name": "my-model"})");
  CHECK(named["graph"]["name"] == "my-model");
  CHECK(named["parameters"] == plain["parameters"]);
}

// ---- Dynamic dimensions ------------------------------------------------------------------

TEST_CASE("import json: a missing dynamic dimension lists every one left open") {
  const DynamicFixture dynamic = dynamic_fixture();
  const std::string bytes = fixture(dynamic.file);
  const json doc = import_bytes(bytes);
  CHECK(where_of(doc) == "dims." + dynamic.dims[0]);
  CHECK(contains(error_of(doc)["message"].get<std::string>(), dynamic.dims[0]));
  REQUIRE(doc.contains("missing_dims"));
  REQUIRE(doc["missing_dims"].size() == dynamic.dims.size());
  for (size_t i = 0; i < dynamic.dims.size(); ++i) {
    const json& missing = doc["missing_dims"][i];
    CHECK(missing.size() == 2);
    CHECK(missing["name"] == dynamic.dims[i]);
    CHECK(missing["input"] == "input");  // the data input of every fixture
  }
  // Through the file on disk as well as from memory.
  FileSource file;
  REQUIRE_FALSE(file.open(kOnnxDir + dynamic.file).has_value());
  CHECK(json::parse(import_model_json(file, "")) == doc);

  // A dimension the options give is not listed again.
  if (dynamic.dims.size() > 1) {
    const json partly = import_bytes(bytes, json{{"dims", {{dynamic.dims[0], 3}}}}.dump());
    REQUIRE(partly.contains("missing_dims"));
    CHECK(partly["missing_dims"].size() == dynamic.dims.size() - 1);
    for (const json& dim : partly["missing_dims"]) CHECK(dim["name"] != dynamic.dims[0]);
  }
}

TEST_CASE("import json: dynamic dimensions take their values from dims, or from batch") {
  const DynamicFixture dynamic = dynamic_fixture();
  const std::string bytes = fixture(dynamic.file);
  json dims = json::object();
  for (const std::string& name : dynamic.dims) dims[name] = 3;
  dims[dynamic.dims[0]] = 5;
  const json doc = import_bytes(bytes, json{{"dims", dims}}.dump());
  REQUIRE_MESSAGE(!doc.contains("error"), doc.dump());
  REQUIRE(doc["dynamic_dims"].size() == dynamic.dims.size());
  CHECK(doc["dynamic_dims"][0] ==
        json{{"name", dynamic.dims[0]}, {"input", "input"}, {"value", 5}});
  // The value reached the graph: the input that has the dimension has a 5.
  const json shape = doc["graph"]["inputs"]["input"];
  REQUIRE(shape.is_array());
  CHECK(std::find(shape.begin(), shape.end(), json(5)) != shape.end());
  const json planned =
      json::parse(plan_json(json{{"graph", doc["graph"]}, {"cluster", {{"devices", 2}}}}.dump()));
  CHECK_MESSAGE(!planned.contains("error"), planned.dump());

  // A fixture whose one dynamic dimension is its batch: the leading
  // dimension of its first input, which "batch" sets; it then reports that.
  if (dynamic.dims == std::vector<std::string>{"batch"}) {
    const json batched = import_bytes(bytes, R"({"batch": 6})");
    REQUIRE_MESSAGE(!batched.contains("error"), batched.dump());
    CHECK(batched["dynamic_dims"][0]["value"] == 6);
    CHECK(batched["graph"]["inputs"]["input"][0] == 6);
  }
}

TEST_CASE("import json: a name in dims that the model does not have is an error") {
  const json none = import_bytes(fixture("resnet50.onnx"), R"({"dims": {"no_such_dim": 4}})");
  CHECK(where_of(none) == "dims.no_such_dim");
  CHECK(contains(error_of(none)["message"].get<std::string>(), "it has none"));
  CHECK_FALSE(none.contains("missing_dims"));

  const DynamicFixture dynamic = dynamic_fixture();
  json dims = json::object();
  for (const std::string& name : dynamic.dims) dims[name] = 2;
  dims["batchsize"] = 2;
  const json typo = import_bytes(fixture(dynamic.file), json{{"dims", dims}}.dump());
  CHECK(where_of(typo) == "dims.batchsize");
  CHECK(contains(error_of(typo)["message"].get<std::string>(), "it has: " + dynamic.dims[0]));
  CHECK_FALSE(typo.contains("missing_dims"));
}
