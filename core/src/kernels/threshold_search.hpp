// The threshold search of the dynamic program's innermost rows
// (core/docs/performance.md, "Planning at scale"), and the terms the rows
// sum. Private to run_dp, beside step_runner.hpp, which chooses per run of
// rows between this walk and the dense rows of min_row.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "kernels/parallel.hpp"

namespace pase::detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
// The relative margin of the threshold search's stopping test.
inline constexpr double kThresholdMargin = 1e-12;

// A summand of the recurrence: data[offset(phi) + index(c)], where offset is
// the sum over levels k of stride[k] * (this term's class of the level's
// state phi_k) and index(c) is v's class of configuration c in the term. A
// term of the innermost level is indexed by v's group g instead of c when
// the step has groups: index(g), and data's last dimension counts groups.
struct Term {
  const double* data = nullptr;
  int level = 0;                      // deepest level it depends on, 0 = none
  const int* inner = nullptr;         // index(c) (or index(g)); null: c (or g) itself
  std::vector<int64_t> stride;        // by level 1..d (index 0 unused)
  std::vector<std::vector<int>> map;  // by level: T_i's class -> the term's; empty: the same
  int64_t size = 0;                   // entries of data
  int width = 0;                      // values index(c) takes: data's last dimension
  // The id of a pair matrix kept for the whole search (PairMatrices), whose
  // data outlives the step; -1 for anything else.
  int64_t kept = -1;
};

// The threshold search's sorted rows: per innermost state, its row_keep
// least columns and their row sums.
struct SortedRows {
  std::vector<uint16_t> order;
  std::vector<double> value;
};

// Sorted rows kept across the steps of one search (and the searches of one
// space, SearchCache in dynamic_program.hpp): a step whose row terms
// are all kept pair matrices, read through the same maps, has the rows of
// an earlier step with the same ones (an LLM's decoder blocks). Kept while
// their total stays under budget_bytes. Not thread-safe.
class SortedRowsCache {
 public:
  explicit SortedRowsCache(double budget_bytes) : budget_(budget_bytes) {}
  std::shared_ptr<const SortedRows> find(const std::vector<int64_t>& key) {
    auto it = kept_.find(key);
    if (it == kept_.end()) return nullptr;
    ++hits_;
    return it->second;
  }
  void keep(std::vector<int64_t> key, std::shared_ptr<const SortedRows> rows) {
    const double bytes = static_cast<double>(rows->order.size()) * sizeof(uint16_t) +
                         static_cast<double>(rows->value.size()) * sizeof(double);
    if (bytes_ + bytes > budget_) return;
    bytes_ += bytes;
    kept_.emplace(std::move(key), std::move(rows));
  }
  uint64_t hits() const { return hits_; }

 private:
  double budget_;
  double bytes_ = 0;
  uint64_t hits_ = 0;
  std::map<std::vector<int64_t>, std::shared_ptr<const SortedRows>> kept_;
};

// The threshold search (core/docs/performance.md, "Threshold search").
// The innermost terms split into row terms, which depend on the innermost
// state only, and the others. For each innermost state, the row terms'
// sum per column is sorted once per step, or taken from an earlier step
// with the same row terms (SortedRowsCache; its least row_keep entries are
// kept); for each outer state, prev plus the others' least values (floor_)
// is sorted. A row then walks both lists at once and stops when the sum of
// the i-th entries of the two exceeds the best sum found: every column not
// yet seen has both parts at least that large.
// Built once per step (build()); each thread walks with its own Scratch.
class ThresholdSearch {
 public:
  struct Scratch {
    std::vector<int> order;  // columns by bound
    std::vector<double> bound;
    int sorted = 0;  // order is sorted up to here
  };
  Scratch scratch() const {
    Scratch s;
    s.order.resize(ni_);
    s.bound.resize(ni_);
    return s;
  }

  // The rows of the `n` innermost states from `terms` (the step's, which
  // must outlive this), those of the innermost level d being `innermost`,
  // over ni columns; row_keep sorted entries kept per row, sorted on
  // `threads` threads when large, or found in `cache` (may be null).
  void build(const std::vector<Term>& terms, const std::vector<int>& innermost, int d, int ni,
             int64_t n, int row_keep, int threads, SortedRowsCache* cache = nullptr) {
    terms_ = &terms;
    innermost_ = innermost;
    d_ = d;
    ni_ = ni;
    floor_.assign(ni_, 0.0);
    std::vector<int> rows;
    for (int t : innermost_) {
      const Term& term = terms[t];
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
      for (int g = 0; g < ni_; ++g) floor_[g] += least[term.inner ? term.inner[g] : g];
    }
    has_rows_ = !rows.empty();
    keep_ = std::min(ni_, row_keep);
    // The key of the rows in the cache: everything they are made of, when
    // every row term is a kept matrix.
    std::vector<int64_t> key;
    if (cache && has_rows_) {
      key = {ni_, n, keep_};
      for (int t : rows) {
        const Term& term = terms[t];
        if (term.kept < 0) {
          key.clear();
          break;
        }
        key.insert(key.end(), {-1, term.kept, term.stride[d_], term.width});
        key.push_back(-2);
        key.insert(key.end(), term.map[d_].begin(), term.map[d_].end());
        key.push_back(-3);
        if (term.inner) key.insert(key.end(), term.inner, term.inner + ni_);
      }
      if (!key.empty()) {
        sorted_ = cache->find(key);
        if (sorted_) return;
      }
    }
    auto made = std::make_shared<SortedRows>();
    made->order.resize(static_cast<size_t>(n) * keep_);
    made->value.resize(static_cast<size_t>(n) * keep_);
    // Each innermost state's row by one thread (the same entries).
    auto sort_range = [&](int64_t lo, int64_t hi) {
      std::vector<double> sum(ni_);
      std::vector<int> order(ni_);
      for (int64_t phi = lo; phi < hi; ++phi) sort_row(rows, phi, sum, order, *made);
    };
    const bool large = static_cast<double>(n) * ni_ >= (1 << 15);
    parallel_ranges(large ? threads : 1, n, sort_range);
    sorted_ = made;
    if (!key.empty()) cache->keep(std::move(key), sorted_);
  }

  // One innermost state's row terms summed per column, its keep_ least.
  void sort_row(const std::vector<int>& rows, int64_t phi, std::vector<double>& sum,
                std::vector<int>& order, SortedRows& out) const {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int t : rows) {
      const Term& term = (*terms_)[t];
      const std::vector<int>& map = term.map[d_];
      const double* r = term.data + term.stride[d_] * (map.empty() ? phi : map[phi]);
      for (int g = 0; g < ni_; ++g) sum[g] += r[term.inner ? term.inner[g] : g];
    }
    for (int g = 0; g < ni_; ++g) order[g] = g;
    // The keep_ least, then sorted (any order of equal sums will do: the
    // walk's result does not depend on it).
    auto less = [&](int x, int y) { return sum[x] < sum[y]; };
    std::nth_element(order.begin(), order.begin() + (keep_ - 1), order.end(), less);
    std::sort(order.begin(), order.begin() + keep_, less);
    for (int i = 0; i < keep_; ++i) {
      out.order[phi * keep_ + i] = static_cast<uint16_t>(order[i]);
      out.value[phi * keep_ + i] = sum[order[i]];
    }
  }

  // Sorts the columns by prev + floor_, the first keep_ of them now and
  // more (doubling) each time a row gets that far.
  void sort_bounds(Scratch& s, const double* prev) const {
    for (int g = 0; g < ni_; ++g) {
      s.order[g] = g;
      s.bound[g] = prev[g] + floor_[g];
    }
    s.sorted = keep_;
    auto less = [&](int x, int y) { return s.bound[x] < s.bound[y]; };
    std::nth_element(s.order.begin(), s.order.begin() + (keep_ - 1), s.order.end(), less);
    std::sort(s.order.begin(), s.order.begin() + keep_, less);
  }

  // One row: the least sum over the columns and its configuration (rep[g],
  // or g without groups) into *out and *arg, ties to the least
  // configuration. Returns the depth the walk reached in each list.
  int walk(Scratch& s, const double* prev, const double* rep, const int64_t* off, int64_t phi,
           double* out, uint16_t* arg) const {
    const std::vector<Term>& terms = *terms_;
    if (innermost_.size() == 1) {
      const Term& ta = terms[innermost_[0]];
      return walk_n<1>(s, prev, rep, {ta.data + off[innermost_[0]]}, {ta.inner}, phi, out, arg);
    }
    if (innermost_.size() == 2) {
      const Term& ta = terms[innermost_[0]];
      const Term& tb = terms[innermost_[1]];
      return walk_n<2>(s, prev, rep, {ta.data + off[innermost_[0]], tb.data + off[innermost_[1]]},
                       {ta.inner, tb.inner}, phi, out, arg);
    }
    return walk_n<0>(s, prev, rep, {}, {}, phi, out, arg, off);
  }

 private:
  // N innermost terms (0: any number, read through off).
  template <int N>
  int walk_n(Scratch& s, const double* prev, const double* rep, std::array<const double*, 2> data,
             std::array<const int*, 2> inner, int64_t phi, double* out, uint16_t* out_arg,
             const int64_t* off = nullptr) const {
    const std::vector<int>& mine = innermost_;
    double best = kInf, arg = kInf;
    // The exact sum of the reference engine, in its order.
    auto consider = [&](int g) {
      double sum = prev[g];
      if constexpr (N == 0) {
        for (int t : mine) {
          const Term& term = (*terms_)[t];
          sum += term.data[off[t] + (term.inner ? term.inner[g] : g)];
        }
      } else {
        for (int t = 0; t < N; ++t) sum += data[t][inner[t] ? inner[t][g] : g];
      }
      const double c = rep ? rep[g] : g;
      if (sum < best || (sum == best && c < arg)) {
        best = sum;
        arg = c;
      }
    };
    const uint16_t* rord = sorted_->order.data() + phi * keep_;
    const double* rval = sorted_->value.data() + phi * keep_;
    int i = 0;
    for (; i < ni_; ++i) {
      if (i == s.sorted) {
        // The next columns, as many again as sorted so far: a walk that
        // stops soon pays for a partition of the rest, not its sort.
        const int upto = std::min(ni_, 2 * i);
        auto less = [&](int x, int y) { return s.bound[x] < s.bound[y]; };
        if (upto < ni_)
          std::nth_element(s.order.begin() + i, s.order.begin() + (upto - 1), s.order.end(), less);
        std::sort(s.order.begin() + i, s.order.begin() + upto, less);
        s.sorted = upto;
      }
      int g = s.order[i];
      consider(g);
      double r = rval[std::min(i, keep_ - 1)];
      if (i < keep_ && has_rows_) consider(rord[i]);
      // Every column not seen yet has prev + floor >= bound[g] and row sum
      // >= r. The exact sum adds the same parts in another order, so it may
      // differ by a few units in the last place: the relative margin keeps
      // the test safe.
      double threshold = s.bound[g] + r;
      if (threshold - std::abs(threshold) * kThresholdMargin > best) break;
    }
    *out = best;
    *out_arg = static_cast<uint16_t>(arg == kInf ? 0 : arg);
    return std::min(i + 1, ni_);
  }

  const std::vector<Term>* terms_ = nullptr;
  std::vector<int> innermost_;  // the innermost level's terms
  int d_ = 0, ni_ = 0;
  bool has_rows_ = false;
  int keep_ = 0;
  std::vector<double> floor_;  // per column: the outer-dependent terms' least values
  // Per innermost state: its first keep_ columns and their row sums.
  std::shared_ptr<const SortedRows> sorted_;
};

}  // namespace pase::detail
