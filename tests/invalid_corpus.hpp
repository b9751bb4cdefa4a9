// The invalid-input corpus of tests/invalid/ (see tests/invalid/README.md):
// the manifest cases.json read into structs, and the text each case gives to
// an entry point. Shared by invalid_test.cpp (the library) and cli_test.cpp
// (the CLI); tests/wasm/invalid.test.mjs and tests/web/invalid.test.mjs read
// the same manifest.
#pragma once

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace pase_test {

struct InvalidCase {
  std::string name;
  // Exactly one of file / request / generate, or none (a CLI-only case).
  std::string file;         // a pase-graph/1 document, relative to the corpus
  std::string request;      // a plan request, relative to the corpus
  nlohmann::json generate;  // {"kind": "nested" | "padded" | "layers", ...}
  // Request fields under which a valid graph file is planned; the error then
  // comes from plan(), not from loading.
  std::optional<nlohmann::json> plan;
  // The error is in the JSON text itself (syntax, size, depth, a repeated
  // key): every entry point reports it the same way, whatever the text is for.
  bool document = false;
  std::string where;
  std::string message;
  // The module and parse_plan_request() get a graph inside a request, where
  // its errors move under "graph" (default "graph." + where, same message).
  std::optional<std::string> module_where, module_message;
  // The CLI: exit status (0: the CLI does not run this case), extra arguments
  // ("{corpus}" stands for the corpus folder) and overrides of where/message.
  int cli_exit = 0;
  std::vector<std::string> cli_args;
  std::optional<std::string> cli_where, cli_message;

  bool is_graph() const { return !file.empty() || !generate.is_null(); }
  bool is_request() const { return !request.empty(); }
};

inline std::string read_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::string corpus_dir() { return PASE_INVALID_DIR; }

// Replaces "{corpus}" by the corpus folder.
inline std::string expand(std::string text) {
  const std::string key = "{corpus}";
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
    text.replace(at, key.size(), corpus_dir());
    at += corpus_dir().size();
  }
  return text;
}

inline std::vector<InvalidCase> load_invalid_cases() {
  const nlohmann::json manifest = nlohmann::json::parse(read_binary(corpus_dir() + "/cases.json"));
  std::vector<InvalidCase> cases;
  for (const nlohmann::json& j : manifest.at("cases")) {
    InvalidCase c;
    c.name = j.at("name").get<std::string>();
    c.file = j.value("file", "");
    c.request = j.value("request", "");
    if (j.contains("generate")) c.generate = j.at("generate");
    if (j.contains("plan")) c.plan = j.at("plan");
    c.document = j.value("document", false);
    c.where = j.value("where", "");
    c.message = j.value("message", "");
    if (j.contains("module_where")) c.module_where = j.at("module_where").get<std::string>();
    if (j.contains("module_message")) c.module_message = j.at("module_message").get<std::string>();
    c.cli_exit = j.value("cli_exit", 0);
    for (const auto& arg : j.value("cli_args", nlohmann::json::array())) {
      c.cli_args.push_back(expand(arg.get<std::string>()));
    }
    if (j.contains("cli_where")) c.cli_where = expand(j.at("cli_where").get<std::string>());
    if (j.contains("cli_message")) c.cli_message = j.at("cli_message").get<std::string>();
    cases.push_back(std::move(c));
  }
  return cases;
}

// A generated document (too large to commit). The JavaScript drivers build
// the same texts.
inline std::string generated_text(const nlohmann::json& spec) {
  const std::string kind = spec.at("kind").get<std::string>();
  if (kind == "nested") {
    // Arrays inside "meta", so that nothing but the depth is wrong.
    const size_t depth = spec.at("depth").get<size_t>();
    return R"({"format": "pase-graph/1", "layers": [], "meta": {"deep": )" +
           std::string(depth, '[') + std::string(depth, ']') + "}}\n";
  }
  if (kind == "padded") {
    // A valid graph followed by spaces up to the size.
    std::string text = R"({"format": "pase-graph/1", "inputs": {"x": [8, 8]}, )"
                       R"("layers": [{"name": "fc", "op": "FC", "inputs": ["x"], "units": 8}]})";
    text.resize(spec.at("bytes").get<size_t>(), ' ');
    return text;
  }
  if (kind == "layers") {
    const size_t count = spec.at("count").get<size_t>();
    std::string text = R"({"format": "pase-graph/1", "inputs": {"x": [8, 8]}, "layers": [)";
    for (size_t i = 0; i < count; ++i) {
      if (i > 0) text += ",\n";
      text +=
          R"({"name": "l)" + std::to_string(i) + R"(", "op": "FC", "inputs": ["x"], "units": 8})";
    }
    return text + "]}\n";
  }
  throw std::runtime_error("unknown generated kind " + kind);
}

// The text of a graph or request case.
inline std::string case_text(const InvalidCase& c) {
  if (!c.file.empty()) return read_binary(corpus_dir() + "/" + c.file);
  if (!c.request.empty()) return read_binary(corpus_dir() + "/" + c.request);
  return generated_text(c.generate);
}

// A graph document inside a plan request, spliced in as text the way the page
// does it (GraphSource.requestFields in web/source.js), so the request holds
// exactly the file's bytes.
inline std::string wrap_graph(const std::string& graph_text,
                              const nlohmann::json& fields = {{"cluster", {{"devices", 1}}}}) {
  std::string request = "{\"graph\": " + graph_text + "\n";
  for (const auto& [key, value] : fields.items()) {
    request += ", " + nlohmann::json(key).dump() + ": " + value.dump();
  }
  return request + "}";
}

}  // namespace pase_test
