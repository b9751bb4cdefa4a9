// Inception-v3, core/docs/models.md "InceptionV3": stem, modules A x3, B, C x4, D, E x2,
// head (219 vertices, 253 edges). Every concat is along channels (axis 1).
// Names are "<module>_br<k>_<kind><n>", e.g. "c2_br3_conv4", and the module's
// final concat is "<module>_concat1".
#include <string>
#include <vector>

#include "model/builder.hpp"
#include "model/zoo/zoo.hpp"

namespace pase::zoo {

using build::Builder;
using build::Pair;
namespace {

constexpr int64_t kChannelAxis = 1;

// BC of core/docs/models.md: Conv (pw 0) followed by BN of its output, two vertices.
std::string bc(Builder& b, const std::string& x, Shape filter, Pair stride = {1, 1},
               Pair pad = {0, 0}) {
  return b.bn(b.conv(x, std::move(filter), stride, pad));
}

// Sets the scope of branch `k` (1-based) of module `m`.
void branch(Builder& b, const std::string& m, int k) {
  b.scope(m + "_br" + std::to_string(k) + "_");
}

// Concat of the module's branches, named "<module>_concat1".
std::string join(Builder& b, const std::string& m, const std::vector<std::string>& xs) {
  b.scope(m + "_");
  return b.concat(xs, kChannelAxis);
}

// Module A(x, in, pf): 1x1 | 1x1, 5x5 | 1x1, 3x3, 3x3 | pool, 1x1 (pf).
std::string module_a(Builder& b, const std::string& m, const std::string& x, int64_t in,
                     int64_t pf) {
  branch(b, m, 1);
  const std::string b1 = bc(b, x, {64, in, 1, 1});
  branch(b, m, 2);
  std::string b2 = bc(b, x, {48, in, 1, 1});
  b2 = bc(b, b2, {64, 48, 5, 5}, {1, 1}, {2, 2});
  branch(b, m, 3);
  std::string b3 = bc(b, x, {64, in, 1, 1});
  b3 = bc(b, b3, {96, 64, 3, 3}, {1, 1}, {1, 1});
  b3 = bc(b, b3, {96, 96, 3, 3}, {1, 1}, {1, 1});
  branch(b, m, 4);
  std::string b4 = b.pool(x, {3, 3}, {1, 1}, {1, 1});
  b4 = bc(b, b4, {pf, in, 1, 1});
  return join(b, m, {b1, b2, b3, b4});
}

// Module B(x, in): grid reduction 35 -> 17.
std::string module_b(Builder& b, const std::string& m, const std::string& x, int64_t in) {
  branch(b, m, 1);
  const std::string b1 = bc(b, x, {384, in, 3, 3}, {2, 2});
  branch(b, m, 2);
  std::string b2 = bc(b, x, {64, in, 1, 1});
  b2 = bc(b, b2, {96, 64, 3, 3}, {1, 1}, {1, 1});
  b2 = bc(b, b2, {96, 96, 3, 3}, {2, 2});
  branch(b, m, 3);
  const std::string b3 = b.pool(x, {3, 3}, {2, 2});
  return join(b, m, {b1, b2, b3});
}

// Module C(x, in, c7): factorised 7x7 convolutions as 1x7 / 7x1 pairs.
std::string module_c(Builder& b, const std::string& m, const std::string& x, int64_t in,
                     int64_t c7) {
  branch(b, m, 1);
  const std::string b1 = bc(b, x, {192, in, 1, 1});
  branch(b, m, 2);
  std::string b2 = bc(b, x, {c7, in, 1, 1});
  b2 = bc(b, b2, {c7, c7, 1, 7}, {1, 1}, {0, 3});
  b2 = bc(b, b2, {192, c7, 7, 1}, {1, 1}, {3, 0});
  branch(b, m, 3);
  std::string b3 = bc(b, x, {c7, in, 1, 1});
  b3 = bc(b, b3, {c7, c7, 7, 1}, {1, 1}, {3, 0});
  b3 = bc(b, b3, {c7, c7, 1, 7}, {1, 1}, {0, 3});
  b3 = bc(b, b3, {c7, c7, 7, 1}, {1, 1}, {3, 0});
  b3 = bc(b, b3, {192, c7, 1, 7}, {1, 1}, {0, 3});
  branch(b, m, 4);
  std::string b4 = b.pool(x, {3, 3}, {1, 1}, {1, 1});
  b4 = bc(b, b4, {192, in, 1, 1});
  return join(b, m, {b1, b2, b3, b4});
}

// Module D(x, in): grid reduction 17 -> 8.
std::string module_d(Builder& b, const std::string& m, const std::string& x, int64_t in) {
  branch(b, m, 1);
  std::string b1 = bc(b, x, {192, in, 1, 1});
  b1 = bc(b, b1, {320, 192, 3, 3}, {2, 2});
  branch(b, m, 2);
  std::string b2 = bc(b, x, {192, in, 1, 1});
  b2 = bc(b, b2, {192, 192, 1, 7}, {1, 1}, {0, 3});
  b2 = bc(b, b2, {192, 192, 7, 1}, {1, 1}, {3, 0});
  b2 = bc(b, b2, {192, 192, 3, 3}, {2, 2});
  branch(b, m, 3);
  const std::string b3 = b.pool(x, {3, 3}, {2, 2});
  return join(b, m, {b1, b2, b3});
}

// Module E(x, in): branches 2 and 3 fan out into a 1x3 and a 3x1 convolution
// whose outputs are concatenated inside the branch (named "<m>_br<k>_concat1")
// before the module's final concat of the four branches.
std::string module_e(Builder& b, const std::string& m, const std::string& x, int64_t in) {
  branch(b, m, 1);
  const std::string b1 = bc(b, x, {320, in, 1, 1});
  branch(b, m, 2);
  const std::string t = bc(b, x, {384, in, 1, 1});
  const std::string t13 = bc(b, t, {384, 384, 1, 3}, {1, 1}, {0, 1});
  const std::string t31 = bc(b, t, {384, 384, 3, 1}, {1, 1}, {1, 0});
  const std::string b2 = b.concat({t13, t31}, kChannelAxis);
  branch(b, m, 3);
  std::string u = bc(b, x, {448, in, 1, 1});
  u = bc(b, u, {384, 448, 3, 3}, {1, 1}, {1, 1});
  const std::string u13 = bc(b, u, {384, 384, 1, 3}, {1, 1}, {0, 1});
  const std::string u31 = bc(b, u, {384, 384, 3, 1}, {1, 1}, {1, 0});
  const std::string b3 = b.concat({u13, u31}, kChannelAxis);
  branch(b, m, 4);
  std::string b4 = b.pool(x, {3, 3}, {1, 1}, {1, 1});
  b4 = bc(b, b4, {192, in, 1, 1});
  return join(b, m, {b1, b2, b3, b4});
}

}  // namespace

GraphSpec inception3(int64_t batch) {
  Builder b("inception3", 4);
  std::string x = b.input("image", {batch, 3, 299, 299});

  // Stem: 299 -> 149 -> 147 -> 147 -> 73 (pool) -> 73 -> 71 -> 35 (pool).
  b.scope("stem_");
  x = bc(b, x, {32, 3, 3, 3}, {2, 2});
  x = bc(b, x, {32, 32, 3, 3});
  x = bc(b, x, {64, 32, 3, 3}, {1, 1}, {1, 1});
  x = b.pool(x, {3, 3}, {2, 2});
  x = bc(b, x, {80, 64, 1, 1});
  x = bc(b, x, {192, 80, 3, 3});
  x = b.pool(x, {3, 3}, {2, 2});

  // Body; the second argument is the module's input channel count.
  x = module_a(b, "a1", x, 192, 32);
  x = module_a(b, "a2", x, 256, 64);
  x = module_a(b, "a3", x, 288, 64);
  x = module_b(b, "b1", x, 288);
  x = module_c(b, "c1", x, 768, 128);
  x = module_c(b, "c2", x, 768, 160);
  x = module_c(b, "c3", x, 768, 160);
  x = module_c(b, "c4", x, 768, 192);
  x = module_d(b, "d1", x, 768);
  x = module_e(b, "e1", x, 1280);
  x = module_e(b, "e2", x, 2048);

  // Head: global average over (h, w), classifier, loss.
  b.scope("head_");
  x = b.reduce_mean(x, {2, 3});
  x = b.fc(x, 1000);
  b.sce(x);
  return std::move(b).finish();
}

}  // namespace pase::zoo
