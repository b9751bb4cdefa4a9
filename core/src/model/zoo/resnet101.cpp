// ResNet-101, core/docs/models.md "ResNet-101": stem, 33 bottleneck blocks in four
// stages, head (245 vertices, 277 edges). Names follow torchvision
// ("layer3_12_conv2", "layer2_0_down_bn1").
#include <string>

#include "model/builder.hpp"
#include "model/zoo/zoo.hpp"

namespace pase::zoo {

using build::Builder;
namespace {

// Bottleneck(x, in, planes, stride, downsample) of core/docs/models.md. The stride sits
// on the 3x3 convolution; the identity path, when present, is created after
// the third BN so that vertex ids match core/docs/models.md.
std::string bottleneck(Builder& b, const std::string& prefix, const std::string& x, int64_t in,
                       int64_t planes, int64_t stride) {
  const bool downsample = in != 4 * planes || stride != 1;
  b.scope(prefix);
  std::string y = b.bn(b.conv(x, {planes, in, 1, 1}));
  y = b.bn(b.conv(y, {planes, planes, 3, 3}, {stride, stride}, {1, 1}));
  y = b.bn(b.conv(y, {4 * planes, planes, 1, 1}));

  std::string identity = x;
  if (downsample) {
    b.scope(prefix + "down_");
    identity = b.bn(b.conv(x, {4 * planes, in, 1, 1}, {stride, stride}));
  }
  b.scope(prefix);
  return b.elementwise(y, identity, 1);
}

}  // namespace

GraphSpec resnet101(int64_t batch) {
  Builder b("resnet101", 4);
  std::string x = b.input("image", {batch, 3, 227, 227});

  // Stem: 227 -> 114 (conv) -> 57 (pool).
  x = b.conv(x, {64, 3, 7, 7}, {2, 2}, {3, 3});
  x = b.bn(x);
  x = b.pool(x, {3, 3}, {2, 2}, {1, 1});

  // Stages (planes, blocks, stride); only each stage's first block downsamples.
  struct Stage {
    int64_t planes, blocks, stride;
  };
  constexpr Stage kStages[] = {{64, 3, 1}, {128, 4, 2}, {256, 23, 2}, {512, 3, 2}};
  int64_t in = 64;
  for (int s = 0; s < 4; ++s) {
    const Stage& st = kStages[s];
    for (int64_t i = 0; i < st.blocks; ++i) {
      const std::string prefix = "layer" + std::to_string(s + 1) + "_" + std::to_string(i) + "_";
      x = bottleneck(b, prefix, x, in, st.planes, i == 0 ? st.stride : 1);
      in = 4 * st.planes;
    }
  }

  // Head: global average over (h, w), classifier, loss.
  b.scope("");
  x = b.reduce_mean(x, {2, 3});
  x = b.fc(x, 1000);
  b.sce(x);
  return std::move(b).finish();
}

}  // namespace pase::zoo
