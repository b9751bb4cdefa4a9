// Names from the input in the exported files (core/src/export/escape.cpp;
// core/docs/export.md, "Names in the exported files"): a graph and a layer
// named to break out of a comment or a string (a line break, a quote, TOML
// brackets, a terminal escape, NUL, bytes that are not UTF-8) give a JAX
// program, Megatron-LM arguments and a torchtitan TOML that differ from those
// of a plain name only in comment lines and in the JAX program's JSON
// literal, which reads back the names. tests/export/check_names.py parses
// the CLI's files with Python's and bash's own parsers.
#include <doctest/doctest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "export/escape.hpp"
#include "export_util.hpp"
#include "pase/export.hpp"
#include "pase/graph.hpp"
#include "pase/layout.hpp"
#include "pase/llm.hpp"
#include "pase/pipeline.hpp"
#include "test_util.hpp"

using namespace pase;
using nlohmann::json;

namespace {

const std::vector<std::string> kEscapeHostile = {
    "evil\nimport os; os.system(\"echo PWNED\") #",
    "a\rb",
    "'",
    "\"",
    "\"\"\"",
    "'''",
    "]]\n[training]\nsteps = 1\n#",
    "\x1b]0;x\x07",
    std::string("a\0b", 3),
    "\xff\xfe",
    "back\\slash\\",
    "$(touch /tmp/x)",
    "`touch /tmp/x`",
};

// Whether `text` is valid UTF-8 without a control character but the line
// feed (C0, DEL, C1); `why` says where it is not.
bool escape_clean(const std::string& text, std::string& why) {
  for (size_t i = 0; i < text.size();) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    size_t n = b(i) < 0x80                    ? 1
               : b(i) >= 0xc2 && b(i) <= 0xdf ? 2
               : b(i) >= 0xe0 && b(i) <= 0xef ? 3
               : b(i) >= 0xf0 && b(i) <= 0xf4 ? 4
                                              : 0;
    for (size_t k = 1; n > 0 && k < n; ++k)
      if (i + k >= text.size() || (b(i + k) & 0xc0) != 0x80) n = 0;
    if (n == 0) {
      why = "not UTF-8 at byte " + std::to_string(i);
      return false;
    }
    const bool control = (n == 1 && ((b(i) < 0x20 && b(i) != '\n') || b(i) == 0x7f)) ||
                         (n == 2 && b(i) == 0xc2 && b(i + 1) <= 0x9f);
    if (control) {
      why = "a control character at byte " + std::to_string(i);
      return false;
    }
    i += n;
  }
  return true;
}

std::vector<std::string> escape_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The three exports of a small Llama named `name` whose loss layer is named
// `name` too, laid out dp=8 but for the loss, left unsplit so that the
// Megatron-LM and torchtitan headers name it among the differences.
struct EscapeExports {
  std::string jax, megatron, torchtitan;
};

EscapeExports escape_exports(const std::string& name) {
  ImportOptions options;
  options.batch = 8;
  options.seq = 64;
  options.name = name;
  Result<GraphSpec> spec = import_llm_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 128,
          "vocab_size": 256, "max_position_embeddings": 256})",
      options);
  REQUIRE_MESSAGE(spec.ok(), testing::why(spec));
  spec->name = name;
  bool renamed = false;
  for (LayerSpec& l : spec->layers) {
    if (l.name != "loss") continue;
    l.name = name;
    renamed = true;
  }
  REQUIRE(renamed);
  Result<Graph> g = build_graph(std::move(*spec));
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  Result<Layout> layout = parse_layout("tp=1 pp=1 dp=8 mbs=1 gbs=8");
  REQUIRE_MESSAGE(layout.ok(), testing::why(layout));
  Result<LayoutStrategy> s = layout_strategy(*g, testing::practice_h100(8), *layout);
  REQUIRE_MESSAGE(s.ok(), testing::why(s));
  Result<PipelinePlan> p = evaluate_pipeline(*g, s->cluster, s->strategy);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  for (const Vertex& v : p->graph.vertices)
    if (v.name == name) p->plan.strategy[v.id] = Config(v.dims.size(), 1);
  const PlanView view{&*g, &p->graph, &s->cluster, &p->plan, &p->pipeline};
  return {testing::export_ok(ExportTarget::kJax, view).text,
          testing::export_ok(ExportTarget::kMegatron, view).text,
          testing::export_ok(ExportTarget::kTorchtitan, view).text};
}

// `text` against the same export of a plain name: valid UTF-8, no control
// character but the line feed, as many lines, and every line that differs
// a comment line (or, in the JAX program, one of its JSON literal).
void escape_check(const std::string& text, const std::string& plain, bool jax) {
  std::string why;
  CHECK_MESSAGE(escape_clean(text, why), why);
  const std::vector<std::string> lines = escape_lines(text), plains = escape_lines(plain);
  REQUIRE(lines.size() == plains.size());
  bool in_literal = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (jax && plains[i] == "\"\"\")") in_literal = false;
    if (lines[i] != plains[i])
      CHECK_MESSAGE((lines[i].rfind("#", 0) == 0 || in_literal),
                    "line " << i + 1 << ": " << lines[i]);
    if (jax && plains[i] == "PLAN = json.loads(r\"\"\"") in_literal = true;
  }
}

}  // namespace

TEST_CASE("export escape: a name's text in a comment is one printable line") {
  CHECK(comment_text("gpt2 (small)") == "gpt2 (small)");
  CHECK(comment_text("a\nb\rc") == "a\\x0ab\\x0dc");
  CHECK(comment_text(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(comment_text("\x1b]0;x\x07\x7f") == "\\x1b]0;x\\x07\\x7f");
  CHECK(comment_text("back\\slash") == "back\\\\slash");
  // Bytes that are not UTF-8: stray, overlong, truncated, a surrogate.
  CHECK(comment_text("\xff\xfe") == "\\xff\\xfe");
  CHECK(comment_text("\xc0\xaf") == "\\xc0\\xaf");
  CHECK(comment_text("x\xe2\x82") == "x\\xe2\\x82");
  CHECK(comment_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");
  // UTF-8 is kept, but for C1 controls, separators and bidirectional controls.
  CHECK(comment_text("Größe 模型 \xf0\x9f\x98\x80") == "Größe 模型 \xf0\x9f\x98\x80");
  CHECK(comment_text("\xc2\x85|\xe2\x80\xa8|\xe2\x80\xae|\xef\xbb\xbf") ==
        "\\u{0085}|\\u{2028}|\\u{202e}|\\u{feff}");
  // Quotes and the shell's expansions are harmless in a comment.
  CHECK(comment_text("\"\"\" ''' $(x) `x` ]]") == "\"\"\" ''' $(x) `x` ]]");
}

TEST_CASE("export escape: the JSON of a name is ASCII, its bad bytes replaced") {
  CHECK(json_ascii(json_detail::Json("a\n\"\"\"\x1b\xc3\xa9")) ==
        "\"a\\n\\\"\\\"\\\"\\u001b\\u00e9\"");
  CHECK(json_ascii(json_detail::Json("\xff")) == "\"\\ufffd\"");
}

TEST_CASE("export escape: hostile graph and layer names emit all three targets as valid files") {
  const EscapeExports plain = escape_exports("plain");
  for (const std::string& name : kEscapeHostile) {
    CAPTURE(json(name).dump(-1, ' ', true, json::error_handler_t::replace));
    const EscapeExports e = escape_exports(name);
    escape_check(e.jax, plain.jax, true);
    escape_check(e.megatron, plain.megatron, false);
    escape_check(e.torchtitan, plain.torchtitan, false);
    // The names read back from the JAX program's literal, bad bytes replaced.
    const std::string shown =
        json::parse(json(name).dump(-1, ' ', false, json::error_handler_t::replace))
            .get<std::string>();
    const json data = testing::export_embedded(e.jax);
    CHECK(data["graph"] == shown);
    bool layer = false;
    for (const json& l : data["variants"]["full"]["layers"]) layer = layer || l["name"] == shown;
    CHECK(layer);
    // The headers name both, escaped.
    CHECK(testing::contains(e.jax, "# Training steps of " + comment_text(name) + " as "));
    CHECK(testing::contains(e.megatron, "# Megatron-LM launch for " + comment_text(name)));
    CHECK(testing::contains(e.torchtitan, "#   the plan differs at " + comment_text(name) + ": "));
  }
}
