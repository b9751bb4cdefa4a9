// torchtitan job TOML as a Layout (pase/layout_import.hpp; the mapping in
// core/docs/practice-model.md, "Importing a layout"). The rules cited are
// those of torchtitan's torchtitan/config/job_config.py,
// distributed/parallel_dims.py, distributed/pipeline_parallel.py and
// distributed/activation_checkpoint.py.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pase/layout_import.hpp"
#include "plan/layout_import_detail.hpp"
#include "util/text.hpp"

// toml++ (Debian's libtomlplusplus-dev) header only and without exceptions:
// parse() returns a parse_result, so a malformed file is a value here as
// every bad input is, in the native build and the WebAssembly one alike.
#define TOML_EXCEPTIONS 0
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

namespace pase {
namespace {

// ASCII letters lowered (a schedule's name).
std::string toml_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

Error toml_error(std::string message, std::string_view field = {}) {
  return Error{std::move(message),
               field.empty() ? "layout.torchtitan" : "layout.torchtitan:" + std::string(field)};
}

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
    const std::string name = toml_lower(*schedule);  // torch's get_schedule_class() ignores case
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
      const std::optional<int64_t> every = import_detail::integer_text(*option);
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

}  // namespace pase
