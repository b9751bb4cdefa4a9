// The ONNX fixtures of tests/data/onnx/ (made from torchvision and
// torch.nn by tests/onnx/make_fixtures.py; expected counts in its
// manifest.json): each imports with the parameter count PyTorch gives (less
// what the exporter folds away), builds, plans at 8 devices, and the
// optimum costs at most what data parallelism does.
#include <doctest/doctest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "pase/compare.hpp"
#include "pase/import.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using pase::testing::why;

namespace {

// The committed fixtures (weights as graph inputs), or those of
// PASE_ONNX_FIXTURES: the same models with their weights, made in CI by
// `make_fixtures.py --with-weights DIR` (.ci/onnx).
const std::string kDir = [] {
  const char* dir = std::getenv("PASE_ONNX_FIXTURES");
  return dir && *dir ? std::string(dir) + "/" : std::string(PASE_TEST_DATA_DIR) + "/onnx/";
}();

nlohmann::json manifest() {
  return nlohmann::json::parse(pase::testing::read_text(kDir + "manifest.json"));
}

// Imports fixture `f` with every dynamic dimension set to 4 and, for the
// convolutional networks (exported at batch 1), a batch of 8. ViT and the
// transformer stack keep the batch they were exported with: their reshapes
// have it written in.
Result<GraphSpec> import_fixture(const nlohmann::json& f) {
  FileSource file;
  if (auto e = file.open(kDir + f["file"].get<std::string>())) return *e;
  ImportOptions options;
  Result<std::vector<DynamicDim>> dims = onnx_dynamic_dims(file);
  if (!dims) return dims.error();
  for (const DynamicDim& d : *dims) options.dims.emplace_back(d.name, 4);
  const std::string name = f["name"];
  if (name == "resnet50" || name == "inception_v3" || name == "mobilenet_v2" ||
      name == "densenet121")
    options.batch = 8;
  return import_onnx(file, options);
}

}  // namespace

TEST_CASE("onnx fixtures: the parameter count is PyTorch's less the folded BatchNorm channels") {
  nlohmann::json m = manifest();
  REQUIRE(m["fixtures"].size() >= 7);
  for (const auto& f : m["fixtures"]) {
    CAPTURE(f["name"].get<std::string>());
    Result<GraphSpec> spec = import_fixture(f);
    REQUIRE_MESSAGE(spec.ok(), why(spec));
    CHECK(spec->parameters == f["expected_parameters"].get<int64_t>());
    CHECK(spec->parameters ==
          f["torch_parameters"].get<int64_t>() - f["folded_bn_channels"].get<int64_t>());
  }
}

TEST_CASE("onnx fixtures: every model plans at 8 devices, at most data parallelism's cost") {
  Cluster cluster;
  cluster.devices = 8;
  const nlohmann::json m = manifest();  // alive for the loop
  for (const auto& f : m["fixtures"]) {
    CAPTURE(f["name"].get<std::string>());
    Result<GraphSpec> spec = import_fixture(f);
    REQUIRE_MESSAGE(spec.ok(), why(spec));
    Result<Graph> g = build_graph(*spec);
    REQUIRE_MESSAGE(g.ok(), why(g));
    CHECK(g->parameters == spec->parameters);
    Result<Plan> best = plan(*g, cluster);
    REQUIRE_MESSAGE(best.ok(), why(best));
    Result<StrategyReport> dp = data_parallel(*g, cluster);
    REQUIRE_MESSAGE(dp.ok(), why(dp));
    CHECK(best->cost > 0);
    CHECK(best->cost <= dp->plan.cost * (1 + 1e-12));
  }
}

TEST_CASE("onnx fixtures: ResNet-50 has the layers torchvision defines") {
  nlohmann::json m = manifest();
  auto it = std::find_if(m["fixtures"].begin(), m["fixtures"].end(),
                         [](const auto& f) { return f["name"] == "resnet50"; });
  REQUIRE(it != m["fixtures"].end());
  Result<GraphSpec> spec = import_fixture(*it);
  REQUIRE_MESSAGE(spec.ok(), why(spec));
  std::map<std::string, int> ops;
  for (const LayerSpec& l : spec->layers) ++ops[l.op];
  // 53 convolutions (BatchNorm folded in, ReLU fused), 16 residual adds, the
  // stem's max pool, the global average pool, the flatten and the classifier.
  CHECK(ops["Conv"] == 53);
  CHECK(ops["Elementwise"] == 16);
  CHECK(ops["Pool"] == 2);
  CHECK(ops["Reshape"] == 1);
  CHECK(ops["FC"] == 1);
  CHECK(spec->layers.size() == 73);
  CHECK(spec->inputs[0].second == Shape{8, 3, 224, 224});
  const LayerSpec& fc = spec->layers.back();
  CHECK(fc.units == 1000);
}
