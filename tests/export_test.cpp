// A plan as a JAX program (pase/export.hpp, core/src/export/jax_program.cpp)
// and the ways to ask for an export: `pase plan/eval --emit`, `pase emit`,
// and the "emit" of a JSON request. The program's embedded plan is read
// back and checked against the graph, the mesh and the strategy exported;
// Megatron-LM and torchtitan's texts are engines_test.cpp's.
#include "pase/export.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "export_util.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using nlohmann::json;
using pase::testing::contains;
using pase::testing::run_cli;
using namespace pase::testing;

TEST_CASE("export: gpt2's plan on 8 devices is a JAX program whose shardings fit its mesh") {
  const Graph g = testing::model("gpt2");
  const Cluster c{.devices = 8};
  Result<Plan> p = plan(g, c);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  const Exported e = export_ok(ExportTarget::kJax, PlanView{&g, &g, &c, &*p, nullptr});
  CHECK(e.file_name == "plan.py");
  CHECK(e.text.rfind("#!/usr/bin/env python3\n", 0) == 0);
  CHECK(contains(e.text, "def check():"));
  CHECK(contains(e.text, "PLAN = json.loads(r\"\"\"\n"));
  const json data = export_embedded(e.text);
  CHECK(data["graph"] == "gpt2");
  CHECK(data["devices"] == 8);
  CHECK(data["cost_model"] == "paper");
  CHECK(data["microbatches"] == 1);
  CHECK(data["step_time_s"].get<double>() == p->step_time_s);
  const std::map<std::string, int64_t> sizes = export_axes(data);
  CHECK(export_mesh_devices(sizes) == 8);
  CHECK(data["mesh"]["axes"] == json({"d0", "d1", "d2"}));

  // One record per layer of the graph document, in its order.
  REQUIRE((g.model != nullptr && g.model->spec != nullptr));
  const GraphSpec& spec = *g.model->spec;
  const json& full = data["variants"]["full"];
  REQUIRE(full["layers"].size() == spec.layers.size());
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    CHECK(full["layers"][i]["name"] == spec.layers[i].name);
    CHECK(full["layers"][i]["op"] == spec.layers[i].op);
  }
  CHECK(full["sinks"] == json::array({"loss"}));
  // The inputs: the graph's and the labels of the loss, at the planned sizes.
  REQUIRE(full["inputs"].size() == spec.inputs.size() + 1);
  CHECK(full["inputs"][0]["shape"] == json({32, 1024}));
  CHECK(full["inputs"].back()["name"] == "loss/labels");
  // The plan splits the batch: the weights' gradients are reduced.
  const double bytes = export_check_variant(sizes, full);
  CHECK(bytes > 0);
  const json& embed = export_layer(full, "embed");
  CHECK(embed["implicit"] == json::array({0}));
  // The vocabulary padded to a multiple of 128, as planned (core/docs/llm.md).
  CHECK(embed["weights"][0]["shape"] == json({50304, 768}));

  // The reduced variant: sizes of at most 32 and, the plan's 12 blocks
  // being alike, the first two blocks; said so.
  const json& reduced = data["variants"]["reduced"];
  REQUIRE(reduced.is_object());
  const std::string note = data["reduced_note"].get<std::string>();
  CHECK(contains(note, "768->32"));
  CHECK(contains(note, "decoder blocks 0-1 of 12 kept"));
  export_check_variant(sizes, reduced);
  CHECK(reduced["inputs"][0]["shape"] == json({32, 32}));
  std::map<std::string, json> full_specs;
  for (const json& l : full["layers"]) full_specs[l["name"]] = l["out_specs"];
  size_t per_block = 0;
  for (const LayerSpec& l : spec.layers) per_block += l.name.rfind("layer0_", 0) == 0 ? 1 : 0;
  for (const json& l : reduced["layers"]) {
    const std::string name = l["name"];
    CAPTURE(name);
    REQUIRE(full_specs.count(name) == 1);
    CHECK(l["out_specs"] == full_specs[name]);
    CHECK((name.rfind("layer", 0) != 0 || name.rfind("layer0_", 0) == 0 ||
           name.rfind("layer1_", 0) == 0));
  }
  CHECK(per_block > 0);
  CHECK(reduced["layers"].size() == spec.layers.size() - 10 * per_block);
  // The final norm reads the last block kept.
  CHECK(export_layer(full, "final_norm")["operands"] == json::array({"layer11_mlp_add"}));
  CHECK(export_layer(reduced, "final_norm")["operands"] == json::array({"layer1_mlp_add"}));
}

TEST_CASE("export: the reduced program keeps the first two blocks of each run of blocks alike") {
  const Graph g = testing::model("gpt2");
  const Cluster c{.devices = 4};
  Result<Plan> p = plan(g, c);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  // Block 5 unsplit: runs 0-4, 5, 6-11 (and block 6 follows one unlike it).
  Plan changed = *p;
  bool split = false;
  for (const Vertex& v : g.vertices)
    if (v.name.rfind("layer5_", 0) == 0)
      for (int64_t& x : changed.strategy[v.id]) {
        split = split || x > 1;
        x = 1;
      }
  REQUIRE(split);
  const Exported e = export_ok(ExportTarget::kJax, PlanView{&g, &g, &c, &changed, nullptr});
  const json data = export_embedded(e.text);
  CHECK(contains(data["reduced_note"].get<std::string>(), "decoder blocks 0-1, 5-7 of 12 kept"));
  const json& reduced = data["variants"]["reduced"];
  std::set<std::string> blocks;
  for (const json& l : reduced["layers"]) {
    const std::string name = l["name"];
    if (name.rfind("layer", 0) == 0) blocks.insert(name.substr(0, name.find('_')));
  }
  CHECK(blocks == std::set<std::string>{"layer0", "layer1", "layer5", "layer6", "layer7"});
  // Block 5 reads block 1's output in place of block 4's, and the final
  // norm block 7's in place of block 11's.
  CHECK(export_layer(data["variants"]["full"], "layer5_attn_norm")["operands"] ==
        json::array({"layer4_mlp_add"}));
  CHECK(export_layer(reduced, "layer5_attn_norm")["operands"] == json::array({"layer1_mlp_add"}));
  CHECK(export_layer(reduced, "final_norm")["operands"] == json::array({"layer7_mlp_add"}));
  export_check_variant(export_axes(data), reduced);
}

TEST_CASE("export: a hand-made strategy's splits are sharded over axes of their sizes") {
  const Graph g = export_mlp();
  const Cluster c{.devices = 8};
  // fc1 [b n k]: batch 2, its 4096 units 4; fc2 [b n k] reads fc1's units
  // as its k, split the same; the rest replicated.
  const Strategy s = export_strategy(g, {{"fc1", {2, 4, 1}}, {"fc2", {2, 1, 4}}});
  Result<Plan> p = evaluate(g, c, s);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  const Exported e = export_ok(ExportTarget::kJax, PlanView{&g, &g, &c, &*p, nullptr});
  const json data = export_embedded(e.text);
  const std::map<std::string, int64_t> sizes = export_axes(data);
  const json& full = data["variants"]["full"];
  REQUIRE(full["layers"].size() == 9);
  export_check_variant(sizes, full);

  const json& fc1 = export_layer(full, "fc1");
  const json out1 = fc1["out_specs"][0];  // [b, n]
  REQUIRE(out1.size() == 2);
  CHECK(export_product(sizes, out1[0]) == 2);
  CHECK(export_product(sizes, out1[1]) == 4);
  // The weight [k n] follows the units.
  REQUIRE(fc1["weights"].size() == 1);
  CHECK(fc1["weights"][0]["shape"] == json({1024, 4096}));
  CHECK(fc1["weights"][0]["spec"] == json({json::array(), out1[1]}));
  CHECK(fc1["weights"][0]["fan_in"] == 1024);
  // x is read as fc1 reads it: its batch split 2.
  CHECK(full["inputs"][0]["name"] == "x");
  CHECK(full["inputs"][0]["spec"] == json({out1[0], json::array()}));
  CHECK(fc1["in_specs"] == json::array({nullptr}));

  // fc2 takes fc1's output where it is: the same axes, no re-sharding.
  const json& fc2 = export_layer(full, "fc2");
  CHECK(fc2["in_specs"] == json::array({nullptr}));
  CHECK(fc2["weights"][0]["spec"] == json({out1[1], json::array()}));
  CHECK(fc2["out_specs"][0] == json({out1[0], json::array()}));
  CHECK(fc2["predicted_bytes"].get<double>() > 0);  // the partial sums over k

  // The residual, unsplit, reads x and fc2 whole: both are gathered.
  const json& residual = export_layer(full, "residual");
  CHECK(residual["operands"] == json({"x", "fc2"}));
  CHECK(residual["out_specs"] == json::parse("[[[], []]]"));
  CHECK(residual["in_specs"] == json::parse("[[[], []], [[], []]]"));
  // The labels of the loss and the only sink.
  CHECK(full["inputs"].back()["name"] == "loss/labels");
  CHECK(full["sinks"] == json::array({"loss"}));
  // A vertex replicated everywhere costs no communication.
  CHECK(export_layer(full, "fc3")["predicted_bytes"].get<double>() == 0);
}

TEST_CASE("export: an LSTM's weight follows its units and layers splits") {
  Result<Graph> g = build_model("rnnlm", 8, 16);
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  const Cluster c{.devices = 4};
  // lstm1 (l, s, b, n, k): its batch split 2 and its output units 2.
  const Strategy s = export_strategy(*g, {{"lstm1", {1, 1, 2, 2, 1}}});
  Result<Plan> p = evaluate(*g, c, s);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  const json data =
      export_embedded(export_ok(ExportTarget::kJax, PlanView{&*g, &*g, &c, &*p, nullptr}).text);
  const json& full = data["variants"]["full"];
  export_check_variant(export_axes(data), full);
  const json& lstm = export_layer(full, "lstm1");
  CHECK(lstm["op"] == "LSTM");
  CHECK(lstm["layers"] == 2);
  // (L, 2, u, 4, u): a gate's units (n) on one axis, the rest whole.
  const json& w = lstm["weights"][0];
  CHECK(w["shape"] == json::array({2, 2, 2048, 4, 2048}));
  CHECK(w["spec"][0].empty());
  CHECK(w["spec"][2].empty());
  CHECK(w["spec"][4].size() == 1);
  CHECK(lstm["out_specs"][0][2] == w["spec"][4]);  // the output's units as the weight's
  CHECK(w["fan_in"] == 4096);
}

TEST_CASE("export: pase plan --emit writes the program to standard output or to -o") {
  const std::vector<std::string> plan = export_gpt2_args();
  std::vector<std::string> args = plan;
  args.insert(args.end(), {"--emit", "jax"});
  const testing::Run to_stdout = run_cli(args);
  REQUIRE_MESSAGE(to_stdout.exit == 0, to_stdout.err);
  CHECK(to_stdout.out.rfind("#!/usr/bin/env python3\n", 0) == 0);
  CHECK_FALSE(contains(to_stdout.out, "150 vertices"));  // no plan table
  CHECK(contains(to_stdout.err, "emit: note: "));
  const json data = export_embedded(to_stdout.out);
  CHECK(data["devices"] == 4);
  CHECK(data["variants"]["full"]["inputs"][0]["shape"] == json({8, 64}));

  // With -o: the plan on standard output, the program in the file.
  const std::string path = (testing::scratch() / "export_plan.py").string();
  args.insert(args.end(), {"-o", path});
  const testing::Run to_file = run_cli(args);
  REQUIRE_MESSAGE(to_file.exit == 0, to_file.err);
  CHECK(contains(to_file.out, "gpt2: 150 vertices"));
  CHECK_FALSE(contains(to_file.out, "#!/usr/bin/env python3"));
  CHECK(testing::read_text(path) == to_stdout.out);

  // An unknown target names the known ones.
  args = plan;
  args.insert(args.end(), {"--emit", "bogus"});
  const testing::Run bogus = run_cli(args);
  CHECK(bogus.exit == 1);
  CHECK(contains(bogus.err, "'bogus'"));
  CHECK(contains(bogus.err, "jax, megatron, torchtitan"));

  // pase eval --emit: the strategy of a saved plan, the same program.
  args = plan;
  args.insert(args.end(), {"--format", "json"});
  const testing::Run saved = run_cli(args);
  REQUIRE_MESSAGE(saved.exit == 0, saved.err);
  const std::string plan_path = export_scratch_file("export_plan.json", saved.out);
  args = plan;
  args[0] = "eval";
  args.insert(args.end(), {"--strategy", plan_path, "--emit", "jax"});
  const testing::Run eval = run_cli(args);
  REQUIRE_MESSAGE(eval.exit == 0, eval.err);
  CHECK(eval.out == to_stdout.out);
}

TEST_CASE("export: pase emit rebuilds a saved plan's program from its source") {
  const std::vector<std::string> plan = export_gpt2_args();
  std::vector<std::string> args = plan;
  args.insert(args.end(), {"--format", "json"});
  const testing::Run saved = run_cli(args);
  REQUIRE_MESSAGE(saved.exit == 0, saved.err);
  const json doc = json::parse(saved.out);
  REQUIRE(doc.contains("source"));
  CHECK(doc["source"]["args"] ==
        json({"--model", "gpt2", "--procs", "4", "--batch", "8", "--seq", "64"}));
  const std::string path = export_scratch_file("export_saved.json", saved.out);

  args = plan;
  args.insert(args.end(), {"--emit", "jax"});
  const testing::Run direct = run_cli(args);
  REQUIRE_MESSAGE(direct.exit == 0, direct.err);
  const testing::Run emitted = run_cli({"emit", "--plan", path, "--to", "jax"});
  REQUIRE_MESSAGE(emitted.exit == 0, emitted.err);
  CHECK(emitted.out == direct.out);
  const std::string out = (testing::scratch() / "export_emitted.py").string();
  const testing::Run to_file = run_cli({"emit", "--plan", path, "--to", "jax", "-o", out});
  REQUIRE_MESSAGE(to_file.exit == 0, to_file.err);
  CHECK(to_file.out.empty());
  CHECK(testing::read_text(out) == direct.out);
  // A flag given replaces the source's: the same strategy on 8 devices.
  const testing::Run wider = run_cli({"emit", "--plan", path, "--to", "jax", "--procs", "8"});
  REQUIRE_MESSAGE(wider.exit == 0, wider.err);
  CHECK(export_embedded(wider.out)["devices"] == 8);

  // Usage errors: exit 2.
  const testing::Run no_to = run_cli({"emit", "--plan", path});
  CHECK(no_to.exit == 2);
  CHECK(contains(no_to.err, "--to"));
  CHECK(run_cli({"emit", "--to", "jax"}).exit == 2);
  const testing::Run bad = run_cli({"emit", "--plan", path, "--to", "nope"});
  CHECK(bad.exit == 1);
  CHECK(contains(bad.err, "jax, megatron, torchtitan"));
}

TEST_CASE("export: a JSON request's emit adds the exports to the result") {
  const std::string base = R"({"model": "gpt2", "batch": 8, "seq": 64, "cluster": {"devices": 8})";
  const json both = json::parse(plan_json(base + R"(, "emit": ["jax", "megatron"]})"));
  REQUIRE_MESSAGE(both.contains("exports"), both.dump().substr(0, 400));
  CHECK(both.contains("vertices"));
  const json& exports = both["exports"];
  REQUIRE(exports.size() == 2);
  CHECK(exports[0]["to"] == "jax");
  CHECK(exports[0]["file"] == "plan.py");
  CHECK_FALSE(exports[0].contains("uniform"));
  const std::string program = exports[0]["text"].get<std::string>();
  CHECK(export_embedded(program)["devices"] == 8);
  CHECK(exports[1]["to"] == "megatron");
  CHECK(exports[1]["file"] == "megatron_args.sh");
  CHECK(exports[1]["uniform"].is_boolean());
  CHECK(exports[1].contains("layout"));
  if (!exports[1]["uniform"].get<bool>()) {
    CHECK_FALSE(exports[1]["differences"].empty());
    CHECK(exports[1]["plan_step_time_s"] == both["step_time_s"]);
    CHECK(exports[1]["layout_step_time_s"].get<double>() > 0);
  }
  // Without emit: no exports.
  CHECK_FALSE(json::parse(plan_json(base + "}")).contains("exports"));

  // Bad targets are errors of the request.
  json bad = json::parse(plan_json(base + R"(, "emit": "nope"})"));
  CHECK(bad["error"]["where"] == "emit");
  CHECK(contains(bad["error"]["message"].get<std::string>(), "jax, megatron, torchtitan"));
  bad = json::parse(plan_json(base + R"(, "emit": [3]})"));
  CHECK(bad["error"]["where"] == "emit[0]");
  bad = json::parse(plan_json(base + R"(, "emit": ["jax", "x"]})"));
  CHECK(bad["error"]["where"] == "emit[1]");

  // evaluate_json: the plan's own strategy gives the same program.
  json request = json::parse(base + "}");
  request["strategy"] = both;
  request["emit"] = "jax";
  const json evaluated = json::parse(evaluate_json(request.dump()));
  REQUIRE_MESSAGE(evaluated.contains("exports"), evaluated.dump().substr(0, 400));
  REQUIRE(evaluated["exports"].size() == 1);
  CHECK(evaluated["exports"][0]["text"] == program);

  // The practice model: its name in the program, each vertex's kernel.
  const json practice = json::parse(plan_json(
      R"({"model": "gpt2", "batch": 8, "seq": 64, "preset": "h100", "cost_model": "practice",
          "cluster": {"devices": 8}, "emit": "jax"})"));
  REQUIRE_MESSAGE(practice.contains("exports"), practice.dump().substr(0, 400));
  CHECK(export_embedded(practice["exports"][0]["text"])["cost_model"] == "practice");
  for (const json& v : practice["vertices"]) {
    CAPTURE(v["name"]);
    REQUIRE(v.contains("kernel"));
    if (v["name"] == "layer0_q") CHECK(v["kernel"]["class"] == "matmul");
  }
  CHECK_FALSE(both["vertices"][0].contains("kernel"));  // the paper model's

  // A CNN: Megatron-LM refuses it in its entry, the plan is still returned.
  const json cnn = json::parse(plan_json(
      R"({"model": "alexnet", "batch": 8, "cluster": {"devices": 4}, "emit": ["megatron", "jax"]})"));
  REQUIRE_MESSAGE(cnn.contains("exports"), cnn.dump().substr(0, 400));
  CHECK(cnn.contains("vertices"));
  REQUIRE(cnn["exports"].size() == 2);
  CHECK(cnn["exports"][0]["to"] == "megatron");
  REQUIRE(cnn["exports"][0].contains("error"));
  CHECK(cnn["exports"][0]["error"]["where"] == "emit");
  CHECK(contains(cnn["exports"][0]["error"]["message"].get<std::string>(), "alexnet"));
  CHECK_FALSE(cnn["exports"][0].contains("text"));
  CHECK(cnn["exports"][1]["to"] == "jax");
  CHECK_FALSE(cnn["exports"][1].contains("error"));
  const json alexnet = export_embedded(cnn["exports"][1]["text"].get<std::string>());
  export_check_variant(export_axes(alexnet), alexnet["variants"]["full"]);
}

TEST_CASE("export: a pipeline exports one stage's mesh and its micro-batches") {
  Result<Graph> g = build_model("gpt2", 8, 64);
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  const Cluster c{.devices = 8};
  PipelineOptions po;
  po.stages = 2;
  po.microbatches = 2;
  Result<PipelinePlan> piped = plan_pipeline(*g, c, po);
  REQUIRE_MESSAGE(piped.ok(), testing::why(piped));
  REQUIRE(piped->pipeline.stage.size() == 2);
  const int64_t stage_devices = piped->pipeline.stage[0].devices;
  CHECK(stage_devices == 4);
  const Exported e = export_ok(ExportTarget::kJax,
                               PlanView{&*g, &piped->graph, &c, &piped->plan, &piped->pipeline});
  bool noted = false;
  for (const std::string& n : e.notes) noted = noted || contains(n, "2 stages");
  CHECK(noted);
  const json data = export_embedded(e.text);
  CHECK(data["devices"] == stage_devices);
  CHECK(data["microbatches"] == 2);
  const std::map<std::string, int64_t> sizes = export_axes(data);
  CHECK(export_mesh_devices(sizes) == stage_devices);
  CHECK(contains(data["notes"][0].get<std::string>(), "micro-batches"));
  // The program runs the micro-batch graph: a batch of 8 / 2.
  const json& full = data["variants"]["full"];
  CHECK(full["inputs"][0]["shape"] == json({4, 64}));
  REQUIRE(full["layers"].size() == g->model->spec->layers.size());
  export_check_variant(sizes, full);
  // A JSON request's pipeline, the same.
  const json request = json::parse(plan_json(
      R"({"model": "gpt2", "batch": 8, "seq": 64, "cluster": {"devices": 8}, "emit": "jax",
          "pipeline": {"stages": 2, "microbatches": 2}})"));
  REQUIRE_MESSAGE(request.contains("exports"), request.dump().substr(0, 400));
  CHECK(request["exports"][0]["text"] == e.text);
  // The CLI's pipeline plan exports the same.
  const testing::Run run =
      run_cli({"plan", "--model", "gpt2", "--procs", "8", "--batch", "8", "--seq", "64", "--stages",
               "2", "--microbatches", "2", "--emit", "jax"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(run.out == e.text);
  CHECK(contains(run.err, "emit: note: The pipeline's 2 stages"));
}
