// Megatron-LM arguments as a Layout (pase/layout_import.hpp; the mapping in
// core/docs/practice-model.md, "Importing a layout"). The rules cited are
// those of Megatron-LM's megatron/training/arguments.py.
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pase/layout_import.hpp"
#include "plan/layout_import_detail.hpp"
#include "util/text.hpp"

namespace pase {
namespace {

Error megatron_error(std::string message, std::string_view flag = {}) {
  return Error{std::move(message),
               flag.empty() ? "layout.megatron" : "layout.megatron:" + std::string(flag)};
}

// The words of a pasted command line as bash splits them: blanks, newlines
// and the operators ; | & ( ) separate words (so `ARGS=(` and `)` of a bash
// array are words of their own); a backslash before a newline continues the
// line, before another character quotes it; '...' is literal, "..." keeps
// backslash escapes; a # that starts a word comments out the rest of the
// line. Variables are not expanded: `$TP` stays a word, which a flag that
// needs a number then refuses by name.
std::vector<std::string> shell_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  const auto end_word = [&] {
    if (in_word) words.push_back(word);
    word.clear();
    in_word = false;
  };
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\\') {
      if (text.substr(i + 1, 1) == "\n") {
        i += 2;
      } else if (text.substr(i + 1, 2) == "\r\n") {
        i += 3;
      } else {
        if (i + 1 < text.size()) word += text[i + 1];
        in_word = true;
        i += 2;
      }
    } else if (import_detail::is_space(c) || c == ';' || c == '|' || c == '&' || c == '(' ||
               c == ')') {
      end_word();
      ++i;
    } else if (c == '#' && !in_word) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      const size_t stop = close == std::string_view::npos ? text.size() : close;
      word += text.substr(i + 1, stop - i - 1);
      in_word = true;
      i = stop + 1;
    } else if (c == '"') {
      in_word = true;
      ++i;
      while (i < text.size() && text[i] != '"') {
        if (text[i] == '\\' && i + 1 < text.size() &&
            std::string_view("\"\\$`\n").find(text[i + 1]) != std::string_view::npos) {
          if (text[i + 1] != '\n') word += text[i + 1];
          i += 2;
        } else {
          word += text[i++];
        }
      }
      ++i;
    } else {
      word += c;
      in_word = true;
      ++i;
    }
  }
  end_word();
  return words;
}

// The flags that set a layout (megatron/training/arguments.py and the
// config dataclasses it turns into flags): those that take a count, those
// that take a word, and switches. --virtual-pipeline-model-parallel-size is
// the name of --num-virtual-stages-per-pipeline-rank in Megatron-LM's first
// interleaved schedule, still found in older scripts.
constexpr std::string_view kCountFlags[] = {"--tensor-model-parallel-size",
                                            "--pipeline-model-parallel-size",
                                            "--context-parallel-size",
                                            "--expert-model-parallel-size",
                                            "--expert-tensor-parallel-size",
                                            "--num-layers-per-virtual-pipeline-stage",
                                            "--num-virtual-stages-per-pipeline-rank",
                                            "--virtual-pipeline-model-parallel-size",
                                            "--decoder-first-pipeline-num-layers",
                                            "--decoder-last-pipeline-num-layers",
                                            "--recompute-num-layers",
                                            "--micro-batch-size",
                                            "--global-batch-size",
                                            "--num-layers"};
constexpr std::string_view kWordFlags[] = {"--recompute-granularity", "--recompute-method",
                                           "--data-parallel-sharding-strategy"};
constexpr std::string_view kSwitches[] = {"--sequence-parallel", "--use-distributed-optimizer",
                                          "--recompute-activations", "--use-torch-fsdp2",
                                          "--use-megatron-fsdp"};

// The flags of the list that set a layout, each with its last value ("" for
// a switch).
using Flags = std::map<std::string, std::string, std::less<>>;

Result<Flags> megatron_flags(std::string_view args) {
  const std::vector<std::string> words = shell_words(args);
  Flags flags;
  for (size_t w = 0; w < words.size(); ++w) {
    const std::string& word = words[w];
    if (word.size() <= 2 || !word.starts_with("--")) continue;  // a launcher's word, a value
    const size_t eq = word.find('=');
    const std::string name = word.substr(0, eq);
    if (import_detail::listed(kSwitches, name)) {
      if (eq != std::string::npos) return megatron_error("is a switch; it takes no value", name);
      flags[name] = "";
    } else if (import_detail::listed(kCountFlags, name) ||
               import_detail::listed(kWordFlags, name)) {
      if (eq != std::string::npos) {
        flags[name] = word.substr(eq + 1);
      } else if (w + 1 < words.size() && !words[w + 1].starts_with("--")) {
        flags[name] = words[++w];
      } else {
        return megatron_error("needs a value", name);
      }
    }
    // Any other flag (the model's, the data's, torchrun's) is not a layout's.
  }
  return flags;
}

// A flag's count: nullopt when not given; at most kMaxDevices for a degree.
Result<std::optional<int64_t>> megatron_count(const Flags& flags, std::string_view flag,
                                              bool degree) {
  const auto it = flags.find(flag);
  if (it == flags.end()) return std::optional<int64_t>();
  const std::optional<int64_t> n = import_detail::integer_text(it->second);
  if (!n || *n < 1)
    return megatron_error(quoted_text(it->second) + " is not a positive integer", flag);
  if (degree && *n > kMaxDevices)
    return megatron_error(std::to_string(*n) + " is more than the " + std::to_string(kMaxDevices) +
                              " devices a cluster may have",
                          flag);
  return n;
}

// A flag's word, one of `choices` (argparse's choices=), or nullopt.
Result<std::optional<std::string>> megatron_word(const Flags& flags, std::string_view flag,
                                                 std::initializer_list<std::string_view> choices) {
  const auto it = flags.find(flag);
  if (it == flags.end()) return std::optional<std::string>();
  std::string known;
  for (std::string_view c : choices) {
    if (it->second == c) return std::optional<std::string>(it->second);
    known += (known.empty() ? "" : ", ") + std::string(c);
  }
  return megatron_error(quoted_text(it->second) + " is not one of " + known, flag);
}

}  // namespace

Result<Layout> layout_from_megatron_args(std::string_view args, int64_t devices, int64_t blocks) {
  if (devices < 1) return Error{"must be at least 1", "cluster.devices"};
  Result<Flags> read = megatron_flags(args);
  if (!read) return read.error();
  const Flags& flags = *read;
  if (flags.empty())
    return megatron_error(
        "no flag of a layout (--tensor-model-parallel-size, --pipeline-model-parallel-size, "
        "--micro-batch-size, ...) in the arguments");

  // Every count first, so that a malformed one is named whatever else is wrong.
  std::map<std::string_view, std::optional<int64_t>> n;
  for (std::string_view flag : kCountFlags) {
    const bool degree =
        flag.ends_with("-size") && flag != "--micro-batch-size" && flag != "--global-batch-size";
    Result<std::optional<int64_t>> v = megatron_count(flags, flag, degree);
    if (!v) return v.error();
    n[flag] = *v;
  }
  const auto has = [&](std::string_view flag) { return flags.count(flag) > 0; };

  Layout l;
  l.tp = n["--tensor-model-parallel-size"].value_or(1);
  l.pp = n["--pipeline-model-parallel-size"].value_or(1);
  l.cp = n["--context-parallel-size"].value_or(1);
  l.ep = n["--expert-model-parallel-size"].value_or(1);
  l.etp = n["--expert-tensor-parallel-size"].value_or(0);  // Megatron-LM's default: tp
  l.pp_first = n["--decoder-first-pipeline-num-layers"].value_or(0);
  l.pp_last = n["--decoder-last-pipeline-num-layers"].value_or(0);
  // Megatron-LM turns sequence parallelism off without tensor parallelism.
  l.sp = has("--sequence-parallel") && l.tp > 1;

  // dp is what the world leaves (each degree is at most kMaxDevices, so the
  // product does not overflow).
  const int64_t model = l.tp * l.pp * l.cp;
  if (devices % model != 0)
    return megatron_error("--tensor-model-parallel-size " + std::to_string(l.tp) +
                          " x --pipeline-model-parallel-size " + std::to_string(l.pp) +
                          " x --context-parallel-size " + std::to_string(l.cp) + " = " +
                          std::to_string(model) + " does not divide the " +
                          std::to_string(devices) + " devices");
  l.dp = devices / model;

  // Virtual stages: at most one of the ways to give them (arguments.py
  // asserts it); by the blocks of a virtual stage only when the stages are
  // even.
  const std::string_view vpp_flags[] = {"--num-layers-per-virtual-pipeline-stage",
                                        "--num-virtual-stages-per-pipeline-rank",
                                        "--virtual-pipeline-model-parallel-size"};
  std::string_view vpp_flag;
  for (std::string_view flag : vpp_flags) {
    if (!has(flag)) continue;
    if (!vpp_flag.empty()) return megatron_error("not with " + std::string(vpp_flag), flag);
    vpp_flag = flag;
  }
  if (vpp_flag == vpp_flags[0]) {
    if (l.pp_first > 0 || l.pp_last > 0)
      return megatron_error(
          "not with --decoder-first/last-pipeline-num-layers; Megatron-LM asks for "
          "--num-virtual-stages-per-pipeline-rank there",
          vpp_flag);
    const int64_t layers = n["--num-layers"].value_or(blocks);
    if (layers == 0)
      return megatron_error("needs --num-layers (or the model's decoder blocks) to count stages",
                            vpp_flag);
    const int64_t per_stage = *n[vpp_flag];
    if (layers % l.pp != 0 || (layers / l.pp) % per_stage != 0)
      return megatron_error("the " + std::to_string(layers) + " layers do not split into " +
                                std::to_string(l.pp) + " stages of a multiple of " +
                                std::to_string(per_stage) + " layers",
                            vpp_flag);
    l.vpp = layers / l.pp / per_stage;
  } else if (!vpp_flag.empty()) {
    l.vpp = *n[vpp_flag];
  }

  // Recomputation: --recompute-activations is selective whatever the
  // granularity says (arguments.py sets it so).
  Result<std::optional<std::string>> granularity =
      megatron_word(flags, "--recompute-granularity", {"full", "selective"});
  if (!granularity) return granularity.error();
  Result<std::optional<std::string>> method =
      megatron_word(flags, "--recompute-method", {"uniform", "block"});
  if (!method) return method.error();
  std::optional<std::string> kind = *granularity;
  if (has("--recompute-activations")) kind = "selective";
  if (kind == "selective") {
    if (*method) return megatron_error("not with selective recomputation", "--recompute-method");
    l.recompute = Recompute::kSelective;
  } else if (kind == "full") {
    l.recompute = Recompute::kFull;
    // block: the first k blocks of each (virtual) stage; uniform: every
    // block, checkpointed in chunks of k.
    if (*method == "block") {
      if (!n["--recompute-num-layers"])
        return megatron_error("needs --recompute-num-layers", "--recompute-method");
      l.recompute_blocks = *n["--recompute-num-layers"];
    }
  }

  // The optimizer's sharding: Megatron-FSDP by its strategy, torch FSDP2
  // fully sharded, the distributed optimizer ZeRO 1.
  if (has("--use-megatron-fsdp")) {
    Result<std::optional<std::string>> strategy =
        megatron_word(flags, "--data-parallel-sharding-strategy",
                      {"no_shard", "optim", "optim_grads", "optim_grads_params"});
    if (!strategy) return strategy.error();
    const std::string s = strategy->value_or("optim_grads_params");  // arguments.py's default
    l.zero = s == "no_shard" ? 0 : s == "optim" ? 1 : s == "optim_grads" ? 2 : 3;
  } else if (has("--use-torch-fsdp2")) {
    l.zero = 3;
  } else if (has("--use-distributed-optimizer")) {
    l.zero = 1;
  }

  // Megatron-LM's global batch defaults to one micro-batch per rank; with
  // neither flag the layout takes the graph's batch.
  l.mbs = n["--micro-batch-size"].value_or(1);
  if (n["--global-batch-size"]) {
    l.gbs = *n["--global-batch-size"];
  } else if (n["--micro-batch-size"]) {
    l.gbs = l.mbs * l.dp;
  }
  return l;
}

}  // namespace pase
