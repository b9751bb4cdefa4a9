// One step of the dynamic program (dynamic_program.hpp): the table T_i of
// recurrence (4) filled from its terms, by one thread or split across
// several (each with its own Scratch). The levels are the dependent
// vertices in the order the step iterates them (StepShape), which need not
// be the table's; the innermost level's rows run over the groups of v's
// configurations that its terms read alike, each stood for by its member of
// least partial sum; a row is summed densely (min_row.hpp) or searched in
// threshold order. core/docs/performance.md, "Planning at scale".
// Private to run_dp; a header only because StepRunner::run is a template.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/min_row.hpp"
#include "kernels/threshold_search.hpp"
#include "search/dynamic_program.hpp"

namespace pase::detail {

// How a step iterates its table: the levels' state counts and the table's
// stride for each (the table lists its dimensions in its own order), and
// the groups of v's configurations that the innermost level's terms read
// alike (none: every configuration its own).
struct StepShape {
  int nv = 0;
  std::vector<int64_t> radix;        // by level 1..d, at [level - 1]
  std::vector<int64_t> out_stride;   // by level, at [level - 1]
  int groups = 0;                    // 0: no groups
  const int* group_of = nullptr;     // per configuration
  const int* group_first = nullptr;  // per group: its least configuration
};

// Fills one step's table. The shared part (terms, strides, the sorted rows of
// the threshold search) is built once; each thread brings its own Scratch and
// fills the entries whose outermost state lies in its range, so that any
// split of the range gives the same table.
class StepRunner {
 public:
  StepRunner(const StepShape& shape, std::vector<Term> terms, double* out, uint16_t* arg,
             const DpTuning& tuning, int threads = 1, SortedRowsCache* sorted = nullptr)
      : nv_(shape.nv),
        d_(static_cast<int>(shape.radix.size())),
        n_terms_(static_cast<int>(terms.size())),
        radix_(shape.radix),
        ostride_(shape.out_stride),
        terms_(std::move(terms)),
        out_(out),
        arg_(arg) {
    grouped_ = d_ > 0 && shape.groups > 0;
    ni_ = grouped_ ? shape.groups : nv_;
    if (grouped_) {
      group_of_ = shape.group_of;
      first_.assign(shape.group_first, shape.group_first + ni_);
    }
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
    if (d_ == 1 && grouped_) {
      base_c_.resize(ni_);
      base_rep_.resize(ni_);
      compress(base_.data(), base_c_.data(), base_rep_.data());
    }
    // The threshold search pays for its sorting only when the rows are long
    // and many share one sort.
    threshold_ = d_ > 0 && tuning.threshold_for(ni_, static_cast<double>(radix_[d_ - 1]));
    // A pair of a dense row costs less when its terms are read in a
    // stream (min_row.hpp) than through a class map.
    bool stream = d_ > 0 && !by_level_[d_].empty() && by_level_[d_].size() <= 2;
    if (d_ > 0)
      for (int t : by_level_[d_]) stream = stream && terms_[t].inner == nullptr;
    dense_per_walked_ = stream ? tuning.dense_per_walked : tuning.dense_per_walked_gather;
    probe_one_run_ = tuning.probe_one_run;
    if (threshold_)
      search_.build(terms_, by_level_[d_], d_, ni_, radix_[d_ - 1], std::max(1, tuning.row_keep),
                    threads, sorted);
    // Dense rows: when the innermost terms are one or two rows read in a
    // stream that depend on the innermost state alone, and in blocks of
    // outer states that share each pass over them.
    block_ = 0;
    if (stream && tuning.dense_block > 0) {
      bool row_only = true;
      for (int t : by_level_[d_])
        for (int k = 1; k < d_; ++k) row_only = row_only && terms_[t].stride[k] == 0;
      if (row_only) {
        const int64_t n = radix_[d_ - 1];
        for (size_t j = 0; j < by_level_[d_].size(); ++j) {
          const Term& term = terms_[by_level_[d_][j]];
          std::vector<const double*>& rows = j == 0 ? rows1_ : rows2_;
          rows.resize(n);
          const std::vector<int>& map = term.map[d_];
          for (int64_t phi = 0; phi < n; ++phi)
            rows[phi] = term.data + term.stride[d_] * (map.empty() ? phi : map[phi]);
        }
        dense_ = DenseRows{rows1_.data(), rows2_.empty() ? nullptr : rows2_.data(), ni_};
        block_ = d_ == 1 ? 1 : tuning.dense_block;
        if (!rows2_.empty() && tuning.fuse_integer_rows) fuse_rows();
      }
    }
  }

  // Whether the dense rows of two terms were summed into one (fuse_rows).
  bool fused() const { return !fused_.empty(); }

  struct Scratch {
    std::vector<int64_t> off;         // (d + 1) rows of one offset per term
    std::vector<double> acc;          // (d + 1) rows of nv partial sums
    std::vector<double> cprev, crep;  // a run's least partial sum per group, and its member
    ThresholdSearch::Scratch walk;    // the threshold search's lists
    // Runs of rows so far, and the rows walked in threshold order with the
    // columns they walked.
    int64_t runs = 0, rows_walked = 0, walked = 0;
    std::vector<double> block, block_rep;  // a block's partial sums (and members), ni apart
  };
  Scratch scratch() const {
    Scratch s;
    s.off.assign(static_cast<size_t>(d_ + 1) * n_terms_, 0);
    s.acc.assign(static_cast<size_t>(d_ + 1) * nv_, 0.0);
    std::copy(base_.begin(), base_.end(), s.acc.begin());
    if (grouped_) {
      s.cprev.resize(ni_);
      s.crep.resize(ni_);
    }
    if (threshold_) s.walk = search_.scratch();
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

  // Integers of at most 2^51 in magnitude, or +infinity: any sum of three
  // of them is exact in any order, so (p + t1) + t2 == p + (t1 + t2) to the
  // bit (the paper's flat machine prices everything in whole
  // FLOP-equivalents).
  static bool exact_integers(const double* x, int64_t n) {
    constexpr double kLimit = 0x1p51;
    for (int64_t i = 0; i < n; ++i)
      if (!(x[i] == kInf ||
            (std::abs(x[i]) <= kLimit && x[i] == static_cast<double>(static_cast<int64_t>(x[i])))))
        return false;
    return true;
  }

  // Two row terms whose every number is such an integer: each row's two
  // terms summed once, so that a block whose partial sums are integers too
  // runs the one-term kernel on them (the two-term kernel loads and adds
  // twice per pair), with every sum, least and arg-min the same.
  void fuse_rows() {
    const int64_t n = static_cast<int64_t>(rows1_.size());
    for (int64_t r = 0; r < n; ++r)
      if (!exact_integers(rows1_[r], ni_) || !exact_integers(rows2_[r], ni_)) return;
    fused_.resize(static_cast<size_t>(n) * ni_);
    fused_rows_.resize(n);
    for (int64_t r = 0; r < n; ++r) {
      double* f = fused_.data() + static_cast<size_t>(r) * ni_;
      for (int c = 0; c < ni_; ++c) f[c] = rows1_[r][c] + rows2_[r][c];
      fused_rows_[r] = f;
    }
    fused_dense_ = DenseRows{fused_rows_.data(), nullptr, ni_};
  }

  // The rows for partial sums p of `count` vectors (ni apart): the fused
  // rows when they and p allow it.
  const DenseRows& dense_for(const double* p, int64_t count) const {
    return fused() && exact_integers(p, count * ni_) ? fused_dense_ : dense_;
  }

  void add(double* acc, int t, int64_t off) const {
    const double* src = terms_[t].data + off;
    const int* inner = terms_[t].inner;
    if (inner) {
      for (int c = 0; c < nv_; ++c) acc[c] += src[inner[c]];
    } else {
      for (int c = 0; c < nv_; ++c) acc[c] += src[c];
    }
  }

  // Per group, the least partial sum of its members and the first member
  // that has it (the group's first member when all are infinite). Every
  // member's sum adds the same numbers to its partial sum, and floating-point
  // addition is monotonic, so that member's sum is the group's least, and
  // the least configuration among those of least sum is the least rep among
  // the groups of least sum.
  void compress(const double* prev, double* cprev, double* crep) const {
    for (int g = 0; g < ni_; ++g) {
      cprev[g] = kInf;
      crep[g] = first_[g];
    }
    for (int c = 0; c < nv_; ++c) {
      const int g = group_of_[c];
      if (prev[c] < cprev[g]) {
        cprev[g] = prev[c];
        crep[g] = c;
      }
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

  // Level k's partial sums at its state phi into sums: the level above's,
  // plus the level's own terms (their offsets moved to phi first).
  void partial(Scratch& s, int k, int64_t phi, const double* prev, double* sums) const {
    move(s, k, phi);
    const int64_t* off = s.off.data() + static_cast<size_t>(k) * n_terms_;
    std::copy(prev, prev + nv_, sums);
    for (int t : by_level_[k]) add(sums, t, off[t]);
  }

  // Level k's states [lo, hi); out_off: the table offset of the levels
  // above.
  template <class Tick>
  bool level(Scratch& s, int k, int64_t lo, int64_t hi, int64_t out_off, Tick& tick,
             bool walk_now = false) const {
    const double* prev = s.acc.data() + static_cast<size_t>(k - 1) * nv_;
    const int64_t* off = s.off.data() + static_cast<size_t>(k) * n_terms_;
    const std::vector<int>& mine = by_level_[k];
    const int64_t os = ostride_[k - 1];
    if (k == d_) {
      // The run's columns: the configurations, or the groups.
      const double* p = prev;
      const double* rep = nullptr;
      if (grouped_ && d_ == 1) {
        p = base_c_.data();
        rep = base_rep_.data();
      } else if (grouped_) {
        compress(prev, s.cprev.data(), s.crep.data());
        p = s.cprev.data();
        rep = s.crep.data();
      }
      const uint64_t pairs = static_cast<uint64_t>(hi - lo) * ni_ + (grouped_ ? nv_ : 0);
      const bool walk = walk_now || walk_next(s);
      if (!walk && block_ > 0) {
        dense_rows(p, 1, dense_for(p, 1), lo, hi,
                   DenseOut{out_ + out_off + lo * os, arg_ + out_off + lo * os, 0, os, rep});
        return tick(pairs);
      }
      if (walk) search_.sort_bounds(s.walk, p);
      for (int64_t phi = lo; phi < hi; ++phi) {
        move(s, k, phi);
        if (walk) {
          const int64_t e = out_off + phi * os;
          s.walked += search_.walk(s.walk, p, rep, off, phi, out_ + e, arg_ + e);
        } else {
          row(p, rep, mine, off, out_off + phi * os);
        }
      }
      if (walk) s.rows_walked += hi - lo;
      return tick(pairs);
    }
    double* acc = s.acc.data() + static_cast<size_t>(k) * nv_;
    if (k == d_ - 1 && block_ > 1) {
      // Blocks of outer states: each either walked run by run, or summed
      // densely, all its runs against one pass over the rows. A probe walks
      // the block's first run only and sums the others.
      const int64_t n = radix_[k];
      for (int64_t b0 = lo; b0 < hi; b0 += block_) {
        const int64_t p1 = std::min(hi, b0 + block_);
        int64_t p0 = b0;
        bool probe = false;
        if (walk_next(s, &probe)) {
          for (const int64_t w1 = probe && probe_one_run_ ? p0 + 1 : p1; p0 < w1; ++p0) {
            partial(s, k, p0, prev, acc);
            if (!level(s, k + 1, 0, n, out_off + p0 * os, tick, true)) return false;
          }
          if (p0 == p1) continue;
        }
        s.block.resize(static_cast<size_t>(block_) * ni_);
        if (grouped_) s.block_rep.resize(s.block.size());
        for (int64_t phi = p0; phi < p1; ++phi) {
          const size_t at = static_cast<size_t>(phi - p0) * ni_;
          double* sums = grouped_ ? acc : s.block.data() + at;
          partial(s, k, phi, prev, sums);
          if (grouped_) compress(sums, s.block.data() + at, s.block_rep.data() + at);
        }
        const int64_t first = out_off + p0 * os;
        dense_rows(s.block.data(), static_cast<int>(p1 - p0), dense_for(s.block.data(), p1 - p0), 0,
                   n,
                   DenseOut{out_ + first, arg_ + first, os, ostride_[k],
                            grouped_ ? s.block_rep.data() : nullptr});
        const uint64_t runs = static_cast<uint64_t>(p1 - p0);
        if (!tick(runs * (static_cast<uint64_t>(n) * ni_ + (grouped_ ? nv_ : 0)))) return false;
      }
      return true;
    }
    for (int64_t phi = lo; phi < hi; ++phi) {
      partial(s, k, phi, prev, acc);
      if (!level(s, k + 1, 0, radix_[k], out_off + phi * os, tick)) return false;
    }
    return true;
  }

  // Whether the next run of rows is walked in threshold order or summed
  // densely, whichever the walks seen so far say is cheaper (both give the
  // same entries); every kProbeEvery-th run is walked to keep the estimate
  // current. `probe`, when given, is set when only that rule walks it.
  bool walk_next(Scratch& s, bool* probe = nullptr) const {
    if (!threshold_) return false;
    const bool every = s.runs++ % kProbeEvery == 0;
    const bool cheaper = s.walked * dense_per_walked_ < static_cast<double>(s.rows_walked) * ni_;
    if (probe) *probe = every && !cheaper;
    return every || cheaper;
  }

  // min over columns g of prev[g] + the innermost terms at g, its column's
  // configuration (rep[g], or g without groups) into arg_: the sums in the
  // order of the reference engine, ties to the least configuration.
  void row(const double* prev, const double* rep, const std::vector<int>& mine, const int64_t* off,
           int64_t out_index) const {
    if (mine.size() <= 2 && !mine.empty()) {
      const Term& ta = terms_[mine[0]];
      const double* a = ta.data + off[mine[0]];
      const Term* tb = mine.size() == 2 ? &terms_[mine[1]] : nullptr;
      const double* b = tb ? tb->data + off[mine[1]] : nullptr;
      if (!ta.inner && (!tb || !tb->inner)) {
        dense_row(prev, a, b, rep, ni_, out_ + out_index, arg_ + out_index);
        return;
      }
    }
    double best = kInf, arg = kInf;
    for (int g = 0; g < ni_; ++g) {
      double s = prev[g];
      for (int t : mine) {
        const Term& term = terms_[t];
        s += term.data[off[t] + (term.inner ? term.inner[g] : g)];
      }
      const double c = rep ? rep[g] : g;
      if (s < best || (s == best && c < arg)) {
        best = s;
        arg = c;
      }
    }
    out_[out_index] = best;
    arg_[out_index] = static_cast<uint16_t>(arg == kInf ? 0 : arg);
  }

  int nv_, d_, n_terms_;
  int ni_ = 0;  // the innermost rows' columns: nv, or the groups
  std::vector<int64_t> radix_, ostride_;
  std::vector<Term> terms_;
  double* out_;
  uint16_t* arg_;
  bool grouped_ = false;
  const int* group_of_ = nullptr;
  std::vector<double> first_;               // per group: its least configuration
  std::vector<double> base_c_, base_rep_;   // one level: the level-0 sums, grouped
  std::vector<std::vector<int>> by_level_;  // terms by their level
  std::vector<std::vector<Move>> moves_;    // by level: the offsets to carry down
  std::vector<double> base_;                // the level-0 terms' sum per configuration
  // Every kProbeEvery-th run of rows is walked whatever the estimate says.
  static constexpr int64_t kProbeEvery = 32;
  double dense_per_walked_ = 1;  // dense pairs that cost as much as one walked column
  bool probe_one_run_ = true;    // DpTuning::probe_one_run
  bool threshold_ = false;
  int64_t block_ = 0;  // outer states a block of dense rows (0: none)
  std::vector<const double*> rows1_, rows2_;
  DenseRows dense_;
  // The two row terms summed, row by row (fuse_rows; empty: not fused).
  std::vector<double> fused_;
  std::vector<const double*> fused_rows_;
  DenseRows fused_dense_;
  ThresholdSearch search_;  // when threshold_
};

}  // namespace pase::detail
