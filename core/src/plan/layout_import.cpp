// Megatron-LM arguments and torchtitan job TOML as a Layout
// (pase/layout_import.hpp; the mapping in core/docs/practice-model.md,
// "Importing a layout"). The engines' rules cited are those of
// Megatron-LM's megatron/training/arguments.py and torchtitan's
// torchtitan/config/job_config.py, distributed/parallel_dims.py,
// distributed/pipeline_parallel.py and distributed/activation_checkpoint.py.
#include "pase/layout_import.hpp"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/text.hpp"

// toml++ (Debian's libtomlplusplus-dev) header only and without exceptions:
// parse() returns a parse_result, so a malformed file is a value here as
// every bad input is, in the native build and the WebAssembly one alike.
#define TOML_EXCEPTIONS 0
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

namespace pase {
namespace {

// The items of parse_layout(): a `key = value` line with one of them is ours.
constexpr std::string_view kLayoutItems[] = {
    "tp",        "pp",  "dp",  "cp",  "ep",       "sp",      "zero",
    "recompute", "mbs", "gbs", "vpp", "pp_first", "pp_last", "recompute_blocks",
    "dp_shard",  "etp"};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// A whole decimal integer, or nullopt (a sign, a fraction, trailing text).
std::optional<int64_t> integer_text(std::string_view text) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return n;
}

// ---- Megatron-LM --------------------------------------------------------------------------------

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
    } else if (is_space(c) || c == ';' || c == '|' || c == '&' || c == '(' || c == ')') {
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

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

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
    if (listed(kSwitches, name)) {
      if (eq != std::string::npos) return megatron_error("is a switch; it takes no value", name);
      flags[name] = "";
    } else if (listed(kCountFlags, name) || listed(kWordFlags, name)) {
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
  const std::optional<int64_t> n = integer_text(it->second);
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

Error toml_error(std::string message, std::string_view field = {}) {
  return Error{std::move(message),
               field.empty() ? "layout.torchtitan" : "layout.torchtitan:" + std::string(field)};
}

// ---- torchtitan ---------------------------------------------------------------------------------

const char* toml_type_name(toml::node_type type) {
  switch (type) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

// One table of the job file, its keys read by type, each error naming
// "table.key".
class TomlTable {
 public:
  TomlTable(const toml::table* table, std::string name) : table_(table), name_(std::move(name)) {}
  bool present() const { return table_ != nullptr; }
  bool has(std::string_view key) const { return table_ && table_->contains(key); }
  std::string field(std::string_view key) const { return name_ + "." + std::string(key); }

  // An integer key, `fallback` when absent; at least `low`.
  Result<int64_t> integer(std::string_view key, int64_t fallback, int64_t low) const {
    const toml::node* node = table_ ? table_->get(key) : nullptr;
    if (node == nullptr) return fallback;
    const std::optional<int64_t> n = node->value_exact<int64_t>();
    if (!n)
      return toml_error(std::string("must be an integer, not ") + toml_type_name(node->type()),
                        field(key));
    if (*n < low)
      return toml_error(std::to_string(*n) + " is below " + std::to_string(low), field(key));
    return *n;
  }
  // A degree: at least 1 and at most kMaxDevices.
  Result<int64_t> degree(std::string_view key) const {
    Result<int64_t> n = integer(key, 1, 1);
    if (n && *n > kMaxDevices)
      return toml_error(std::to_string(*n) + " is more than the " + std::to_string(kMaxDevices) +
                            " devices a cluster may have",
                        field(key));
    return n;
  }
  Result<std::string> string(std::string_view key, std::string_view fallback) const {
    const toml::node* node = table_ ? table_->get(key) : nullptr;
    if (node == nullptr) return std::string(fallback);
    const std::optional<std::string> s = node->value_exact<std::string>();
    if (!s)
      return toml_error(std::string("must be a string, not ") + toml_type_name(node->type()),
                        field(key));
    return *s;
  }

 private:
  const toml::table* table_;
  std::string name_;
};

// torchtitan's split of `blocks` decoder blocks over `stages` pipeline
// stages (generate_llm_fqn_per_model_part() in
// distributed/pipeline_parallel.py): the embedding counts as `first_less`
// blocks and the head as `last_less`; the stages share blocks + both evenly,
// the first ones one more where it does not divide; its errors are its own.
Result<std::vector<int64_t>> torchtitan_stage_blocks(int64_t stages, int64_t blocks,
                                                     int64_t first_less, int64_t last_less,
                                                     const TomlTable& par) {
  const int64_t effective = blocks + first_less + last_less;
  if (stages > effective)
    return toml_error(std::to_string(stages) + " stages are more than the " +
                          std::to_string(effective) +
                          " blocks with the embedding and head weights (torchtitan refuses it)",
                      par.field("pipeline_parallel_degree"));
  const int64_t per = effective / stages, extra = effective % stages;
  if (first_less > per)
    return toml_error(std::to_string(first_less) + " is more than the " + std::to_string(per) +
                          " blocks a stage has at least (torchtitan refuses it)",
                      par.field("pipeline_parallel_first_stage_less_layers"));
  if (last_less > per)
    return toml_error(std::to_string(last_less) + " is more than the " + std::to_string(per) +
                          " blocks a stage has at least (torchtitan refuses it)",
                      par.field("pipeline_parallel_last_stage_less_layers"));
  std::vector<int64_t> out;
  int64_t left = blocks;
  for (int64_t s = 0; s < stages; ++s) {
    int64_t take = per + (s < extra ? 1 : 0);
    if (s == 0) take -= first_less;
    if (s == stages - 1 && stages > 1) take -= last_less;
    take = std::min(take, left);
    out.push_back(take);
    left -= take;
  }
  return out;
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

Result<Layout> layout_from_torchtitan_toml(std::string_view text, int64_t devices, int64_t blocks) {
  if (devices < 1) return Error{"must be at least 1", "cluster.devices"};
  toml::parse_result parsed = toml::parse(text);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return toml_error("line " + std::to_string(e.source().begin.line) + ", column " +
                      std::to_string(e.source().begin.column) + ": " +
                      std::string(e.description()));
  }
  const toml::table& root = parsed.table();
  // [parallelism], or its keys pasted without the header.
  const toml::table* par_table = root["parallelism"].as_table();
  if (par_table == nullptr) {
    for (auto&& [key, node] : root) {
      const std::string_view k = key.str();
      if (k.find("_parallel_") != std::string_view::npos || k == "fsdp_reshard_after_forward")
        par_table = &root;
    }
  }
  const TomlTable par(par_table, "parallelism");
  const TomlTable ac(root["activation_checkpoint"].as_table(), "activation_checkpoint");
  const TomlTable training(root["training"].as_table(), "training");
  // Without [parallelism], torchtitan's defaults (FSDP over every rank)
  // where another table of a layout is there; else nothing was read.
  if (!par.present() && !ac.present() && !training.present())
    return toml_error(
        "no [parallelism], [activation_checkpoint] or [training] table, nor any key of "
        "[parallelism] (tensor_parallel_degree, ...)");

  Result<int64_t> replicate = par.degree("data_parallel_replicate_degree");
  if (!replicate) return replicate.error();
  Result<int64_t> shard = par.integer("data_parallel_shard_degree", -1, -1);
  if (!shard) return shard.error();
  if (*shard == 0)
    return toml_error("is -1 (the rest) or at least 1", par.field("data_parallel_shard_degree"));
  if (*shard > kMaxDevices)
    return toml_error(std::to_string(*shard) + " is more than the " + std::to_string(kMaxDevices) +
                          " devices a cluster may have",
                      par.field("data_parallel_shard_degree"));
  Layout l;
  const std::pair<const char*, int64_t*> degrees[] = {{"tensor_parallel_degree", &l.tp},
                                                      {"pipeline_parallel_degree", &l.pp},
                                                      {"context_parallel_degree", &l.cp},
                                                      {"expert_parallel_degree", &l.ep}};
  for (const auto& [key, out] : degrees) {
    Result<int64_t> d = par.degree(key);
    if (!d) return d.error();
    *out = *d;
  }
  Result<int64_t> etp = par.degree("expert_tensor_parallel_degree");
  if (!etp) return etp.error();

  // The world is replicate x shard x cp x tp x pp (parallel_dims.py);
  // shard -1 takes what the others leave. Each degree is at most
  // kMaxDevices: a product above the devices stops before it overflows.
  int64_t others = 1;
  for (int64_t d : {*replicate, l.tp, l.pp, l.cp}) {
    others *= d;
    if (others > devices) break;
  }
  const std::string product_text = "data_parallel_replicate_degree " + std::to_string(*replicate) +
                                   " x tensor_parallel_degree " + std::to_string(l.tp) +
                                   " x pipeline_parallel_degree " + std::to_string(l.pp) +
                                   " x context_parallel_degree " + std::to_string(l.cp);
  if (*shard == -1) {
    if (others > devices || devices % others != 0)
      return toml_error("-1 takes the devices the others leave, but " + product_text +
                            " does not divide the " + std::to_string(devices) + " devices",
                        par.field("data_parallel_shard_degree"));
    *shard = devices / others;
  } else if (others > devices || others * *shard != devices) {
    return toml_error(product_text + " x data_parallel_shard_degree " + std::to_string(*shard) +
                      " is not the " + std::to_string(devices) + " devices");
  }
  l.dp = *replicate * *shard;
  // torchtitan applies sequence parallelism with every tensor-parallel plan
  // (its parallelize.py: SequenceParallel on the norms); it has no switch.
  l.sp = l.tp > 1;
  // The experts' tensor degree matters only with expert parallelism.
  if (l.ep > 1 && *etp != l.tp) l.etp = *etp;

  // FSDP: fully sharded when shard > 1, the weights kept after the forward
  // pass (ZeRO 2) with "never" or, by default, with a pipeline
  // (parallelize.py's apply_fsdp); HSDP (replicate > 1 too) as zero=3 over
  // dp_shard ranks; DDP (shard 1) no sharding.
  Result<std::string> reshard = par.string("fsdp_reshard_after_forward", "default");
  if (!reshard) return reshard.error();
  if (*reshard != "default" && *reshard != "always" && *reshard != "never")
    return toml_error(quoted_text(*reshard) + " is not default, always or never",
                      par.field("fsdp_reshard_after_forward"));
  if (*shard > 1 && *replicate > 1) {
    if (*reshard == "never")
      return toml_error(
          "'never' with HSDP (data_parallel_replicate_degree above 1) has no layout: a layout's "
          "HSDP is zero=3, which reshards",
          par.field("fsdp_reshard_after_forward"));
    l.zero = 3;
    l.dp_shard = *shard;
  } else if (*shard > 1) {
    l.zero = *reshard == "never" || (*reshard == "default" && l.pp > 1) ? 2 : 3;
  }

  // The pipeline: the schedule's virtual stages and the blocks of each stage.
  if (l.pp > 1) {
    Result<std::string> schedule = par.string("pipeline_parallel_schedule", "1F1B");
    if (!schedule) return schedule.error();
    const std::string name = lower(*schedule);  // torch's get_schedule_class() ignores case
    if (name != "1f1b" && name != "interleaved1f1b")
      return toml_error(
          quoted_text(*schedule) + " is not a schedule the planner prices: 1F1B or Interleaved1F1B",
          par.field("pipeline_parallel_schedule"));
    const bool looped = name == "interleaved1f1b";
    Result<std::string> csv = par.string("pipeline_parallel_schedule_csv", "");
    if (!csv) return csv.error();
    if (!csv->empty())
      return toml_error("a schedule from a file has no layout",
                        par.field("pipeline_parallel_schedule_csv"));
    if (par.has("module_fqns_per_model_part"))
      return toml_error("stages given module by module have no layout: give pp_first and pp_last",
                        par.field("module_fqns_per_model_part"));
    Result<int64_t> first_less = par.integer("pipeline_parallel_first_stage_less_layers", 1, 0);
    if (!first_less) return first_less.error();
    Result<int64_t> last_less = par.integer("pipeline_parallel_last_stage_less_layers", 1, 0);
    if (!last_less) return last_less.error();
    Result<int64_t> per_stage = par.integer("pipeline_parallel_layers_per_stage", 0, 1);
    if (!per_stage) return per_stage.error();
    // Stages per rank: from the blocks of a stage when given (ceiling
    // division, pipeline_llm()), else 1, or 2 for a looped schedule.
    int64_t stages_per_rank = looped ? 2 : 1;
    if (*per_stage > 0) {
      const std::string field = par.field("pipeline_parallel_layers_per_stage");
      if (blocks < 1) return toml_error("needs the model's decoder blocks to count stages", field);
      const int64_t stages = (blocks + *first_less + *last_less + *per_stage - 1) / *per_stage;
      if (stages % l.pp != 0)
        return toml_error(std::to_string(stages) + " stages do not divide over the " +
                              std::to_string(l.pp) + " pipeline ranks (torchtitan refuses it)",
                          field);
      stages_per_rank = stages / l.pp;
      if (!looped && stages_per_rank != 1)
        return toml_error("1F1B runs 1 stage per rank, not " + std::to_string(stages_per_rank),
                          field);
      if (looped && stages_per_rank < 2)
        return toml_error("Interleaved1F1B runs at least 2 stages per rank, not 1", field);
    }
    l.vpp = stages_per_rank;
    // One stage per rank: torchtitan's first and last stage as pp_first and
    // pp_last. Virtual stages: a layout has no uneven ones, so they are even.
    if (l.vpp == 1 && (*first_less > 0 || *last_less > 0)) {
      if (blocks < 1)
        return toml_error(
            "the blocks of each stage need the model's decoder blocks (torchtitan gives the first "
            "and last stage pipeline_parallel_first/last_stage_less_layers fewer)",
            par.field("pipeline_parallel_degree"));
      Result<std::vector<int64_t>> split =
          torchtitan_stage_blocks(l.pp, blocks, *first_less, *last_less, par);
      if (!split) return split.error();
      Layout uniform;
      uniform.pp = l.pp;
      Result<std::vector<int64_t>> even = stage_blocks(uniform, blocks);
      if (!even || even->front() != split->front()) l.pp_first = split->front();
      if (!even || even->back() != split->back()) l.pp_last = split->back();
    }
  }

  // Recomputation ([activation_checkpoint]; none when the table is absent).
  if (ac.present()) {
    Result<std::string> mode = ac.string("mode", "selective");
    if (!mode) return mode.error();
    Result<std::string> option = ac.string("selective_ac_option", "2");
    if (!option) return option.error();
    if (*mode == "full") {
      l.recompute = Recompute::kFull;
    } else if (*mode == "selective" && *option == "op") {
      l.recompute = Recompute::kSelective;
    } else if (*mode == "selective") {
      // Every N-th block of a rank recomputed in full (_apply_layer_sac);
      // 0 and 1: every block. As a layout: the same count of blocks, the
      // first of each stage, bounded by the smallest stage.
      const std::optional<int64_t> every = integer_text(*option);
      if (!every || *every < 0)
        return toml_error(quoted_text(*option) + " is not op or a block count",
                          ac.field("selective_ac_option"));
      l.recompute = Recompute::kFull;
      if (*every > 1) {
        if (blocks < 1)
          return toml_error("needs the model's decoder blocks to count the blocks recomputed",
                            ac.field("selective_ac_option"));
        std::vector<int64_t> sizes;
        if (l.vpp == 1) {
          Result<std::vector<int64_t>> s = stage_blocks(l, blocks);
          if (!s) return s.error();
          sizes = *s;
        } else {
          sizes = {(blocks + l.pp * l.vpp - 1) / (l.pp * l.vpp), blocks / (l.pp * l.vpp)};
        }
        const int64_t largest = *std::max_element(sizes.begin(), sizes.end());
        const int64_t smallest = *std::min_element(sizes.begin(), sizes.end());
        const int64_t k = std::min(largest / *every, smallest);
        if (k == 0) l.recompute = Recompute::kNone;
        if (k > 0 && k < largest) l.recompute_blocks = k;
      }
    } else if (*mode == "memory_budget") {
      return toml_error("the compiler's memory budget has no layout: none, selective or full",
                        ac.field("mode"));
    } else if (*mode != "none") {
      return toml_error(quoted_text(*mode) + " is not none, selective, full or memory_budget",
                        ac.field("mode"));
    }
  }

  // The batch ([training]): local_batch_size per data-parallel rank, split
  // into pipeline micro-batches with a pipeline; the global batch defaults
  // to local x dp. Without [training]: one sample per micro-batch and the
  // graph's batch.
  Result<int64_t> micro = par.integer("pipeline_parallel_microbatch_size", 1, 1);
  if (!micro) return micro.error();
  if (training.present()) {
    Result<int64_t> local = training.integer("local_batch_size", 8, 1);
    if (!local) return local.error();
    Result<int64_t> global = training.integer("global_batch_size", -1, -1);
    if (!global) return global.error();
    if (*global == 0)
      return toml_error("is -1 (local x dp) or at least 1", training.field("global_batch_size"));
    if (l.pp > 1 && *local % *micro != 0)
      return toml_error(std::to_string(*micro) + " does not divide local_batch_size " +
                            std::to_string(*local) + " (torchtitan refuses it)",
                        par.field("pipeline_parallel_microbatch_size"));
    l.mbs = l.pp > 1 ? *micro : *local;
    if (__builtin_mul_overflow(*local, l.dp, &l.gbs))
      return toml_error("local_batch_size x dp overflows", training.field("local_batch_size"));
    if (*global > 0) l.gbs = *global;
  } else if (l.pp > 1) {
    l.mbs = *micro;
  }
  return l;
}

LayoutSyntax layout_syntax(std::string_view text) {
  // Line by line, comments left out: a table header or a key of another
  // name assigned is TOML; a word that starts with "--" an argument list.
  bool assigns_other_key = false, has_flag = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
    while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
    if (line.empty()) continue;
    const auto key_char = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '-' || c == '.' || c == '"';
    };
    // [table] or [[array of tables]], nothing else on the line.
    if (line.front() == '[' && line.back() == ']') {
      std::string_view inner = line.substr(1, line.size() - 2);
      if (!inner.empty() && inner.front() == '[' && inner.back() == ']')
        inner = inner.substr(1, inner.size() - 2);
      if (!inner.empty() &&
          std::all_of(inner.begin(), inner.end(), [&](char c) { return key_char(c) || c == ' '; }))
        return LayoutSyntax::kTorchtitan;
    }
    size_t k = 0;
    while (k < line.size() && key_char(line[k])) ++k;
    const std::string_view key = line.substr(0, k);
    size_t eq = k;
    while (eq < line.size() && (line[eq] == ' ' || line[eq] == '\t')) ++eq;
    if (k > 0 && key.front() != '-' && eq < line.size() && line[eq] == '=' &&
        !listed(kLayoutItems, key))
      assigns_other_key = true;
    for (size_t i = 0; i + 1 < line.size(); ++i)
      if (line.substr(i, 2) == "--" && (i == 0 || is_space(line[i - 1]))) has_flag = true;
  }
  if (has_flag) return LayoutSyntax::kMegatron;
  return assigns_other_key ? LayoutSyntax::kTorchtitan : LayoutSyntax::kLayout;
}

Result<Layout> read_any_layout(std::string_view text, int64_t devices, int64_t blocks) {
  switch (layout_syntax(text)) {
    case LayoutSyntax::kMegatron:
      return layout_from_megatron_args(text, devices, blocks);
    case LayoutSyntax::kTorchtitan:
      return layout_from_torchtitan_toml(text, devices, blocks);
    case LayoutSyntax::kLayout:
      break;
  }
  return parse_layout(text);
}

}  // namespace pase
