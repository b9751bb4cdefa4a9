// pase import: an ONNX model or a Hugging Face config.json as the
// pase-graph/1 document it translates to (import.hpp, core/docs/import.md;
// llm.hpp, core/docs/llm.md), to read, edit or plan later.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "flags.hpp"
#include "inputs.hpp"
#include "pase/graph.hpp"
#include "pase/import.hpp"
#include "pase/result.hpp"
#include "report.hpp"

namespace pase_cli {

std::string import_usage() {
  return "usage: pase import FILE [--dim NAME=SIZE ...] [--batch B] [--seq S]\n"
         "                   [--vocab-padding M] [--output FILE]\n\n"
         "Translates an ONNX model (e.g. from torch.onnx.export) or a Hugging Face\n"
         "config.json (llama, mistral, qwen2, gpt2, mixtral) to a pase-graph/1 document,\n"
         "written to standard output by default. Only the model's structure is read; an\n"
         "ONNX model's weights are skipped, so a file of any size imports quickly.\n"
         "Planning the document gives the result of planning the model ('pase plan\n"
         "--graph FILE' reads the model directly too). The graph is named after the\n"
         "file's stem, a config.json after its folder.\n\n"
         "  FILE                the ONNX model or config.json, told apart by content\n"
         "                      ('-': standard input)\n"
         "  --dim NAME=SIZE     size of a named (dynamic) dimension of an ONNX model's\n"
         "                      inputs; repeatable\n"
         "  --batch B           the leading (batch) dimension of an ONNX model's first\n"
         "                      input, named or fixed in the file (default: the file's);\n"
         "                      the batch of a config (default 32)\n"
         "  --seq S             the sequence length of a config (default: its\n"
         "                      max_position_embeddings, at most 8192)\n"
         "  --vocab-padding M   a config's vocabulary padded to a multiple of M, as\n"
         "                      Megatron-LM pads it (default 128; 1: exact)\n"
         "  --output FILE       write to FILE instead of standard output\n";
}

int run_import(const Args& args) {
  Flags flags;
  std::vector<std::string> files;
  const std::vector<FlagSpec> specs = {{"--dim", true, true},
                                       {"--batch", true},
                                       {"--seq", true},
                                       {"--vocab-padding", true},
                                       {"--output", true}};
  if (auto message = parse_flags(args, specs, flags, &files)) {
    return usage_error("import", *message);
  }
  if (files.empty()) return usage_error("import", "missing the model FILE (ONNX or config.json)");
  if (files.size() > 1) return usage_error("import", "unexpected argument '" + files[1] + "'");

  // --dim with a config file is a usage error, as with --graph; --seq with
  // an ONNX model is the importer's error at "seq" (and --dim with a config
  // on standard input at "dims.NAME"), under the file's name.
  const std::string& path = files.front();
  if (flags.has("--dim") && is_config_file(path)) {
    return usage_error("import",
                       "--dim applies only to an ONNX model; a Hugging Face config takes --batch "
                       "and --seq");
  }
  pase::ImportOptions options;
  if (auto failure = dims_from_flags(flags, options.dims)) return failure->report("import");
  if (auto failure = positive_from_flag(flags, "--batch", "batch", options.batch)) {
    return failure->report("import");
  }
  if (auto failure = positive_from_flag(flags, "--seq", "seq", options.seq)) {
    return failure->report("import");
  }
  if (flags.has("--vocab-padding") && !is_config_file(path) && path != "-") {
    return usage_error("import", "--vocab-padding applies only to a Hugging Face config");
  }
  if (auto failure =
          positive_from_flag(flags, "--vocab-padding", "vocab_padding", options.vocab_multiple)) {
    return failure->report("import");
  }

  pase::Result<pase::GraphSpec> spec = import_file(path, options);
  if (!spec) return input_error(spec.error());
  // The document is checked as loading it will check it: a translation the
  // planner refuses is reported here, not when the file is planned.
  pase::Result<pase::Graph> graph = pase::build_graph(*spec);
  if (!graph) return input_error(in_file(path, graph.error()));

  const std::string text = pase::write_graph(*spec);
  return write_output(flags.get("--output"), text);
}

}  // namespace pase_cli
