// The CLI (build/pase) on the invalid-input corpus: every case exits with its
// status (1 bad input, 2 usage), prints nothing on standard output and names
// what and where on standard error:
//   pase: error: <file>: <where>: <message>       (exit 1)
//   pase: <message>\nTry 'pase plan --help' ...   (exit 2)
// Also bench and --version, and the ONNX models of tests/data/onnx (their
// manifest.json gives the expected parameter counts): pase import, --graph
// MODEL.onnx in plan, eval and compare, --dim and --batch, and files that are
// not models (binary, truncated, tests/invalid/models). And the language
// models (core/docs/llm.md): the Hugging Face configs of examples/hf in
// import and --graph, --seq, and the built-ins in pase models.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_run.hpp"
#include "invalid_corpus.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "pase/presets.hpp"
#include "pase/version.hpp"
#include "test_util.hpp"
#include "util/text.hpp"

using pase_test::InvalidCase;
namespace fs = std::filesystem;
using pase::testing::contains;
using pase::testing::kOnnxDir;
using pase::testing::Run;
using pase::testing::run_cli;
using pase::testing::scratch;
using pase::testing::shell_quote;

namespace {

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// The command's text output, and its JSON (--format json) parsed; both runs
// must succeed.
struct TextAndJson {
  Run text;
  nlohmann::json doc;
};
TextAndJson run_text_and_json(const std::vector<std::string>& args) {
  TextAndJson r;
  r.text = run_cli(args);
  std::vector<std::string> json_args = args;
  json_args.insert(json_args.end(), {"--format", "json"});
  const Run json = run_cli(json_args);
  REQUIRE(r.text.exit == 0);
  REQUIRE(json.exit == 0);
  r.doc = nlohmann::json::parse(json.out, nullptr, false);
  REQUIRE(r.doc.is_object());
  return r;
}

}  // namespace

TEST_CASE("cli: every invalid input exits 1 or 2 with its message on stderr") {
  int ran = 0;
  for (const InvalidCase& c : pase_test::load_invalid_cases()) {
    if (c.cli_exit == 0) continue;
    std::vector<std::string> args;
    std::string where = c.where;
    if (c.is_graph()) {
      std::string path = pase_test::corpus_dir() + "/" + c.file;
      if (c.file.empty()) {
        // Generated: written to a file first, as a user would have it.
        path = (scratch() / (c.name + ".json")).string();
        std::ofstream(path, std::ios::binary) << pase_test::generated_text(c.generate);
      }
      args = {"plan", "--graph", path};
      args.insert(args.end(), c.cli_args.begin(), c.cli_args.end());
      // Errors found while loading lead with the file; plan() errors do not.
      if (!c.plan) where = where.empty() ? path : path + ": " + where;
    } else {
      args = c.cli_args;
    }
    where = c.cli_where.value_or(where);
    const std::string message = c.cli_message.value_or(c.message);

    const Run run = run_cli(args);
    ++ran;
    INFO(c.name, ": exit ", run.exit, ", stderr: ", run.err.substr(0, 400));
    CHECK(run.exit == c.cli_exit);
    CHECK(run.out.empty());
    CHECK(contains(run.err, message));
    if (c.cli_exit == 1) {
      CHECK(starts_with(run.err, "pase: error: " + (where.empty() ? "" : where + ": ")));
    } else {
      CHECK(starts_with(run.err, "pase: "));
      CHECK(contains(run.err, "--help' for more information"));
    }
    // One line of message (two with the usage hint), not a dump of the input.
    CHECK(run.err.size() < 1000);
  }
  CHECK(ran >= 150);
}

TEST_CASE("cli: bench runs each case and reports the planner's own optimum") {
  // The bench forks a process per case; its costs must be plan()'s, here the
  // golden optima of AlexNet and RNNLM at 8 devices.
  Run run = run_cli({"bench", "--models", "alexnet,rnnlm", "--procs", "8", "--format", "json"});
  REQUIRE(run.exit == 0);
  nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  REQUIRE(doc["cases"].size() == 2);
  CHECK(doc["cases"][0]["network"] == "alexnet");
  CHECK(doc["cases"][0]["ran"] == true);
  CHECK(doc["cases"][0]["cost"].get<double>() == 97098296512.0);
  CHECK(doc["cases"][1]["cost"].get<double>() == 4024963186688.0);
  CHECK(doc["cases"][1]["pairs"].get<double>() > 0);
  CHECK(doc["calibration_ns_per_pair"].get<double>() > 0);
}

TEST_CASE("cli: --threads does not change the plan, and bench reports its threads") {
  // The Transformer at 32 devices has steps large enough to be split.
  const std::vector<std::string> base = {"plan", "--model", "transformer", "--procs", "32"};
  std::vector<std::string> one = base, three = base;
  one.insert(one.end(), {"--threads", "1", "--format", "json"});
  three.insert(three.end(), {"--threads", "3", "--format", "json"});
  const Run a = run_cli(one), b = run_cli(three);
  REQUIRE_MESSAGE(a.exit == 0, a.err);
  REQUIRE_MESSAGE(b.exit == 0, b.err);
  nlohmann::json ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  CHECK(ja["cost"] == jb["cost"]);
  CHECK(ja["vertices"] == jb["vertices"]);
  CHECK(ja["search"]["threads"] == 1);
  CHECK(jb["search"]["threads"] == 3);
  Run bench = run_cli(
      {"bench", "--models", "alexnet", "--procs", "8", "--threads", "1,2", "--format", "json"});
  REQUIRE_MESSAGE(bench.exit == 0, bench.err);
  nlohmann::json doc = nlohmann::json::parse(bench.out);
  REQUIRE(doc["cases"].size() == 2);
  CHECK(doc["cases"][0]["threads"] == 1);
  CHECK(doc["cases"][1]["threads"] == 2);
  CHECK(doc["cases"][0]["cost"] == doc["cases"][1]["cost"]);
  CHECK(doc["cases"][0]["searches"] == 1);
}

TEST_CASE("cli: bench reports an order that does not fit instead of running it") {
  Run run = run_cli(
      {"bench", "--models", "inception3", "--procs", "64", "--order", "bfs", "--format", "json"});
  REQUIRE(run.exit == 0);
  nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["cases"][0]["ran"] == false);
  CHECK(doc["cases"][0]["note"].get<std::string>().find("needs") != std::string::npos);
  CHECK(doc["cases"][0]["predicted_peak_bytes"].get<double>() > 1e18);
}

TEST_CASE("cli: bench runs the paper's networks unless --models names others") {
  // The grid of core/docs/performance.md; the language models are slower to
  // plan at 64 devices and join only by name.
  Run run = run_cli({"bench", "--procs", "4", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  std::vector<std::string> networks;
  for (const auto& c : doc["cases"]) networks.push_back(c["network"]);
  CHECK(networks ==
        std::vector<std::string>{"alexnet", "resnet101", "inception3", "rnnlm", "transformer"});
  run = run_cli({"bench", "--models", "gpt2", "--procs", "4", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc["cases"].size() == 1);
  CHECK(doc["cases"][0]["network"] == "gpt2");
  CHECK(doc["cases"][0]["ran"] == true);
}

TEST_CASE("cli: --version prints the library's version, the project version") {
  Run run = run_cli({"--version"});
  CHECK(run.exit == 0);
  CHECK(run.out == std::string("pase ") + pase::version() + "\n");
  // project(... VERSION x.y.z) of CMakeLists.txt, never a placeholder such as "unknown".
  const std::string version = pase::version();
  CHECK(std::count(version.begin(), version.end(), '.') == 2);
  CHECK(version.find_first_not_of("0123456789.") == std::string::npos);
  CHECK(run.err.empty());
}

// ---- ONNX models: pase import, and --graph MODEL.onnx ----------------------------------------

namespace {

// tests/data/onnx/manifest.json (tests/onnx/README.md).
nlohmann::json onnx_manifest() {
  return nlohmann::json::parse(pase_test::read_binary(kOnnxDir + "manifest.json"));
}

// The --dim flags a fixture needs: its dynamic dimensions, each 4.
std::vector<std::string> dim_flags(const nlohmann::json& fixture) {
  std::vector<std::string> flags;
  for (const auto& name : fixture.value("dynamic_dims", nlohmann::json::array()))
    flags.push_back("--dim=" + name.get<std::string>() + "=4");
  return flags;
}

// Writes `bytes` to a scratch file named `name`; returns its path.
std::string scratch_file(const std::string& name, const std::string& bytes) {
  const std::string path = (scratch() / name).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

TEST_CASE("cli: import writes each fixture as a document that loads with its parameter count") {
  const nlohmann::json manifest = onnx_manifest();
  REQUIRE(manifest["fixtures"].size() >= 7);
  for (const nlohmann::json& f : manifest["fixtures"]) {
    const std::string name = f["name"];
    CAPTURE(name);
    const std::string out = (scratch() / (name + ".json")).string();
    std::vector<std::string> args = {"import", kOnnxDir + f["file"].get<std::string>(), "--output",
                                     out};
    for (const std::string& flag : dim_flags(f)) args.push_back(flag);
    const Run run = run_cli(args);
    INFO("stderr: ", run.err);
    REQUIRE(run.exit == 0);
    CHECK(run.out.empty());
    CHECK(run.err.empty());
    const std::string text = pase_test::read_binary(out);
    pase::Result<pase::Graph> graph = pase::load_graph(text);
    REQUIRE_MESSAGE(graph.ok(), pase::testing::why(graph));
    CHECK(graph->name == name);  // the file's stem
    CHECK(graph->parameters == f["expected_parameters"].get<int64_t>());
    CHECK(nlohmann::json::parse(text)["parameters"] == f["expected_parameters"]);
  }
  // Without --output: the document on standard output.
  const Run run = run_cli({"import", kOnnxDir + "tiny_cnn.onnx"});
  REQUIRE(run.exit == 0);
  const nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["format"] == "pase-graph/1");
  CHECK(doc["parameters"] == 1562);
}

TEST_CASE("cli: plan, eval and compare take an ONNX model as --graph and print its parameters") {
  const std::string model = kOnnxDir + "resnet50.onnx";
  Run run = run_cli({"plan", "--graph", model, "--procs", "4"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(
      starts_with(run.out, "resnet50: 74 vertices, 89 edges, 25,530,472 parameters on 4 devices"));

  const std::string result = scratch_file("resnet50-plan.json", "");
  run = run_cli({"plan", "--graph", model, "--procs", "4", "--batch", "32", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  std::ofstream(result, std::ios::binary) << run.out;
  nlohmann::json plan = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(plan.is_object());
  CHECK(plan["parameters"] == 25530472);
  CHECK(plan["vertices"][0]["sizes"][0] == 32);  // --batch sets the leading size

  // The saved plan evaluates to its own cost on the same graph.
  run = run_cli({"eval", "--graph", model, "--procs", "4", "--batch", "32", "--strategy", result,
                 "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  nlohmann::json eval = nlohmann::json::parse(run.out, nullptr, false);
  CHECK(eval["parameters"] == 25530472);
  CHECK(eval["cost"] == plan["cost"]);
  run = run_cli({"eval", "--graph", model, "--procs", "4", "--batch", "32", "--strategy", result});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(contains(run.out, "25,530,472 parameters"));

  run = run_cli(
      {"compare", "--graph", kOnnxDir + "tiny_cnn.onnx", "--procs", "2", "--mcmc-iterations", "0"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(contains(run.out, "1,562 parameters"));
  run = run_cli({"compare", "--graph", kOnnxDir + "tiny_cnn.onnx", "--procs", "2",
                 "--mcmc-iterations", "0", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  nlohmann::json comparison = nlohmann::json::parse(run.out, nullptr, false);
  CHECK(comparison["parameters"] == 1562);
  CHECK(comparison["strategies"]["pase"]["parameters"] == 1562);
}

TEST_CASE("cli: --graph tells ONNX from JSON by content, not by name") {
  // An ONNX model named .json, and a document named .onnx.
  const std::string model =
      scratch_file("model.json", pase_test::read_binary(kOnnxDir + "tiny_cnn.onnx"));
  Run run = run_cli({"plan", "--graph", model, "--procs", "2", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(nlohmann::json::parse(run.out)["parameters"] == 1562);
  CHECK(nlohmann::json::parse(run.out)["graph"] == "model");

  const std::string document = scratch_file(
      "document.onnx",
      R"({"inputs": {"x": [8, 16]}, "layers": [{"name": "fc", "op": "FC", "inputs": ["x"], "units": 4}]})");
  run = run_cli({"plan", "--graph", document, "--procs", "2", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(nlohmann::json::parse(run.out)["parameters"] == 16 * 4);

  // --batch and --dim size a model; a document has its own sizes.
  run = run_cli({"plan", "--graph", document, "--batch", "4"});
  CHECK(run.exit == 2);
  CHECK(contains(run.err,
                 "--batch applies only to --model, an ONNX model or a Hugging Face "
                 "config, not to a pase-graph/1 document"));
  run = run_cli({"plan", "--graph", document, "--dim", "batch=4"});
  CHECK(run.exit == 2);
  CHECK(contains(run.err, "--dim applies only to an ONNX --graph"));
  run = run_cli({"plan", "--model", "alexnet", "--dim", "batch=4"});
  CHECK(run.exit == 2);
  CHECK(contains(run.err, "--dim applies only to an ONNX --graph"));
}

TEST_CASE("cli: a dynamic dimension needs --dim (or --batch), and --dim is checked") {
  const std::string model = kOnnxDir + "tiny_mlp_dynamic.onnx";
  for (const char* command : {"import", "plan"}) {
    CAPTURE(command);
    std::vector<std::string> args = {command};
    if (std::string(command) == "plan") args.push_back("--graph");
    args.push_back(model);
    Run run = run_cli(args);
    CHECK(run.exit == 1);
    CHECK(run.out.empty());
    CHECK(starts_with(run.err, "pase: error: " + model + ": dims.batch: "));
    CHECK(contains(run.err, "dynamic dimension 'batch'"));
    CHECK(contains(run.err, "--dim batch=N"));

    auto with = [&](std::vector<std::string> flags) {
      std::vector<std::string> all = args;
      all.insert(all.end(), flags.begin(), flags.end());
      return run_cli(all);
    };
    run = with({"--dim", "batch=16"});
    CHECK_MESSAGE(run.exit == 0, run.err);
    run = with({"--batch", "16"});
    CHECK_MESSAGE(run.exit == 0, run.err);
    // Syntax: a usage error naming the flag.
    for (const char* bad : {"batch", "=16", "batch=", "batch=x", "batch=1.5"}) {
      CAPTURE(bad);
      run = with({"--dim", bad});
      CHECK(run.exit == 2);
      CHECK(starts_with(run.err, "pase: --dim: "));
    }
    run = with({"--dim", "batch=2", "--dim", "batch=3"});
    CHECK(run.exit == 2);
    CHECK(contains(run.err, "--dim: batch is given twice"));
    run = with({"--dim", "batch=0"});
    CHECK(run.exit == 1);
    CHECK(starts_with(run.err, "pase: error: dims.batch: must be a positive integer, not 0"));
    run = with({"--dim", "batch=2", "--dim", "sequence=8"});
    CHECK(run.exit == 1);
    CHECK(contains(run.err, "dims.sequence: the model has no dynamic dimension 'sequence'"));
  }
  // The sizes given reach the graph.
  Run run = run_cli({"plan", "--graph", model, "--dim", "batch=64", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(nlohmann::json::parse(run.out)["vertices"][0]["sizes"][0] == 64);
}

// Every case of tests/invalid/<kind>/cases.json (tests/invalid/README.md)
// through each command line `commands(path, case)` gives: exit 1, nothing on
// standard output, the error inside the file at the case's `where`.
void check_file_corpus(const std::string& kind,
                       const std::function<std::vector<std::vector<std::string>>(
                           const std::string&, const nlohmann::json&)>& commands) {
  const std::string dir = pase_test::corpus_dir() + "/" + kind + "/";
  const nlohmann::json cases = nlohmann::json::parse(pase_test::read_binary(dir + "cases.json"));
  REQUIRE(cases["cases"].size() >= 10);
  for (const nlohmann::json& c : cases["cases"]) {
    const std::string path = dir + c["file"].get<std::string>();
    const std::string where = c["where"];
    CAPTURE(path);
    for (const std::vector<std::string>& args : commands(path, c)) {
      CAPTURE(args.front());
      Run run = run_cli(args);
      CHECK(run.exit == 1);
      CHECK(run.out.empty());
      CHECK(starts_with(run.err,
                        "pase: error: " + path + ": " + (where.empty() ? "" : where + ": ")));
      CHECK(contains(run.err, c["message"].get<std::string>()));
    }
  }
}

TEST_CASE("cli: a file that is no model says what it looks like, and a config what to add") {
  // A PNG renamed model.onnx: plan and import say the same, naming the file.
  const std::string invalid = std::string(PASE_INVALID_DIR) + "/";
  const std::string png =
      scratch_file("model.onnx", pase_test::read_binary(invalid + "models/png_image.onnx"));
  const std::string said = "pase: error: " + png +
                           ": not an ONNX model: the file is a PNG image; give an ONNX model "
                           "(export it with torch.onnx.export), a Hugging Face config.json or a "
                           "pase-graph/1 document\n";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"plan", "--graph", png},
        std::vector<std::string>{"plan", "--graph", png, "--batch", "8"},
        std::vector<std::string>{"import", png}}) {
    CAPTURE(args);
    Run run = run_cli(args);
    CHECK(run.exit == 1);
    CHECK(run.out.empty());
    CHECK(run.err == said);
  }
  // The same from standard input.
  Run piped = run_cli({"plan", "--graph", "-"}, png);
  CHECK(piped.exit == 1);
  CHECK(starts_with(piped.err, "pase: error: <stdin>: not an ONNX model: the file is a PNG image"));
  // A checkpoint is told to be exported.
  Run checkpoint =
      run_cli({"plan", "--graph", invalid + "models/torch_checkpoint.onnx", "--procs", "8"});
  CHECK(checkpoint.exit == 1);
  CHECK(contains(checkpoint.err,
                 "a PyTorch checkpoint (torch.save), which holds the weights but "
                 "not the graph; export the model with torch.onnx.export"));
  // A Hugging Face config without model_type is planned as a config, not
  // refused as a graph document with an unknown field.
  const std::string config = invalid + "configs/no_model_type.json";
  Run run = run_cli({"plan", "--graph", config, "--batch", "4", "--seq", "128"});
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: " + config +
                                 ": model_type: this looks like a Hugging Face config.json (it "
                                 "has hidden_size, "));
  CHECK(contains(run.err,
                 "add \"model_type\": \"llama\" (for LlamaForCausalLM; supported: llama, "
                 "mistral, qwen2, gpt2, mixtral)"));
  CHECK_FALSE(contains(run.err, "unknown field"));
}

TEST_CASE("cli: a binary file, a truncated model and an invalid model give an error, no crash") {
  const std::string resnet = pase_test::read_binary(kOnnxDir + "resnet50.onnx");
  std::string binary(300, '\0');
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>((i * 37 + 11) % 256);
  const std::string junk = scratch_file("junk.bin", binary);
  Run run = run_cli({"plan", "--graph", junk});
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: " + junk +
                                 ": not an ONNX model: the file is binary data of no known kind"));
  run = run_cli({"import", junk});
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: " + junk + ": not an ONNX model"));

  for (size_t size :
       {size_t{1}, size_t{2}, size_t{17}, size_t{100}, resnet.size() / 2, resnet.size() - 1}) {
    CAPTURE(size);
    const std::string cut = scratch_file("cut.onnx", resnet.substr(0, size));
    for (const char* command : {"import", "plan"}) {
      CAPTURE(command);
      run = std::string(command) == "plan" ? run_cli({"plan", "--graph", cut})
                                           : run_cli({"import", cut});
      CHECK(run.exit == 1);  // never a signal (128 + n)
      CHECK(run.out.empty());
      CHECK(starts_with(run.err, "pase: error: " + cut + ": "));
      CHECK(run.err.size() < 1000);
    }
    if (size >= 100) CHECK(contains(run.err, "truncated"));
  }

  // tests/invalid/models (tests/invalid/README.md): pase import FILE, exit 1.
  check_file_corpus("models", [](const std::string& path, const nlohmann::json&) {
    return std::vector<std::vector<std::string>>{{"import", path}};
  });
}

TEST_CASE("cli: every config of tests/invalid/configs is refused by import and plan") {
  check_file_corpus("configs", [](const std::string& path, const nlohmann::json& c) {
    std::vector<std::vector<std::string>> commands = {{"import", path}, {"plan", "--graph", path}};
    if (c.contains("seq")) {
      for (std::vector<std::string>& args : commands) {
        args.push_back("--seq");
        args.push_back(std::to_string(c["seq"].get<int64_t>()));
      }
    }
    return commands;
  });
}

TEST_CASE("cli: import takes one FILE and the flags of its usage") {
  Run run = run_cli({"import"});
  CHECK(run.exit == 2);
  CHECK(contains(run.err, "missing the model FILE (ONNX or config.json)"));
  run = run_cli({"import", kOnnxDir + "tiny_cnn.onnx", kOnnxDir + "resnet50.onnx"});
  CHECK(run.exit == 2);
  CHECK(contains(run.err, "unexpected argument"));
  run = run_cli({"import", kOnnxDir + "tiny_cnn.onnx", "--procs", "4"});
  CHECK(run.exit == 2);
  CHECK(contains(run.err, "unknown flag '--procs'"));
  run = run_cli({"import", kOnnxDir + "tiny_cnn.onnx", "--batch", "0"});
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: batch: must be a positive integer"));
  run = run_cli({"import", "--help"});
  CHECK(run.exit == 0);
  CHECK(starts_with(run.out, "usage: pase import FILE"));
  run = run_cli({"import", "/nonexistent/model.onnx"});
  CHECK(run.exit == 1);
  CHECK(contains(run.err, "/nonexistent/model.onnx"));
}

// ---- Language models: Hugging Face config.json, --seq, the built-in LLMs --------------------

namespace {

// examples/hf/<Model>/config.json, the configs of core/docs/llm.md.
std::string hf_config(const std::string& model) {
  return (fs::path(PASE_EXAMPLES_DIR) / ".." / "hf" / model / "config.json")
      .lexically_normal()
      .string();
}

// The first line of `text`.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

TEST_CASE("cli: import translates a config.json, named after its folder, with --batch and --seq") {
  const std::string out = (scratch() / "llama.json").string();
  Run run = run_cli(
      {"import", hf_config("Meta-Llama-3-8B"), "--batch", "8", "--seq", "2048", "--output", out});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(run.out.empty());
  CHECK(run.err.empty());
  const std::string text = pase_test::read_binary(out);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["format"] == "pase-graph/1");
  CHECK(doc["name"] == "Meta-Llama-3-8B");
  CHECK(doc["parameters"] == int64_t{8030261248});
  CHECK(doc["inputs"]["tokens"] == nlohmann::json::array({8, 2048}));
  pase::Result<pase::Graph> graph = pase::load_graph(text);
  REQUIRE_MESSAGE(graph.ok(), pase::testing::why(graph));
  CHECK(graph->parameters == int64_t{8030261248});

  // The defaults: batch 32, the model's positions (GPT-2: 1024).
  run = run_cli({"import", hf_config("gpt2")});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  nlohmann::json gpt2 = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(gpt2.is_object());
  CHECK(gpt2["name"] == "gpt2");
  CHECK(gpt2["parameters"] == 124439808);
  CHECK(gpt2["inputs"]["tokens"] == nlohmann::json::array({32, 1024}));

  // Another file name: its stem. Standard input: the config's model_type.
  const std::string renamed =
      scratch_file("qwen-small.json", pase_test::read_binary(hf_config("Qwen2-0.5B")));
  run = run_cli({"import", renamed, "--batch", "2", "--seq", "64"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(nlohmann::json::parse(run.out)["name"] == "qwen-small");
  CHECK(nlohmann::json::parse(run.out)["parameters"] == 494032768);
  run = run_cli({"import", "-", "--batch", "2", "--seq", "64"}, hf_config("Mistral-7B-v0.1"));
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(nlohmann::json::parse(run.out)["name"] == "mistral");
  CHECK(nlohmann::json::parse(run.out)["parameters"] == int64_t{7241732096});
  CHECK(nlohmann::json::parse(run.out)["inputs"]["tokens"] == nlohmann::json::array({2, 64}));
}

TEST_CASE("cli: import refuses --dim for a config, --seq for an ONNX model and a document") {
  Run run = run_cli({"import", hf_config("gpt2"), "--dim", "batch=2"});
  CHECK(run.exit == 2);
  CHECK(run.out.empty());
  CHECK(contains(run.err, "--dim applies only to an ONNX model"));
  // On standard input the config is only read later: the importer's error.
  run = run_cli({"import", "-", "--dim", "batch=2"}, hf_config("gpt2"));
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: <stdin>: dims.batch: "));

  run = run_cli({"import", kOnnxDir + "tiny_cnn.onnx", "--seq", "16"});
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: " + kOnnxDir + "tiny_cnn.onnx: seq: "));
  run = run_cli({"import", hf_config("gpt2"), "--seq", "0"});
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: seq: must be a positive integer, not 0"));
  run = run_cli({"import", hf_config("gpt2"), "--seq", "1k"});
  CHECK(run.exit == 2);
  CHECK(contains(run.err, "--seq: '1k' is not an integer"));

  const std::string document = std::string(PASE_EXAMPLES_DIR) + "/attention_block.json";
  run = run_cli({"import", document});
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: " + document + ": already a pase-graph/1 document"));
}

TEST_CASE("cli: plan takes a config.json as --graph and prints its parameter count") {
  const std::string config = hf_config("Meta-Llama-3-8B");
  Run run = run_cli({"plan", "--graph", config, "--procs", "8", "--batch", "4", "--seq", "512"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(starts_with(run.out, "Meta-Llama-3-8B: "));
  CHECK(contains(first_line(run.out), " 8,030,261,248 parameters on 8 devices"));

  run = run_cli({"plan", "--graph", config, "--procs", "8", "--batch", "4", "--seq", "512",
                 "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  const nlohmann::json plan = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(plan.is_object());
  CHECK(plan["graph"] == "Meta-Llama-3-8B");
  CHECK(plan["parameters"] == int64_t{8030261248});
  CHECK(plan["vertices"][0]["sizes"][0] == 4);    // --batch
  CHECK(plan["vertices"][0]["sizes"][1] == 512);  // --seq

  // A config is told by content: a config named .onnx, and one on standard input.
  const std::string renamed =
      scratch_file("gpt2-config.onnx", pase_test::read_binary(hf_config("gpt2")));
  run = run_cli({"plan", "--graph", renamed, "--batch", "2", "--seq", "64", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(nlohmann::json::parse(run.out)["graph"] == "gpt2-config");
  CHECK(nlohmann::json::parse(run.out)["parameters"] == 124439808);
  run = run_cli({"plan", "--graph", "-", "--batch", "2", "--seq", "64"}, hf_config("gpt2"));
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(first_line(run.out) ==
        "gpt2: 150 vertices, 197 edges, 124,439,808 parameters on 8 devices (10 TFLOP/s, 16 GB/s "
        "links)");

  // eval and compare read it the same way.
  const std::string result = scratch_file("gpt2-plan.json", "");
  run = run_cli(
      {"plan", "--graph", hf_config("gpt2"), "--batch", "2", "--seq", "64", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  std::ofstream(result, std::ios::binary) << run.out;
  const nlohmann::json gpt2_plan = nlohmann::json::parse(run.out);
  run = run_cli({"eval", "--graph", hf_config("gpt2"), "--batch", "2", "--seq", "64", "--strategy",
                 result, "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(nlohmann::json::parse(run.out)["cost"] == gpt2_plan["cost"]);
  run = run_cli({"compare", "--graph", hf_config("gpt2"), "--batch", "2", "--seq", "64",
                 "--mcmc-iterations", "0", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(nlohmann::json::parse(run.out)["parameters"] == 124439808);
}

TEST_CASE("cli: --seq sizes a built-in language model in plan and export") {
  Run run =
      run_cli({"plan", "--model", "llama3-8b", "--seq", "1024", "--batch", "8", "--procs", "8"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(starts_with(run.out, "llama3-8b: "));
  CHECK(contains(first_line(run.out), " 8,030,261,248 parameters on 8 devices"));
  run = run_cli({"plan", "--model", "llama3-8b", "--seq", "1024", "--batch", "8", "--procs", "8",
                 "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  const nlohmann::json plan = nlohmann::json::parse(run.out);
  CHECK(plan["parameters"] == int64_t{8030261248});
  CHECK(plan["vertices"][0]["sizes"][0] == 8);
  CHECK(plan["vertices"][0]["sizes"][1] == 1024);

  run = run_cli({"export", "--model", "gpt2", "--batch", "2", "--seq", "128"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  const nlohmann::json doc = nlohmann::json::parse(run.out);
  CHECK(doc["inputs"]["tokens"] == nlohmann::json::array({2, 128}));
  CHECK(doc["parameters"] == 124439808);
}

TEST_CASE("cli: --seq is checked like --batch and applies only to a model with a sequence") {
  // A network without a sequence: the core's error at "seq".
  for (const char* command : {"plan", "export"}) {
    CAPTURE(command);
    Run run = run_cli({command, "--model", "alexnet", "--seq", "16"});
    CHECK(run.exit == 1);
    CHECK(run.out.empty());
    CHECK(starts_with(run.err, "pase: error: seq: "));
    CHECK(contains(run.err, "alexnet"));
  }
  Run run = run_cli({"plan", "--model", "gpt2", "--seq", "0"});
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: seq: must be a positive integer, not 0"));
  run = run_cli({"plan", "--model", "gpt2", "--seq", "-4"});
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: seq: must be a positive integer, not -4"));
  run = run_cli({"plan", "--model", "gpt2", "--seq", "x"});
  CHECK(run.exit == 2);
  CHECK(starts_with(run.err, "pase: --seq: 'x' is not an integer"));
  CHECK(contains(run.err, "Try 'pase plan --help'"));
  run = run_cli({"compare", "--model", "gpt2", "--seq", "1.5"});
  CHECK(run.exit == 2);
  CHECK(contains(run.err, "--seq: '1.5' is not an integer"));

  // A document has its sizes: a usage error, as for --batch.
  const std::string document = std::string(PASE_EXAMPLES_DIR) + "/attention_block.json";
  run = run_cli({"plan", "--graph", document, "--seq", "16"});
  CHECK(run.exit == 2);
  CHECK(run.out.empty());
  CHECK(contains(run.err, "--seq applies only to --model or a Hugging Face config"));
  // An ONNX model names its sequence dimension (--dim): the importer's error.
  run = run_cli({"plan", "--graph", kOnnxDir + "tiny_cnn.onnx", "--seq", "16"});
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: " + kOnnxDir + "tiny_cnn.onnx: seq: "));
  // A config: --dim is a usage error, a sequence longer than GPT-2's learned
  // positions an error in the file.
  run = run_cli({"plan", "--graph", hf_config("gpt2"), "--dim", "batch=4"});
  CHECK(run.exit == 2);
  CHECK(contains(run.err, "--dim applies only to an ONNX --graph"));
  run = run_cli({"plan", "--graph", hf_config("gpt2"), "--seq", "2048"});
  CHECK(run.exit == 1);
  CHECK(starts_with(run.err, "pase: error: " + hf_config("gpt2") + ": seq: "));
  CHECK(contains(run.err, "1024"));
}

TEST_CASE("cli: an invalid config is reported inside the file") {
  const std::string config = pase_test::read_binary(hf_config("Meta-Llama-3-8B"));
  nlohmann::json bert = nlohmann::json::parse(config);
  bert["model_type"] = "bert";
  const std::string unsupported = scratch_file("bert.json", bert.dump());
  for (const char* command : {"plan", "import"}) {
    CAPTURE(command);
    Run run = std::string(command) == "plan" ? run_cli({"plan", "--graph", unsupported})
                                             : run_cli({"import", unsupported});
    CHECK(run.exit == 1);
    CHECK(run.out.empty());
    CHECK(starts_with(run.err, "pase: error: " + unsupported + ": model_type: "));
    CHECK(contains(run.err, "'bert'"));
    for (const char* type : {"llama", "mistral", "qwen2", "gpt2", "mixtral"}) {
      CHECK(contains(run.err, type));
    }
  }
  nlohmann::json negative = nlohmann::json::parse(config);
  negative["hidden_size"] = -1;
  const std::string path = scratch_file("negative.json", negative.dump());
  Run run = run_cli({"plan", "--graph", path});
  CHECK(run.exit == 1);
  CHECK(run.err == "pase: error: " + path + ": hidden_size: must be a positive integer, not -1\n");
}

TEST_CASE("cli: models lists the language models with their parameters in aligned columns") {
  const Run run = run_cli({"models"});
  REQUIRE(run.exit == 0);
  std::vector<std::string> lines;
  for (size_t start = 0; start < run.out.size();) {
    const size_t end = run.out.find('\n', start);
    lines.push_back(run.out.substr(start, end - start));
    start = end == std::string::npos ? run.out.size() : end + 1;
  }
  REQUIRE(lines.size() == 11);  // the header and ten networks
  const std::string& header = lines.front();
  const size_t parameters_end = header.find("parameters") + std::string("parameters").size();
  const size_t seq_end = header.find(" seq ") + std::string(" seq").size();
  REQUIRE(header.find("parameters") != std::string::npos);
  REQUIRE(header.find(" seq ") != std::string::npos);
  CHECK(header.find("batch") < header.find(" seq "));

  const std::pair<std::string, std::string> expected[] = {
      {"alexnet", "62,466,080"},          {"gpt2", "124,439,808"},
      {"llama3-8b", "8,030,261,248"},     {"llama3-70b", "70,553,706,496"},
      {"mixtral-8x7b", "46,702,792,704"}, {"gpt3-175b", "174,604,259,328"}};
  for (const auto& entry : expected) {
    // Named, not a structured binding: CAPTURE reads them in a lambda.
    const auto& name = entry.first;
    const auto& parameters = entry.second;
    CAPTURE(name);
    const auto row = std::find_if(lines.begin(), lines.end(), [&](const std::string& line) {
      return starts_with(line, name + " ");
    });
    REQUIRE(row != lines.end());
    // The count right-aligned under its heading, apart from its neighbours.
    const size_t at = row->find(" " + parameters + " ");
    REQUIRE(at != std::string::npos);
    CHECK(at + 1 + parameters.size() == parameters_end);
  }
  for (const std::string& line : lines) {
    CAPTURE(line);
    REQUIRE(line.size() > seq_end);
    // Every row has a seq under the heading: a number, or "-" for a CNN.
    CHECK(line[seq_end] == ' ');
    if (&line == &header) continue;
    const size_t start = line.rfind(' ', seq_end - 1) + 1;
    const std::string seq = line.substr(start, seq_end - start);
    if (starts_with(line, "alexnet ") || starts_with(line, "resnet101 ") ||
        starts_with(line, "inception3 ")) {
      CHECK(seq == "-");
    } else {
      CHECK(!seq.empty());
      CHECK(seq.find_first_not_of("0123456789") == std::string::npos);
    }
  }
  const std::string llama = *std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return starts_with(l, "llama3-8b ");
  });
  CHECK(llama.substr(seq_end - 4, 4) == "8192");

  // --format json: the same models with default_seq (null without one).
  const Run json = run_cli({"models", "--format", "json"});
  REQUIRE(json.exit == 0);
  const nlohmann::json models = nlohmann::json::parse(json.out, nullptr, false);
  REQUIRE(models.is_array());
  REQUIRE(models.size() == lines.size() - 1);
  for (const nlohmann::json& m : models) {
    CAPTURE(m["name"]);
    if (m["name"] == "alexnet") CHECK(m["default_seq"].is_null());
    if (m["name"] == "llama3-8b") {
      CHECK(m["default_seq"] == 8192);
      CHECK(m["parameters"] == int64_t{8030261248});
    }
  }
}

// ---- Clusters of nodes, memory and presets (core/docs/cluster.md) ---------------------

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return lines;
}

// The first line of `text` that starts with `prefix`, or "".
std::string line_starting(const std::string& text, const std::string& prefix) {
  for (const std::string& line : lines_of(text))
    if (starts_with(line, prefix)) return line;
  return "";
}

// `text` padded with spaces to `width`.
std::string pad_to(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

// " " + text, built piece by piece: GCC 12 warns falsely (-Wrestrict) on
// `" " + text`.
std::string after_space(const std::string& text) {
  std::string out(1, ' ');
  out += text;
  return out;
}

// The text form of a double as snprintf writes it.
std::string printf_text(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

constexpr double kGiB = 1073741824.0;

}  // namespace

TEST_CASE("cli: --preset fills the cluster and explicit flags override it") {
  pase::Result<pase::Graph> alexnet = pase::build_model("alexnet");
  REQUIRE(alexnet.ok());
  const pase::GpuPreset* h100 = pase::find_preset("h100");
  REQUIRE(h100 != nullptr);

  Run run = run_cli({"plan", "--cost-model", "paper", "--model", "alexnet", "--preset", "h100",
                     "--procs", "16", "--format", "json"});
  REQUIRE(run.exit == 0);
  nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["cluster"]["devices"] == 16);
  CHECK(doc["cluster"]["tflops"] == h100->tflops);
  CHECK(doc["cluster"]["bandwidth_gbps"] == h100->inter_node_gbps);
  CHECK(doc["cluster"]["gpus_per_node"] == h100->gpus_per_node);
  CHECK(doc["cluster"]["intra_node_gbps"] == h100->intra_node_gbps);
  CHECK(doc["cluster"]["memory_gib"] == h100->memory_gib);
  // The plan is the library's on the preset's cluster.
  pase::Cluster cluster = pase::apply_preset(pase::Cluster{}, *h100);
  cluster.devices = 16;
  pase::Result<pase::Plan> expected = pase::plan(*alexnet, cluster);
  REQUIRE(expected.ok());
  CHECK(pase::testing::close(doc["cost"].get<double>(), expected->cost));
  CHECK(doc["memory"]["capacity_bytes"] == 80 * kGiB);

  // Every flag given wins over the preset, the training's too.
  run = run_cli({"plan",    "--cost-model",      "paper", "--model",
                 "alexnet", "--preset",          "h100",  "--procs",
                 "16",      "--flops",           "500",   "--bandwidth",
                 "25",      "--gpus-per-node",   "4",     "--intra-bandwidth",
                 "300",     "--memory",          "40",    "--zero",
                 "1",       "--param-bytes",     "4",     "--grad-bytes",
                 "4",       "--optimizer-bytes", "8",     "--activation-bytes",
                 "4",       "--format",          "json"});
  REQUIRE(run.exit == 0);
  doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["cluster"]["tflops"] == 500);
  CHECK(doc["cluster"]["bandwidth_gbps"] == 25);
  CHECK(doc["cluster"]["gpus_per_node"] == 4);
  CHECK(doc["cluster"]["intra_node_gbps"] == 300);
  CHECK(doc["cluster"]["memory_gib"] == 40);
  CHECK(doc["training"] == nlohmann::json{{"param_bytes", 4},
                                          {"grad_bytes", 4},
                                          {"optimizer_bytes", 8},
                                          {"activation_bytes", 4},
                                          {"zero", 1}});
  cluster = pase::Cluster{.devices = 16,
                          .tflops = 500,
                          .bandwidth_gbps = 25,
                          .gpus_per_node = 4,
                          .intra_node_gbps = 300,
                          .memory_gib = 40,
                          .training = {4, 4, 8, 4, 1}};
  expected = pase::plan(*alexnet, cluster);
  REQUIRE(expected.ok());
  CHECK(pase::testing::close(doc["cost"].get<double>(), expected->cost));
  CHECK(pase::testing::close(doc["memory"]["per_device_bytes"].get<double>(),
                             expected->memory.total()));

  // --memory 0 drops the preset's cap.
  run = run_cli({"plan", "--cost-model", "paper", "--model", "alexnet", "--preset", "h100",
                 "--memory", "0", "--format", "json"});
  REQUIRE(run.exit == 0);
  doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["memory"]["capacity_bytes"].is_null());
  CHECK(doc["cluster"]["gpus_per_node"] == 8);
}

TEST_CASE("cli: the header names the nodes and keeps the flat form without them") {
  const std::string flat =
      "alexnet: 14 vertices, 13 edges, 62,466,080 parameters on 8 devices (10 TFLOP/s, 16 GB/s "
      "links)\n";
  Run run = run_cli({"plan", "--cost-model", "paper", "--model", "alexnet"});
  REQUIRE(run.exit == 0);
  CHECK(starts_with(run.out, flat));

  const std::pair<std::string, std::string> cases[] = {
      {"16", "on 16 devices as 2 nodes x 8 (10 TFLOP/s, 300 GB/s inside nodes, 16 GB/s between)\n"},
      {"12",
       "on 12 devices as 2 nodes of up to 8 (10 TFLOP/s, 300 GB/s inside nodes, 16 GB/s "
       "between)\n"},
      {"4", "on 4 devices in one node (10 TFLOP/s, 300 GB/s inside nodes, 16 GB/s between)\n"}};
  for (const auto& entry : cases) {
    // Named, not a structured binding: CAPTURE reads them in a lambda.
    const auto& procs = entry.first;
    const auto& header = entry.second;
    CAPTURE(procs);
    run = run_cli({"plan", "--cost-model", "paper", "--model", "alexnet", "--procs", procs,
                   "--gpus-per-node", "8", "--intra-bandwidth", "300"});
    REQUIRE(run.exit == 0);
    CHECK(starts_with(run.out, "alexnet: 14 vertices, 13 edges, 62,466,080 parameters " + header));
  }

  // eval and compare say the same.
  const std::string strategy = (scratch() / "alexnet-nodes.json").string();
  run = run_cli({"plan", "--cost-model", "paper", "--model", "alexnet", "--procs", "16",
                 "--gpus-per-node", "8", "--intra-bandwidth", "300", "--format", "json"});
  REQUIRE(run.exit == 0);
  std::ofstream(strategy, std::ios::binary) << run.out;
  run = run_cli({"eval", "--cost-model", "paper", "--model", "alexnet", "--procs", "16",
                 "--gpus-per-node", "8", "--intra-bandwidth", "300", "--strategy", strategy});
  REQUIRE(run.exit == 0);
  CHECK(contains(lines_of(run.out).front(), std::get<1>(cases[0]).substr(0, 40)));
  run = run_cli({"compare", "--cost-model", "paper", "--model", "alexnet", "--procs", "16",
                 "--gpus-per-node", "8", "--intra-bandwidth", "300", "--mcmc-iterations", "0"});
  REQUIRE(run.exit == 0);
  CHECK(contains(lines_of(run.out).front(), std::get<1>(cases[0]).substr(0, 40)));
  run =
      run_cli({"compare", "--cost-model", "paper", "--model", "alexnet", "--mcmc-iterations", "0"});
  REQUIRE(run.exit == 0);
  CHECK(starts_with(run.out, flat));
}

TEST_CASE("cli: plan prints the memory per device and per layer as its JSON has them") {
  for (const std::string zero : {"0", "2"}) {
    CAPTURE(zero);
    const auto [text, doc] = run_text_and_json({"plan", "--model", "rnnlm", "--zero", zero});
    const nlohmann::json& memory = doc["memory"];

    CHECK(line_starting(text.out, "memory ") ==
          "memory           " + pase::bytes_text(memory["per_device_bytes"].get<double>()) +
              " per device (2+2+12 bytes per parameter, 2 per activation, ZeRO " + zero + ")");
    const std::pair<std::string, std::string> parts[] = {{"  parameters ", "params"},
                                                         {"  gradients ", "grads"},
                                                         {"  optimizer ", "optimizer"},
                                                         {"  activations ", "activations"}};
    for (const auto& entry : parts) {
      // Named, not a structured binding: CAPTURE reads them in a lambda.
      const auto& label = entry.first;
      const auto& key = entry.second;
      CAPTURE(label);
      const double bytes = memory[key].get<double>();
      const std::string line = line_starting(text.out, label);
      CHECK(starts_with(line, pad_to(label, 17) + pase::bytes_text(bytes) + " "));
      CHECK(contains(
          line, printf_text("%.1f%%", 100 * bytes / memory["per_device_bytes"].get<double>())));
    }
    // No cap: no capacity, no bound.
    CHECK(line_starting(text.out, "  capacity").empty());
    CHECK(line_starting(text.out, "lower bound").empty());

    // The layer table: each vertex's memory right-aligned under "memory".
    const std::string header = line_starting(text.out, "   id  layer");
    const size_t memory_end = header.find(" memory  configuration");
    REQUIRE(memory_end != std::string::npos);
    for (const nlohmann::json& v : doc["vertices"]) {
      const std::string name = v["name"].get<std::string>();
      CAPTURE(name);
      const std::string row =
          line_starting(text.out, printf_text("%5.0f", v["id"].get<double>()) + "  " + name + " ");
      const std::string cell =
          after_space(pase::bytes_text(v["memory_bytes"].get<double>())) + "  ";
      REQUIRE(row.size() > memory_end + 7);
      CHECK(row.substr(memory_end + 7 - (cell.size() - 2), cell.size()) == cell);
    }
    if (zero == "2") {
      // ZeRO 2 shards gradients and optimizer state over the replicas.
      CHECK(memory["grads"].get<double>() < memory["params"].get<double>());
    }
  }
}

TEST_CASE("cli: under a cap plan reports the capacity, the fit and its lower bound") {
  // A loose cap: the plan without it fits, so it is optimal.
  Run run = run_cli({"plan", "--model", "rnnlm", "--memory", "80"});
  REQUIRE(run.exit == 0);
  CHECK(line_starting(run.out, "  capacity") == "  capacity       80 GiB: fits");
  const std::string bound = line_starting(run.out, "lower bound ");
  CHECK(contains(bound, ": the plan is proven optimal among the strategies that fit"));
  CHECK(contains(bound, line_starting(run.out, "cost ").substr(17, 12)));

  // A cap that binds: a dearer plan that fits, with the bound the search proved.
  Run free = run_cli({"plan", "--model", "rnnlm", "--format", "json"});
  Run text = run_cli({"plan", "--model", "rnnlm", "--memory", "1.5"});
  Run json = run_cli({"plan", "--model", "rnnlm", "--memory", "1.5", "--format", "json"});
  REQUIRE(free.exit == 0);
  REQUIRE(text.exit == 0);
  REQUIRE(json.exit == 0);
  const nlohmann::json unlimited = nlohmann::json::parse(free.out, nullptr, false);
  const nlohmann::json doc = nlohmann::json::parse(json.out, nullptr, false);
  REQUIRE(unlimited.is_object());
  REQUIRE(doc.is_object());
  REQUIRE(unlimited["memory"]["per_device_bytes"].get<double>() > 1.5 * kGiB);
  CHECK(doc["memory"]["per_device_bytes"].get<double>() <= 1.5 * kGiB);
  CHECK(doc["cost"].get<double>() > unlimited["cost"].get<double>());
  CHECK(line_starting(text.out, "  capacity") == "  capacity       1.5 GiB: fits");
  const double lower = doc["memory"]["lower_bound"].get<double>();
  CHECK(lower <= doc["cost"].get<double>());
  CHECK(lower >= unlimited["cost"].get<double>());
  const std::string line = line_starting(text.out, "lower bound ");
  CHECK(starts_with(line, "lower bound      " + printf_text("%.6e", lower) + ": "));
  if (doc["memory"]["optimal"].get<bool>()) {
    CHECK(contains(line, "the plan is proven optimal among the strategies that fit"));
  } else {
    CHECK(contains(line,
                   "not proven optimal; every strategy that fits costs at least this, the "
                   "plan " +
                       printf_text("%.1f%%", 100 * (doc["cost"].get<double>() - lower) / lower) +
                       " more"));
  }
}

TEST_CASE("cli: plan under an unreachable cap names the least memory, which is reachable") {
  Run run = run_cli({"plan", "--model", "alexnet", "--memory", "0.001"});
  CHECK(run.exit == 1);
  CHECK(run.out.empty());
  const std::string prefix =
      "pase: error: cluster.memory_gib: no strategy fits in 0.001 GiB per device: the least "
      "memory any strategy reaches is ";
  REQUIRE(starts_with(run.err, prefix));
  CHECK(contains(run.err,
                 " GiB; more devices (--procs) or a higher ZeRO stage (--zero) can "
                 "lower it\n"));
  const double least = std::stod(run.err.substr(prefix.size()));
  CHECK(least > 0.001);
  // A cap just above it fits (the message rounds to four digits).
  const std::string cap = printf_text("%.6g", least * 1.001);
  run = run_cli({"plan", "--model", "alexnet", "--memory", cap, "--format", "json"});
  REQUIRE(run.exit == 0);
  const nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["memory"]["fits"] == true);
  CHECK(doc["memory"]["per_device_bytes"].get<double>() <= std::stod(cap) * kGiB);
  CHECK(doc["memory"]["per_device_bytes"].get<double>() >= least * 0.999 * kGiB);
}

TEST_CASE("cli: eval says whether the strategy fits the cap and claims no bound") {
  const std::string strategy = (scratch() / "rnnlm-plan.json").string();
  Run run = run_cli({"plan", "--model", "rnnlm", "--format", "json"});
  REQUIRE(run.exit == 0);
  std::ofstream(strategy, std::ios::binary) << run.out;
  const nlohmann::json planned = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(planned.is_object());
  const double bytes = planned["memory"]["per_device_bytes"].get<double>();
  REQUIRE(bytes > 1.5 * kGiB);

  run = run_cli({"eval", "--model", "rnnlm", "--strategy", strategy, "--memory", "1.5"});
  REQUIRE(run.exit == 0);
  CHECK(line_starting(run.out, "  capacity") == "  capacity       1.5 GiB: does not fit (" +
                                                    pase::bytes_text(bytes - 1.5 * kGiB) +
                                                    " over)");
  CHECK(line_starting(run.out, "lower bound").empty());
  run = run_cli({"eval", "--model", "rnnlm", "--strategy", strategy, "--memory", "80"});
  REQUIRE(run.exit == 0);
  CHECK(line_starting(run.out, "  capacity") == "  capacity       80 GiB: fits");
  CHECK(line_starting(run.out, "lower bound").empty());
  CHECK(line_starting(run.out, "memory ") ==
        "memory           " + pase::bytes_text(bytes) +
            " per device (2+2+12 bytes per parameter, 2 per activation, ZeRO 0)");
  run = run_cli(
      {"eval", "--model", "rnnlm", "--strategy", strategy, "--memory", "1.5", "--format", "json"});
  REQUIRE(run.exit == 0);
  const nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["memory"]["fits"] == false);
  CHECK(doc["memory"]["optimal"] == false);
}

TEST_CASE("cli: presets lists every preset and --format json is presets_to_json") {
  Run run = run_cli({"presets"});
  REQUIRE(run.exit == 0);
  const std::vector<std::string> lines = lines_of(run.out);
  REQUIRE(lines.size() == pase::gpu_presets().size() + 1);
  CHECK(lines.front() ==
        "id         name             TFLOP/s  memory GiB  GPUs/node  intra GB/s  inter GB/s  "
        "memory GB/s  FP8 TFLOP/s  USD/GPU-h");
  for (size_t i = 0; i < pase::gpu_presets().size(); ++i) {
    const pase::GpuPreset& p = pase::gpu_presets()[i];
    CAPTURE(p.id);
    const std::string& line = lines[i + 1];
    CHECK(starts_with(line, p.id + " "));
    CHECK(contains(line, "  " + p.name + " "));
    // The numbers right-aligned under their headings.
    const std::pair<std::string, double> columns[] = {
        {"TFLOP/s", p.tflops},
        {"memory GiB", p.memory_gib},
        {"GPUs/node", static_cast<double>(p.gpus_per_node)},
        {"intra GB/s", p.intra_node_gbps},
        {"inter GB/s", p.inter_node_gbps},
        {"memory GB/s", p.memory_gbps}};
    for (const auto& [heading, value] : columns) {
      const size_t end = lines.front().find(heading) + heading.size();
      const std::string number = printf_text("%g", value);
      REQUIRE(line.size() >= end);
      CHECK(line.substr(end - number.size() - 1, number.size() + 1) == " " + number);
    }
    // The price of a GPU-hour, to the cent, last.
    CHECK(p.gpu_hour_usd > 0);
    const std::string price = printf_text("%.2f", p.gpu_hour_usd);
    REQUIRE(line.size() > price.size());
    CHECK(line.ends_with(price));
    CHECK(line[line.size() - price.size() - 1] == ' ');
  }
  CHECK(contains(run.out,
                 "h100       H100 SXM             989          80          8         "
                 "450          50         3350         1979       2.99\n"));
  CHECK(contains(run.out,
                 "\nv100       V100 SXM2 32GB       125          32          8         "
                 "150        12.5          900            -       0.55\n"));

  run = run_cli({"presets", "--format", "json"});
  REQUIRE(run.exit == 0);
  CHECK(run.out == pase::presets_to_json());
  run = run_cli({"presets", "--format", "yaml"});
  CHECK(run.exit == 2);
  run = run_cli({"help"});
  REQUIRE(run.exit == 0);
  CHECK(contains(run.out, "  presets   list the GPU presets of --preset\n"));
  run = run_cli({"help", "presets"});
  REQUIRE(run.exit == 0);
  CHECK(starts_with(run.out, "usage: pase presets [--format text|json]"));
}

TEST_CASE("cli: plan, eval, compare and bench document the cluster and training flags") {
  const std::vector<std::string> flags = {
      "--preset NAME",         "--flops TF",        "--bandwidth GBS",   "--gpus-per-node G",
      "--intra-bandwidth GBS", "--memory GIB",      "--zero Z",          "--param-bytes N",
      "--grad-bytes",          "--optimizer-bytes", "--activation-bytes"};
  for (const std::string command : {"plan", "eval", "compare", "bench"}) {
    CAPTURE(command);
    const Run run = run_cli({command, "--help"});
    REQUIRE(run.exit == 0);
    for (const std::string& flag : flags) {
      CAPTURE(flag);
      const bool in_bench = flag.rfind("--preset", 0) == 0 || flag.rfind("--flops", 0) == 0 ||
                            flag.rfind("--bandwidth", 0) == 0 ||
                            flag.rfind("--gpus-per-node", 0) == 0 ||
                            flag.rfind("--intra-bandwidth", 0) == 0;
      CHECK(contains(run.out, flag) == (command != "bench" || in_bench));
    }
  }
}

TEST_CASE("cli: compare shows data parallelism over 80 GiB for Llama 3 8B on 8 H100s") {
  // 8,030,261,248 parameters at 2+2+12 bytes each are 119.6 GiB on every
  // device that holds the whole model, before any activation.
  const std::vector<std::string> args = {
      "compare", "--model",  "llama3-8b", "--batch",     "8", "--seq",        "2048", "--procs",
      "8",       "--preset", "h100",      "--mcmc-time", "0", "--cost-model", "paper"};
  const auto [text, doc] = run_text_and_json(args);
  const nlohmann::json& dp = doc["strategies"]["data_parallel"]["memory"];
  const nlohmann::json& pase_memory = doc["strategies"]["pase"]["memory"];
  const double parameters = 8030261248.0;
  CHECK(dp["fits"] == false);
  CHECK(dp["capacity_bytes"] == 80 * kGiB);
  CHECK(dp["params"].get<double>() >= 2 * parameters * 0.999);
  CHECK(dp["params"].get<double>() + dp["grads"].get<double>() + dp["optimizer"].get<double>() >=
        16 * parameters * 0.999);
  CHECK(dp["per_device_bytes"].get<double>() > 80 * kGiB);
  CHECK(pase_memory["fits"] == true);
  CHECK(pase_memory["per_device_bytes"].get<double>() <= 80 * kGiB);

  CHECK(contains(lines_of(text.out).front(), "on 8 devices in one node (989 TFLOP/s"));
  const std::string dp_row = line_starting(text.out, "data_parallel ");
  CHECK(contains(dp_row, after_space(pase::bytes_text(dp["per_device_bytes"].get<double>())) +
                             "  does not fit"));
  const std::string pase_row = line_starting(text.out, "pase ");
  CHECK(contains(pase_row,
                 after_space(pase::bytes_text(pase_memory["per_device_bytes"].get<double>()))));
  CHECK(!contains(pase_row, "does not fit"));
  CHECK(contains(text.out, "capacity 80 GiB per device\n"));
  CHECK(contains(
      text.out,
      "\npase is the cheapest strategy found that fits, proven optimal among those that fit\n"));
}

TEST_CASE("cli: compare under a cap notes a cheaper baseline that does not fit") {
  // RNNLM at 8 devices needs 2.1 GiB at its optimum; under 2 GiB the MCMC
  // search, which knows no cap, ends cheaper than PaSE and over it.
  const Run run = run_cli(
      {"compare", "--model", "rnnlm", "--memory", "2", "--mcmc-time", "0", "--format", "json"});
  REQUIRE(run.exit == 0);
  const nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  const double pase_cost = doc["strategies"]["pase"]["cost"].get<double>();
  CHECK(doc["strategies"]["pase"]["memory"]["fits"] == true);
  int cheaper = 0;
  for (const auto& entry : doc["strategies"].items()) {
    // Named, not a structured binding: CAPTURE reads them in a lambda.
    const auto& name = entry.key();
    const auto& s = entry.value();
    CAPTURE(name);
    if (name == "pase" || !(s["cost"].get<double>() < pase_cost * (1 - 1e-12))) continue;
    ++cheaper;
    CHECK(s["memory"]["fits"] == false);
    bool noted = false;
    for (const nlohmann::json& note : doc["notes"])
      noted |= starts_with(note.get<std::string>(), name + " costs ") &&
               contains(note.get<std::string>(),
                        "% less than pase but does not fit in 2 GiB per "
                        "device (it needs ");
    CHECK(noted);
  }
  CHECK(cheaper >= 1);
  for (const nlohmann::json& note : doc["notes"])
    CHECK(!contains(note.get<std::string>(), "internal inconsistency"));
  CHECK(contains(doc["strategies"]["pase"]["description"].get<std::string>(),
                 "fits in 2 GiB per device"));
}

TEST_CASE("cli: a compare sweep under a cap marks the strategies that do not fit") {
  Run run = run_cli({"compare", "--model", "rnnlm", "--sweep", "8,16", "--memory", "2",
                     "--mcmc-iterations", "0"});
  REQUIRE(run.exit == 0);
  CHECK(starts_with(run.out, "rnnlm (10 TFLOP/s, 16 GB/s links, 2 GiB per device): speedup"));
  // Data parallelism needs 7.5 GiB at 8 devices.
  CHECK(contains(line_starting(run.out, "      8 "), "e+12 !"));
  CHECK(contains(run.out,
                 "!: does not fit in 2 GiB per device (2+2+12 bytes per parameter, 2 "
                 "per activation, ZeRO 0)\n"));
  // Without a cap, no marks.
  run = run_cli({"compare", "--model", "rnnlm", "--sweep", "8,16", "--mcmc-iterations", "0"});
  REQUIRE(run.exit == 0);
  CHECK(!contains(run.out, "!"));
}

TEST_CASE("cli: --headroom sets the practice model's memory margin, and the memory lines add up") {
  // GPT-2 on 8 H100: 80 GiB, the framework's 3 and a margin of 20% (16 GiB).
  const std::vector<std::string> args = {"plan",  "--model",    "gpt2",    "--batch", "8",
                                         "--seq", "256",        "--procs", "8",       "--preset",
                                         "h100",  "--headroom", "0.2"};
  TextAndJson r = run_text_and_json(args);
  const std::string& out = r.text.out;
  CHECK(line_starting(out, "  reserved") ==
        "  reserved       3.0 GiB (framework and allocator, outside the total)");
  CHECK(line_starting(out, "  headroom") ==
        "  headroom       16.0 GiB (20% of the memory kept free, outside the total)");
  CHECK(line_starting(out, "  capacity") ==
        "  capacity       80 GiB, 61 GiB of it for the plan: fits");
  // Every part of the total has its line.
  const nlohmann::json& m = r.doc["memory"];
  // (Pairs, not structured bindings: clang 14's CAPTURE cannot name those.)
  for (const std::pair<std::string, std::string>& part :
       std::vector<std::pair<std::string, std::string>>{{"  parameters", "params"},
                                                        {"  gradients", "grads"},
                                                        {"  optimizer", "optimizer"},
                                                        {"  activations", "activations"},
                                                        {"  working", "working"}}) {
    const std::string& label = part.first;
    const std::string& key = part.second;
    CAPTURE(label);
    CHECK(starts_with(line_starting(out, label),
                      pad_to(label, 17) + pase::bytes_text(m[key].get<double>())));
  }
  CHECK(m["headroom_bytes"].get<double>() == 16 * kGiB);
  CHECK(m["device_bytes"].get<double>() == 80 * kGiB);
  CHECK(m["capacity_bytes"].get<double>() == 61 * kGiB);
  CHECK(r.doc["cluster"]["headroom"] == 0.2);

  // --headroom 0: the capacity of before, the memory less the reserve.
  Run bare = run_cli({"plan", "--model", "gpt2", "--batch", "8", "--seq", "256", "--procs", "8",
                      "--preset", "h100", "--headroom", "0"});
  REQUIRE(bare.exit == 0);
  CHECK(line_starting(bare.out, "  capacity") ==
        "  capacity       80 GiB, 77 GiB of it for the plan: fits");
  // The default: a tenth.
  Run plain = run_cli({"plan", "--model", "gpt2", "--batch", "8", "--seq", "256", "--procs", "8",
                       "--preset", "h100"});
  REQUIRE(plain.exit == 0);
  CHECK(line_starting(plain.out, "  capacity") ==
        "  capacity       80 GiB, 69 GiB of it for the plan: fits");

  // Bad values name the flag or the field.
  const std::pair<std::string, std::string> bad[] = {
      {"ten", "pase: --headroom: 'ten' is not a number"},
      {"-0.1", "pase: error: cluster.headroom: must be a fraction of the memory"},
      {"1", "pase: error: cluster.headroom: must be a fraction of the memory"},
      {"nan", "pase: error: cluster.headroom: must be a fraction of the memory"},
      {"0.97", "pase: error: cluster.headroom: the framework's reserve (3 GiB) and the headroom"}};
  for (const std::pair<std::string, std::string>& entry : bad) {
    const std::string& value = entry.first;
    const std::string& message = entry.second;
    CAPTURE(value);
    Run run = run_cli(
        {"plan", "--model", "gpt2", "--procs", "8", "--preset", "h100", "--headroom", value});
    CHECK(run.exit != 0);
    CHECK(run.out.empty());
    CHECK(starts_with(run.err, message));
  }
  // In the usage text of the commands that take a memory.
  for (const char* command : {"plan", "eval", "compare"}) {
    CAPTURE(command);
    Run help = run_cli({command, "--help"});
    CHECK(contains(help.out, "--headroom F"));
  }
}

TEST_CASE("cli: transformer on 64 H100s plans on 8 nodes and reports its memory") {
  // The acceptance check of issue 12: the preset's nodes and memory.
  Run run = run_cli({"plan", "--cost-model", "paper", "--model", "transformer", "--procs", "64",
                     "--preset", "h100"});
  REQUIRE(run.exit == 0);
  CHECK(starts_with(run.out,
                    "transformer: 204 vertices, 280 edges, 120,840,192 parameters on 64 devices as "
                    "8 nodes x 8 (989 TFLOP/s, 450 GB/s inside nodes, 50 GB/s between)\n"));
  CHECK(starts_with(line_starting(run.out, "memory "), "memory           "));
  CHECK(contains(line_starting(run.out, "memory "), " per device (2+2+12 bytes per parameter"));
  CHECK(line_starting(run.out, "  capacity") == "  capacity       80 GiB: fits");
  CHECK(contains(line_starting(run.out, "lower bound"), "proven optimal"));

  // Under 0.1 GiB nothing fits: the error names the least memory reachable.
  run = run_cli({"plan", "--cost-model", "paper", "--model", "transformer", "--procs", "64",
                 "--preset", "h100", "--memory", "0.1"});
  CHECK(run.exit == 1);
  CHECK(run.out.empty());
  const std::string prefix =
      "pase: error: cluster.memory_gib: no strategy fits in 0.1 GiB per device: the least memory "
      "any strategy reaches is ";
  const size_t at = run.err.find(prefix);
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(run.err.substr(at + prefix.size())) > 0.1);
}

TEST_CASE("cli: bench takes a preset's machine and nodes but not its memory cap") {
  Run run = run_cli({"bench", "--cost-model", "paper", "--models", "rnnlm", "--procs", "8",
                     "--preset", "h100", "--format", "json"});
  REQUIRE(run.exit == 0);
  const nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  REQUIRE(doc["cases"].size() == 1);
  pase::Result<pase::Graph> rnnlm = pase::build_model("rnnlm");
  REQUIRE(rnnlm.ok());
  pase::Cluster cluster = pase::apply_preset(pase::Cluster{}, *pase::find_preset("h100"));
  cluster.memory_gib = 0;
  pase::Result<pase::Plan> expected = pase::plan(*rnnlm, cluster);
  REQUIRE(expected.ok());
  CHECK(pase::testing::close(doc["cases"][0]["cost"].get<double>(), expected->cost));
  // The nodes count: the flat cluster at the preset's speeds costs otherwise.
  cluster.gpus_per_node = 0;
  cluster.intra_node_gbps = 0;
  pase::Result<pase::Plan> flat = pase::plan(*rnnlm, cluster);
  REQUIRE(flat.ok());
  CHECK(!pase::testing::close(flat->cost, expected->cost));
}

// ---- The summary (pase/summary.hpp) --------------------------------------------------

TEST_CASE("cli: plan starts with the summary, one row per group of its JSON, each layer once") {
  // The acceptance check of issue 14: the Transformer on 64 devices.
  const auto [text, doc] = run_text_and_json({"plan", "--model", "transformer", "--procs", "64"});
  const nlohmann::json& summary = doc["summary"];
  REQUIRE(summary.is_array());
  REQUIRE(!summary.empty());
  CHECK(summary.size() <= 16);

  // Every vertex in exactly one group.
  std::vector<int> seen(doc["vertices"].size(), 0);
  for (const nlohmann::json& group : summary) {
    for (const nlohmann::json& id : group["vertices"]) {
      REQUIRE(id.get<size_t>() < seen.size());
      ++seen[id.get<size_t>()];
    }
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(seen.size()));

  // The text: the header, a blank line, "summary  N groups ...", the column
  // heads, one row per group in the JSON's order, a blank line, the layer table.
  const std::vector<std::string> lines = lines_of(text.out);
  REQUIRE(lines.size() > summary.size() + 5);
  CHECK(lines[1].empty());
  CHECK(lines[2] ==
        "summary          " + std::to_string(summary.size()) + " groups of layers split alike");
  CHECK(starts_with(lines[3], "   cost  memory  devices  layers  op"));
  for (size_t k = 0; k < summary.size(); ++k) {
    CAPTURE(k);
    const std::string& row = lines[4 + k];
    const nlohmann::json& group = summary[k];
    // Built piece by piece (after_space): GCC 12 warns falsely on `" " + text`.
    CHECK(contains(row, after_space(after_space(group["label"].get<std::string>())) + " "));
    CHECK(contains(row, after_space(group["op"].get<std::string>()) + " "));
    CHECK(contains(row, after_space(std::to_string(group["vertices"].size())) + "  "));
    const size_t first = group["vertices"][0].get<size_t>();
    CHECK(contains(row, doc["vertices"][first]["name"].get<std::string>()));
  }
  CHECK(lines[4 + summary.size()].empty());
  CHECK(starts_with(lines[5 + summary.size()], "   id  layer"));
}

TEST_CASE("cli: the step time line says what it assumes") {
  const auto [text, doc] = run_text_and_json({"plan", "--model", "alexnet"});
  // 97098296512 FLOP-equivalents at 10 TFLOP/s (README).
  CHECK(doc["step_time_s"].get<double>() == doctest::Approx(9.7098296512e-3).epsilon(1e-12));
  CHECK(line_starting(text.out, "step time") ==
        "step time        9.71 ms (predicted: peak compute, no overlap)");
}

TEST_CASE("cli: emit checks a plan's source.args as the file's, and refuses standard input") {
  // A plan made from standard input: its source says "--graph -".
  const std::string config = hf_config("tiny-llama");
  const Run planned = run_cli({"plan", "--graph", "-", "--procs", "4", "--format", "json"}, config);
  REQUIRE_MESSAGE(planned.exit == 0, planned.err);
  nlohmann::json doc = nlohmann::json::parse(planned.out);
  REQUIRE(doc["source"]["args"] == nlohmann::json({"--graph", "-", "--procs", "4"}));
  const std::string from_stdin = scratch_file("emit-stdin.json", planned.out);
  // Emitting does not read standard input again (the run's is the config).
  Run run = run_cli({"emit", "--plan", from_stdin, "--to", "torchtitan"}, config);
  CHECK(run.exit == 1);
  CHECK(contains(run.err,
                 "emit-stdin.json: source.args[0]: the plan's graph was read from "
                 "standard input ('--graph -')"));
  // --graph FILE (or --model) given here replaces it.
  run = run_cli({"emit", "--plan", from_stdin, "--to", "torchtitan", "--graph", config});
  CHECK_MESSAGE(run.exit == 0, run.err);
  CHECK(contains(run.out, "torchtitan job configuration"));

  // Flags that are no graph or cluster flag, repeated flags and a source
  // that is not a list of strings: errors of the file, exit 1.
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{"--graph", config, "--procs", "4", "--format", "json"},
       "emit-bad.json: source.args[4]: '--format' is not a graph or cluster flag"},
      {{"--graph", config, "--procs", "4", "--procs", "8"},
       "emit-bad.json: source.args: --procs is given more than once"},
      {{"--graph", config, "--procs"}, "emit-bad.json: source.args[2]: --procs needs a value"},
      {{"--graph", 3}, "emit-bad.json: source.args[1]: must be a string, not 3"},
      {"--graph", "emit-bad.json: source.args: must be a list of strings"}};
  for (const auto& c : cases) {
    // Named, not bound: CAPTURE is a lambda (clang 14 cannot capture a
    // structured binding).
    const nlohmann::json& args = c.first;
    const std::string& message = c.second;
    CAPTURE(args.dump());
    doc["source"]["args"] = args;
    const std::string path = scratch_file("emit-bad.json", doc.dump());
    run = run_cli({"emit", "--plan", path, "--to", "megatron"});
    CHECK(run.exit == 1);
    CHECK_MESSAGE(contains(run.err, message), run.err);
  }
}
