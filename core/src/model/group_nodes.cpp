// The nodes a collective's group spans (core/docs/cluster.md, "Collectives
// inside a layer"): Machine::group_span(), allreduce_over() and
// words_over() of model/cost_model.hpp, over the group of device 0 walked
// member by member and remembered.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/cost_model.hpp"

namespace pase::ops {

namespace {

// The group of device 0 over `group` (core/docs/cluster.md, "Collectives
// inside a layer"): the devices first_device + sum(i_k * sigma_k) over the
// positions k of the group, the last dimension innermost. `nodes` is how many distinct
// nodes hold them and `most` the most members on one node.
void walk_group_nodes(const int64_t* c, size_t n, const std::vector<int>& group, int64_t per_node,
                      int64_t first_device, int64_t& nodes, int64_t& most) {
  std::vector<int64_t> sigma(n, 1);
  for (size_t k = n; k-- > 1;) sigma[k - 1] = sigma[k] * c[k];
  // The members lie in [first_device, first_device + span]: one count per
  // node of that range.
  int64_t span = 0;
  for (int g : group) span += (c[g] - 1) * sigma[g];
  const int64_t base = first_device / per_node;
  std::vector<int64_t> count((first_device + span) / per_node - base + 1, 0);
  // Walk every member: a mixed-radix counter over the group's positions,
  // the device moved by each step's stride.
  std::vector<int64_t> index(group.size(), 0);
  int64_t device = first_device;
  for (;;) {
    ++count[device / per_node - base];
    size_t j = 0;
    for (; j < group.size(); ++j) {
      device += sigma[group[j]];
      if (++index[j] < c[group[j]]) break;
      device -= c[group[j]] * sigma[group[j]];
      index[j] = 0;
    }
    if (j == group.size()) break;
  }
  nodes = 0;
  most = 0;
  for (int64_t members : count) {
    nodes += members > 0;
    most = std::max(most, members);
  }
}

// walk_group_nodes() for a group of at most 64 members over at most 16
// dimensions, the most common by far (a layer's tensor- and data-parallel
// groups), on the stack: the members' nodes listed, sorted and counted,
// with no allocation. The same answer, member for member.
constexpr size_t kSmallGroup = 64, kSmallDims = 16;
void walk_small_group_nodes(const int64_t* c, size_t n, const std::vector<int>& group,
                            int64_t per_node, int64_t first_device, int64_t& nodes, int64_t& most) {
  std::array<int64_t, kSmallDims> sigma;
  sigma[n - 1] = 1;
  for (size_t k = n; k-- > 1;) sigma[k - 1] = sigma[k] * c[k];
  std::array<int64_t, kSmallGroup> node_of;
  std::array<int64_t, kSmallDims> index{};
  size_t members = 0;
  int64_t device = first_device;
  for (;;) {
    node_of[members++] = device / per_node;
    size_t j = 0;
    for (; j < group.size(); ++j) {
      const auto g = static_cast<size_t>(group[j]);
      device += sigma[g];
      if (++index[j] < c[g]) break;
      device -= c[g] * sigma[g];
      index[j] = 0;
    }
    if (j == group.size()) break;
  }
  std::sort(node_of.begin(), node_of.begin() + static_cast<std::ptrdiff_t>(members));
  nodes = 0;
  most = 0;
  for (size_t i = 0; i < members;) {
    size_t j = i;
    while (j < members && node_of[j] == node_of[i]) ++j;
    ++nodes;
    most = std::max(most, static_cast<int64_t>(j - i));
    i = j;
  }
}

// What group_nodes() remembers a group by: the node size, where device 0
// sits in its node, and the split and stride of each group position with a
// split above 1 (a position of split 1 adds no member), in words on the
// stack, hashed.
struct GroupKey {
  std::array<int64_t, 2 + 2 * kSmallDims> words{};
  size_t size = 0;
  bool operator==(const GroupKey& o) const {
    return size == o.size &&
           std::equal(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(size),
                      o.words.begin());
  }
};
struct GroupKeyHash {
  size_t operator()(const GroupKey& k) const {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ k.size;
    for (size_t i = 0; i < k.size; ++i) {
      h ^= static_cast<uint64_t>(k.words[i]) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      h *= 0xbf58476d1ce4e5b9ULL;
    }
    return static_cast<size_t>(h ^ (h >> 31));
  }
};

// walk_group_nodes() remembered: its answer depends only on what GroupKey
// holds; walking a group of thousands of devices is what a search over
// large clusters spends its time on (the layout search prices the same
// groups for many layouts, a pipeline's floors every layer's
// configurations at every stage size). A table per thread, emptied when
// full; a group of at most 8 members walks faster than it is looked up.
void group_nodes(const int64_t* c, size_t n, const std::vector<int>& group, int64_t per_node,
                 int64_t first_device, int64_t& nodes, int64_t& most) {
  constexpr size_t kMaxRemembered = size_t{1} << 16;
  int64_t members = 1;
  for (int g : group) members *= c[g];
  const bool small = n >= 1 && n <= kSmallDims && group.size() <= kSmallDims;
  if (!small) {
    walk_group_nodes(c, n, group, per_node, first_device, nodes, most);
    return;
  }
  if (members <= 8) {
    walk_small_group_nodes(c, n, group, per_node, first_device, nodes, most);
    return;
  }
  GroupKey key;
  key.words[key.size++] = per_node;
  key.words[key.size++] = first_device % per_node;
  std::array<int64_t, kSmallDims> sigma;
  sigma[n - 1] = 1;
  for (size_t k = n; k-- > 1;) sigma[k - 1] = sigma[k] * c[k];
  for (int g : group) {
    if (c[g] == 1) continue;
    key.words[key.size++] = c[g];
    key.words[key.size++] = sigma[static_cast<size_t>(g)];
  }
  thread_local std::unordered_map<GroupKey, std::pair<int64_t, int64_t>, GroupKeyHash> remembered;
  if (auto it = remembered.find(key); it != remembered.end()) {
    nodes = it->second.first;
    most = it->second.second;
    return;
  }
  if (members <= static_cast<int64_t>(kSmallGroup))
    walk_small_group_nodes(c, n, group, per_node, first_device, nodes, most);
  else
    walk_group_nodes(c, n, group, per_node, first_device, nodes, most);
  if (remembered.size() >= kMaxRemembered) remembered.clear();
  remembered.emplace(key, std::make_pair(nodes, most));
}

}  // namespace

void Machine::group_span(const int64_t* c, size_t n, const std::vector<int>& group, int64_t& nodes,
                         int64_t& most) const {
  if (gpus_per_node == 0) {
    int64_t p = 1;
    for (int i : group) p *= c[i];
    nodes = 1;
    most = p;
    return;
  }
  group_nodes(c, n, group, gpus_per_node, first_device, nodes, most);
}

double Machine::allreduce_over(double w, double p, const int64_t* c, size_t n,
                               const std::vector<int>& group) const {
  if (gpus_per_node == 0 || p <= 1) return allreduce(w, p);
  int64_t nodes = 0, most = 0;
  group_nodes(c, n, group, gpus_per_node, first_device, nodes, most);
  if (nodes == 1) return r1 * (w / p) * 2 * (p - 1);
  const double l = static_cast<double>(most), m = static_cast<double>(nodes);
  return r1 * (w / l) * 2 * (l - 1) + r * (w / (l * m)) * 2 * (m - 1);
}

double Machine::words_over(double w, const int64_t* c, size_t n,
                           const std::vector<int>& group) const {
  if (gpus_per_node == 0) return words(w);
  int64_t nodes = 0, most = 0;
  group_nodes(c, n, group, gpus_per_node, first_device, nodes, most);
  return (nodes == 1 ? r1 : r) * w;
}

}  // namespace pase::ops
