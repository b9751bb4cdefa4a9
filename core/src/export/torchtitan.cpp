// torchtitan's job file for a layout (export/engine_text.hpp;
// core/docs/export.md, "torchtitan"): the TOML of torchtitan v0.2.2, the
// last release whose jobs are TOML files, its keys as
// torchtitan/config/job_config.py of pytorch/torchtitan names them.
#include <algorithm>
#include <string>
#include <vector>

#include "export/engine_text.hpp"

namespace pase {
namespace {

// torchtitan's Llama 3 flavors (torchtitan/models/llama3/__init__.py): the
// FFN width its ffn_dim_multiplier and multiple_of give.
struct TorchtitanFlavor {
  const char* flavor;
  int64_t dim, layers, heads, kv_heads, ffn;
};
constexpr TorchtitanFlavor kLlama3Flavors[] = {{"8B", 4096, 32, 32, 8, 14336},
                                               {"70B", 8192, 80, 64, 8, 28672},
                                               {"405B", 16384, 126, 128, 8, 53248}};

// The flavor of torchtitan's llama3 that is this model, or null: the same
// shapes, vocabulary (128256), RoPE base (500000), norm and biases.
const TorchtitanFlavor* torchtitan_flavor(const LlmConfig& c) {
  const bool llama3 = (c.model_type == "llama" || c.model_type == "mistral") &&
                      c.vocab_size == 128256 && c.rope_theta == 500000 && c.rms_norm &&
                      c.gated_mlp && !c.tied_embeddings && !c.qkv_bias && !c.out_bias &&
                      !c.mlp_bias && c.num_experts == 0 && c.norm_eps == 1e-5 &&
                      c.head_dim * c.num_heads == c.hidden_size;
  for (const TorchtitanFlavor& f : kLlama3Flavors)
    if (llama3 && f.dim == c.hidden_size && f.layers == c.num_layers && f.heads == c.num_heads &&
        f.kv_heads == c.num_kv_heads && f.ffn == c.intermediate_size)
      return &f;
  return nullptr;
}

}  // namespace

std::string engine_torchtitan(const EngineJob& job, Exported& e) {
  const Layout& l = *e.layout;
  const EngineModel& m = *job.model;
  const LlmConfig& c = m.config;
  std::string t;
  const auto key = [&](const std::string& name, const std::string& value) {
    t += name + " = " + value + "\n";
  };
  const auto quoted = [](const char* s) { return std::string("\"") + s + "\""; };

  if (const TorchtitanFlavor* f = torchtitan_flavor(c)) {
    t += "[model]\n";
    key("name", quoted("llama3"));
    key("flavor", quoted(f->flavor));
    t += "\n";
  } else {
    e.notes.push_back(
        "the model is none of torchtitan's (its llama3 flavors 8B, 70B, 405B): "
        "give [model] name and flavor of a model you register");
  }

  // Data parallelism: DDP (zero 0) replicates; FSDP shards over dp_shard
  // ranks (every rank by default) with dp / dp_shard replicas (HSDP); zero 2
  // keeps the weights gathered between forward and backward.
  t += "[parallelism]\n";
  const int64_t shard = l.zero == 0 ? 1 : (l.dp_shard > 0 ? l.dp_shard : l.dp);
  key("data_parallel_replicate_degree", engine_num(l.dp / shard));
  key("data_parallel_shard_degree", engine_num(shard));
  if (l.zero >= 1) key("fsdp_reshard_after_forward", quoted(l.zero == 3 ? "default" : "never"));
  if (l.zero == 1)
    e.notes.push_back(
        "ZeRO-1 has no torchtitan form: FSDP without resharding after forward "
        "(ZeRO-2) shards the gradients too");
  key("tensor_parallel_degree", engine_num(l.tp));
  key("enable_async_tensor_parallel", "false");
  if (l.tp > 1 && !l.sp)
    e.notes.push_back(
        "torchtitan's tensor parallelism is always sequence-parallel; the layout's not");
  key("context_parallel_degree", engine_num(l.cp));
  key("pipeline_parallel_degree", engine_num(l.pp));
  if (l.pp > 1) {
    key("pipeline_parallel_schedule",
        quoted(l.vpp > 1 ? "Interleaved1F1B" : (job.gpipe ? "GPipe" : "1F1B")));
    key("pipeline_parallel_microbatch_size", engine_num(l.mbs));
    Result<std::vector<int64_t>> stages = stage_blocks(l, c.num_layers);
    const bool even = stages && std::all_of(stages->begin(), stages->end(), [&](int64_t b) {
                        return b == stages->front() && b % l.vpp == 0;
                      });
    if (even) {
      // The blocks of each (virtual) stage, the embedding and head beside
      // them (neither counted as a layer).
      key("pipeline_parallel_layers_per_stage", engine_num(c.num_layers / (l.pp * l.vpp)));
      key("pipeline_parallel_first_stage_less_layers", "0");
      key("pipeline_parallel_last_stage_less_layers", "0");
    } else if (stages) {
      // Each stage's modules by name, as torchtitan's llama3 names them.
      std::string parts = "[";
      int64_t block = 0;
      for (size_t s = 0; s < stages->size(); ++s) {
        parts += s == 0 ? "[\"tok_embeddings\"" : ", [";
        for (int64_t i = 0; i < (*stages)[s]; ++i, ++block)
          parts +=
              std::string(s == 0 || i > 0 ? ", " : "") + "\"layers." + engine_num(block) + "\"";
        parts += s + 1 == stages->size() ? ", \"norm\", \"output\"]" : "]";
      }
      key("module_fqns_per_model_part", parts + "]");
    }
  }
  if (c.num_experts > 0) {
    key("expert_parallel_degree", engine_num(l.ep));
    key("expert_tensor_parallel_degree", engine_num(l.etp == 0 ? l.tp : l.etp));
    if (l.ep > 1 && (l.ep < l.cp || l.ep > shard * l.cp))
      e.notes.push_back(
          "torchtitan takes expert_parallel_degree from context_parallel_degree to "
          "data_parallel_shard_degree times it; this one is outside");
  }

  // Without a pipeline torchtitan accumulates the gradients of
  // global / (local x data-parallel) micro-batches; with one, the local
  // batch is split into micro-batches of pipeline_parallel_microbatch_size.
  t += "\n[training]\n";
  key("local_batch_size", engine_num(l.pp > 1 ? l.gbs / l.dp : l.mbs));
  key("global_batch_size", engine_num(l.gbs));
  key("seq_len", engine_num(m.seq));

  // One mode for every block (engine_runs() made it so).
  t += "\n[activation_checkpoint]\n";
  key("mode", quoted(recompute_name(l.recompute)));
  if (l.recompute == Recompute::kSelective) {
    key("selective_ac_option", quoted("op"));
    e.notes.push_back(
        "torchtitan's op-level selective checkpointing (keeping attention and some "
        "matrix products) is near the planner's selective, not the same");
  }
  if (m.padded_vocab != c.vocab_size)
    e.notes.push_back("torchtitan keeps the tokenizer's vocabulary (" + engine_num(c.vocab_size) +
                      "); the plan priced it padded to " + engine_num(m.padded_vocab) + " rows");
  return engine_header("torchtitan job configuration", job, e) + t;
}

}  // namespace pase
