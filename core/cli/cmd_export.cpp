// pase export: a built-in network as the pase-graph/1 document that plans to
// exactly the built-in result.
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "flags.hpp"
#include "inputs.hpp"
#include "pase/graph.hpp"
#include "pase/models.hpp"
#include "pase/result.hpp"
#include "report.hpp"

namespace pase_cli {

std::string export_usage() {
  return "usage: pase export --model NAME [--batch B] [--seq S] [--vocab-padding M]\n"
         "                   [--output FILE]\n\n"
         "Writes the network as a pase-graph/1 document (standard output by default);\n"
         "planning the file gives exactly the built-in result.\n\n"
         "  --model NAME        a built-in network (see 'pase models')\n"
         "  --batch B           batch size (default: the model's)\n"
         "  --seq S             sequence length (default: the model's; none for the CNNs)\n"
         "  --vocab-padding M   a language model's vocabulary padded to a multiple of M\n"
         "                      (default 128; 1: exact; core/docs/llm.md)\n"
         "  --output FILE       write to FILE instead of standard output\n";
}

int run_export(const Args& args) {
  Flags flags;
  const std::vector<FlagSpec> specs = {{"--model", true},
                                       {"--batch", true},
                                       {"--seq", true},
                                       {"--vocab-padding", true},
                                       {"--output", true}};
  if (auto message = parse_flags(args, specs, flags)) return usage_error("export", *message);
  if (!flags.has("--model")) return usage_error("export", "missing --model NAME");
  GraphSource source;
  if (auto failure = graph_source_from_flags(flags, source)) return failure->report("export");

  pase::Result<pase::GraphSpec> spec =
      pase::model_spec(source.model, source.batch, source.seq, source.vocab_multiple());
  if (!spec) return input_error(spec.error());
  const std::string text = pase::write_graph(*spec);
  return write_output(flags.get("--output"), text);
}

}  // namespace pase_cli
