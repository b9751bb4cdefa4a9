// Repeated steps of the dynamic program (core/docs/performance.md,
// "Repeated blocks"): a deep network's identical blocks give stretches of
// the ordering whose steps repeat with a period, and once the one table that
// crosses from one period to the next is the previous crossing table plus a
// constant, every later period makes the same choices, and its crossing
// table is that table plus the constant again; once the crossing tables grow
// by the same amount entry by entry, later periods are skipped along that
// growth where running one period shows that they may be. run_dp skips those
// periods. Private to run_dp.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "cost/cost_tables.hpp"
#include "kernels/uninitialised.hpp"
#include "search/dynamic_program.hpp"
#include "search/ordering.hpp"

namespace pase::detail {

// Steps [start, start + windows * period), in windows of `period` steps
// that are alike: the same vertex costs, dependent vertices at the same
// offsets, the same classes, tables consumed at the same step offsets and
// edges of the same prices. Exactly one table crosses each window boundary
// start + k * period (k = 0..windows), apart from tables made before the
// stretch and consumed after it: crossing[k], made in window k - 1 (k >= 1)
// and consumed in window k (k < windows).
struct RepeatedSteps {
  int start = 0, period = 0, windows = 0;
  std::vector<int> crossing;
};

// Each step's signature (equal ids: alike steps, as above), from the vertex
// cost vectors (vcost[v]) and the edge prices' signatures.
std::vector<int> step_signatures(const Graph& g, const Ordering& ord, const TableClasses& classes,
                                 const std::vector<std::vector<double>>& vcost,
                                 const EdgePrices& prices, const EdgePairs& pairs);

// The stretches of at least three windows, disjoint, in step order; each
// at the phase of its smallest crossing tables (`table_entries` by step).
std::vector<RepeatedSteps> find_repeated_steps(const Ordering& ord, const std::vector<int>& sig,
                                               const std::vector<double>& table_entries);

// Cycles of up to this many windows are found: near the Lagrangian's
// balance, the cheapest blocks may alternate between two choices.
constexpr int kMaxCycle = 3;

// run_dp's side of the skip: at each window boundary, the crossing table
// against those kept of the boundaries before. Once it is the table of c
// windows before plus a constant, the stretch's later windows repeat the
// last c windows' choices, and its last crossing table is made from the
// kept ones.
//
// Else, once the last three crossing tables grow by the same amount per
// entry (not one constant: near the Lagrangian's balance a few states grow
// by another amount per block than the rest), the skip is tried: the
// crossing table of the last window is extrapolated along the line the
// three make, that window is run, and the skip stands when the crossing
// table it makes is the line's next one; else a window halfway is tried,
// and so on. Each entry of a window's crossing table is a minimum of sums
// that are affine along the extrapolation's line, so a concave function of
// it; equal to the line's values at three points (the two windows before
// the skip and the one run), it is the line in between (core/docs/
// performance.md, "Repeated blocks"), and the skipped windows' choices are
// those of the window before the skip. When no target holds, at() returns
// the step to go back to, and the window after the boundary is run; the
// next try in the stretch then waits for twice as many boundaries in a row
// whose last three crossing tables grow alike. Once a window run to
// confirm a skip has failed in a stretch, a try there takes the last window
// and the one halfway only (near the Lagrangian's balance a few entries
// change their growth now and then for a while, and each such window is
// lost); after kMaxFailures of them, no more tries are made there.
class RepeatSkipper {
 public:
  RepeatSkipper(std::vector<RepeatedSteps> stretches, size_t steps);
  bool empty() const { return stretches_.empty(); }
  // Before step i runs, with `tables` the program's tables: the step to go
  // on from (i when nothing is skipped; a later step after a skip, with the
  // crossing table it needs made and the skipped windows' consumed table
  // freed; an earlier step when a tried skip is undone, with its tables as
  // they were). Called at every step up to the program's end (i == steps).
  size_t at(size_t i, std::vector<RawVector<double>>& tables);
  // The step whose arg-min table holds step i's choices.
  int source(size_t i) const { return source_[i]; }
  uint64_t skipped() const { return skipped_; }

 private:
  // A skip by growth per entry, tried and not yet confirmed: from boundary
  // k to window `target`, run on the line's crossing table.
  struct Tried {
    size_t stretch = 0;
    int k = 0, target = 0;
    // Nearer targets it may still take: any until a window has failed in
    // the stretch before it, else one.
    int nearer = 0;
    std::vector<double> at_k;    // crossing table k
    std::vector<double> growth;  // crossing table k less crossing table k - 1
    std::vector<std::pair<int, std::vector<double>>> kept;  // kept_ at k
    // The line's crossing table at `boundary`.
    std::vector<double> line(int boundary) const;
  };
  // Windows run for tries that fail in one stretch before skips by growth
  // stop there.
  static constexpr int kMaxFailures = 16;
  // Makes the target window's crossing table the line's; the step to go on
  // from (the target window's first).
  size_t jump(std::vector<RawVector<double>>& tables);
  // At the boundary after the target window: the step to go on from (i when
  // the skip holds; else a nearer target's window, or boundary k's first
  // step, with its crossing table back).
  size_t settle_tried(size_t i, std::vector<RawVector<double>>& tables);

  std::vector<RepeatedSteps> stretches_;
  std::vector<int> source_;
  // The crossing tables of the current stretch's last boundaries, by boundary.
  std::vector<std::pair<int, std::vector<double>>> kept_;
  std::optional<Tried> tried_;
  std::vector<int> failures_;  // by stretch: the windows of tries that failed there
  std::vector<int> not_at_;    // by stretch: a boundary where no skip may be tried again
  // By stretch: the boundaries in a row, up to the latest, whose last three
  // crossing tables grow alike (since the last try that failed), and how
  // many a try needs.
  std::vector<int> alike_, needed_;
  uint64_t skipped_ = 0;
};

// Whether `a` and `b` are equal entry by entry, within the tolerance of
// shifted_copy() (infinite entries equal).
bool same_entries(const double* a, const double* b, size_t n);

// Whether `t2 - t1` equals `t1 - t0` entry by entry (returned in
// `growth`; infinite entries infinite in all three, growth 0), within the
// tolerance of shifted_copy().
bool same_growth(const double* t0, const double* t1, const double* t2, size_t n,
                 std::vector<double>& growth);

// Whether `cur` is `prev` plus one constant (returned in `shift`): the same
// entries infinite, and the others' differences equal, exactly when both
// tables hold integers below 2^51 (the paper's flat machine), else within
// 1e-13 of the largest magnitude.
bool shifted_copy(const double* prev, const double* cur, size_t n, double& shift);

}  // namespace pase::detail
