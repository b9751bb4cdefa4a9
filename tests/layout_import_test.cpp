// A layout read from a Megatron-LM argument list or a torchtitan job TOML
// (pase/layout_import.hpp).
#include "pase/layout_import.hpp"

#include <doctest/doctest.h>

#include <string>

#include "pase/layout.hpp"
#include "pase/models.hpp"
#include "test_util.hpp"

using namespace pase;

namespace {

// The layout's text, or the error's "where: message".
std::string text_of(const Result<Layout>& l) { return l ? layout_text(*l) : l.error().to_string(); }

// A launch script as Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh
// writes it: bash arrays of flags, the launcher's own flags, variables.
constexpr const char* kGpt3Script = R"(#!/bin/bash
# Runs the "175B" parameter model
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=8
NUM_NODES=128
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr $MASTER_ADDR
)
GPT_MODEL_ARGS=(
    --num-layers 96
    --hidden-size 12288
    --num-attention-heads 96
    --seq-length 2048
    --max-position-embeddings 2048
    --attention-backend auto # Can use (flash/fused/unfused/local)
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 1536
    --train-iters 500000
    --fp16
    --lr 6.0e-5
)
MODEL_PARALLEL_ARGS=(
	--tensor-model-parallel-size 8
	--pipeline-model-parallel-size 16
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]}
)";

// The [parallelism] style of torchtitan's llama3_70b.toml (a preset for 64
// A100), the whole job file.
constexpr const char* kLlama70bToml = R"(# NOTE: this toml config is a preset for 64 A100 GPUs.
[job]
dump_folder = "./outputs"
description = "Llama 3 70B training"

[model]
name = "llama3"
flavor = "70B"

[optimizer]
name = "AdamW"
lr = 1.5e-4
eps = 1e-8

[training]
local_batch_size = 8
seq_len = 8192
max_norm = 1.0  # grad norm clipping
steps = 1000

[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
tensor_parallel_degree = 8  # 8-way TP
pipeline_parallel_degree = 1
context_parallel_degree = 1

[activation_checkpoint]
mode = "full"

[compile]
enable=false
components = ["model", "loss"]
)";

}  // namespace

// ---- Megatron-LM ----------------------------------------------------------------------------

TEST_CASE("layout import: an argument list without any layout flag is refused, not read as dp") {
  Result<Layout> l = layout_from_megatron_args("--tp 8 --hidden-size 4096", 8);
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().where == "layout.megatron");
  CHECK(l.error().message.find("no flag of a layout") != std::string::npos);
}

TEST_CASE("layout import: a Megatron-LM launch script as the GPT-3 175B example writes it") {
  Result<Layout> l = layout_from_megatron_args(kGpt3Script, 1024);
  REQUIRE_MESSAGE(l.ok(), testing::why(l));
  // dp: 1024 / (8 x 16); the model's and the launcher's flags are skipped.
  CHECK(layout_text(*l) ==
        "tp=8 pp=16 dp=8 cp=1 ep=1 sp=off zero=0 recompute=none mbs=1 gbs=1536 vpp=1");
}

TEST_CASE(
    "layout import: every Megatron-LM layout flag, as --flag value, --flag=value and quoted") {
  const char* args =
      "torchrun --nproc_per_node 8 --nnodes 16 pretrain_gpt.py --num-layers 96 \\\n"
      "  --tensor-model-parallel-size=8 --pipeline-model-parallel-size 8 \\\n"
      "  --context-parallel-size '2' --sequence-parallel \\\n"
      "  --num-layers-per-virtual-pipeline-stage 3 --use-distributed-optimizer \\\n"
      "  --recompute-granularity \"full\" --recompute-method block --recompute-num-layers 2 \\\n"
      "  --micro-batch-size 1 --global-batch-size 1536  # --tensor-model-parallel-size 4\n";
  // vpp: 96 layers / 8 stages / 3 layers a virtual stage.
  CHECK(text_of(layout_from_megatron_args(args, 1024)) ==
        "tp=8 pp=8 dp=8 cp=2 ep=1 sp=on zero=1 recompute=full mbs=1 gbs=1536 vpp=4 "
        "recompute_blocks=2");
  // Without --num-layers the model's blocks count the virtual stages.
  CHECK(text_of(layout_from_megatron_args(
            "--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2", 8, 32)) ==
        "tp=1 pp=4 dp=2 cp=1 ep=1 sp=off zero=0 recompute=none mbs=1 vpp=4");
  // A mixture of experts with uneven first and last stages.
  CHECK(text_of(layout_from_megatron_args(
            "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
            "--expert-model-parallel-size 8 --expert-tensor-parallel-size 1 "
            "--decoder-first-pipeline-num-layers 6 --decoder-last-pipeline-num-layers 7 "
            "--num-virtual-stages-per-pipeline-rank 1 --recompute-activations "
            "--micro-batch-size 2",
            64)) ==
        "tp=2 pp=4 dp=8 cp=1 ep=8 sp=off zero=0 recompute=selective mbs=2 gbs=16 vpp=1 etp=1 "
        "pp_first=6 pp_last=7");
}

TEST_CASE("layout import: Megatron-LM's defaults and overrides as arguments.py applies them") {
  // Sequence parallelism is off without tensor parallelism.
  CHECK(text_of(layout_from_megatron_args("--sequence-parallel --micro-batch-size 4", 8)) ==
        "tp=1 pp=1 dp=8 cp=1 ep=1 sp=off zero=0 recompute=none mbs=4 gbs=32 vpp=1");
  // A flag given twice keeps its last value, as argparse does.
  CHECK(text_of(layout_from_megatron_args(
            "--tensor-model-parallel-size 2 --tensor-model-parallel-size 4", 8)) ==
        "tp=4 pp=1 dp=2 cp=1 ep=1 sp=off zero=0 recompute=none mbs=1 vpp=1");
  // --recompute-activations is selective whatever the granularity; uniform
  // recomputes every block.
  CHECK(layout_from_megatron_args("--recompute-granularity full --recompute-activations", 8)
            ->recompute == Recompute::kSelective);
  Result<Layout> uniform = layout_from_megatron_args(
      "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1", 8);
  REQUIRE(uniform.ok());
  CHECK(uniform->recompute == Recompute::kFull);
  CHECK(uniform->recompute_blocks == 0);
  // The optimizer's sharding: Megatron-FSDP's strategies, torch FSDP2.
  CHECK(layout_from_megatron_args("--use-megatron-fsdp", 8)->zero == 3);
  CHECK(layout_from_megatron_args(
            "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads", 8)
            ->zero == 2);
  CHECK(layout_from_megatron_args("--use-torch-fsdp2", 8)->zero == 3);
  CHECK(layout_from_megatron_args("--use-distributed-optimizer", 8)->zero == 1);
  // The old name of the virtual stages per rank.
  CHECK(layout_from_megatron_args(
            "--pipeline-model-parallel-size 2 --virtual-pipeline-model-parallel-size 3", 8)
            ->vpp == 3);
}

TEST_CASE("layout import: a bad Megatron-LM flag is named in the error") {
  const auto where = [](const char* args, int64_t devices = 8, int64_t blocks = 0) {
    Result<Layout> l = layout_from_megatron_args(args, devices, blocks);
    return l ? std::string("ok") : l.error().to_string();
  };
  CHECK(where("--tensor-model-parallel-size 8x") ==
        "layout.megatron:--tensor-model-parallel-size: '8x' is not a positive integer");
  CHECK(where("--pipeline-model-parallel-size $PP") ==
        "layout.megatron:--pipeline-model-parallel-size: '$PP' is not a positive integer");
  CHECK(where("--micro-batch-size 0") ==
        "layout.megatron:--micro-batch-size: '0' is not a positive integer");
  CHECK(where("--context-parallel-size 100000") ==
        "layout.megatron:--context-parallel-size: 100000 is more than the 65536 devices a "
        "cluster may have");
  CHECK(where("--global-batch-size") == "layout.megatron:--global-batch-size: needs a value");
  CHECK(where("--micro-batch-size --global-batch-size 8") ==
        "layout.megatron:--micro-batch-size: needs a value");
  CHECK(where("--sequence-parallel=true") ==
        "layout.megatron:--sequence-parallel: is a switch; it takes no value");
  CHECK(where("--recompute-granularity partial") ==
        "layout.megatron:--recompute-granularity: 'partial' is not one of full, selective");
  CHECK(where("--recompute-granularity selective --recompute-method block") ==
        "layout.megatron:--recompute-method: not with selective recomputation");
  CHECK(where("--recompute-granularity full --recompute-method block") ==
        "layout.megatron:--recompute-method: needs --recompute-num-layers");
  CHECK(where("--use-megatron-fsdp --data-parallel-sharding-strategy all") ==
        "layout.megatron:--data-parallel-sharding-strategy: 'all' is not one of no_shard, optim, "
        "optim_grads, optim_grads_params");
  CHECK(where("--tensor-model-parallel-size 4 --pipeline-model-parallel-size 4", 8) ==
        "layout.megatron: --tensor-model-parallel-size 4 x --pipeline-model-parallel-size 4 x "
        "--context-parallel-size 1 = 16 does not divide the 8 devices");
  CHECK(where("--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2 "
              "--num-virtual-stages-per-pipeline-rank 2") ==
        "layout.megatron:--num-virtual-stages-per-pipeline-rank: not with "
        "--num-layers-per-virtual-pipeline-stage");
  CHECK(where("--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2") ==
        "layout.megatron:--num-layers-per-virtual-pipeline-stage: needs --num-layers (or the "
        "model's decoder blocks) to count stages");
  CHECK(where("--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 3 "
              "--num-layers 32") ==
        "layout.megatron:--num-layers-per-virtual-pipeline-stage: the 32 layers do not split "
        "into 2 stages of a multiple of 3 layers");
  CHECK(where("--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2 "
              "--decoder-first-pipeline-num-layers 3",
              8, 32)
            .starts_with("layout.megatron:--num-layers-per-virtual-pipeline-stage: not with "
                         "--decoder-first/last-pipeline-num-layers"));
  CHECK(where("--tensor-model-parallel-size 2", 0) == "cluster.devices: must be at least 1");
}

// ---- torchtitan -----------------------------------------------------------------------------

TEST_CASE("layout import: torchtitan's Llama 3 70B job file on 64 GPUs") {
  Result<Layout> l = layout_from_torchtitan_toml(kLlama70bToml, 64);
  REQUIRE_MESSAGE(l.ok(), testing::why(l));
  // FSDP over the 8 ranks TP leaves (-1), sequence parallel with TP, local
  // batch 8 per rank and no accumulation.
  CHECK(layout_text(*l) ==
        "tp=8 pp=1 dp=8 cp=1 ep=1 sp=on zero=3 recompute=full mbs=8 gbs=64 vpp=1");
}

TEST_CASE("layout import: a torchtitan [parallelism] table alone, with or without its header") {
  const char* llama8b =
      "[parallelism]\n"
      "data_parallel_replicate_degree = 1\n"
      "data_parallel_shard_degree = -1\n"
      "tensor_parallel_degree = 1\n"
      "pipeline_parallel_degree = 1\n"
      "context_parallel_degree = 1\n";
  CHECK(text_of(layout_from_torchtitan_toml(llama8b, 8)) ==
        "tp=1 pp=1 dp=8 cp=1 ep=1 sp=off zero=3 recompute=none mbs=1 vpp=1");
  CHECK(text_of(layout_from_torchtitan_toml(
            "tensor_parallel_degree = 2\ndata_parallel_shard_degree = -1\n", 16)) ==
        "tp=2 pp=1 dp=8 cp=1 ep=1 sp=on zero=3 recompute=none mbs=1 vpp=1");
  // Llama 3 8B's selective recomputation by ops.
  CHECK(layout_from_torchtitan_toml(std::string(llama8b) +
                                        "[activation_checkpoint]\nmode = \"selective\"\n"
                                        "selective_ac_option = \"op\"\n",
                                    8)
            ->recompute == Recompute::kSelective);
}

TEST_CASE("layout import: torchtitan's FSDP, HSDP and DDP as ZeRO stages") {
  // HSDP: 2 copies of the weights, each sharded over 4 ranks.
  CHECK(text_of(layout_from_torchtitan_toml(
            "[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 4\n",
            8)) == "tp=1 pp=1 dp=8 cp=1 ep=1 sp=off zero=3 recompute=none mbs=1 vpp=1 dp_shard=4");
  // DDP: no sharding.
  CHECK(
      layout_from_torchtitan_toml(
          "[parallelism]\ndata_parallel_replicate_degree = 8\ndata_parallel_shard_degree = 1\n", 8)
          ->zero == 0);
  // The weights kept after the forward pass: ZeRO 2.
  CHECK(layout_from_torchtitan_toml("[parallelism]\nfsdp_reshard_after_forward = \"never\"\n", 8)
            ->zero == 2);
  CHECK(layout_from_torchtitan_toml("[parallelism]\nfsdp_reshard_after_forward = \"always\"\n", 8)
            ->zero == 3);
  // Experts: their tensor degree is kept where it differs from tp.
  CHECK(text_of(layout_from_torchtitan_toml("[parallelism]\ntensor_parallel_degree = 2\n"
                                            "expert_parallel_degree = 4\n"
                                            "expert_tensor_parallel_degree = 1\n",
                                            16)) ==
        "tp=2 pp=1 dp=8 cp=1 ep=4 sp=on zero=3 recompute=none mbs=1 vpp=1 etp=1");
}

TEST_CASE("layout import: torchtitan's pipeline, its stages and micro-batches") {
  const std::string pipe =
      "[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_microbatch_size = 2\n";
  // 1F1B on 32 blocks: the embedding and the head count as a block each, so
  // the stages hold 8, 9, 8, 7 (pipeline_parallel.py); the default
  // resharding keeps the weights with a pipeline (ZeRO 2).
  Result<Layout> l =
      layout_from_torchtitan_toml(pipe + "[training]\nlocal_batch_size = 8\n", 8, 32);
  REQUIRE_MESSAGE(l.ok(), testing::why(l));
  CHECK(layout_text(*l) ==
        "tp=1 pp=4 dp=2 cp=1 ep=1 sp=off zero=2 recompute=none mbs=2 gbs=16 vpp=1 pp_last=7");
  // Interleaved: 2 stages per rank by default, or from the blocks of a stage.
  CHECK(layout_from_torchtitan_toml(pipe + "pipeline_parallel_schedule = \"Interleaved1F1B\"\n", 8)
            ->vpp == 2);
  CHECK(layout_from_torchtitan_toml(pipe + "pipeline_parallel_schedule = \"interleaved1f1b\"\n"
                                           "pipeline_parallel_layers_per_stage = 2\n"
                                           "pipeline_parallel_first_stage_less_layers = 0\n"
                                           "pipeline_parallel_last_stage_less_layers = 0\n",
                                    8, 32)
            ->vpp == 4);
  // The global batch: gradient accumulation over local x dp.
  CHECK(layout_from_torchtitan_toml(
            pipe + "[training]\nlocal_batch_size = 8\nglobal_batch_size = 64\n", 8, 32)
            ->gbs == 64);
}

TEST_CASE("layout import: torchtitan's recomputation of every N-th block") {
  const std::string every = "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = ";
  // 32 blocks, every 2nd: 16 blocks, as the first 16 of the stage.
  Result<Layout> half = layout_from_torchtitan_toml(every + "\"2\"\n", 8, 32);
  REQUIRE_MESSAGE(half.ok(), testing::why(half));
  CHECK(half->recompute == Recompute::kFull);
  CHECK(half->recompute_blocks == 16);
  // Every block; a mode without the option takes torchtitan's default "2".
  Result<Layout> all = layout_from_torchtitan_toml(every + "\"1\"\n", 8);
  CHECK(all->recompute == Recompute::kFull);
  CHECK(all->recompute_blocks == 0);
  CHECK(layout_from_torchtitan_toml("[activation_checkpoint]\nmode = \"selective\"\n", 8, 32)
            ->recompute_blocks == 16);
  CHECK(layout_from_torchtitan_toml("[activation_checkpoint]\nmode = \"none\"\n", 8)->recompute ==
        Recompute::kNone);
}

TEST_CASE("layout import: a bad torchtitan key is named in the error") {
  const auto where = [](const std::string& toml, int64_t devices = 8, int64_t blocks = 0) {
    Result<Layout> l = layout_from_torchtitan_toml(toml, devices, blocks);
    return l ? std::string("ok") : l.error().to_string();
  };
  CHECK(
      where("[parallelism\ntensor_parallel_degree = 2\n").starts_with("layout.torchtitan: line 1"));
  CHECK(where("[model]\nname = \"llama3\"\n") ==
        "layout.torchtitan: no [parallelism], [activation_checkpoint] or [training] table, nor "
        "any key of [parallelism] (tensor_parallel_degree, ...)");
  CHECK(where("[parallelism]\ntensor_parallel_degree = \"8\"\n") ==
        "layout.torchtitan:parallelism.tensor_parallel_degree: must be an integer, not a string");
  CHECK(where("[parallelism]\ntensor_parallel_degree = 0\n") ==
        "layout.torchtitan:parallelism.tensor_parallel_degree: 0 is below 1");
  CHECK(where("[parallelism]\ndata_parallel_shard_degree = 0\n") ==
        "layout.torchtitan:parallelism.data_parallel_shard_degree: is -1 (the rest) or at least 1");
  CHECK(where("[parallelism]\ntensor_parallel_degree = 3\n") ==
        "layout.torchtitan:parallelism.data_parallel_shard_degree: -1 takes the devices the "
        "others leave, but data_parallel_replicate_degree 1 x tensor_parallel_degree 3 x "
        "pipeline_parallel_degree 1 x context_parallel_degree 1 does not divide the 8 devices");
  CHECK(where("[parallelism]\ndata_parallel_shard_degree = 2\ntensor_parallel_degree = 2\n") ==
        "layout.torchtitan: data_parallel_replicate_degree 1 x tensor_parallel_degree 2 x "
        "pipeline_parallel_degree 1 x context_parallel_degree 1 x data_parallel_shard_degree 2 "
        "is not the 8 devices");
  CHECK(where("[parallelism]\nfsdp_reshard_after_forward = \"sometimes\"\n") ==
        "layout.torchtitan:parallelism.fsdp_reshard_after_forward: 'sometimes' is not default, "
        "always or never");
  CHECK(where("[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = "
              "4\nfsdp_reshard_after_forward = \"never\"\n")
            .starts_with("layout.torchtitan:parallelism.fsdp_reshard_after_forward: 'never' with "
                         "HSDP"));
  CHECK(where("[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = "
              "\"ZBVZeroBubble\"\n",
              8, 32) ==
        "layout.torchtitan:parallelism.pipeline_parallel_schedule: 'ZBVZeroBubble' is not a "
        "schedule the planner prices: 1F1B or Interleaved1F1B");
  CHECK(where("[parallelism]\npipeline_parallel_degree = 2\n")
            .starts_with("layout.torchtitan:parallelism.pipeline_parallel_degree: the blocks of "
                         "each stage need the model's decoder blocks"));
  CHECK(where("[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_layers_per_stage = "
              "4\n",
              8, 32) ==
        "layout.torchtitan:parallelism.pipeline_parallel_layers_per_stage: 9 stages do not divide "
        "over the 4 pipeline ranks (torchtitan refuses it)");
  CHECK(where("[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_microbatch_size = "
              "3\n[training]\nlocal_batch_size = 8\n",
              8, 32) ==
        "layout.torchtitan:parallelism.pipeline_parallel_microbatch_size: 3 does not divide "
        "local_batch_size 8 (torchtitan refuses it)");
  CHECK(where("[activation_checkpoint]\nmode = \"memory_budget\"\n")
            .starts_with("layout.torchtitan:activation_checkpoint.mode: the compiler's memory "
                         "budget has no layout"));
  CHECK(where("[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"3\"\n") ==
        "layout.torchtitan:activation_checkpoint.selective_ac_option: needs the model's decoder "
        "blocks to count the blocks recomputed");
  CHECK(where("[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"ops\"\n") ==
        "layout.torchtitan:activation_checkpoint.selective_ac_option: 'ops' is not op or a block "
        "count");
  CHECK(where("[training]\nlocal_batch_size = 8.5\n[parallelism]\n") ==
        "layout.torchtitan:training.local_batch_size: must be an integer, not a float");
}

// ---- Telling the three apart ----------------------------------------------------------------

TEST_CASE("layout import: read_any_layout tells our text, Megatron-LM's and torchtitan's apart") {
  CHECK(layout_syntax("tp=8 pp=2 dp=4") == LayoutSyntax::kLayout);
  CHECK(layout_syntax("tp=8 pp=2 dp=4\n") == LayoutSyntax::kLayout);
  CHECK(layout_syntax(kGpt3Script) == LayoutSyntax::kMegatron);
  CHECK(layout_syntax("--tensor-model-parallel-size=8") == LayoutSyntax::kMegatron);
  CHECK(layout_syntax(kLlama70bToml) == LayoutSyntax::kTorchtitan);
  CHECK(layout_syntax("tensor_parallel_degree = 8") == LayoutSyntax::kTorchtitan);
  // A comment's "--" is no flag; a bash test's brackets are no table.
  CHECK(layout_syntax("tensor_parallel_degree = 8  # not --tp\n") == LayoutSyntax::kTorchtitan);
  CHECK(layout_syntax("[ -z \"$TP\" ] && TP=8\n--tensor-model-parallel-size $TP") ==
        LayoutSyntax::kMegatron);

  CHECK(text_of(read_any_layout("tp=2 dp=4", 8)) ==
        "tp=2 pp=1 dp=4 cp=1 ep=1 sp=off zero=0 recompute=none mbs=1 vpp=1");
  CHECK(text_of(read_any_layout("--tensor-model-parallel-size 2", 8)) ==
        "tp=2 pp=1 dp=4 cp=1 ep=1 sp=off zero=0 recompute=none mbs=1 vpp=1");
  CHECK(text_of(read_any_layout("[parallelism]\ntensor_parallel_degree = 2\n", 8)) ==
        "tp=2 pp=1 dp=4 cp=1 ep=1 sp=on zero=3 recompute=none mbs=1 vpp=1");
  CHECK(read_any_layout("tp=x", 8).error().where == "layout.tp");
}

TEST_CASE("layout import: an imported layout is a strategy of the model it was written for") {
  // torchtitan's 70B preset on 64 GPUs, and the Megatron-LM arguments of the
  // same layout, price the same strategy.
  Result<Layout> titan = layout_from_torchtitan_toml(kLlama70bToml, 64);
  REQUIRE(titan.ok());
  Result<Layout> megatron = layout_from_megatron_args(
      "--tensor-model-parallel-size 8 --sequence-parallel --use-torch-fsdp2 "
      "--recompute-granularity full --micro-batch-size 8",
      64);
  REQUIRE(megatron.ok());
  CHECK(layout_text(*titan) == layout_text(*megatron));
  Result<Graph> g = build_model("llama3-70b", titan->gbs, 1024);
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  Result<LayoutStrategy> s = layout_strategy(*g, testing::practice_h100(64), *titan);
  CHECK_MESSAGE(s.ok(), testing::why(s));
}
