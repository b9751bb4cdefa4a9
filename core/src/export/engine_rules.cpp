// The engines' start-up rules that a layout can break
// (export/engine_rules.hpp; core/docs/export.md, "The engines' start-up
// rules"). Each rule is the check of the engine's file in its `source`:
// Megatron-LM core_v0.19.0, torchtitan v0.2.2 (and PyTorch's pipelining
// schedules, which torchtitan runs). The nearest layout that breaks none is
// in export/engine_rules_nearest.cpp.
#include "export/engine_rules.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "export/engine_rules_detail.hpp"
#include "pase/cluster.hpp"

namespace pase {
namespace engine_rules_detail {
namespace {

std::string rn(int64_t n) { return std::to_string(n); }

// torchtitan's data_parallel_shard_degree for the layout: DDP (zero 0)
// replicates over dp, FSDP (zero 1 to 3) shards over dp, HSDP over dp_shard.
int64_t rules_titan_dp_shard(const Layout& l) {
  if (l.zero == 0) return 1;
  return l.zero == 3 && l.dp_shard > 0 ? l.dp_shard : l.dp;
}

// Megatron-LM's checks of the first, middle and last stages' blocks
// (arguments.py; transformer_config.py with --decoder-first/last-pipeline-num-layers):
// an empty string when they pass, else why not.
std::string rules_megatron_split(int64_t blocks, int64_t pp, int64_t first, int64_t last) {
  if (first == 0 && last == 0)
    return blocks % pp == 0 ? ""
                            : rn(blocks) + " decoder blocks do not divide into " + rn(pp) +
                                  " stages (\"Number of layers should be divisible by the "
                                  "pipeline-model-parallel size\")";
  const int64_t middle = pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const int64_t rest = blocks - first - last;
  if (middle < 0 || rest < 0 || (rest > 0) != (middle > 0))
    return rn(rest) + " blocks are left for " + rn(std::max<int64_t>(middle, 0)) +
           " middle stages (\"Mismatch: ... middle layers remaining but ... middle PP stages "
           "available\")";
  if (middle > 0 && rest % middle != 0)
    return "the " + rn(rest) + " blocks between the first and last stage do not divide into " +
           rn(middle) +
           " middle stages (\"number of layers at middle stage ... must be divisible "
           "by the middle pipeline model parallel size\")";
  return "";
}

}  // namespace

std::vector<EngineRefusal> EngineRules::check(const Layout& l) const {
  std::vector<EngineRefusal> out;
  if (target == ExportTarget::kJax) return out;
  const bool mg = megatron();
  const auto refuse = [&](const char* rule, std::string message, const char* mg_source,
                          const char* tt_source) {
    out.push_back({rule, std::string(engine()) + " refuses this layout: " + std::move(message),
                   mg ? mg_source : tt_source});
  };

  // Degrees of at least 1, as both engines assert before anything else,
  // and at most a cluster's devices: the products below are then of
  // positive numbers, and those of two degrees cannot overflow.
  bool degrees_ok = l.mbs >= 1 && l.gbs >= 1 && seq >= 1 && l.etp >= 0 && l.etp <= kMaxDevices &&
                    l.zero >= 0 && l.zero <= 3 && l.pp_first >= 0 && l.pp_last >= 0 &&
                    l.dp_shard >= 0 && l.recompute_blocks >= 0;
  for (int64_t d : {l.tp, l.pp, l.dp, l.cp, l.ep, l.vpp})
    if (d < 1 || d > kMaxDevices) degrees_ok = false;
  if (!degrees_ok) {
    refuse("degrees",
           "tp, pp, dp, cp, ep and vpp must be 1 to " + rn(kMaxDevices) +
               ", mbs, gbs and the sequence at least 1, zero 0 to 3, and etp, pp_first, "
               "pp_last, dp_shard and recompute_blocks not negative",
           "megatron/training/arguments.py", "torchtitan/distributed/parallel_dims.py");
    return out;
  }

  // torchrun starts nnodes x nproc-per-node ranks: the devices fill whole
  // nodes, or one node in part.
  if (gpus_per_node > 0 && devices > gpus_per_node && devices % gpus_per_node != 0)
    refuse("nodes",
           rn(devices) + " GPUs are not whole nodes of " + rn(gpus_per_node) +
               " (torchrun runs --nnodes x --nproc-per-node ranks)",
           "torch/distributed/run.py", "torch/distributed/run.py");

  const int64_t world = rules_product({l.tp, l.pp, l.dp, l.cp});
  if (world != devices) {
    refuse(
        "world-size",
        "tp " + rn(l.tp) + " x pp " + rn(l.pp) + " x dp " + rn(l.dp) + " x cp " + rn(l.cp) +
            " is " + (world < 0 ? std::string("more than 2^63") : rn(world)) + ", not the " +
            rn(devices) + " GPUs" +
            (mg ? " (\"world size (...) is not divisible by total_model_size\"; its data-parallel "
                  "size is the world size over tp x pp x cp)"
                : " (\"Invalid parallel dims: dp_replicate * dp_shard * cp * tp * pp != "
                  "WORLD_SIZE\")"),
        "megatron/training/arguments.py", "torchtitan/distributed/parallel_dims.py");
    // The rules below multiply the degrees: without the world size they
    // could overflow, and the layout is refused already.
    return out;
  }

  const int64_t heads = config.num_heads,
                kv = config.num_kv_heads > 0 ? config.num_kv_heads : heads;
  if (mg ? heads % l.tp != 0 || (kv % l.tp != 0 && l.tp % kv != 0)
         : heads % l.tp != 0 || kv % l.tp != 0)
    refuse("heads",
           mg ? rn(heads) + " query heads and " + rn(kv) + " key-value heads with tp " + rn(l.tp) +
                    " (\"num_attention_heads must be a multiple of tensor_model_parallel_size\"; "
                    "\"num_query_groups must be a multiple or divisor of "
                    "tensor_model_parallel_size\")"
              : rn(heads) + " query heads and " + rn(kv) + " key-value heads with tp " + rn(l.tp) +
                    ": its tensor parallelism splits both projections tp ways and reshapes each "
                    "rank's part into whole heads, so tp must divide both",
           "megatron/core/transformer/transformer_config.py",
           "torchtitan/models/llama3/model/model.py");

  // Megatron-LM's column- and row-parallel layers divide their width by
  // the degree (megatron/core/utils.py divide(): "... is not divisible by
  // ..."); torchtitan's DTensor splits an uneven width unevenly.
  if (mg) {
    const bool moe = config.num_experts > 0;
    const int64_t by = moe ? rules_expert_tp(l) : l.tp;
    if (config.intermediate_size % by != 0)
      refuse("mlp-width",
             "the MLP width " + rn(config.intermediate_size) + " split " + rn(by) + " ways (" +
                 (moe ? "etp" : "tp") + ") (\"" + rn(config.intermediate_size) +
                 " is not divisible by " + rn(by) + "\")",
             "megatron/core/tensor_parallel/layers.py", "");
  }

  const int64_t blocks = config.num_layers;
  if (mg) {
    std::string why;
    if (l.vpp > 1 && (l.pp_first > 0 || l.pp_last > 0))
      why =
          "--num-layers-per-virtual-pipeline-stage takes stages alike, without "
          "--decoder-first/last-pipeline-num-layers";
    else if (l.pp > 1 || l.pp_first > 0 || l.pp_last > 0)
      why = rules_megatron_split(blocks, l.pp, l.pp_first, l.pp_last);
    if (!why.empty()) refuse("pipeline-layers", why, "megatron/training/arguments.py", "");
  }

  if (l.vpp > 1) {
    if (l.pp == 1)
      refuse("virtual-stages",
             "virtual stages (vpp " + rn(l.vpp) + ") need a pipeline" +
                 (mg ? " (\"pipeline-model-parallel size should be greater than 1 with "
                       "interleaved schedule\")"
                     : ": pipeline_parallel_degree 1 runs no schedule"),
             "megatron/core/parallel_state.py", "torchtitan/distributed/pipeline_parallel.py");
    else if (mg ? blocks % (l.pp * l.vpp) != 0 : blocks < l.pp * l.vpp)
      refuse("virtual-stages",
             mg ? rn(blocks) + " blocks do not divide into pp " + rn(l.pp) + " x vpp " + rn(l.vpp) +
                      " chunks (\"number of layers per pipeline stage must be "
                      "divisible number of layers per virtual pipeline stage\")"
                : rn(blocks) + " blocks cannot fill pp " + rn(l.pp) + " x vpp " + rn(l.vpp) +
                      " stages (\"Number of stages ... cannot be greater than effective layers\")",
             "megatron/training/arguments.py", "torchtitan/distributed/pipeline_parallel.py");
  }

  const int64_t per_step = rules_product({l.mbs, l.dp});
  const bool batch_ok = per_step > 0 && l.gbs % per_step == 0;
  if (l.vpp > 1 && l.pp > 1 && batch_ok) {
    const int64_t m = l.gbs / per_step;
    // Megatron-LM groups pp micro-batches per virtual stage
    // (microbatch_group_size_per_vp_stage); PyTorch's interleaved 1F1B
    // runs max(1, M / pp) rounds of equal micro-batches.
    const int64_t rounds = std::max<int64_t>(1, m / l.pp);
    if (mg ? m < l.pp || m % l.pp != 0 : m % rounds != 0)
      refuse("interleave-microbatches",
             rn(m) + " micro-batches with pp " + rn(l.pp) +
                 (mg ? ": the interleaved schedule needs a multiple of pp (\"The number of "
                       "contiguous micro-batches in a virtual pipeline stage should range in "
                       "[PP, M]\"; \"The remainder of M ... should be 0\")"
                     : ": \"Interleaved 1F1B requires the number of microbatches to be a "
                       "multiple of the number of rounds (" +
                           rn(rounds) + ")\""),
             "megatron/core/pipeline_parallel/schedules.py",
             "torch/distributed/pipelining/schedules.py");
  }

  if (l.sp && l.tp == 1)
    refuse("sequence-parallel",
           mg ? "sequence parallelism with tp 1: it turns it off (\"Disabling sequence parallelism "
                "because tensor model parallelism is disabled\"; \"Cannot use sequence "
                "parallelism without tensor parallelism\")"
              : "sequence parallelism with tp 1: it has none without tensor parallelism",
           "megatron/training/arguments.py", "torchtitan/models/llama3/infra/parallelize.py");
  else if (!mg && !l.sp && l.tp > 1)
    refuse("sequence-parallel",
           "tp " + rn(l.tp) +
               " without sequence parallelism: its tensor parallelism always runs "
               "the norms sequence-parallel (apply_tp(): SequenceParallel())",
           "", "torchtitan/models/llama3/infra/parallelize.py");
  else if (mg && !l.sp && l.tp > 1 && l.ep > 1)
    refuse("sequence-parallel",
           "expert parallelism with tp " + rn(l.tp) +
               " needs sequence parallelism (\"When using expert parallelism and tensor "
               "parallelism for training, sequence parallelism must be used\")",
           "megatron/core/model_parallel_config.py", "");

  if (!batch_ok)
    refuse("batch",
           "the global batch " + rn(l.gbs) + " is not a multiple of mbs " + rn(l.mbs) + " x dp " +
               rn(l.dp) +
               (mg ? " (\"global batch size is not divisible by micro batch size times data "
                     "parallel size\")"
                   : " (\"global batch size must be multiple of local batch size times "
                     "data-parallel degree\")"),
           "megatron/core/num_microbatches_calculator.py", "torchtitan/train.py");

  if (mg) {
    if (l.cp > 1 && seq % (2 * l.cp) != 0)
      refuse("sequence-length",
             "the sequence " + rn(seq) + " with cp " + rn(l.cp) +
                 " (\"seq-length should be a multiple of 2 * context-parallel-size if "
                 "context-parallel-size > 1\")",
             "megatron/training/arguments.py", "");
    else if (l.sp && l.tp > 1 && (seq % l.cp != 0 || (seq / l.cp) % l.tp != 0))
      refuse("sequence-length",
             "the sequence " + rn(seq) + " over cp " + rn(l.cp) + " does not split tp " + rn(l.tp) +
                 " ways for sequence parallelism (\"First dimension of the tensor should be "
                 "divisible by tensor parallel size\")",
             "megatron/core/tensor_parallel/mappings.py", "");
  } else if (seq % (l.tp * 2 * l.cp) != 0) {
    refuse("sequence-length",
           "the sequence " + rn(seq) + " is not a multiple of tp " + rn(l.tp) + " x 2 x cp " +
               rn(l.cp) +
               " (\"Sequence length must be divisible by the product of TP degree and "
               "2 * CP degree\")",
           "", "torchtitan/models/llama3/infra/parallelize.py");
  }

  const int64_t experts = config.num_experts;
  if (l.ep > 1) {
    const int64_t region = mg ? rules_product({l.tp, l.dp, l.cp})
                              : rules_product({rules_titan_dp_shard(l), l.cp, l.tp});
    const int64_t carved = rules_product({l.ep, rules_expert_tp(l)});
    if (experts == 0)
      refuse("expert-parallel",
             "ep " + rn(l.ep) +
                 " on a model without experts (\"num_experts must be non None to "
                 "use expert model parallelism\")",
             "megatron/training/arguments.py", "torchtitan/distributed/parallel_dims.py");
    else if (experts % l.ep != 0)
      refuse("expert-parallel",
             rn(experts) + " experts do not divide ep " + rn(l.ep) + " ways" +
                 (mg ? " (\"Number of experts should be a multiple of expert model parallel_size\")"
                     : " (expert_parallel.py: num_tokens_per_expert.view(ep_degree, -1))"),
             "megatron/training/arguments.py", "torchtitan/distributed/expert_parallel.py");
    else if (region % carved != 0)
      refuse("expert-parallel",
             mg ? "ep " + rn(l.ep) + " x etp " + rn(rules_expert_tp(l)) +
                      " does not divide tp x dp x cp " + rn(region) +
                      " (\"world_size is not divisible by "
                      "expert_tensor_model_pipeline_parallel size\")"
                : "ep " + rn(l.ep) + " x etp " + rn(rules_expert_tp(l)) +
                      " does not divide data_parallel_shard_degree x cp x tp " + rn(region) +
                      " (build_mesh(): efsdp = dp_shard * cp * tp // (etp * ep))",
             "megatron/core/parallel_state.py", "torchtitan/distributed/parallel_dims.py");
  }
  if (!mg && l.ep > 1 && experts > 0 && rules_expert_tp(l) != 1 && rules_expert_tp(l) != l.tp)
    refuse("expert-tensor",
           "etp " + rn(rules_expert_tp(l)) + " with tp " + rn(l.tp) +
               " (\"Currently we only support ETP=TP or ETP=1\")",
           "", "torchtitan/distributed/parallel_dims.py");

  // torchtitan's DDP (zero 0: data_parallel_replicate_degree = dp) runs only
  // when data parallelism is the only dimension; with cp or ep above 1 it
  // applies FSDP instead. (torchtitan's main branch lifts the check after
  // v0.2.2, in its commit e1847f4; the rule keeps the released versions'.)
  if (!mg && l.zero == 0 && l.dp > 1 && (l.tp > 1 || l.pp > 1 || l.cp > 1 || l.ep > 1))
    refuse("ddp",
           "DDP (zero 0, data_parallel_replicate_degree " + rn(l.dp) +
               ") with another parallel dimension (\"DDP has not supported > 1D parallelism\")",
           "", "torchtitan/models/llama3/infra/parallelize.py");
  // ZeRO-1 shards the optimizer state only; torchtitan's data parallelism is
  // DDP, FSDP (stage 3, or 2 with fsdp_reshard_after_forward = "never") or
  // HSDP.
  if (!mg && l.zero == 1)
    refuse("zero-stage",
           "zero 1: its data parallelism is DDP, FSDP or HSDP (data_parallel_replicate_degree, "
           "data_parallel_shard_degree, fsdp_reshard_after_forward); none shards the optimizer "
           "state alone",
           "", "torchtitan/config/job_config.py");

  if (l.zero == 3 && l.dp_shard > 0) {
    if (l.dp % l.dp_shard != 0)
      refuse("hsdp",
             "dp_shard " + rn(l.dp_shard) + " does not divide dp " + rn(l.dp) +
                 (mg ? " (\"Data parallel size should be divisible by partial DistOpt shard "
                       "factor\")"
                     : " (\"Invalid parallel dims: dp_replicate * dp_shard * cp * tp * pp != "
                       "WORLD_SIZE\")"),
             "megatron/core/parallel_state.py", "torchtitan/distributed/parallel_dims.py");
    else if (mg && experts > 0) {
      // Megatron-FSDP's hybrid sharding: --num-distributed-optimizer-instances
      // dp / dp_shard copies, which must also divide the experts' data ranks.
      const int64_t instances = l.dp / l.dp_shard;
      const int64_t expert_dp =
          rules_product({l.tp, l.dp, l.cp}) / rules_product({l.ep, rules_expert_tp(l)});
      if (expert_dp > 0 && expert_dp % instances != 0)
        refuse("hsdp",
               rn(instances) + " weight copies (dp / dp_shard) do not divide the " + rn(expert_dp) +
                   " expert data-parallel ranks (\"Expert data parallel size "
                   "should be divisible by partial DistOpt shard factor\")",
               "megatron/core/parallel_state.py", "");
    }
  }
  // Not refused: recompute_blocks under torchtitan, which takes one mode for
  // every block; the export emits mode = "full" (never lighter than the
  // plan) and the layout is priced so. Megatron-LM pads the vocabulary to a
  // multiple of --make-vocab-size-divisible-by x tp (megatron/training/vocab_utils.py),
  // so no vocabulary is refused; torchtitan splits it unevenly.
  return out;
}

}  // namespace engine_rules_detail

std::vector<EngineRefusal> engine_refusals(ExportTarget target, const LlmConfig& config,
                                           int64_t seq, const Layout& layout, int64_t devices,
                                           int64_t gpus_per_node) {
  return engine_rules_detail::EngineRules{target, config, seq, devices, gpus_per_node}.check(
      layout);
}

}  // namespace pase
