// The equivalence classes of the dynamic program's tables and the sizes of
// those tables (dynamic_program.hpp; core/docs/performance.md, "Equivalence
// classes"), computed from the order before anything is allocated.
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cost/cost_tables.hpp"
#include "search/dynamic_program.hpp"

namespace pase {

namespace {

// Splits the `count` classes of `cls` further by `part`: the new classes are
// the distinct pairs (cls[c], part[c]), numbered by first appearance, so that
// the numbering follows the least configuration of each class. Returns the
// new count.
int refine(std::vector<int>& cls, int count, const std::vector<int>& part) {
  if (count == static_cast<int>(cls.size())) return count;  // all apart already
  std::unordered_map<uint64_t, int> seen;
  seen.reserve(cls.size());
  for (size_t c = 0; c < cls.size(); ++c) {
    uint64_t key = static_cast<uint64_t>(cls[c]) << 32 | static_cast<uint32_t>(part[c]);
    cls[c] = seen.emplace(key, static_cast<int>(seen.size())).first->second;
  }
  return static_cast<int>(seen.size());
}

// Sizes of the tables of `ord`, indexed by `classes` or, when null, by raw
// configurations.
SearchStats estimate_sizes(const Ordering& ord, const std::vector<ConfigSet>& configs,
                           const TableClasses* classes) {
  SearchStats e;
  double vectors = classes ? classes->bytes : 0;
  for (const ConfigSet& c : configs) vectors += static_cast<double>(c.size()) * sizeof(double);
  // States of the k-th dependent vertex of step i.
  auto states = [&](size_t i, size_t k) {
    return classes ? static_cast<double>(classes->steps[i].count[k])
                   : static_cast<double>(configs[ord.steps[i].dep[k]].size());
  };
  std::vector<double> size(ord.steps.size());
  double live = 0, args = 0;
  for (size_t i = 0; i < ord.steps.size(); ++i) {
    const Step& st = ord.steps[i];
    double nv = static_cast<double>(configs[st.vertex].size());
    size[i] = 1;
    for (size_t k = 0; k < st.dep.size(); ++k) size[i] *= states(i, k);
    // The innermost level and its columns (configurations or groups).
    const DepClasses* dc = classes ? &classes->steps[i] : nullptr;
    const size_t inner_k =
        dc && !dc->order.empty() ? static_cast<size_t>(dc->order.back()) : st.dep.size() - 1;
    const bool grouped = dc && !dc->group_first.empty();
    const double columns = grouped ? static_cast<double>(dc->group_first.size()) : nv;
    if (grouped) {
      const double inner_states = states(i, inner_k);
      e.pairs += size[i] / inner_states * (nv + inner_states * columns);
    } else {
      e.pairs += size[i] * nv;
    }
    e.table_entries += size[i];
    e.largest_table = std::max(e.largest_table, size[i]);
    e.max_dependent_set = std::max(e.max_dependent_set, static_cast<int>(st.dep.size()));
    double matrices = 0;
    for (int u : st.new_neighbors) {
      size_t k = std::find(st.dep.begin(), st.dep.end(), u) - st.dep.begin();
      // The innermost level's matrix has a column per group.
      matrices += (grouped && k == inner_k ? columns : nv) * states(i, k) * sizeof(double);
    }
    // The threshold search's sorted rows (StepRunner, default DpTuning).
    const DpTuning tuning;
    if (!st.dep.empty() && tuning.threshold_for(columns, states(i, inner_k)))
      matrices += states(i, inner_k) * std::min<double>(columns, tuning.row_keep) *
                  (sizeof(double) + sizeof(uint16_t));
    args += size[i] * sizeof(uint16_t);
    double now = vectors + live + size[i] * sizeof(double) + args + matrices;
    e.peak_bytes = std::max(e.peak_bytes, now);
    for (int j : st.consumed) live -= size[j] * sizeof(double);
    live += size[i] * sizeof(double);
  }
  return e;
}

// The least configuration of each of the `count` classes of `cls`.
std::vector<int> least_members(const std::vector<int>& cls, int count) {
  std::vector<int> first(count, -1);
  for (size_t c = cls.size(); c-- > 0;) first[cls[c]] = static_cast<int>(c);
  return first;
}

// Step i's iteration order and groups (DepClasses::order, group_of), from
// the classes of its dependent vertices and of the tables it consumes.
void choose_order(const Graph& g, const std::vector<ConfigSet>& configs, const Ordering& ord,
                  const EdgePairs& pairs, EndIds& ends, size_t i, bool groups, TableClasses& out) {
  const Step& st = ord.steps[i];
  DepClasses& dc = out.steps[i];
  const int d = static_cast<int>(st.dep.size());
  const int v = st.vertex;
  const double nv = static_cast<double>(configs[v].size());
  dc.order.resize(d);
  for (int k = 0; k < d; ++k) dc.order[k] = k;
  if (!groups || d == 0) return;
  double entries = 1;
  for (int k = 0; k < d; ++k) entries *= dc.count[k];
  const double plain = entries * nv;  // rows over the configurations
  double best = plain;
  int best_k = -1, best_count = 0;
  std::vector<int> best_cls;
  for (int k = d; k-- > 0;) {
    const int u = st.dep[k];
    // What the terms that read u's state see of v: its class in every
    // consumed table that has u, its end on every edge to u.
    std::vector<int> cls(configs[v].size(), 0);
    int count = 1;
    for (int j : st.consumed) {
      const std::vector<int>& dj = ord.steps[j].dep;
      if (std::find(dj.begin(), dj.end(), u) == dj.end()) continue;
      auto at = std::find(dj.begin(), dj.end(), v) - dj.begin();
      count = refine(cls, count, out.steps[j].of[at]);
    }
    for (int id : pairs.between(v, u)) {
      const Edge& e = g.edges[id];
      if (count == static_cast<int>(cls.size())) break;
      count = refine(cls, count, ends.of(e, e.src == v));
    }
    const double states = dc.count[k];
    const double pairs_k = entries / states * (nv + states * count);
    if (pairs_k < 0.8 * plain && pairs_k < best) {
      best = pairs_k;
      best_k = k;
      best_count = count;
      best_cls = std::move(cls);
    }
  }
  if (best_k < 0) return;
  dc.order.clear();
  for (int k = 0; k < d; ++k)
    if (k != best_k) dc.order.push_back(k);
  dc.order.push_back(best_k);
  dc.group_of = std::move(best_cls);
  dc.group_first = least_members(dc.group_of, best_count);
  out.bytes += static_cast<double>(dc.group_of.size() + best_count) * sizeof(int);
}

}  // namespace

TableClasses table_classes(const Graph& g, const std::vector<ConfigSet>& configs,
                           const Ordering& ord, EndView view, bool groups) {
  EdgePairs pairs(g);
  EndIds ends(g, configs, view);
  TableClasses out;
  out.steps.resize(ord.steps.size());
  for (size_t i = 0; i < ord.steps.size(); ++i) {
    const Step& st = ord.steps[i];
    DepClasses& dc = out.steps[i];
    const size_t d = st.dep.size();
    dc.of.resize(d);
    dc.count.resize(d);
    dc.first.resize(d);
    for (size_t k = 0; k < d; ++k) {
      const int w = st.dep[k];
      std::vector<int>& cls = dc.of[k];
      cls.assign(configs[w].size(), 0);
      int count = 1;
      // What the consumed tables tell apart of w...
      for (int j : st.consumed) {
        const std::vector<int>& dj = ord.steps[j].dep;
        auto it = std::find(dj.begin(), dj.end(), w);
        if (it != dj.end()) count = refine(cls, count, out.steps[j].of[it - dj.begin()]);
      }
      // ... and what the edges between v and w see of it.
      for (int id : pairs.between(st.vertex, w)) {
        const Edge& e = g.edges[id];
        if (count == static_cast<int>(cls.size())) break;
        count = refine(cls, count, ends.of(e, e.src == w));
      }
      dc.count[k] = count;
      dc.first[k] = least_members(cls, count);
      out.bytes += static_cast<double>(cls.size() + count) * sizeof(int);
    }
    choose_order(g, configs, ord, pairs, ends, i, groups, out);
  }
  return out;
}

SearchStats estimate_dp(const Ordering& ord, const std::vector<ConfigSet>& configs,
                        const TableClasses* classes) {
  SearchStats e = estimate_sizes(ord, configs, classes);
  const SearchStats raw = classes ? estimate_sizes(ord, configs, nullptr) : e;
  e.raw_pairs = raw.pairs;
  e.raw_peak_bytes = raw.peak_bytes;
  return e;
}

}  // namespace pase
