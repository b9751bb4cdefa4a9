// The plan summary of summary.hpp: layers grouped by op and degrees by kind.
#include "pase/summary.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pase {

namespace {

// a * b, saturated: only a malformed Plan (splits beyond the devices) could
// overflow, and its summary must still not be undefined behaviour.
int64_t saturated_product(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::numeric_limits<int64_t>::max();
  return product;
}

// The word families of a label, in the order they are written.
enum class Family : uint8_t { kData, kTensor, kSequence, kSpatial, kExpert, kLayer, kOther };

Family family_of(DimKind kind) {
  switch (kind) {
    case DimKind::kBatch:
      return Family::kData;
    case DimKind::kHeads:
    case DimKind::kHidden:
    case DimKind::kReduction:
    case DimKind::kVocabulary:
      return Family::kTensor;
    case DimKind::kSequence:
      return Family::kSequence;
    case DimKind::kSpatial:
      return Family::kSpatial;
    case DimKind::kExperts:
      return Family::kExpert;
    case DimKind::kLayers:
      return Family::kLayer;
    case DimKind::kOther:
      return Family::kOther;
  }
  return Family::kOther;
}

const char* family_word(Family family) {
  switch (family) {
    case Family::kData:
      return "data parallel";
    case Family::kTensor:
      return "tensor parallel";
    case Family::kSequence:
      return "sequence split";
    case Family::kSpatial:
      return "spatial split";
    case Family::kExpert:
      return "expert parallel";
    case Family::kLayer:
      return "layer parallel";
    case Family::kOther:
      return "other split";
  }
  return "other split";
}

// Whether a family's label names its kinds: "data parallel" could hide that
// it is the batch, "tensor parallel" which dimensions it cuts; the other
// words already say it.
bool names_kinds(Family family) { return family == Family::kData || family == Family::kTensor; }

constexpr Family kFamilies[] = {Family::kData,    Family::kTensor, Family::kSequence,
                                Family::kSpatial, Family::kExpert, Family::kLayer,
                                Family::kOther};

}  // namespace

std::vector<KindDegree> kind_degrees(const Vertex& vertex, const Config& config) {
  std::vector<KindDegree> degrees;
  const size_t n = std::min(vertex.kinds.size(), config.size());
  for (size_t d = 0; d < n; ++d) {
    if (config[d] <= 1) continue;
    KindDegree* found = nullptr;
    for (KindDegree& k : degrees) {
      if (k.kind == vertex.kinds[d]) found = &k;
    }
    if (found == nullptr) {
      degrees.push_back({vertex.kinds[d], 1});
      found = &degrees.back();
    }
    found->degree = saturated_product(found->degree, config[d]);
  }
  std::sort(degrees.begin(), degrees.end(), [](const KindDegree& a, const KindDegree& b) {
    return static_cast<int>(a.kind) < static_cast<int>(b.kind);
  });
  return degrees;
}

std::string split_label(const std::vector<KindDegree>& degrees) {
  std::string label;
  for (Family family : kFamilies) {
    int64_t degree = 1;
    std::vector<const KindDegree*> parts;
    for (const KindDegree& k : degrees) {
      if (k.degree <= 1 || family_of(k.kind) != family) continue;
      degree = saturated_product(degree, k.degree);
      parts.push_back(&k);
    }
    if (parts.empty()) continue;
    if (!label.empty()) label += ", ";
    label += family_word(family);
    label += " x" + std::to_string(degree);
    if (!names_kinds(family)) continue;
    // One kind: "(heads)"; several: each with its own degree, so that
    // "hidden x2 / reduction x4" and "hidden x4 / reduction x2" differ.
    label += " (";
    for (const KindDegree* k : parts) {
      if (k != parts.front()) label += " / ";
      label += dim_kind_name(k->kind);
      if (parts.size() > 1) label += " x" + std::to_string(k->degree);
    }
    label += ")";
  }
  return label.empty() ? "replicated" : label;
}

std::vector<LayerGroup> summarize(const Graph& graph, const Plan& plan) {
  const size_t n = graph.vertices.size();
  // Each vertex's cost with the re-distribution of the edges into it.
  std::vector<double> cost(n, 0.0);
  for (size_t i = 0; i < n && i < plan.layers.size(); ++i) cost[i] = plan.layers[i].total;
  for (size_t e = 0; e < graph.edges.size() && e < plan.edge_costs.size(); ++e) {
    const int dst = graph.edges[e].dst;
    if (dst >= 0 && static_cast<size_t>(dst) < n) {
      cost[static_cast<size_t>(dst)] += plan.edge_costs[e];
    }
  }

  // Key: op and degrees; value: the group's index in `groups`, which is in
  // first-vertex order because the vertices are visited by id.
  using Key = std::pair<std::string, std::vector<std::pair<int, int64_t>>>;
  std::map<Key, size_t> index;
  std::vector<LayerGroup> groups;
  double total_cost = 0, total_memory = 0;
  for (size_t i = 0; i < n; ++i) {
    const Vertex& vertex = graph.vertices[i];
    const Config config = i < plan.strategy.size() ? plan.strategy[i] : Config{};
    std::vector<KindDegree> degrees = kind_degrees(vertex, config);
    Key key{vertex.op, {}};
    for (const KindDegree& k : degrees) key.second.emplace_back(static_cast<int>(k.kind), k.degree);
    auto [it, inserted] = index.try_emplace(std::move(key), groups.size());
    if (inserted) {
      LayerGroup group;
      group.op = vertex.op;
      for (const KindDegree& k : degrees) {
        group.devices = saturated_product(group.devices, k.degree);
      }
      group.label = split_label(degrees);
      group.degrees = std::move(degrees);
      groups.push_back(std::move(group));
    }
    LayerGroup& group = groups[it->second];
    group.vertices.push_back(vertex.id);
    const double memory = i < plan.vertex_memory.size() ? plan.vertex_memory[i] : 0.0;
    group.cost += cost[i];
    group.memory_bytes += memory;
    total_cost += cost[i];
    total_memory += memory;
  }
  for (LayerGroup& group : groups) {
    group.cost_share = total_cost > 0 ? group.cost / total_cost : 0.0;
    group.memory_share = total_memory > 0 ? group.memory_bytes / total_memory : 0.0;
  }
  return groups;
}

}  // namespace pase
