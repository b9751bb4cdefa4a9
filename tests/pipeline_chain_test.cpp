// Pipeline step times and stage memory worked by hand (core/docs/pipeline.md,
// on core/docs/cluster.md and core/docs/cost-model.md): a chain of four FC layers
// on two-level clusters of 4 and 8 devices, S = 2 and 4, M = 2 and 4, under
// 1F1B and GPipe (so k_s differs), with stages that share a node, stages
// that do not, and one that starts inside a node. Every F_s, W_s, X_s, A_s,
// edge cost, T, step time and stage memory is plain arithmetic from the
// formulas, in comments beside it, and evaluate_pipeline() must agree to
// 1e-9 relative.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pase/graph.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using pase::testing::close;

namespace {

// x: [32, 64] -> fc1 (128 units, K 64) -> fc2 (32, K 128) -> fc3 (64, K 32)
// -> fc4 (16, K 64). An FC's dims are (b, units, K); at (cb, cu, ck), with
// micro-batch b: m = b/cb, n = units/cu, k = K/ck, comp = 3*m*n*k, and the
// all-reduces allreduce(m*n, ck) over K, allreduce(m*k, cu) over the units,
// allreduce(n*k, cb) over the batch (the weight gradient: W). The last dim
// is innermost: device = i_b*cu*ck + i_u*ck + i_k, plus the stage's first
// device. Weights (units, K) over (cu, ck); the output (b, units) is split
// (cb, cu), the input (b, K) (cb, ck).
const char* const kChain = R"({"format": "pase-graph/1", "name": "chain4",
  "inputs": {"x": [32, 64]},
  "layers": [
    {"name": "fc1", "op": "FC", "inputs": ["x"], "units": 128},
    {"name": "fc2", "op": "FC", "inputs": ["fc1"], "units": 32},
    {"name": "fc3", "op": "FC", "inputs": ["fc2"], "units": 64},
    {"name": "fc4", "op": "FC", "inputs": ["fc3"], "units": 16}]})";

// F = 1 TFLOP/s, B = 8 GB/s between nodes, B1 = 80 GB/s inside:
// r2 = 1*1000/(8/8) = 1000, r1 = 1*1000/(80/8) = 100 FLOPs per word.
constexpr double r1 = 100, r2 = 1000;

Cluster two_level(int64_t devices, int64_t per_node, int64_t zero) {
  Cluster c{.devices = devices, .tflops = 1, .bandwidth_gbps = 8};
  c.gpus_per_node = per_node;
  c.intra_node_gbps = 80;
  c.training.zero = zero;
  return c;
}

// One stage's numbers by hand: costs in FLOP-equivalents of one
// micro-batch, memory in bytes (activations for one micro-batch; the check
// multiplies them by k_s).
struct HandStage {
  int first, last;
  int64_t first_device, devices;
  double F, W, X;
  double params, grads, optimizer, activations;
};

struct HandCase {
  const char* name;
  Cluster cluster;
  Strategy configs;
  std::vector<int> stage_of;
  int64_t microbatches;
  std::vector<HandStage> stages;
  std::vector<double> edges;  // fc1->fc2, fc2->fc3, fc3->fc4
  double T;                   // sum A + (M - 1) max A + max W, added up by hand
};

void check(const HandCase& c) {
  CAPTURE(c.name);
  Result<Graph> g = load_graph(kChain);
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  const int64_t S = static_cast<int64_t>(c.stages.size()), M = c.microbatches;
  // The hand T is the spec's formula over the hand A and W.
  double sum_a = 0, max_a = 0, max_w = 0;
  for (const HandStage& h : c.stages) {
    sum_a += h.F + h.X;
    max_a = std::max(max_a, h.F + h.X);
    max_w = std::max(max_w, h.W);
  }
  REQUIRE(close(sum_a + static_cast<double>(M - 1) * max_a + max_w, c.T));
  for (Schedule schedule : {Schedule::k1F1B, Schedule::kGPipe}) {
    CAPTURE(schedule_name(schedule));
    PipelineStrategy st{c.configs, c.stage_of, M, schedule};
    Result<PipelinePlan> p = evaluate_pipeline(*g, c.cluster, st);
    REQUIRE_MESSAGE(p.ok(), testing::why(p));
    const PipelineInfo& info = p->pipeline;
    CHECK(info.stages == S);
    CHECK(info.microbatches == M);
    CHECK(info.micro_batch == 32 / M);
    REQUIRE(info.stage.size() == c.stages.size());
    double largest = -1;
    MemoryBytes largest_memory;
    for (int64_t s = 0; s < S; ++s) {
      CAPTURE(s);
      const HandStage& h = c.stages[s];
      const PipelineStage& got = info.stage[s];
      // k_s = M under GPipe, min(S - s, M) under 1F1B (pipeline.md 5).
      const int64_t k = schedule == Schedule::kGPipe ? M : std::min(S - s, M);
      CHECK(got.first_vertex == h.first);
      CHECK(got.last_vertex == h.last);
      CHECK(got.first_device == h.first_device);
      CHECK(got.devices == h.devices);
      CHECK(got.activation_copies == k);
      CHECK_MESSAGE(close(got.F, h.F), got.F << " vs " << h.F);
      CHECK_MESSAGE(close(got.W, h.W), got.W << " vs " << h.W);
      CHECK_MESSAGE(close(got.X, h.X), got.X << " vs " << h.X);
      CHECK_MESSAGE(close(got.A, h.F + h.X), got.A << " vs " << h.F + h.X);
      CHECK(close(got.time_s, (h.F + h.X) / 1e12));  // A_s / (F * 1e12), F = 1
      const double act = static_cast<double>(k) * h.activations;
      CHECK_MESSAGE(close(got.memory.params, h.params), got.memory.params << " vs " << h.params);
      CHECK_MESSAGE(close(got.memory.grads, h.grads), got.memory.grads << " vs " << h.grads);
      CHECK_MESSAGE(close(got.memory.optimizer, h.optimizer),
                    got.memory.optimizer << " vs " << h.optimizer);
      CHECK_MESSAGE(close(got.memory.activations, act), got.memory.activations << " vs " << act);
      CHECK(got.fits);  // no cap
      const double total = h.params + h.grads + h.optimizer + act;
      if (total > largest) {
        largest = total;
        largest_memory = MemoryBytes{h.params, h.grads, h.optimizer, act};
      }
    }
    // Edges: inside a stage the re-distribution cost, between stages the
    // edge's part of X.
    REQUIRE(p->plan.edge_costs.size() == c.edges.size());
    for (size_t e = 0; e < c.edges.size(); ++e) {
      CAPTURE(e);
      REQUIRE(p->graph.edges[e].src == static_cast<int>(e));
      CHECK_MESSAGE(close(p->plan.edge_costs[e], c.edges[e]),
                    p->plan.edge_costs[e] << " vs " << c.edges[e]);
    }
    CHECK_MESSAGE(close(p->plan.cost, c.T), p->plan.cost << " vs " << c.T);
    CHECK(close(p->plan.step_time_s, c.T / 1e12));
    // The plan's memory is the largest stage's.
    CHECK(close(p->plan.memory.total(), largest));
    CHECK(close(p->plan.memory.params, largest_memory.params));
    CHECK(close(p->plan.memory.activations, largest_memory.activations));
  }
}

}  // namespace

TEST_CASE("pipeline chain: p = 4 as 2 nodes of 2, S = 2, M = 2, stages on nodes of their own") {
  // b = 32/2 = 16, q = 2. Stage 0: fc1, fc2 on devices 0-1 (node 0); stage 1:
  // fc3, fc4 on devices 2-3 (node 1). Every all-reduce group is a pair of
  // devices in one node: allreduce(w, 2) = r1 * (w/2) * 2*(2-1).
  const double fc1_comp = 3.0 * 8 * 128 * 64;              // (2,1,1): m=8 n=128 k=64
  const double fc1_w = r1 * (128.0 * 64 / 2) * 2 * 1;      // allreduce(n*k, cb=2), {0,1}
  const double fc2_comp = 3.0 * 16 * 16 * 128;             // (1,2,1): m=16 n=16 k=128
  const double fc2_units = r1 * (16.0 * 128 / 2) * 2 * 1;  // allreduce(m*k, cu=2), {0,1}
  // fc1->fc2, tensor (16,128) from cells (2,1) to (1,1): need 16*128 = 2048;
  // P_tgt 1 <= P_src 2: have min(8,16)*min(128,128) = 1024, x = 1024. own
  // 1024, near: device 1's rows [8,16), 1024; far 0, phi 0.
  const double e12 = 2 * 1024 * r1;
  const double x0 = r2 * 2 * (16 * 32) / 2;  // fc2->fc3, |T| = 16*32, node 0 to node 1
  const double F0 = fc1_comp + fc2_comp + fc2_units + e12;  // 704512
  const double fc3_comp = 3.0 * 16 * 64 * 16;               // (1,1,2): m=16 n=64 k=16
  const double fc3_k = r1 * (16.0 * 64 / 2) * 2 * 1;        // allreduce(m*n, ck=2), {2,3}
  const double fc4_comp = 3.0 * 8 * 16 * 64;                // (2,1,1): m=8 n=16 k=64
  const double fc4_w = r1 * (16.0 * 64 / 2) * 2 * 1;        // allreduce(n*k, cb=2), {2,3}
  // fc3->fc4, tensor (16,64) from (1,1) to (2,1): need 8*64 = 512; P_tgt 2 >
  // P_src 1: have 0, x = 512. own = need, and fc4's group (the stage's
  // first two devices, {2,3}) lies on node 1: phi 0.
  const double e34 = 2 * 512 * r1;
  const double F1 = fc3_comp + fc3_k + fc4_comp + e34;  // 278528
  // A_0 = F0 + x0 = 1216512 > A_1 = F1; W_0 = 819200 > W_1 = 102400.
  const double T = (F0 + x0) + F1 + (2 - 1) * (F0 + x0) + fc1_w;  // 3530752
  CHECK(T == 3530752);
  // Memory, ZeRO 0 (2+2+12 bytes per weight element, 2 per activation):
  // weights 128*64/(1*1), 32*128/(2*1), 64*32/(1*2), 16*64/(1*1) elements;
  // outputs 16*128/(2*1), 16*32/(1*2), 16*64/(1*1), 16*16/(2*1) elements.
  const double w0 = 128 * 64 + 32 * 128 / 2, w1 = 64 * 32 / 2 + 16 * 64;
  const double act0 = 2 * (16 * 128 / 2 + 16 * 32 / 2), act1 = 2 * (16 * 64 + 16 * 16 / 2);
  check(HandCase{
      .name = "p4 S2 M2",
      .cluster = two_level(4, 2, 0),
      .configs = {{2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 1, 1}},
      .stage_of = {0, 0, 1, 1},
      .microbatches = 2,
      .stages = {{0, 2, 0, 2, F0, fc1_w, x0, 2 * w0, 2 * w0, 12 * w0, act0},
                 {2, 4, 2, 2, F1, fc4_w, 0, 2 * w1, 2 * w1, 12 * w1, act1}},
      .edges = {e12, x0, e34},
      .T = T,
  });
}

TEST_CASE("pipeline chain: p = 8 as 2 nodes of 4, S = 4, M = 4, stages sharing nodes") {
  // b = 32/4 = 8, q = 2: stage s on devices 2s, 2s+1, one layer each; stages
  // 0 and 1 on node 0, stages 2 and 3 on node 1. All-reduces in one node.
  const double fc1_comp = 3.0 * 8 * 128 * 32;                   // (1,1,2): m=8 n=128 k=32
  const double fc1_k = r1 * (8.0 * 128 / 2) * 2 * 1;            // allreduce(m*n, ck=2), {0,1}
  const double x0 = r1 * 2 * (8 * 128) / 2;                     // to stage 1: devices 0-3, node 0
  const double fc2_comp = 3.0 * 4 * 32 * 128;                   // (2,1,1): m=4 n=32 k=128
  const double fc2_w = r1 * (32.0 * 128 / 2) * 2 * 1;           // allreduce(n*k, cb=2), {2,3}
  const double x1 = r2 * 2 * (8 * 32) / 2;                      // to stage 2: node 0 to node 1
  const double fc3_comp = 3.0 * 8 * 32 * 32;                    // (1,2,1): m=8 n=32 k=32
  const double fc3_u = r1 * (8.0 * 32 / 2) * 2 * 1;             // allreduce(m*k, cu=2), {4,5}
  const double x2 = r1 * 2 * (8 * 64) / 2;                      // to stage 3: devices 4-7, node 1
  const double fc4_comp = 3.0 * 4 * 16 * 64;                    // (2,1,1): m=4 n=16 k=64
  const double fc4_w = r1 * (16.0 * 64 / 2) * 2 * 1;            // allreduce(n*k, cb=2), {6,7}
  const double A0 = fc1_comp + fc1_k + x0;                      // 303104
  const double A1 = fc2_comp + x1;                              // 305152: the largest A
  const double A2 = fc3_comp + fc3_u + x2;                      // 101376
  const double A3 = fc4_comp;                                   // 12288
  const double T = (A0 + A1 + A2 + A3) + (4 - 1) * A1 + fc2_w;  // 721920 + 915456 + 409600
  CHECK(T == 2046976);
  // Memory, ZeRO 0: weights 128*64/2, 32*128, 64*32/2, 16*64; outputs
  // 8*128/1, 8*32/2, 8*64/2, 8*16/2. k_s: 1F1B 4,3,2,1; GPipe 4,4,4,4.
  const double w0 = 128 * 64 / 2, w1 = 32 * 128, w2 = 64 * 32 / 2, w3 = 16 * 64;
  check(HandCase{
      .name = "p8 S4 M4",
      .cluster = two_level(8, 4, 0),
      .configs = {{1, 1, 2}, {2, 1, 1}, {1, 2, 1}, {2, 1, 1}},
      .stage_of = {0, 1, 2, 3},
      .microbatches = 4,
      .stages = {{0, 1, 0, 2, fc1_comp + fc1_k, 0, x0, 2 * w0, 2 * w0, 12 * w0, 2 * 8 * 128},
                 {1, 2, 2, 2, fc2_comp, fc2_w, x1, 2 * w1, 2 * w1, 12 * w1, 2 * 8 * 32 / 2},
                 {2, 3, 4, 2, fc3_comp + fc3_u, 0, x2, 2 * w2, 2 * w2, 12 * w2, 2 * 8 * 64 / 2},
                 {3, 4, 6, 2, fc4_comp, fc4_w, 0, 2 * w3, 2 * w3, 12 * w3, 2 * 8 * 16 / 2}},
      .edges = {x0, x1, x2},
      .T = T,
  });
}

TEST_CASE("pipeline chain: p = 8 as 4 nodes of 2, S = 2, M = 2, stages across nodes, ZeRO 2") {
  // b = 16, q = 4: stage 0 (fc1-fc3) on devices 0-3 (nodes 0, 1), stage 1
  // (fc4) on 4-7 (nodes 2, 3). A group of L devices on each of m nodes:
  // r1*(w/L)*2*(L-1) + r2*(w/(L*m))*2*(m-1).
  const double fc1_comp = 3.0 * 4 * 128 * 64;  // (4,1,1): m=4 n=128 k=64
  // allreduce(n*k = 8192) over the batch group {0,1,2,3}: L=2, m=2.
  const double fc1_w = r1 * (8192.0 / 2) * 2 * 1 + r2 * (8192.0 / 4) * 2 * 1;  // 4915200
  const double fc2_comp = 3.0 * 16 * 16 * 64;         // (1,2,2): m=16 n=16 k=64
  const double fc2_k = r1 * (16.0 * 16 / 2) * 2 * 1;  // allreduce(m*n) over K {0,1}
  const double fc2_u = r2 * (16.0 * 64 / 2) * 2 * 1;  // allreduce(m*k) over {0,2}: L=1 m=2
  // fc1->fc2, tensor (16,128) from cells (4,1) (4x128) to (1,2) (16x64):
  // need 1024; P_tgt 2 <= P_src 4: have min(4,16)*min(128,64) = 256,
  // x = 768. own 4*64 = 256; near: device 1 (< min(G=2, 4)) holds rows
  // [4,8): 4*64 = 256; far = 1024-256-256 = 512, phi = 512/768.
  const double phi = 512.0 / 768;
  const double e12 = 2 * 768 * (r1 * (1 - phi) + r2 * phi);  // 1536 * 700 = 1075200
  const double fc3_comp = 3.0 * 16 * 64 * 8;                 // (1,1,4): m=16 n=64 k=8
  // allreduce(m*n = 1024) over K {0,1,2,3}: L=2, m=2.
  const double fc3_k = r1 * (1024.0 / 2) * 2 * 1 + r2 * (1024.0 / 4) * 2 * 1;  // 614400
  // fc2->fc3, tensor (16,32) from (1,2) to (1,4): need 16*8 = 128; P_tgt 4 >
  // P_src 2: have 0, x = 128. own = need, and fc3's group {0,1,2,3} spans
  // nodes 0 and 1: phi 1 (core/docs/cluster.md, "Re-distribution").
  const double e23 = 2 * 128 * r2;
  const double x0 = r2 * 2 * (16 * 64) / 4;  // fc3->fc4 between nodes, q = 4
  const double F0 = fc1_comp + fc2_comp + fc2_k + fc2_u + e12 + fc3_comp + fc3_k + e23;
  CHECK(F0 == doctest::Approx(3167232).epsilon(1e-12));
  // fc4 (2,1,1) uses 2 of stage 1's 4 devices, {4,5} (node 2): m=8 n=16 k=64.
  const double fc4_comp = 3.0 * 8 * 16 * 64;
  const double fc4_w = r1 * (16.0 * 64 / 2) * 2 * 1;  // allreduce(n*k, cb=2)
  // A_0 = 3679232 > A_1 = 24576; W_0 > W_1.
  const double T = (F0 + x0) + fc4_comp + (2 - 1) * (F0 + x0) + fc1_w;
  CHECK(T == doctest::Approx(12298240).epsilon(1e-12));
  // Memory, ZeRO 2: params e*2, grads e*2/R, optimizer e*12/R, with e the
  // weight's elements per device and R = q/s_W, q the layer's devices:
  //   fc1 e = 128*64, R = 4/1; fc2 e = 32*128/4, R = 4/4; fc3 e = 64*32/4,
  //   R = 4/4; fc4 e = 16*64, R = 2/1 (its 2 devices, not the stage's 4).
  // Outputs 16*128/4, 16*32/2, 16*64/1, 16*16/2 elements at 2 bytes.
  const double e1 = 128 * 64, e2 = 32 * 128 / 4, e3 = 64 * 32 / 4, e4 = 16 * 64;
  check(HandCase{
      .name = "p8 S2 M2 zero2",
      .cluster = two_level(8, 2, 2),
      .configs = {{4, 1, 1}, {1, 2, 2}, {1, 1, 4}, {2, 1, 1}},
      .stage_of = {0, 0, 0, 1},
      .microbatches = 2,
      .stages = {{0, 3, 0, 4, F0, fc1_w, x0, 2 * (e1 + e2 + e3), 2 * (e1 / 4 + e2 + e3),
                  12 * (e1 / 4 + e2 + e3), 2 * (16 * 128 / 4 + 16 * 32 / 2 + 16 * 64)},
                 {3, 4, 4, 4, fc4_comp, fc4_w, 0, 2 * e4, 2 * e4 / 2, 12 * e4 / 2,
                  2 * 16 * 16 / 2}},
      .edges = {e12, e23, x0},
      .T = T,
  });
}

TEST_CASE("pipeline chain: p = 8 on nodes of 3, S = 2, M = 2, stage 1 starting inside a node") {
  // b = 16, q = 4. Nodes {0,1,2}, {3,4,5}, {6,7}: stage 0 on devices 0-3
  // (nodes 0, 0, 0, 1), stage 1 on 4-7 (nodes 1, 1, 2, 2). Nodes are
  // counted globally (pipeline.md 2): stage 1's device d is global 4 + d.
  const double fc1_comp = 3.0 * 16 * 64 * 32;         // (1,2,2): m=16 n=64 k=32
  const double fc1_k = r1 * (16.0 * 64 / 2) * 2 * 1;  // allreduce(m*n) over K {0,1}
  const double fc1_u = r1 * (16.0 * 32 / 2) * 2 * 1;  // allreduce(m*k) over {0,2}: node 0
  const double fc2_comp = 3.0 * 4 * 32 * 128;         // (4,1,1): m=4 n=32 k=128
  // W: allreduce(n*k = 4096) over {0,1,2,3}: m = 2 nodes, at most L = 3 on
  // one: r1*(w/3)*2*(3-1) + r2*(w/(3*2))*2*(2-1), though L*m = 6 > P = 4.
  const double fc2_w = r1 * (4096.0 / 3) * 2 * 2 + r2 * (4096.0 / 6) * 2 * 1;  // 5734400/3
  // fc1->fc2, tensor (16,128) from cells (1,2) (16x64) to (4,1) (4x128):
  // need 4*128 = 512; P_tgt 4 > P_src 2: have 0, x = 512. own 4*64 = 256;
  // near: device 2 (< min(G=3, 2*2)) holds columns [64,128): 4*64 = 256
  // (device 1 holds cell (0,0) too); far 0, phi 0.
  const double e12 = 2 * 512 * r1;
  const double x0 = r2 * 2 * (16 * 32) / 4;                     // fc2->fc3, node 0 to nodes 1, 2
  const double F0 = fc1_comp + fc1_k + fc1_u + fc2_comp + e12;  // 403456
  const double fc3_comp = 3.0 * 4 * 64 * 32;                    // (4,1,1): m=4 n=64 k=32
  // W: allreduce(n*k = 2048) over global {4,5,6,7}: L = 2, m = 2.
  const double fc3_w = r1 * (2048.0 / 2) * 2 * 1 + r2 * (2048.0 / 4) * 2 * 1;  // 1228800
  const double fc4_comp = 3.0 * 16 * 16 * 16;  // (1,1,4): m=16 n=16 k=16
  // allreduce(m*n = 256) over K, global {4,5,6,7}: L = 2, m = 2.
  const double fc4_k = r1 * (256.0 / 2) * 2 * 1 + r2 * (256.0 / 4) * 2 * 1;  // 153600
  // fc3->fc4, tensor (16,64) from cells (4,1) (4x64) to (1,4) (16x16): need
  // 256; P_tgt 4 <= P_src 4: have min(4,16)*min(64,16) = 64, x = 192. own
  // 4*16 = 64. Near are the stage's devices on its device 0's node: global
  // 4 and 5, local 0 and 1 (not d < min(G, q) = 3: local 2 is global 6, on
  // node 2). Device 1 holds rows [4,8): 4*16 = 64; far = 256-64-64 = 128,
  // phi = 128/192.
  const double phi = 128.0 / 192;
  const double e34 = 2 * 192 * (r1 * (1 - phi) + r2 * phi);  // 384 * 700 = 268800
  const double F1 = fc3_comp + fc4_comp + fc4_k + e34;       // 459264
  // A_0 = 659456 > A_1 = 459264; W_0 = 1911466.67 > W_1 = 1228800.
  const double T = (F0 + x0) + F1 + (2 - 1) * (F0 + x0) + fc2_w;
  CHECK(T == doctest::Approx(1778176 + 5734400.0 / 3).epsilon(1e-12));
  // Memory, ZeRO 0: weights 128*64/4, 32*128, 64*32, 16*64/4; outputs
  // 16*128/2, 16*32/4, 16*64/4, 16*16/1 elements at 2 bytes.
  const double w0 = 128 * 64 / 4 + 32 * 128, w1 = 64 * 32 + 16 * 64 / 4;
  check(HandCase{
      .name = "p8 G3 S2 M2",
      .cluster = two_level(8, 3, 0),
      .configs = {{1, 2, 2}, {4, 1, 1}, {4, 1, 1}, {1, 1, 4}},
      .stage_of = {0, 0, 1, 1},
      .microbatches = 2,
      .stages = {{0, 2, 0, 4, F0, fc2_w, x0, 2 * w0, 2 * w0, 12 * w0, 2 * (1024 + 128)},
                 {2, 4, 4, 4, F1, fc3_w, 0, 2 * w1, 2 * w1, 12 * w1, 2 * (256 + 256)}},
      .edges = {e12, x0, e34},
      .T = T,
  });
}
