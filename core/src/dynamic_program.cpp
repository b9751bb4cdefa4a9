// The PaSE dynamic program (Elango, IPDPS 2021, Fig. 4 / recurrence 4) on
// tables indexed by equivalence classes of the dependent vertices'
// configurations (dynamic_program.hpp). Time: sum over steps of
// |configs(v)| * |T_i| pairs, |T_i| the product of the class counts; each
// pair costs one read and one add per term that depends on the innermost
// dimension.
#include "dynamic_program.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>
#include <unordered_map>

#include "cost_tables.hpp"

namespace pase {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The relative margin of the threshold search's stopping test.
constexpr double kThresholdMargin = 1e-12;

// The tensor edges between two vertices, by pair.
class EdgePairs {
 public:
  explicit EdgePairs(const Graph& g) : pairs_(group_edges(g)) {}
  const std::vector<int>& between(int a, int b) const {
    PairEdges key{std::min(a, b), std::max(a, b), {}};
    auto it = std::lower_bound(pairs_.begin(), pairs_.end(), key,
                               [](const PairEdges& x, const PairEdges& y) {
                                 return std::pair(x.a, x.b) < std::pair(y.a, y.b);
                               });
    if (it == pairs_.end() || it->a != key.a || it->b != key.b) return none_;
    return it->edges;
  }

 private:
  std::vector<PairEdges> pairs_;
  std::vector<int> none_;
};

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

bool is_identity(const std::vector<int>& map) {
  for (size_t q = 0; q < map.size(); ++q)
    if (map[q] != static_cast<int>(q)) return false;
  return true;
}

// A summand of the recurrence: data[offset(phi) + index(c)], where offset is
// the sum over levels k of stride[k] * (this term's class of the level's
// state phi_k) and index(c) is v's class of configuration c in the term.
struct Term {
  const double* data = nullptr;
  int level = 0;                      // deepest level it depends on, 0 = none
  const int* inner = nullptr;         // index(c); null: c itself
  std::vector<int64_t> stride;        // by level 1..d (index 0 unused)
  std::vector<std::vector<int>> map;  // by level: T_i's class -> the term's; empty: the same
  int64_t size = 0;                   // entries of data
  int width = 0;                      // values index(c) takes: data's last dimension
};

// Fills one step's table. The shared part (terms, strides, the sorted rows of
// the threshold search) is built once; each thread brings its own Scratch and
// fills the entries whose outermost state lies in its range, so that any
// split of the range gives the same table.
class StepRunner {
 public:
  StepRunner(int nv, std::vector<int64_t> radix, std::vector<Term> terms, double* out,
             uint16_t* arg, const DpTuning& tuning)
      : nv_(nv),
        d_(static_cast<int>(radix.size())),
        n_terms_(static_cast<int>(terms.size())),
        radix_(std::move(radix)),
        terms_(std::move(terms)),
        out_(out),
        arg_(arg) {
    by_level_.resize(d_ + 1);
    moves_.resize(d_ + 1);
    for (int t = 0; t < n_terms_; ++t) {
      const Term& term = terms_[t];
      by_level_[term.level].push_back(t);
      // A term's offset is carried down to its own level, adding each
      // level's share on the way.
      for (int k = 1; k <= term.level; ++k) {
        const std::vector<int>& map = term.map[k];
        moves_[k].push_back(Move{t, term.stride[k], map.empty() ? nullptr : map.data()});
      }
    }
    base_.assign(nv_, 0.0);
    for (int t : by_level_[0]) add(base_.data(), t, 0);
    // The threshold search pays for its sorting only when the rows are long
    // and many share one sort.
    threshold_ = tuning.threshold && d_ > 0 && nv_ >= tuning.threshold_min_configs &&
                 radix_[d_ - 1] >= tuning.threshold_min_rows;
    if (threshold_) sort_rows(std::max(1, tuning.row_keep));
  }

  struct Scratch {
    std::vector<int64_t> off;  // (d + 1) rows of one offset per term
    std::vector<double> acc;   // (d + 1) rows of nv partial sums
    std::vector<int> order;    // the threshold search: configurations by bound
    std::vector<double> bound;
    int sorted = 0;  // order is sorted up to here
  };
  Scratch scratch() const {
    Scratch s;
    s.off.assign(static_cast<size_t>(d_ + 1) * n_terms_, 0);
    s.acc.assign(static_cast<size_t>(d_ + 1) * nv_, 0.0);
    std::copy(base_.begin(), base_.end(), s.acc.begin());
    if (threshold_) {
      s.order.resize(nv_);
      s.bound.resize(nv_);
    }
    return s;
  }

  // States of the outermost dimension (1 for a step without dependent set).
  int64_t outer() const { return d_ == 0 ? 1 : radix_[0]; }

  // Fills the entries whose outermost state is in [lo, hi); `tick` is called
  // after each innermost run of rows with the number of pairs done and
  // returns false to stop.
  template <class Tick>
  bool run(Scratch& s, int64_t lo, int64_t hi, Tick&& tick) {
    if (d_ == 0) {
      innermost_scalar(s);
      return true;
    }
    return level(s, 1, lo, hi, 0, tick);
  }

 private:
  struct Move {
    int term;
    int64_t stride;
    const int* map;  // null: the state itself
  };

  void add(double* acc, int t, int64_t off) const {
    const double* src = terms_[t].data + off;
    const int* inner = terms_[t].inner;
    if (inner) {
      for (int c = 0; c < nv_; ++c) acc[c] += src[inner[c]];
    } else {
      for (int c = 0; c < nv_; ++c) acc[c] += src[c];
    }
  }

  void innermost_scalar(Scratch& s) const {
    double best = kInf;
    int arg = 0;
    for (int c = 0; c < nv_; ++c)
      if (s.acc[c] < best) {
        best = s.acc[c];
        arg = c;
      }
    out_[0] = best;
    arg_[0] = static_cast<uint16_t>(arg);
  }

  // Offsets at level k for state phi, from those at level k - 1.
  void move(Scratch& s, int k, int64_t phi) const {
    int64_t* off = s.off.data() + static_cast<size_t>(k) * n_terms_;
    const int64_t* up = off - n_terms_;
    for (const Move& m : moves_[k])
      off[m.term] = up[m.term] + m.stride * (m.map ? m.map[phi] : phi);
  }

  template <class Tick>
  bool level(Scratch& s, int k, int64_t lo, int64_t hi, int64_t out_base, Tick& tick) const {
    const double* prev = s.acc.data() + static_cast<size_t>(k - 1) * nv_;
    const int64_t* off = s.off.data() + static_cast<size_t>(k) * n_terms_;
    const std::vector<int>& mine = by_level_[k];
    if (k == d_) {
      if (threshold_) sort_bounds(s, prev);
      for (int64_t phi = lo; phi < hi; ++phi) {
        move(s, k, phi);
        if (threshold_) {
          threshold_row(s, prev, off, phi, out_base + phi);
        } else {
          row(prev, mine, off, out_base + phi);
        }
      }
      return tick(static_cast<uint64_t>(hi - lo) * nv_);
    }
    double* acc = s.acc.data() + static_cast<size_t>(k) * nv_;
    for (int64_t phi = lo; phi < hi; ++phi) {
      move(s, k, phi);
      std::copy(prev, prev + nv_, acc);
      for (int t : mine) add(acc, t, off[t]);
      if (!level(s, k + 1, 0, radix_[k], (out_base + phi) * radix_[k], tick)) return false;
    }
    return true;
  }

  // min over c of prev[c] + a[index_a(c)] (+ b[index_b(c)]): the innermost
  // loop, with the terms read directly or through v's class map. The sums
  // are formed in the order of the reference engine, so they are the same
  // numbers.
  template <bool GatherA>
  void row1(const double* prev, const double* a, const int* ia, int64_t out_index) const {
    double best = kInf;
    int arg = 0;
    for (int c = 0; c < nv_; ++c) {
      double s = prev[c] + (GatherA ? a[ia[c]] : a[c]);
      if (s < best) {
        best = s;
        arg = c;
      }
    }
    out_[out_index] = best;
    arg_[out_index] = static_cast<uint16_t>(arg);
  }

  template <bool GatherA, bool GatherB>
  void row2(const double* prev, const double* a, const int* ia, const double* b, const int* ib,
            int64_t out_index) const {
    double best = kInf;
    int arg = 0;
    for (int c = 0; c < nv_; ++c) {
      double s = prev[c] + (GatherA ? a[ia[c]] : a[c]) + (GatherB ? b[ib[c]] : b[c]);
      if (s < best) {
        best = s;
        arg = c;
      }
    }
    out_[out_index] = best;
    arg_[out_index] = static_cast<uint16_t>(arg);
  }

  void row(const double* prev, const std::vector<int>& mine, const int64_t* off,
           int64_t out_index) const {
    if (mine.size() == 1) {
      const Term& ta = terms_[mine[0]];
      const double* a = ta.data + off[mine[0]];
      if (ta.inner) {
        row1<true>(prev, a, ta.inner, out_index);
      } else {
        row1<false>(prev, a, nullptr, out_index);
      }
      return;
    }
    if (mine.size() == 2) {
      const Term& ta = terms_[mine[0]];
      const Term& tb = terms_[mine[1]];
      const double* a = ta.data + off[mine[0]];
      const double* b = tb.data + off[mine[1]];
      if (ta.inner && tb.inner) {
        row2<true, true>(prev, a, ta.inner, b, tb.inner, out_index);
      } else if (ta.inner) {
        row2<true, false>(prev, a, ta.inner, b, nullptr, out_index);
      } else if (tb.inner) {
        row2<false, true>(prev, a, nullptr, b, tb.inner, out_index);
      } else {
        row2<false, false>(prev, a, nullptr, b, nullptr, out_index);
      }
      return;
    }
    double best = kInf;
    int arg = 0;
    for (int c = 0; c < nv_; ++c) {
      double s = prev[c];
      for (int t : mine) {
        const Term& term = terms_[t];
        s += term.data[off[t] + (term.inner ? term.inner[c] : c)];
      }
      if (s < best) {
        best = s;
        arg = c;
      }
    }
    out_[out_index] = best;
    arg_[out_index] = static_cast<uint16_t>(arg);
  }

  // The threshold search (core/docs/performance.md, "Threshold search").
  // The innermost terms split into row terms, which depend on the innermost
  // state only, and the others. For each innermost state, the row terms'
  // sum per configuration is sorted once per step (its least row_keep
  // entries are kept); for each outer state, prev plus the others' least
  // values (floor_) is sorted. A row then walks both lists at once and stops
  // when the sum of the i-th entries of the two exceeds the best sum found:
  // every configuration not yet seen has both parts at least that large.
  void sort_rows(int row_keep) {
    const int64_t n = radix_[d_ - 1];
    floor_.assign(nv_, 0.0);
    std::vector<int> rows;
    for (int t : by_level_[d_]) {
      const Term& term = terms_[t];
      bool row_only = true;
      for (int k = 1; k < d_; ++k)
        if (term.stride[k] != 0) row_only = false;
      if (row_only) {
        rows.push_back(t);
        continue;
      }
      // A term that also depends on outer states: its least value per class
      // of v over the whole table.
      std::vector<double> least(term.width, kInf);
      for (int64_t e = 0; e < term.size; ++e) {
        double& m = least[e % term.width];
        m = std::min(m, term.data[e]);
      }
      for (int c = 0; c < nv_; ++c) floor_[c] += least[term.inner ? term.inner[c] : c];
    }
    has_rows_ = !rows.empty();
    keep_ = std::min(nv_, row_keep);
    row_order_.resize(static_cast<size_t>(n) * keep_);
    row_value_.resize(static_cast<size_t>(n) * keep_);
    std::vector<double> sum(nv_);
    std::vector<int> order(nv_);
    for (int64_t phi = 0; phi < n; ++phi) {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int t : rows) {
        const Term& term = terms_[t];
        const std::vector<int>& map = term.map[d_];
        const double* r = term.data + term.stride[d_] * (map.empty() ? phi : map[phi]);
        for (int c = 0; c < nv_; ++c) sum[c] += r[term.inner ? term.inner[c] : c];
      }
      for (int c = 0; c < nv_; ++c) order[c] = c;
      std::partial_sort(order.begin(), order.begin() + keep_, order.end(),
                        [&](int x, int y) { return sum[x] < sum[y]; });
      for (int i = 0; i < keep_; ++i) {
        row_order_[phi * keep_ + i] = static_cast<uint16_t>(order[i]);
        row_value_[phi * keep_ + i] = sum[order[i]];
      }
    }
  }

  // Sorts the configurations by prev + floor_, the first keep_ of them
  // now and the rest when a row gets that far.
  void sort_bounds(Scratch& s, const double* prev) const {
    for (int c = 0; c < nv_; ++c) {
      s.order[c] = c;
      s.bound[c] = prev[c] + floor_[c];
    }
    s.sorted = keep_;
    std::partial_sort(s.order.begin(), s.order.begin() + s.sorted, s.order.end(),
                      [&](int x, int y) { return s.bound[x] < s.bound[y]; });
  }

  void threshold_row(Scratch& s, const double* prev, const int64_t* off, int64_t phi,
                     int64_t out_index) const {
    const std::vector<int>& mine = by_level_[d_];
    if (mine.size() == 1) {
      const Term& ta = terms_[mine[0]];
      threshold_row_n<1>(s, prev, {ta.data + off[mine[0]]}, {ta.inner}, phi, out_index);
    } else if (mine.size() == 2) {
      const Term& ta = terms_[mine[0]];
      const Term& tb = terms_[mine[1]];
      threshold_row_n<2>(s, prev, {ta.data + off[mine[0]], tb.data + off[mine[1]]},
                         {ta.inner, tb.inner}, phi, out_index);
    } else {
      threshold_row_n<0>(s, prev, {}, {}, phi, out_index, off);
    }
  }

  // N innermost terms (0: any number, read through off).
  template <int N>
  void threshold_row_n(Scratch& s, const double* prev, std::array<const double*, 2> data,
                       std::array<const int*, 2> inner, int64_t phi, int64_t out_index,
                       const int64_t* off = nullptr) const {
    const std::vector<int>& mine = by_level_[d_];
    double best = kInf;
    int arg = nv_;
    // The exact sum of the reference engine, in its order.
    auto consider = [&](int c) {
      double sum = prev[c];
      if constexpr (N == 0) {
        for (int t : mine) {
          const Term& term = terms_[t];
          sum += term.data[off[t] + (term.inner ? term.inner[c] : c)];
        }
      } else {
        for (int t = 0; t < N; ++t) sum += data[t][inner[t] ? inner[t][c] : c];
      }
      if (sum < best || (sum == best && c < arg)) {
        best = sum;
        arg = c;
      }
    };
    const uint16_t* rord = row_order_.data() + phi * keep_;
    const double* rval = row_value_.data() + phi * keep_;
    for (int i = 0; i < nv_; ++i) {
      if (i == s.sorted) {
        std::sort(s.order.begin() + i, s.order.end(),
                  [&](int x, int y) { return s.bound[x] < s.bound[y]; });
        s.sorted = nv_;
      }
      int c = s.order[i];
      consider(c);
      double r = rval[std::min(i, keep_ - 1)];
      if (i < keep_ && has_rows_) consider(rord[i]);
      // Every configuration not seen yet has prev + floor >= bound[c] and
      // row sum >= r. The exact sum adds the same parts in another order,
      // so it may differ by a few units in the last place: the relative
      // margin keeps the test safe.
      double threshold = s.bound[c] + r;
      if (threshold - std::abs(threshold) * kThresholdMargin > best) break;
    }
    out_[out_index] = best;
    arg_[out_index] = static_cast<uint16_t>(arg == nv_ ? 0 : arg);
  }

  int nv_, d_, n_terms_;
  std::vector<int64_t> radix_;
  std::vector<Term> terms_;
  double* out_;
  uint16_t* arg_;
  std::vector<std::vector<int>> by_level_;  // terms by their level
  std::vector<std::vector<Move>> moves_;    // by level: the offsets to carry down
  std::vector<double> base_;                // the level-0 terms' sum per configuration
  bool threshold_ = false;
  bool has_rows_ = false;
  int keep_ = 0;
  std::vector<double> floor_;        // per configuration: the outer-dependent terms' least values
  std::vector<uint16_t> row_order_;  // per innermost state: its first keep_ configurations
  std::vector<double> row_value_;    // ... and their row sums
};

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
    e.pairs += size[i] * nv;
    e.table_entries += size[i];
    e.largest_table = std::max(e.largest_table, size[i]);
    e.max_dependent_set = std::max(e.max_dependent_set, static_cast<int>(st.dep.size()));
    double matrices = 0;
    for (int u : st.new_neighbors) {
      size_t k = std::find(st.dep.begin(), st.dep.end(), u) - st.dep.begin();
      matrices += nv * states(i, k) * sizeof(double);
    }
    // The threshold search's sorted rows (StepRunner, default DpTuning).
    const DpTuning tuning;
    if (!st.dep.empty() && nv >= tuning.threshold_min_configs &&
        states(i, st.dep.size() - 1) >= static_cast<double>(tuning.threshold_min_rows))
      matrices += states(i, st.dep.size() - 1) * std::min<double>(nv, tuning.row_keep) *
                  (sizeof(double) + sizeof(uint16_t));
    args += size[i] * sizeof(uint16_t);
    double now = vectors + live + size[i] * sizeof(double) + args + matrices;
    e.peak_bytes = std::max(e.peak_bytes, now);
    for (int j : st.consumed) live -= size[j] * sizeof(double);
    live += size[i] * sizeof(double);
  }
  return e;
}

}  // namespace

TableClasses table_classes(const Graph& g, const std::vector<ConfigSet>& configs,
                           const Ordering& ord, int64_t gpus_per_node) {
  EdgePairs pairs(g);
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
        count = refine(cls, count, edge_end_ids(g, configs[w], e, e.src == w, gpus_per_node));
      }
      dc.count[k] = count;
      dc.first[k].assign(count, -1);
      for (size_t c = cls.size(); c-- > 0;) dc.first[k][cls[c]] = static_cast<int>(c);
      out.bytes += static_cast<double>(cls.size() + count) * sizeof(int);
    }
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

Result<DpResult> run_dp(const Graph& g, const std::vector<ConfigSet>& configs, const Ordering& ord,
                        const ops::Machine& m, const SearchStats& est, const PlanOptions& options) {
  return run_dp(g, configs, ord, table_classes(g, configs, ord, m.gpus_per_node), m, est, options);
}

Result<DpResult> run_dp(const Graph& g, const std::vector<ConfigSet>& configs, const Ordering& ord,
                        const TableClasses& classes, const ops::Machine& m, const SearchStats& est,
                        const PlanOptions& options, const DpTuning& tuning, EdgePrices* prices) {
  std::optional<EdgePrices> own;
  if (prices == nullptr) prices = &own.emplace(g, configs, m.gpus_per_node, kEdgePriceBudget);
  size_t n_steps = ord.steps.size();
  std::vector<std::vector<double>> tables(n_steps);
  std::vector<std::vector<uint16_t>> args(n_steps);
  EdgePairs pairs(g);

  // Progress and cancellation, checked every ~2^20 pairs.
  // Only the calling thread reports (a progress callback may not be safe to
  // call from another thread); helpers add their pairs to others_done.
  double done_pairs = 0, last_report = -1;
  uint64_t since_check = 0;
  std::atomic<uint64_t> others_done{0};
  int steps_done = 0, current = -1;
  std::atomic<bool> cancelled{false};
  auto report = [&](bool force) {
    if (!options.on_progress) return;
    double done = done_pairs + static_cast<double>(others_done.load(std::memory_order_relaxed));
    double frac = est.pairs > 0 ? std::min(1.0, done / est.pairs) : 1.0;
    if (!force && frac - last_report < 0.01) return;
    last_report = frac;
    options.on_progress(Progress{frac, steps_done, static_cast<int>(n_steps), current});
  };
  auto tick = [&](uint64_t pairs_done) {
    done_pairs += static_cast<double>(pairs_done);
    since_check += pairs_done;
    if (since_check < (uint64_t{1} << 20)) return true;
    since_check = 0;
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) {
      cancelled = true;
      return false;
    }
    report(false);
    return true;
  };
  // A helper thread's tick: counts, and stops when cancelled.
  auto helper_tick = [&](uint64_t pairs_done) {
    others_done.fetch_add(pairs_done, std::memory_order_relaxed);
    if (cancelled.load(std::memory_order_relaxed)) return false;
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) {
      cancelled = true;
      return false;
    }
    return true;
  };
  const int threads = std::max(1, options.threads);

  double total = 0;
  // level_of[u]: u's level (1..d) in the current step's dependent set, 0 when
  // not in it. Allocated once and cleared per step, so that a step costs its
  // own size, not the graph's.
  std::vector<int> level_of(g.vertices.size(), 0);
  for (size_t i = 0; i < n_steps; ++i) {
    const Step& st = ord.steps[i];
    const DepClasses& dc = classes.steps[i];
    int v = st.vertex;
    current = v;
    // Also checked once per vertex, so that small plans notice a cancel too.
    if (options.cancel && options.cancel->load(std::memory_order_relaxed))
      return Error{"cancelled", ""};
    int nv = static_cast<int>(configs[v].size());
    int d = static_cast<int>(st.dep.size());
    std::vector<int64_t> radix(d);
    for (int k = 0; k < d; ++k) {
      radix[k] = dc.count[k];
      level_of[st.dep[k]] = k + 1;
    }
    std::vector<Term> terms;
    std::vector<double> vcost = vertex_cost_vector(g, v, configs[v], m);
    terms.push_back(Term{vcost.data(), 0, nullptr, std::vector<int64_t>(d + 1, 0),
                         std::vector<std::vector<int>>(d + 1)});
    for (int j : st.consumed) {
      // Table j lists ord.steps[j].dep latest first; v is its last dimension.
      const std::vector<int>& dims = ord.steps[j].dep;
      const DepClasses& cj = classes.steps[j];
      Term t{tables[j].data(), 0, nullptr, std::vector<int64_t>(d + 1, 0),
             std::vector<std::vector<int>>(d + 1)};
      int64_t stride = 1;
      for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) {
        const std::vector<int>& of = cj.of[k];
        if (dims[k] == v) {
          t.width = cj.count[k];
          if (cj.count[k] != nv || !is_identity(of)) t.inner = of.data();
        } else {
          // T_i's class of dims[k] determines T_j's: read it off the class's
          // least configuration.
          int lvl = level_of[dims[k]];
          t.stride[lvl] = stride;
          t.level = std::max(t.level, lvl);
          std::vector<int> map(radix[lvl - 1]);
          for (size_t q = 0; q < map.size(); ++q) map[q] = of[dc.first[lvl - 1][q]];
          if (!is_identity(map)) t.map[lvl] = std::move(map);
        }
        stride *= cj.count[k];
      }
      t.size = static_cast<int64_t>(tables[j].size());
      terms.push_back(std::move(t));
    }
    std::vector<std::vector<double>> matrices;
    matrices.reserve(st.new_neighbors.size());
    for (int u : st.new_neighbors) {
      // One row per class of u in T_i, priced at its least configuration.
      const std::vector<int>& rows = dc.first[level_of[u] - 1];
      matrices.push_back(pair_matrix(g, configs, pairs.between(u, v), u, v, m, &rows, prices));
      Term t{matrices.back().data(), level_of[u], nullptr, std::vector<int64_t>(d + 1, 0),
             std::vector<std::vector<int>>(d + 1)};
      t.stride[level_of[u]] = nv;
      t.size = static_cast<int64_t>(matrices.back().size());
      t.width = nv;
      terms.push_back(std::move(t));
    }
    size_t entries = 1;
    for (int64_t r : radix) entries *= static_cast<size_t>(r);
    tables[i].assign(entries, 0.0);
    args[i].assign(entries, 0);
    for (int u : st.dep) level_of[u] = 0;
    StepRunner runner(nv, radix, std::move(terms), tables[i].data(), args[i].data(), tuning);
    const int64_t outer = runner.outer();
    const double step_pairs = static_cast<double>(entries) * nv;
    const int workers = step_pairs >= tuning.parallel_pairs
                            ? static_cast<int>(std::min<int64_t>(threads, outer))
                            : 1;
    if (workers <= 1) {
      StepRunner::Scratch s = runner.scratch();
      if (!runner.run(s, 0, outer, tick) || cancelled) return Error{"cancelled", ""};
    } else {
      // The outermost states in chunks, taken in turn by the calling thread
      // and workers - 1 helpers; each entry is computed by one of them, by
      // the same code, so the table is the same as with one thread.
      const int64_t chunk = std::max<int64_t>(1, outer / (static_cast<int64_t>(workers) * 8));
      std::atomic<int64_t> next{0};
      auto work = [&](bool caller) {
        StepRunner::Scratch s = runner.scratch();
        while (!cancelled.load(std::memory_order_relaxed)) {
          int64_t lo = next.fetch_add(chunk);
          if (lo >= outer) break;
          int64_t hi = std::min(outer, lo + chunk);
          bool go = caller ? runner.run(s, lo, hi, tick) : runner.run(s, lo, hi, helper_tick);
          if (!go) {
            cancelled = true;
            break;
          }
        }
      };
      std::vector<std::thread> helpers;
      helpers.reserve(workers - 1);
      for (int w = 1; w < workers; ++w) helpers.emplace_back(work, false);
      work(true);
      for (std::thread& h : helpers) h.join();
      if (cancelled) return Error{"cancelled", ""};
    }
    if (d == 0) done_pairs += nv;
    for (int j : st.consumed) {
      tables[j].clear();
      tables[j].shrink_to_fit();
    }
    if (d == 0) total += tables[i][0];
    ++steps_done;
    report(false);
  }

  // Back-substitution: a step's dependent set is processed later, so walking
  // the steps backwards finds every configuration already chosen; its class
  // in the step's table is the index.
  DpResult res;
  res.cost = total;
  res.choice.assign(g.vertices.size(), 0);
  for (size_t i = n_steps; i-- > 0;) {
    const Step& st = ord.steps[i];
    const DepClasses& dc = classes.steps[i];
    int64_t idx = 0;
    for (size_t k = 0; k < st.dep.size(); ++k)
      idx = idx * dc.count[k] + dc.of[k][res.choice[st.dep[k]]];
    res.choice[st.vertex] = args[i][idx];
  }
  done_pairs = est.pairs;
  report(true);
  return res;
}

}  // namespace pase
