// What the export tests share (export_test.cpp, export_mesh_test.cpp): the
// JAX program's embedded plan read back, and checks of its shardings.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "pase/export.hpp"
#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

namespace pase::testing {

using nlohmann::json;

// The PLAN literal of a JAX program, parsed.
inline json export_embedded(const std::string& text) {
  const size_t open = text.find("r\"\"\"");
  REQUIRE(open != std::string::npos);
  const size_t close = text.find("\"\"\")", open + 4);
  REQUIRE(close != std::string::npos);
  const json data = json::parse(text.substr(open + 4, close - open - 4), nullptr, false);
  REQUIRE_FALSE(data.is_discarded());
  return data;
}

inline Exported export_ok(ExportTarget target, const PlanView& view) {
  Result<Exported> e = export_plan(target, view);
  REQUIRE_MESSAGE(e.ok(), testing::why(e));
  return std::move(e).value();
}

// Mesh axis name -> its size.
inline std::map<std::string, int64_t> export_axes(const json& data) {
  std::map<std::string, int64_t> sizes;
  const json& mesh = data["mesh"];
  REQUIRE(mesh["shape"].size() == mesh["axes"].size());
  for (size_t i = 0; i < mesh["axes"].size(); ++i)
    sizes[mesh["axes"][i].get<std::string>()] = mesh["shape"][i].get<int64_t>();
  return sizes;
}

// The product of the sizes of a sharding's axes of one tensor dimension;
// checks that they are mesh axes.
inline int64_t export_product(const std::map<std::string, int64_t>& sizes, const json& axes) {
  int64_t p = 1;
  for (const json& a : axes) {
    const auto found = sizes.find(a.get<std::string>());
    CHECK_MESSAGE(found != sizes.end(), "not a mesh axis: " << a);
    if (found != sizes.end()) p *= found->second;
  }
  return p;
}

// A sharding (per tensor dimension, a list of axes): mesh axes, none used
// twice in the tensor; with `shape`, each dimension divisible by its axes.
inline void export_check_spec(const std::map<std::string, int64_t>& sizes, const json& spec,
                              const json& shape = json()) {
  REQUIRE(spec.is_array());
  if (!shape.is_null()) REQUIRE(spec.size() == shape.size());
  std::set<std::string> seen;
  for (size_t t = 0; t < spec.size(); ++t) {
    for (const json& a : spec[t]) CHECK_MESSAGE(seen.insert(a.get<std::string>()).second, spec);
    const int64_t p = export_product(sizes, spec[t]);
    if (!shape.is_null()) CHECK_MESSAGE(shape[t].get<int64_t>() % p == 0, spec << " " << shape);
  }
}

// Every sharding of a variant is one of the mesh; returns the sum of the
// predicted bytes.
inline double export_check_variant(const std::map<std::string, int64_t>& sizes,
                                   const json& variant) {
  for (const json& x : variant["inputs"]) export_check_spec(sizes, x["spec"], x["shape"]);
  double bytes = 0;
  for (const json& l : variant["layers"]) {
    CAPTURE(l["name"]);
    REQUIRE(l["out_specs"].is_array());
    for (const json& o : l["out_specs"]) export_check_spec(sizes, o);
    for (const json& in : l["in_specs"])
      if (!in.is_null()) export_check_spec(sizes, in);
    for (const json& w : l["weights"]) {
      export_check_spec(sizes, w["spec"], w["shape"]);
      CHECK(w["fan_in"].get<int64_t>() >= 1);
    }
    CHECK(l["operands"].size() == l["in_specs"].size());
    bytes += l["predicted_bytes"].get<double>();
  }
  return bytes;
}

// The layer record named `name`.
inline const json& export_layer(const json& variant, const std::string& name) {
  for (const json& l : variant["layers"])
    if (l["name"] == name) return l;
  FAIL("no layer " << name);
  return variant;
}

inline Graph export_mlp() {
  Result<Graph> g =
      load_graph(testing::read_text(std::string(PASE_EXAMPLES_DIR) + "/mlp_residual.json"));
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  return std::move(g).value();
}

// Every vertex of `g` unsplit but `splits`: vertex name -> its configuration.
inline Strategy export_strategy(const Graph& g, const std::map<std::string, Config>& splits) {
  Strategy s;
  for (const Vertex& v : g.vertices) {
    const auto found = splits.find(v.name);
    s.push_back(found != splits.end() ? found->second : Config(v.dom.size(), 1));
  }
  return s;
}

// A file of the scratch folder holding `text`.
inline std::string export_scratch_file(const std::string& name, const std::string& text) {
  const std::string path = (testing::scratch() / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

inline int64_t export_mesh_devices(const std::map<std::string, int64_t>& sizes) {
  int64_t product = 1;
  for (const auto& axis : sizes) product *= axis.second;
  return product;
}

// gpt2 at a small size on 4 devices, as `pase plan` arguments.
inline std::vector<std::string> export_gpt2_args() {
  return {"plan", "--model", "gpt2", "--procs", "4", "--batch", "8", "--seq", "64"};
}

}  // namespace pase::testing
