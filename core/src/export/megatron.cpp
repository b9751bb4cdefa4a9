// Megatron-LM's launch script for a layout (export/engine_text.hpp;
// core/docs/export.md, "Megatron-LM"): torchrun on every node, then
// pretrain_gpt.py with the model's arguments, field by field from its
// config, and the layout's. Flag names as megatron/training/arguments.py
// of NVIDIA/Megatron-LM defines them (many through the fields of
// TransformerConfig and ModelParallelConfig).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "export/engine_text.hpp"
#include "pase/llm.hpp"

namespace pase {

std::string engine_megatron(const EngineJob& job, Exported& e) {
  const Layout& l = *e.layout;
  const EngineModel& m = *job.model;
  const LlmConfig& c = m.config;
  std::vector<std::string> a;
  const auto flag = [&](const std::string& f) { a.push_back(f); };
  const auto arg = [&](const std::string& f, int64_t n) { a.push_back(f + ' ' + engine_num(n)); };

  // The model, from its config.
  arg("--num-layers", c.num_layers);
  arg("--hidden-size", c.hidden_size);
  arg("--ffn-hidden-size", c.intermediate_size);
  arg("--num-attention-heads", c.num_heads);
  if (c.num_kv_heads != c.num_heads) flag("--group-query-attention");
  if (c.num_kv_heads != c.num_heads) arg("--num-query-groups", c.num_kv_heads);
  if (c.head_dim * c.num_heads != c.hidden_size) arg("--kv-channels", c.head_dim);
  arg("--seq-length", m.seq);
  arg("--max-position-embeddings", c.max_positions);
  if (!m.positions_known)
    e.notes.push_back(
        "--max-position-embeddings is the planned sequence: the graph keeps no other");
  if (c.learned_positions) {
    flag("--position-embedding-type learned_absolute");
  } else {
    // --rotary-base is an integer argument.
    const double base = std::round(c.rope_theta);
    flag("--position-embedding-type rope");
    arg("--rotary-base", static_cast<int64_t>(base));
    if (base != c.rope_theta)
      e.notes.push_back("--rotary-base takes an integer: the config's rope_theta " +
                        engine_double(c.rope_theta) + " is rounded");
  }
  flag(std::string("--normalization ") + (c.rms_norm ? "RMSNorm" : "LayerNorm"));
  flag("--norm-epsilon " + engine_double(c.norm_eps));
  if (c.gated_mlp) flag("--swiglu");
  // Megatron-LM's add_bias_linear is every linear layer's bias; add_qkv_bias
  // the query, key and value projections' alone.
  if (!c.out_bias && !c.mlp_bias) flag("--disable-bias-linear");
  if (c.qkv_bias && !c.out_bias && !c.mlp_bias) flag("--add-qkv-bias");
  if (c.out_bias != c.mlp_bias || (c.out_bias && !c.qkv_bias))
    e.notes.push_back("the model's biases (on some projections only) have no exact form");
  if (!c.tied_embeddings) flag("--untie-embeddings-and-output-weights");
  // Megatron-LM pads the tokenizer's vocabulary to a multiple of this x tp:
  // the largest power of two up to its default 128 that gives the graph's
  // rows, else the rows over tp (the layout's tp divides them).
  int64_t divisible = m.padded_vocab / l.tp;
  for (int64_t d = 128; d >= 1; d /= 2)
    if (padded_vocab(c.vocab_size, d * l.tp) == m.padded_vocab) {
      divisible = d;
      break;
    }
  arg("--make-vocab-size-divisible-by", divisible);
  e.notes.push_back("the vocabulary (" + engine_num(c.vocab_size) + ") comes from the tokenizer; " +
                    "--make-vocab-size-divisible-by " + engine_num(divisible) + " x tp " +
                    engine_num(l.tp) +
                    (m.padded_vocab == c.vocab_size
                         ? " divides it, as the plan has it"
                         : " pads it to the plan's " + engine_num(m.padded_vocab) + " rows"));
  if (c.num_experts > 0) {
    arg("--num-experts", c.num_experts);
    arg("--moe-router-topk", c.experts_per_token);
    arg("--expert-model-parallel-size", l.ep);
    arg("--expert-tensor-parallel-size", l.etp == 0 ? l.tp : l.etp);
    if (l.tp > 1 && !l.sp)
      e.notes.push_back("Megatron-LM needs --sequence-parallel with tensor and expert parallelism");
  }

  // The layout: parallelism, its stages, ZeRO, recomputation, batches.
  arg("--tensor-model-parallel-size", l.tp);
  if (l.sp) flag("--sequence-parallel");
  arg("--pipeline-model-parallel-size", l.pp);
  if (l.vpp > 1) arg("--num-layers-per-virtual-pipeline-stage", c.num_layers / (l.pp * l.vpp));
  // Stages of unequal blocks: the first and last stage's, the others alike.
  if (Result<std::vector<int64_t>> stages = stage_blocks(l, c.num_layers);
      stages && l.pp > 1 && l.vpp == 1 &&
      std::any_of(stages->begin(), stages->end(),
                  [&](int64_t b) { return b != stages->front(); })) {
    const std::vector<int64_t>& s = *stages;
    const bool middle_alike =
        std::all_of(s.begin() + 1, s.end() - 1, [&](int64_t b) { return b == s[1]; });
    arg("--decoder-first-pipeline-num-layers", s.front());
    arg("--decoder-last-pipeline-num-layers", s.back());
    if (!middle_alike)
      e.notes.push_back(
          "the layout's middle stages hold unequal blocks, which Megatron-LM "
          "does not run: it splits the others evenly");
  }
  if (l.cp > 1) arg("--context-parallel-size", l.cp);
  // ZeRO: 1 is the distributed optimizer (optimizer states sharded, the
  // gradients reduce-scattered); 2 and 3 are Megatron-FSDP's sharding
  // strategies optim_grads and optim_grads_params, which need its own
  // checkpoint format.
  if (l.zero == 1) flag("--use-distributed-optimizer");
  if (l.zero >= 2) {
    flag("--use-megatron-fsdp");
    flag(std::string("--data-parallel-sharding-strategy ") +
         (l.zero == 2 ? "optim_grads" : "optim_grads_params"));
    flag("--ckpt-format fsdp_dtensor");
    // Hybrid sharding: dp / dp_shard copies, each sharded over dp_shard ranks.
    if (l.dp_shard > 0 && l.dp_shard != l.dp)
      arg("--num-distributed-optimizer-instances", l.dp / l.dp_shard);
  }
  if (l.recompute == Recompute::kSelective) flag("--recompute-activations");
  if (l.recompute == Recompute::kFull) {
    flag("--recompute-granularity full");
    flag(l.recompute_blocks > 0 ? "--recompute-method block" : "--recompute-method uniform");
    arg("--recompute-num-layers", l.recompute_blocks > 0 ? l.recompute_blocks : 1);
  }
  arg("--micro-batch-size", l.mbs);
  arg("--global-batch-size", l.gbs);
  flag("--bf16");
  if (job.gpipe && l.pp > 1)
    e.notes.push_back("the plan's GPipe schedule runs as 1F1B (the same step time, less memory)");

  // One node when the cluster is flat or its nodes do not divide it.
  const Cluster& cluster = *job.cluster;
  const bool nodes = cluster.gpus_per_node > 0 && cluster.devices % cluster.gpus_per_node == 0;
  const int64_t per_node = nodes ? cluster.gpus_per_node : cluster.devices;
  std::string text =
      "#!/bin/bash\n" + engine_header("Megatron-LM launch", job, e) + "# Run it on each of the " +
      engine_num(cluster.devices / per_node) +
      " node(s) from Megatron-LM's folder, with NODE_RANK, MASTER_ADDR and " +
      "MASTER_PORT set;\n# the data, tokenizer and optimizer arguments are "
      "yours: give them after the script's name.\n" +
      "torchrun --nnodes " + engine_num(cluster.devices / per_node) + " --nproc-per-node " +
      engine_num(per_node) +
      " --node-rank \"${NODE_RANK:-0}\" --master-addr \"${MASTER_ADDR:-localhost}\"" +
      " --master-port \"${MASTER_PORT:-6000}\" \\\n  pretrain_gpt.py \\\n";
  for (const std::string& x : a) text += "  " + x + " \\\n";
  return text + "  \"$@\"\n";
}

}  // namespace pase
