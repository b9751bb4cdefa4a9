// AlexNet, core/docs/models.md "AlexNet": five convolutions, three pools, a Reshape and
// three FC layers (14 vertices, 13 edges).
#include "model/builder.hpp"
#include "model/zoo/zoo.hpp"

namespace pase::zoo {

using build::Builder;

GraphSpec alexnet(int64_t batch) {
  Builder b("alexnet", 4);
  std::string x = b.input("image", {batch, 3, 227, 227});

  // Feature extractor, core/docs/models.md items 1-5; spatial size 55, 27, 13, 13, 13, 6.
  x = b.conv(x, {96, 3, 11, 11}, {4, 4}, {0, 0}, 1);
  x = b.pool(x, {3, 3}, {2, 2});
  x = b.conv(x, {256, 96, 5, 5}, {1, 1}, {2, 2}, 1);
  x = b.pool(x, {3, 3}, {2, 2});
  x = b.conv(x, {384, 256, 3, 3}, {1, 1}, {1, 1}, 1);
  x = b.conv(x, {384, 384, 3, 3}, {1, 1}, {1, 1}, 1);
  x = b.conv(x, {256, 384, 3, 3}, {1, 1}, {1, 1}, 1);
  x = b.pool(x, {3, 3}, {2, 2});

  // Classifier, items 6-8: (b, 256, 6, 6) flattened to (b, 9216).
  x = b.reshape(x, {batch, 256 * 6 * 6});
  x = b.fc(x, 4096, 1);
  x = b.fc(x, 4096, 1);
  x = b.fc(x, 1024);
  b.sce(x);
  return std::move(b).finish();
}

}  // namespace pase::zoo
