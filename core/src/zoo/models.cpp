// The public catalogue of built-in networks (models.hpp): names, defaults and
// the dispatch to the zoo builders, one per file in zoo/.
#include "pase/models.hpp"

#include <string>
#include <utility>
#include <vector>

#include "zoo/zoo.hpp"

namespace pase {
namespace {

struct Entry {
  ModelInfo info;
  GraphSpec (*build)(int64_t batch);
};

// core/docs/models.md order. Default batch 128 for the CNNs and 64 for the sequence
// models; cutoff 4 except RNNLM and Transformer (cutoff 1).
const std::vector<Entry>& entries() {
  static const std::vector<Entry> kEntries = {
      {{"alexnet", "AlexNet: 5 conv + 3 FC layers on 227x227 images", 128, 4}, zoo::alexnet},
      {{"resnet101", "ResNet-101: 33 bottleneck residual blocks on 227x227 images", 128, 4},
       zoo::resnet101},
      {{"inception3", "Inception-v3: stem and modules A-E on 299x299 images", 128, 4},
       zoo::inception3},
      {{"rnnlm", "RNN language model: 2-layer LSTM, 2048 units, vocab 100000, sequence 256", 64, 1},
       zoo::rnnlm},
      {{"transformer", "Transformer: 6+6 layers, model dim 512, 8 heads, vocab 50000, sequence 256",
        64, 1},
       zoo::transformer},
  };
  return kEntries;
}

}  // namespace

const std::vector<ModelInfo>& list_models() {
  static const std::vector<ModelInfo> kModels = [] {
    std::vector<ModelInfo> out;
    for (const Entry& e : entries()) out.push_back(e.info);
    return out;
  }();
  return kModels;
}

Result<GraphSpec> model_spec(std::string_view name, int64_t batch) {
  if (batch < 0) return Error{"batch must be a positive integer", "batch"};
  for (const Entry& e : entries()) {
    if (e.info.name != name) continue;
    return e.build(batch == 0 ? e.info.default_batch : batch);
  }
  // The known names come from the table, so the message cannot go stale.
  std::string known;
  for (const Entry& e : entries()) known += (known.empty() ? "" : ", ") + e.info.name;
  return Error{"unknown model '" + std::string(name) + "'; known: " + known, "model"};
}

Result<Graph> build_model(std::string_view name, int64_t batch) {
  Result<GraphSpec> spec = model_spec(name, batch);
  if (!spec) return spec.error();
  return build_graph(std::move(*spec));
}

}  // namespace pase
