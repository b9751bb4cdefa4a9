// Layer costs (core/docs/cost-model.md sections 1, 4 and 5) on small shapes, each
// expected value worked out by hand from the formulas in the comment above it.
// Most cases use a non-default machine: F = 1 TFLOP/s and B = 8 GB/s give
// r = (1 * 1000) / (8 / 8) = 1000, so allreduce(w, P) = 1000 * (w / P) * 2 * (P - 1).
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "model/cost_model.hpp"
#include "model/op_table.hpp"
#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;

// ---- Machine --------------------------------------------------------------------

TEST_CASE("ops: machine r is (F * 1000) / (B / 8)") {
  CHECK(ops::make_machine(Cluster{}).r == near(5000));  // 10 TFLOP/s, 16 GB/s
  CHECK(ops::make_machine(kR1000).r == near(1000));
  CHECK(ops::make_machine(Cluster{.devices = 4, .tflops = 2.0, .bandwidth_gbps = 32.0}).r ==
        near(500));
  ops::Machine m = ops::make_machine(kR1000);
  CHECK(m.words(3) == near(3000));
  CHECK(m.allreduce(12, 1) == 0);            // P = 1: nothing moves
  CHECK(m.allreduce(12, 4) == near(18000));  // 1000 * 3 * 2 * 3
  CHECK(m.allreduce(10, 3) == near(1000.0 * 10 / 3 * 2 * 2));
}

TEST_CASE("ops: helpers per_device_points and tensor_config") {
  Graph g = one_layer({{"x", {4, 6, 10}}}, layer("loss", "SoftmaxCrossEntropy", {"x"}));
  const int64_t c[] = {2, 3, 4};
  CHECK(ops::per_device_points(g.vertices[0], c) == near(2.0 * 2 * 2.5));  // real division
  TensorMap map{{2}, {}, {0, 1}};
  int64_t out[3];
  ops::tensor_config(map, c, out);
  CHECK(out[0] == 4);
  CHECK(out[1] == 1);
  CHECK(out[2] == 6);
}

// ---- GEMM family ------------------------------------------------------------------

TEST_CASE("ops: FC with every split 1 is pure compute") {
  LayerSpec fc = layer("fc", "FC", {"x"});
  fc.units = 32;
  fc.pw = 1;
  Graph g = one_layer({{"x", {8, 16}}}, fc);
  // M = 8, N = 32, K = 16: comp = 3*8*32*16 + 3*1*8*32 = 12288 + 768 = 13056; comm 0.
  LayerCost lc = cost_at(g, {1, 1, 1});
  CHECK(lc.total == near(13056));
  CHECK(lc.compute == near(13056));
  CHECK(lc.comm == 0);
}

TEST_CASE("ops: FC split in all three dimensions") {
  LayerSpec fc = layer("fc", "FC", {"x"});
  fc.units = 32;
  fc.pw = 1;
  Graph g = one_layer({{"x", {8, 16}}}, fc);
  // c = (2, 2, 2): m = 4, n = 16, k = 8.
  // comp = 3*4*16*8 + 3*1*4*16 = 1536 + 192 = 1728
  // comm = allreduce(m*n = 64, 2) + allreduce(m*k = 32, 2) + allreduce(n*k = 128, 2)
  //      = 1000 * (32 + 16 + 64) * 2 * 1 = 224000
  LayerCost lc = cost_at(g, {2, 2, 2});
  CHECK(lc.total == near(225728));
  CHECK(lc.compute == near(1728));
  CHECK(lc.comm == near(224000));
  // Default machine (r = 5000): 1728 + 5 * 224000.
  CHECK(cost_at(g, {2, 2, 2}, Cluster{.devices = 8}).total == near(1121728));
  // c = (1, 1, 4): k = 4: comp = 3*8*32*4 + 3*8*32 = 3072 + 768 = 3840;
  // comm = allreduce(m*n = 256, 4) = 1000 * 64 * 2 * 3 = 384000.
  CHECK(cost_at(g, {1, 1, 4}).total == near(387840));
}

TEST_CASE("ops: FC on a 3-D input splits M by the product of the leading splits") {
  LayerSpec fc = layer("fc", "FC", {"x"});
  fc.units = 8;
  Graph g = one_layer({{"x", {4, 6, 16}}}, fc);
  // dom (4, 6, 8, 16), c = (2, 2, 1, 1): M = 24 split 4 -> m = 6, n = 8, k = 16.
  // comp = 3*6*8*16 = 2304 (pw 0: no point-wise term)
  // comm = allreduce(n*k = 128, cm = 4) = 1000 * 32 * 2 * 3 = 192000
  CHECK(cost_at(g, {2, 2, 1, 1}).total == near(194304));
}

TEST_CASE("ops: Einsum with a batch letter multiplies by the per-device batch") {
  LayerSpec ein = layer("e", "Einsum", {"x", "y"});
  ein.equation = "bmk,bkn->bmn";
  Graph g = one_layer({{"x", {2, 4, 6}}, {"y", {2, 6, 8}}}, ein);
  REQUIRE(g.vertices[0].dom == Shape{2, 4, 8, 6});  // (b, m, n, k)
  // c = (2, 1, 2, 2): bpp = 1, m = 4, n = 4, k = 3.
  // comp = 3*4*4*3 = 144
  // comm = allreduce(16, 2) + allreduce(12, 2) + allreduce(12, 1) = 16000 + 12000 + 0
  CHECK(cost_at(g, {2, 1, 2, 2}).total == near(28144));
  // c = (1, 1, 2, 2): the same per batch element, bpp = 2.
  CHECK(cost_at(g, {1, 1, 2, 2}).total == near(56288));
}

TEST_CASE("ops: Einsum with a fused point-wise op and a weight operand") {
  LayerSpec ein = layer("e", "Einsum", {"x"});
  ein.equation = "ble,ef->blf";
  ein.inputs.push_back(Operand{"", {8, 16}});
  ein.pw = 2;
  Graph g = one_layer({{"x", {2, 4, 8}}}, ein);
  REQUIRE(g.vertices[0].dom == Shape{2, 4, 16, 8});  // (b, l, f, e)
  // c = (2, 1, 4, 1): M = b*l = 8 split 2 -> m = 4; n = 16 / 4 = 4; k = 8.
  // comp = 3*4*4*8 + 3*2*4*4 = 384 + 96 = 480
  // comm = allreduce(16, 1) + allreduce(m*k = 32, 4) + allreduce(n*k = 32, 2)
  //      = 0 + 1000*8*2*3 + 1000*16*2*1 = 48000 + 32000
  CHECK(cost_at(g, {2, 1, 4, 1}).total == near(80480));
}

TEST_CASE("ops: Embedding is a GEMM with M = b*s, N = dim, K = vocab") {
  LayerSpec emb = layer("emb", "Embedding", {"tokens"});
  emb.vocab = 100;
  emb.dim = 16;
  Graph g = one_layer({{"tokens", {4, 8}}}, emb);
  // c = (2, 1, 1, 4): m = 32/2 = 16, n = 16, k = 100/4 = 25.
  // comp = 3*16*16*25 = 19200
  // comm = allreduce(256, 4) + allreduce(400, 1) + allreduce(400, 2)
  //      = 1000*64*2*3 + 0 + 1000*200*2*1 = 384000 + 400000
  CHECK(cost_at(g, {2, 1, 1, 4}).total == near(803200));
}

TEST_CASE("ops: Conv is a GEMM with M = b*h_o*w_o, N = n, K = c*r*s") {
  LayerSpec conv = layer("conv", "Conv", {"img"});
  conv.filter = {6, 2, 3, 3};
  conv.pad = {1, 1};
  conv.pw = 1;
  Graph g = one_layer({{"img", {4, 2, 8, 8}}}, conv);
  REQUIRE(g.vertices[0].dom == Shape{4, 2, 8, 8, 3, 3, 6});  // h_o = (8 - 3 + 2) / 1 + 1
  // c = (2, 2, 1, 1, 1, 1, 3): M = 4*8*8 = 256 split 2 -> m = 128; N = 6 split 3 -> n = 2;
  // K = 2*3*3 = 18 split 2 -> k = 9.
  // comp = 3*128*2*9 + 3*1*128*2 = 6912 + 768 = 7680
  // comm = allreduce(m*n = 256, 2) + allreduce(m*k = 1152, 3) + allreduce(n*k = 18, 2)
  //      = 1000*128*2 + 1000*384*2*2 + 1000*9*2 = 256000 + 1536000 + 18000
  LayerCost lc = cost_at(g, {2, 2, 1, 1, 1, 1, 3});
  CHECK(lc.total == near(1817680));
  CHECK(lc.compute == near(7680));
  CHECK(lc.comm == near(1810000));
}

TEST_CASE("ops: LSTM whose re-layout keeps the device count") {
  LayerSpec l = layer("lstm", "LSTM", {"x"});
  l.units = 8;
  l.layers = 2;
  Graph g = one_layer({{"x", {4, 3, 8}}}, l);
  REQUIRE(g.vertices[0].dom == Shape{2, 3, 4, 8, 8});  // (L, s, b, n, k)
  // c = (2, 1, 2, 2, 1): bpp = 2/2 = 1; M = s*b = 12 split 2 -> m = 6;
  // N = 4u = 32 split 2 -> n = 16; K = 2u = 16 split 1 -> k = 16; pw = 3.
  // comp = 3*6*16*16 + 3*3*6*16 = 4608 + 864 = 5472
  // comm = allreduce(96, 1) + allreduce(m*k = 96, 2) + allreduce(n*k = 256, 2)
  //      = 0 + 96000 + 256000 = 352000
  // Re-layout: (b, u) = (4, 8) from (2, 2) to (2, 1): src_pp = (2, 4), tgt_pp = (2, 8),
  // P_tgt = 2 <= P_src = 4, need = 16, have = 2*4 = 8, x = 8;
  // L * s * words(x) = 2 * 3 * 8000 = 48000.
  LayerCost lc = cost_at(g, {2, 1, 2, 2, 1});
  CHECK(lc.total == near(5472 + 352000 + 48000));
  CHECK(lc.compute == near(5472));
  CHECK(lc.comm == near(352000 + 48000));
}

TEST_CASE("ops: LSTM whose re-layout needs more devices has nothing in place") {
  LayerSpec l = layer("lstm", "LSTM", {"x"});
  l.units = 8;
  l.layers = 2;
  Graph g = one_layer({{"x", {4, 3, 8}}}, l);
  // c = (1, 1, 1, 1, 2): bpp = 2; m = 12, n = 32, k = 16/2 = 8.
  // comp = 3*12*32*8 + 3*3*12*32 = 9216 + 3456 = 12672
  // comm = allreduce(m*n = 384, 2) = 1000*192*2 = 384000
  // gemm = 2 * (12672 + 384000) = 793344
  // Re-layout: (4, 8) from (1, 1) to (1, 2): P_tgt = 2 > P_src = 1, have = 0,
  // need = 4*4 = 16; L * s * words(16) = 2 * 3 * 16000 = 96000.
  CHECK(cost_at(g, {1, 1, 1, 1, 2}).total == near(793344 + 96000));
}

// ---- Other layers ----------------------------------------------------------------

TEST_CASE("ops: Pool without spatial splits has no halo") {
  LayerSpec pool = layer("pool", "Pool", {"img"});
  pool.window = {2, 2};
  pool.stride = {2, 2};
  Graph g = one_layer({{"img", {4, 2, 8, 8}}}, pool);
  REQUIRE(g.vertices[0].dom == Shape{4, 2, 4, 4});
  // prod(dpp) = 4*2*4*4 = 128; ghost = 0.
  CHECK(cost_at(g, {1, 1, 1, 1}).total == near(128));
  // c = (4, 2, 1, 1): prod(dpp) = 1*1*4*4 = 16; still no halo.
  CHECK(cost_at(g, {4, 2, 1, 1}).total == near(16));
}

TEST_CASE("ops: Pool halo uses the input shape per device") {
  LayerSpec pool = layer("pool", "Pool", {"img"});
  pool.window = {2, 2};
  pool.stride = {2, 2};
  Graph g = one_layer({{"img", {4, 2, 8, 8}}}, pool);
  // c = (2, 1, 2, 1): prod(dpp) = 2*2*2*4 = 32; ipp = (2, 2, 4, 8);
  // hh = 4 + 2 = 6, ww = 8; ghost = (6*8 - 4*8) * 2 * 2 = 64; words(64) = 64000.
  LayerCost lc = cost_at(g, {2, 1, 2, 1});
  CHECK(lc.total == near(64032));
  CHECK(lc.compute == near(32));
  CHECK(lc.comm == near(64000));
  // c = (1, 2, 1, 2): prod(dpp) = 4*1*4*2 = 32; ipp = (4, 1, 8, 4);
  // hh = 8, ww = 4 + 2 = 6; ghost = (48 - 32) * 4 * 1 = 64.
  CHECK(cost_at(g, {1, 2, 1, 2}).total == near(64032));
}

TEST_CASE("ops: Pool split in both spatial dimensions") {
  LayerSpec pool = layer("pool", "Pool", {"img"});
  pool.window = {3, 3};
  pool.pad = {1, 1};
  Graph g = one_layer({{"img", {2, 2, 6, 6}}}, pool);
  REQUIRE(g.vertices[0].dom == Shape{2, 2, 6, 6});
  // c = (1, 1, 2, 2): prod(dpp) = 2*2*3*3 = 36; ipp = (2, 2, 3, 3);
  // hh = ww = 3 + 3 = 6; ghost = (36 - 9) * 2 * 2 = 108; words = 108000.
  CHECK(cost_at(g, {1, 1, 2, 2}).total == near(108036));
}

TEST_CASE("ops: Elementwise is (1 + pw) * prod(dpp)") {
  LayerSpec add = layer("add", "Elementwise", {"x", "y"});
  add.pw = 2;
  Graph g = one_layer({{"x", {4, 6}}, {"y", {4, 6}}}, add);
  CHECK(cost_at(g, {2, 3}).total == near(12));  // (1 + 2) * 2 * 2
  CHECK(cost_at(g, {1, 1}).total == near(72));  // (1 + 2) * 24
  CHECK(cost_at(g, {2, 3}).comm == 0);
}

TEST_CASE("ops: BatchNorm (axis 0)") {
  LayerSpec bn = layer("bn", "Norm", {"x"});
  bn.axis = 0;
  Graph g = one_layer({{"x", {8, 4, 6}}}, bn);
  // c = (2, 2, 1): dpp = (4, 2, 6), e = 48.
  // 16e = 768; 4 * allreduce(e / dpp[0] = 12, c[0] = 2) = 4 * 12000 = 48000;
  // 4 * allreduce(dpp[0] = 4, 2 * 1) = 4 * 4000 = 16000.
  LayerCost lc = cost_at(g, {2, 2, 1});
  CHECK(lc.total == near(64768));
  CHECK(lc.compute == near(768));
  // Unsplit: 16 * 192 = 3072.
  CHECK(cost_at(g, {1, 1, 1}).total == near(3072));
}

TEST_CASE("ops: LayerNorm (axis -1) with a split of 3") {
  LayerSpec ln = layer("ln", "Norm", {"x"});
  ln.axis = -1;
  Graph g = one_layer({{"x", {8, 4, 6}}}, ln);
  // c = (2, 1, 3): dpp = (4, 4, 2), e = 32; 16e = 512;
  // 4 * allreduce(e / dpp[2] = 16, 3) = 4 * 1000 * (16/3) * 2 * 2 = 256000 / 3;
  // 4 * allreduce(dpp[2] = 2, 2 * 1) = 4 * 1000 * 1 * 2 = 8000.
  CHECK(cost_at(g, {2, 1, 3}).total == near(512 + 256000.0 / 3 + 8000));
}

TEST_CASE("ops: ReduceMean all-reduces over the reduced axes only") {
  LayerSpec r = layer("r", "ReduceMean", {"x"});
  r.axes = {1, 2};
  r.has_axes = true;
  Graph g = one_layer({{"x", {8, 4, 6}}}, r);
  // c = (2, 2, 2): prod(dpp) = 4*2*3 = 24; P = 2*2 = 4;
  // allreduce(24, 4) = 1000 * 6 * 2 * 3 = 36000.
  CHECK(cost_at(g, {2, 2, 2}).total == near(36000));
  CHECK(cost_at(g, {2, 2, 2}).comm == near(36000));
  // Only the kept axis split: P = 1, cost 0.
  CHECK(cost_at(g, {8, 1, 1}).total == 0);
}

TEST_CASE("ops: Softmax over the last axis") {
  LayerSpec sm = layer("sm", "Softmax", {"x"});
  sm.axis = -1;
  Graph g = one_layer({{"x", {4, 10}}}, sm);
  // c = (2, 2): dpp = (2, 5), e = 10, o = 2, P = 2, dom[axis] = 10.
  // 4e + e*10 = 140; allreduce(2, 2) + allreduce(20, 2) + allreduce(2, 2)
  // = 2000 + 20000 + 2000.
  LayerCost lc = cost_at(g, {2, 2});
  CHECK(lc.total == near(24140));
  CHECK(lc.compute == near(140));
  // c = (4, 1): P = 1, no communication; e = 10: 40 + 100.
  CHECK(cost_at(g, {4, 1}).total == near(140));
}

TEST_CASE("ops: Softmax over axis 0") {
  LayerSpec sm = layer("sm", "Softmax", {"x"});
  sm.axis = 0;
  Graph g = one_layer({{"x", {4, 10}}}, sm);
  // c = (2, 2): e = 10, o = dpp[1] = 5, P = 2, dom[axis] = 4.
  // 4e + e*4 = 80; allreduce(5, 2) + allreduce(20, 2) + allreduce(5, 2) = 5000 + 20000 + 5000.
  CHECK(cost_at(g, {2, 2}).total == near(30080));
}

TEST_CASE("ops: SoftmaxCrossEntropy pays words(2 bt) only when classes are split") {
  Graph g = one_layer({{"x", {4, 6, 10}}}, layer("loss", "SoftmaxCrossEntropy", {"x"}));
  // c = (2, 1, 2): e = 2*6*5 = 60, bt = 12: 4e + 2bt = 264; words(24) = 24000.
  CHECK(cost_at(g, {2, 1, 2}).total == near(24264));
  // c = (2, 3, 1): e = 2*2*10 = 40, bt = 4: 160 + 8 = 168.
  CHECK(cost_at(g, {2, 3, 1}).total == near(168));
}

TEST_CASE("ops: data-movement vertices cost nothing") {
  SUBCASE("Ravel and Unravel") {
    LayerSpec r = layer("r", "Reshape", {"x"});
    r.shape = {4, 24};
    Graph g = one_layer({{"x", {4, 4, 6}}}, r);
    CHECK(cost_at(g, {4, 2, 1}, kR1000, 0).total == 0);
    CHECK(cost_at(g, {4, 2}, kR1000, 1).total == 0);
  }
  SUBCASE("Transpose") {
    LayerSpec t = layer("t", "Transpose", {"x"});
    t.perm = {1, 0};
    CHECK(cost_at(one_layer({{"x", {4, 6}}}, t), {2, 3}).total == 0);
  }
  SUBCASE("Concat") {
    LayerSpec c = layer("c", "Concat", {"x", "x"});
    c.axis = 1;
    CHECK(cost_at(one_layer({{"x", {4, 6}}}, c), {4, 1}).total == 0);
  }
  SUBCASE("Split") {
    LayerSpec s = layer("s", "Split", {"x"});
    s.axis = 1;
    s.num = 2;
    CHECK(cost_at(one_layer({{"x", {4, 6}}}, s), {2, 1}).total == 0);
  }
  SUBCASE("Stack") {
    LayerSpec s = layer("s", "Stack", {"x", "x"});
    CHECK(cost_at(one_layer({{"x", {4, 6}}}, s), {1, 2, 3}).total == 0);
  }
  SUBCASE("Unstack") {
    LayerSpec u = layer("u", "Unstack", {"x"});
    CHECK(cost_at(one_layer({{"x", {3, 4, 6}}}, u), {1, 4, 2}).total == 0);
  }
}

// ---- The op table ----------------------------------------------------------------

TEST_CASE("op table: every op is complete, listed once, in order, and documented") {
  const std::string doc = read_text(std::string(PASE_DOCS_DIR) + "/graph-format.md");
  const std::vector<OpDef>& ops = op_table().ops();
  REQUIRE(ops.size() >= 17);
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDef& op = ops[i];
    CAPTURE(std::string(op.name));
    CHECK(static_cast<bool>(op.lower));
    CHECK(op_table().find(op.name) == &op);
    if (i > 0) CHECK(ops[i - 1].listing < op.listing);
    for (const Attr& a : op.attributes) {
      CAPTURE(std::string(a.name));
      const bool bound = std::visit([](auto member) { return member != nullptr; }, a.member);
      CHECK(bound);
      // The attribute is documented with the op.
      // Built by append: GCC 12 warns falsely (-Wrestrict) on "`" + name.
      std::string code(1, '`');
      code.append(a.name).push_back('`');
      CHECK(contains(doc, code));
    }
    // The op's row in the table of core/docs/graph-format.md.
    CHECK(contains(doc, "| " + std::string(op.name) + " |"));
  }
  CHECK(op_table().find("Ravel") == nullptr);  // a vertex kind, not an op of the format
  CHECK(op_table().names().rfind("FC, Einsum, Embedding, Conv, Pool, Elementwise", 0) == 0);
}

TEST_CASE("op table: an op unknown to the table is refused by build_graph too") {
  LayerSpec l = layer("r", "Ravel", {"x"});
  Result<Graph> g = build_graph(spec_with({{"x", {4, 8}}}, {l}));
  REQUIRE_FALSE(g.ok());
  CHECK(g.error().where == "layers[0].op");
  CHECK(contains(g.error().message, "unknown op 'Ravel'; known: FC, "));
}
