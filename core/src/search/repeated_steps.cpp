// Repeated steps of the dynamic program (repeated_steps.hpp).
#include "search/repeated_steps.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace pase::detail {

namespace {

// Interns keys of any comparable type as small ids, in order of first
// appearance.
template <class Key>
int intern_key(std::map<Key, int>& ids, Key key) {
  const int next = static_cast<int>(ids.size());
  return ids.emplace(std::move(key), next).first->second;
}

std::vector<int64_t> classes_key(const DepClasses& dc) {
  std::vector<int64_t> key;
  auto add = [&](const std::vector<int>& v) {
    key.push_back(-1 - static_cast<int64_t>(v.size()));
    key.insert(key.end(), v.begin(), v.end());
  };
  for (const std::vector<int>& of : dc.of) add(of);
  add(dc.count);
  for (const std::vector<int>& first : dc.first) add(first);
  add(dc.order);
  add(dc.group_of);
  add(dc.group_first);
  return key;
}

}  // namespace

std::vector<int> step_signatures(const Graph& g, const Ordering& ord, const TableClasses& classes,
                                 const std::vector<std::vector<double>>& vcost,
                                 const EdgePrices& prices, const EdgePairs& pairs) {
  std::map<std::vector<double>, int> cost_ids;
  std::map<std::vector<int64_t>, int> class_ids, edge_ids, step_ids;
  std::vector<int> sig(ord.steps.size());
  for (size_t i = 0; i < ord.steps.size(); ++i) {
    const Step& st = ord.steps[i];
    const int v = st.vertex;
    std::vector<int64_t> key{intern_key(cost_ids, vcost[v]),
                             intern_key(class_ids, classes_key(classes.steps[i])), -2};
    for (int u : st.dep) key.push_back(u - v);
    key.push_back(-3);
    for (int j : st.consumed) key.push_back(static_cast<int64_t>(i) - j);
    key.push_back(-4);
    for (int u : st.new_neighbors) {
      key.push_back(u - v);
      std::vector<int64_t> edges;
      for (int id : pairs.between(u, v)) {
        edges.push_back(g.edges[id].src == u ? 1 : 0);
        std::vector<int64_t> s = prices.signature(id);
        edges.push_back(static_cast<int64_t>(s.size()));
        edges.insert(edges.end(), s.begin(), s.end());
      }
      key.push_back(intern_key(edge_ids, std::move(edges)));
    }
    sig[i] = intern_key(step_ids, std::move(key));
  }
  return sig;
}

std::vector<RepeatedSteps> find_repeated_steps(const Ordering& ord, const std::vector<int>& sig,
                                               const std::vector<double>& table_entries) {
  const int n = static_cast<int>(sig.size());
  // consumer[j]: the step that consumes table j (n: none, the last steps of
  // their components).
  std::vector<int> consumer(n, n);
  for (int i = 0; i < n; ++i)
    for (int j : ord.steps[i].consumed) consumer[j] = i;
  // The tables live at each boundary p (made before p, consumed at or
  // after it), in order, swept once: a boundary's crossing table is one of
  // them. A boundary with more than kLive is left empty and scanned in full
  // (the tables made before a stretch and consumed after it are live too,
  // and skipped there): the sweep stays linear in the steps, where a scan
  // of every table per boundary made the search quadratic in the layers.
  constexpr size_t kLive = 16;
  std::vector<std::vector<int>> live(static_cast<size_t>(n) + 1);
  std::vector<char> many(static_cast<size_t>(n) + 1, 0);
  {
    std::set<int> now;  // live at p
    for (int p = 1; p <= n; ++p) {
      now.insert(p - 1);
      for (int j : ord.steps[p - 1].consumed)
        if (consumer[j] == p - 1) now.erase(j);
      if (now.size() <= kLive)
        live[p].assign(now.begin(), now.end());
      else
        many[p] = 1;
    }
  }
  // The one table crossing boundary p of the stretch [s, e), or -1.
  auto crossing = [&](int p, int s, int e) {
    int found = -1;
    auto one = [&](int j) {
      if (consumer[j] < p || (j < s && consumer[j] >= e)) return true;
      if (found >= 0) return false;
      found = j;
      return true;
    };
    if (!many[p]) {
      for (int j : live[p])
        if (!one(j)) return -1;
      return found;
    }
    for (int j = 0; j < p; ++j)
      if (!one(j)) return -1;
    return found;
  };
  // Candidates: for each period, the runs of steps i with sig[i] ==
  // sig[i + period], each giving the stretch [a, a + run + period), at a
  // phase r of its windows whose boundaries each have one crossing table
  // where it must be.
  std::vector<RepeatedSteps> found;
  for (int period = 1; 3 * period <= n; ++period) {
    for (int a = 0; a + period < n;) {
      // A stretch of a shorter period already covers a: its multiples
      // would repeat too, with fewer windows.
      bool inside = false;
      for (const RepeatedSteps& f : found)
        if (a >= f.start && a < f.start + f.windows * f.period) {
          a = f.start + f.windows * f.period;
          inside = true;
        }
      if (inside) continue;
      int run = 0;
      while (a + run + period < n && sig[a + run] == sig[a + run + period]) ++run;
      if (run == 0) {
        ++a;
        continue;
      }
      const int length = run + period;
      // Of the phases that allow it, the one of the smallest crossing
      // tables (the fewest states to settle), then the most windows.
      std::optional<RepeatedSteps> best;
      for (int r = 0; r < period; ++r) {
        const int windows = (length - r) / period;
        if (windows < 3) break;
        RepeatedSteps rs{a + r, period, windows, {}};
        const int e = rs.start + windows * period;
        bool ok = true;
        for (int k = 0; k <= windows && ok; ++k) {
          const int p = rs.start + k * period;
          const int j = crossing(p, rs.start, e);
          ok = j >= 0 && (k == 0 || j >= p - period) && (k == windows || consumer[j] < p + period);
          rs.crossing.push_back(j);
        }
        if (ok && (!best || table_entries[rs.crossing[1]] < table_entries[best->crossing[1]]))
          best = std::move(rs);
      }
      if (best) found.push_back(std::move(*best));
      a += run;
    }
  }
  // The longest first, each disjoint from those kept before it.
  std::stable_sort(found.begin(), found.end(), [](const RepeatedSteps& x, const RepeatedSteps& y) {
    return x.windows * x.period > y.windows * y.period;
  });
  std::vector<RepeatedSteps> kept;
  for (RepeatedSteps& rs : found) {
    const int e = rs.start + rs.windows * rs.period;
    bool disjoint = true;
    for (const RepeatedSteps& k : kept)
      disjoint = disjoint && (e <= k.start || rs.start >= k.start + k.windows * k.period);
    if (disjoint) kept.push_back(std::move(rs));
  }
  std::sort(kept.begin(), kept.end(),
            [](const RepeatedSteps& x, const RepeatedSteps& y) { return x.start < y.start; });
  return kept;
}

RepeatSkipper::RepeatSkipper(std::vector<RepeatedSteps> stretches, size_t steps)
    : stretches_(std::move(stretches)),
      source_(steps),
      failures_(stretches_.size(), 0),
      not_at_(stretches_.size(), -1),
      alike_(stretches_.size(), 0),
      needed_(stretches_.size(), 1) {
  for (size_t i = 0; i < steps; ++i) source_[i] = static_cast<int>(i);
}

size_t RepeatSkipper::at(size_t i, std::vector<RawVector<double>>& tables) {
  if (tried_) {
    const RepeatedSteps& rs = stretches_[tried_->stretch];
    if (i == static_cast<size_t>(rs.start + (tried_->target + 1) * rs.period)) {
      const size_t go = settle_tried(i, tables);
      if (go != i) return go;
    }
  }
  for (size_t s = 0; s < stretches_.size(); ++s) {
    const RepeatedSteps& rs = stretches_[s];
    const int offset = static_cast<int>(i) - rs.start;
    if (offset < 0 || offset % rs.period != 0 || offset / rs.period >= rs.windows) continue;
    const int k = offset / rs.period;
    if (k == 0) kept_.clear();
    const RawVector<double>& cur = tables[rs.crossing[k]];
    auto kept_at = [&](int boundary) -> const std::vector<double>* {
      for (const auto& [b, table] : kept_)
        if (b == boundary && table.size() == cur.size()) return &table;
      return nullptr;
    };
    const int end = rs.start + rs.windows * rs.period;
    for (int c = 1; c <= std::min(k, kMaxCycle); ++c) {
      const std::vector<double>* before = kept_at(k - c);
      double shift = 0;
      if (!before || !shifted_copy(before->data(), cur.data(), cur.size(), shift)) continue;
      // Window k + j repeats window k - c + (j mod c); boundary
      // (k - c + r) + m * c holds that boundary's table plus m shifts.
      for (int j = static_cast<int>(i); j < end; ++j) {
        const int w = (j - rs.start) / rs.period, phase = (j - rs.start) % rs.period;
        source_[j] = rs.start + (k - c + (w - k) % c) * rs.period + phase;
      }
      const int q = (rs.windows - k) / c, r = (rs.windows - k) % c;
      const double* base = r == 0 ? cur.data() : kept_at(k - c + r)->data();
      const double times = q + (r == 0 ? 0 : 1);
      RawVector<double> last(cur.size());
      for (size_t e = 0; e < cur.size(); ++e) last[e] = base[e] + times * shift;
      tables[rs.crossing[k]].clear();
      tables[rs.crossing[k]].shrink_to_fit();
      tables[rs.crossing[rs.windows]] = std::move(last);
      skipped_ += static_cast<uint64_t>(end) - i;
      kept_.clear();
      return static_cast<size_t>(end);
    }
    // Growth per entry: skip to the last window first, on its extrapolated
    // crossing table (settle_tried() confirms it, or tries a nearer one).
    const int last = rs.windows - 1;
    const std::vector<double>*t1 = kept_at(k - 1), *t0 = kept_at(k - 2);
    std::vector<double> growth;
    const bool alike = failures_[s] < kMaxFailures && t0 && t1 &&
                       same_growth(t0->data(), t1->data(), cur.data(), cur.size(), growth);
    alike_[s] = alike ? alike_[s] + 1 : 0;
    if (alike && not_at_[s] != k && last - k >= 1 && alike_[s] >= needed_[s]) {
      const int nearer = failures_[s] > 0 ? 1 : std::numeric_limits<int>::max();
      tried_ = Tried{
          s,    k, last, nearer, std::vector<double>(cur.begin(), cur.end()), std::move(growth),
          kept_};
      tables[rs.crossing[k]].clear();
      tables[rs.crossing[k]].shrink_to_fit();
      return jump(tables);
    }
    kept_.emplace_back(k, std::vector<double>(cur.begin(), cur.end()));
    if (kept_.size() > static_cast<size_t>(kMaxCycle)) kept_.erase(kept_.begin());
  }
  return i;
}

std::vector<double> RepeatSkipper::Tried::line(int boundary) const {
  std::vector<double> t(at_k.size());
  const double times = boundary - k;
  for (size_t e = 0; e < t.size(); ++e) t[e] = at_k[e] + times * growth[e];
  return t;
}

size_t RepeatSkipper::jump(std::vector<RawVector<double>>& tables) {
  const RepeatedSteps& rs = stretches_[tried_->stretch];
  const std::vector<double> t = tried_->line(tried_->target);
  tables[rs.crossing[tried_->target]].assign(t.begin(), t.end());
  kept_.clear();
  return static_cast<size_t>(rs.start + tried_->target * rs.period);
}

size_t RepeatSkipper::settle_tried(size_t i, std::vector<RawVector<double>>& tables) {
  Tried& t = *tried_;
  const RepeatedSteps& rs = stretches_[t.stretch];
  // The crossing table that the target window made from the line's is the
  // line's next one.
  RawVector<double>& made = tables[rs.crossing[t.target + 1]];
  const std::vector<double> expected = t.line(t.target + 1);
  if (made.size() == expected.size() && same_entries(expected.data(), made.data(), made.size())) {
    for (int j = rs.start + t.k * rs.period; j < rs.start + t.target * rs.period; ++j)
      source_[j] = rs.start + (t.k - 1) * rs.period + (j - rs.start) % rs.period;
    skipped_ += static_cast<uint64_t>(t.target - t.k) * rs.period;
    // The line's table before the target window's, for the next
    // boundary's checks (at() kept the target window's own).
    kept_.insert(kept_.begin(), {t.target - 1, t.line(t.target - 1)});
    tried_.reset();
    return i;
  }
  made.clear();
  made.shrink_to_fit();
  ++failures_[t.stretch];
  if (t.target - t.k >= 2 && t.nearer > 0 && failures_[t.stretch] < kMaxFailures) {
    t.target = t.k + (t.target - t.k) / 2;
    --t.nearer;
    return jump(tables);
  }
  // Not this time: run the stretch from boundary k, and try again after
  // twice as many boundaries alike in a row.
  tables[rs.crossing[t.k]].assign(t.at_k.begin(), t.at_k.end());
  kept_ = std::move(t.kept);
  not_at_[t.stretch] = t.k;
  alike_[t.stretch] = 0;
  needed_[t.stretch] *= 2;
  const size_t back = static_cast<size_t>(rs.start + t.k * rs.period);
  tried_.reset();
  return back;
}

namespace {

// 0 when every finite entry of the tables is an integer of magnitude at
// most 2^51 (the paper's flat machine: sums are exact), else 1e-13 of the
// largest magnitude; infinity when no entry is finite.
double tolerance_of(std::initializer_list<const double*> tables, size_t n) {
  constexpr double kLimit = 0x1p51;
  bool integers = true, any = false;
  double scale = 0;
  for (const double* t : tables)
    for (size_t i = 0; i < n; ++i) {
      if (std::isinf(t[i])) continue;
      any = true;
      scale = std::max(scale, std::abs(t[i]));
      integers = integers && t[i] == std::trunc(t[i]);
    }
  if (!any) return std::numeric_limits<double>::infinity();
  return integers && scale <= kLimit ? 0 : 1e-13 * scale;
}

}  // namespace

bool shifted_copy(const double* prev, const double* cur, size_t n, double& shift) {
  const double tolerance = tolerance_of({prev, cur}, n);
  if (std::isinf(tolerance)) return false;
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    if (std::isinf(prev[i]) || std::isinf(cur[i])) {
      if (prev[i] != cur[i]) return false;
      continue;
    }
    if (!any) shift = cur[i] - prev[i];
    any = true;
  }
  if (!any) return false;
  for (size_t i = 0; i < n; ++i)
    if (!std::isinf(cur[i]) && std::abs(cur[i] - prev[i] - shift) > tolerance) return false;
  return true;
}

bool same_entries(const double* a, const double* b, size_t n) {
  const double tolerance = tolerance_of({a, b}, n);
  for (size_t i = 0; i < n; ++i) {
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return false;
    } else if (std::abs(a[i] - b[i]) > tolerance) {
      return false;
    }
  }
  return true;
}

bool same_growth(const double* t0, const double* t1, const double* t2, size_t n,
                 std::vector<double>& growth) {
  const double tolerance = tolerance_of({t0, t1, t2}, n);
  if (std::isinf(tolerance)) return false;
  growth.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (std::isinf(t0[i]) || std::isinf(t1[i]) || std::isinf(t2[i])) {
      if (t0[i] != t1[i] || t1[i] != t2[i]) return false;
      continue;
    }
    growth[i] = t2[i] - t1[i];
    if (std::abs(growth[i] - (t1[i] - t0[i])) > tolerance) return false;
  }
  return true;
}

}  // namespace pase::detail
