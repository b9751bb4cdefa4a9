// The machine a plan is made for, and what the cost model gives back for one
// layer: its cost (LayerCost) and device 0's memory (MemoryBytes).
// core/docs/cost-model.md section 1 and core/docs/cluster.md. plan.hpp
// includes this header.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "pase/result.hpp"

namespace pase {

// The machine: `devices` identical devices of `tflops` peak each, joined by
// links of `bandwidth_gbps`. core/docs/cost-model.md section 1.
// How the job trains (core/docs/cluster.md, "Memory per device"): bytes per
// element of the weights, their gradients, the optimizer state and the saved
// activations, and the ZeRO stage (0 to 3). The defaults are mixed-precision
// Adam: 2 + 2 + 12 bytes per parameter, 2 per activation.
// Activation recomputation (the practice model, core/docs/practice-model.md,
// "Recomputation"): none; selective, the attention core of each decoder
// block; full, everything of a decoder block but its output; auto, chosen by
// the search under the memory cap (plan.hpp), per decoder block.
enum class Recompute : uint8_t { kNone, kSelective, kFull, kAuto };

struct Training {
  int64_t param_bytes = 2;
  int64_t grad_bytes = 2;
  int64_t optimizer_bytes = 12;
  int64_t activation_bytes = 2;
  int64_t zero = 0;
  // `recompute` for the first `recompute_blocks` decoder blocks of the graph
  // (-1: every block), `recompute_rest` for the others: Megatron-LM's
  // --recompute-num-layers, and what the search's auto choice gives back.
  Recompute recompute = Recompute::kNone;
  int64_t recompute_blocks = -1;
  Recompute recompute_rest = Recompute::kNone;
  // Each decoder block's mode by its index, in place of the rule above when
  // not empty (blocks past its end: none): a layout's full recomputation of
  // the first k blocks of each pipeline stage, as Megatron-LM's
  // --recompute-method block does (layout.hpp).
  std::vector<Recompute> recompute_of_block = {};
  // Hybrid sharding (HSDP): ZeRO shards the weights, gradients and optimizer
  // states across the replicas of a weight divided by this many groups,
  // each group a full copy (torchtitan's data_parallel_replicate_degree
  // with a shard degree above 1). 1: across every replica.
  int64_t zero_replicas = 1;
};

// "none", "selective", "full" or "auto"; errors at "training.recompute".
Result<Recompute> parse_recompute(std::string_view name);
const char* recompute_name(Recompute recompute);

// Which cost model prices a plan: the paper's (core/docs/cost-model.md,
// exact, the default) or the practice model (core/docs/practice-model.md):
// seconds as today's training runs spend them.
enum class CostModel { kPaper, kPractice };

// What the practice model knows of a device beyond its peak: its memory
// bandwidth, and the rates and latencies fitted per GPU kind on published
// training runs (core/docs/practice-model.md, "Fitted parameters"). The
// presets fill it; memory_gbps 0 means unknown.
struct DeviceProfile {
  double memory_gbps = 0;             // memory bandwidth, GB/s
  double matmul_efficiency = 0.75;    // fraction of peak a large matrix product reaches
  double matmul_half = 96;            // per-device dimension at which a product runs at half that
  double attention_efficiency = 0.5;  // fused attention, forward and backward
  double memory_efficiency = 0.7;     // fraction of memory_gbps memory-bound ops reach
  double latency_intra_us = 8;        // one step of a collective inside a node
  double latency_inter_us = 15;       // one step between nodes
  double overlap = 0.8;  // share of a layer's backward compute that hides its gradient reduction
  double link_efficiency = 1.0;  // fraction of a link's bandwidth that collectives reach
  double reserved_gib = 3.0;     // memory the framework and the allocator hold, GiB
};

struct Cluster {
  int64_t devices = 8;
  double tflops = 10.0;
  // Per-device link bandwidth; with nodes (below), the bandwidth between nodes.
  double bandwidth_gbps = 16.0;
  // Nodes of gpus_per_node devices whose links inside a node have
  // intra_node_gbps (core/docs/cluster.md). Both 0: the flat model of
  // core/docs/cost-model.md, unchanged; they are given together.
  int64_t gpus_per_node = 0;
  double intra_node_gbps = 0;
  // Memory per device in GiB (the GPU's); 0: unlimited.
  double memory_gib = 0;
  // The memory margin: the share of memory_gib a plan leaves free, in
  // [0, 1). Under the practice model the plan's cap is memory_gib less the
  // framework's reserve (DeviceProfile::reserved_gib) and headroom *
  // memory_gib; the paper model caps at memory_gib and ignores both. The
  // default, a tenth, is the margin practitioners launch with: PyTorch's
  // caching allocator fragments (its reserved memory runs above the
  // allocated by several percent) and a step's peaks vary (NCCL's lazily
  // made communicators, the logits and loss in FP32, longer sequences).
  // 0 plans to the last byte (core/docs/cluster.md, "Memory per device").
  double headroom = 0.1;
  // The cost model, and the device as the practice model sees it.
  CostModel cost_model = CostModel::kPaper;
  DeviceProfile device{};
  // How the devices train: what the memory model counts, and ZeRO stage 3's
  // extra traffic (a request's "training" in JSON).
  Training training{};
  // The cluster as a pipeline stage sees it: its device 0 is global device
  // first_device and nodes are counted globally, so that a stage starting
  // inside a node is priced as it sits (core/docs/pipeline.md). 0 for a
  // whole cluster; not part of the JSON cluster.
  int64_t first_device = 0;

  bool hierarchical() const { return gpus_per_node > 0; }
  // The parts of the GPU's memory a plan may not use, in GiB: under the
  // practice model the framework's reserve and the headroom; 0 under the
  // paper model. (The headroom is 0 without a cap: it is a share of it.)
  double reserve_gib() const {
    return cost_model == CostModel::kPractice ? device.reserved_gib : 0.0;
  }
  double headroom_gib() const {
    return cost_model == CostModel::kPractice ? headroom * memory_gib : 0.0;
  }
  // The plan's memory cap in bytes, memory_gib less the reserve and the
  // headroom (0 memory_gib: no cap). With headroom 0 it is the memory less
  // the reserve to the bit.
  double capacity_bytes() const { return (memory_gib - reserve_gib() - headroom_gib()) * 0x1p30; }
};

inline constexpr int64_t kMaxDevices = 65536;

// "paper" or "practice"; errors at "cost_model".
Result<CostModel> parse_cost_model(std::string_view name);
const char* cost_model_name(CostModel model);

// The first bad field as an Error naming it ("cluster.devices": "must be at
// least 1, got 0"), or nullopt when the cluster is valid.
std::optional<Error> check_cluster(const Cluster& cluster);

// A layer's cost split into its parts; total is the cost-model value.
struct LayerCost {
  double total = 0;
  double compute = 0;  // arithmetic (including fused point-wise ops)
  double comm = 0;     // intra-layer communication (all-reduces, halos, gathers)
  // The part of comm that reduces the weight gradient (the GEMM
  // allreduce(n*k, cm) of a layer with a weight, with ZeRO-3's factor): a
  // pipeline reduces it once per step, not per micro-batch
  // (core/docs/pipeline.md).
  double weight_sync = 0;
  // The part of compute that recomputes the forward in the backward pass
  // (the practice model's recomputation; 0 under the paper model).
  double recompute = 0;
};

// Device 0's memory in bytes, by kind (core/docs/cluster.md, "Memory per
// device"); device 0 takes part in every layer.
struct MemoryBytes {
  double params = 0, grads = 0, optimizer = 0, activations = 0;
  // The practice model's working buffers of the largest layer (its gradient
  // buffers in the backward pass, and ZeRO-3's gathered weights); 0 under
  // the paper model.
  double working = 0;
  double total() const { return params + grads + optimizer + activations + working; }
};

}  // namespace pase
