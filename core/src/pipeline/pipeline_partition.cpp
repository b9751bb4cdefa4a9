// The best partition of one pair (S, M) (pipeline_searcher.hpp): the stage
// plans of the ranges that lower bounds leave a chance, and the partition
// exact over them (core/docs/pipeline.md, "What the planner chooses" and
// "Pruning").
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "model/cost_model.hpp"
#include "pipeline/partition_dp.hpp"
#include "pipeline/pipeline_bounds.hpp"
#include "pipeline/pipeline_searcher.hpp"
#include "search/stop.hpp"

namespace pase::pipeline_detail {

namespace {

// The search of one pair (S, M) for best_partition(), one method a phase,
// in the order of core/docs/pipeline.md ("Pruning"): the vertices' floor,
// the parts' floors, each range's floor, the partition of balanced floors
// (planned: an upper bound), the floors under the cap at its stages'
// memory weights, the ranges left a chance planned, and the exact
// partition over them. Each phase may end the pair with its floor. A range
// whose floor of T (range_floors()) is above the best T so far is skipped
// without a stage plan; Partition::floor is the least, over partitions, of
// their largest floor.
class PairSearch {
 public:
  PairSearch(Searcher& searcher, const Micro& mg, int64_t stages, int64_t microbatches, double beat,
             Depth depth)
      : searcher_(searcher),
        mg_(mg),
        stages_(stages),
        microbatches_(microbatches),
        M_(static_cast<double>(microbatches)),
        nb_(static_cast<int>(mg.bounds.size())),
        n_(static_cast<int>(mg.graph.vertices.size())),
        q_(searcher.cluster.devices / stages),
        floor_only_(depth != Depth::kPartition),
        least_f_wanted_(depth == Depth::kFloor || depth == Depth::kPartition),
        prune_(searcher.pipeline.prune),
        beat_(searcher.pipeline.prune ? beat : kInf),
        accept_(searcher.options.max_gap > 0 ? 1 - searcher.options.max_gap : kSlack),
        bounded_(prune_ && depth != Depth::kVertexFloor &&
                 (floor_only_ || beat_ < kInf || stages > 1)),
        machine_(ops::make_machine(searcher.cluster)),
        sender_{mg.graph, machine_, q_},
        passed_(cells(), 0),
        floor_t_(cells(), kInf),
        cand_(cells()),
        searched_(cells(), 0),
        partitions_(stages, nb_),
        weighed_(searcher, mg, q_, microbatches, capacity()) {
    best_.boundaries = nb_;
  }
  // Progress (Searcher::drop): every range of the pair is passed once, when
  // the bounds prune it or, at the latest, when the pair is done.
  ~PairSearch() {
    for (int64_t s = 0; s < stages_; ++s)
      for (int i = 0; i < nb_; ++i)
        for (int j = i + 1; j < nb_; ++j)
          if (range_ok(s, i, j)) pass(s, i, j);
  }

  Result<Partition> run() {
    sends();
    if (vertex_floor() > beat_ * accept_) return best_;
    if (std::optional<Error> e = part_floors()) return stopped_with(*e);
    if (best_.floor > beat_ * accept_) return best_;
    range_floors();
    best_.floor = std::max(best_.floor, balanced_floor());
    if (floor_only_ || best_.floor > beat_ * accept_) return best_;
    double bound = beat_;
    if (std::optional<Error> e = plan_balanced(bound)) return stopped_with(*e);
    if (std::optional<Error> e = capped_floors()) return stopped_with(*e);
    if (std::optional<Error> e = plan_ranges_left(bound)) return stopped_with(*e);
    exact_partition();
    // With a gap accepted, a partition holding a range passed has T above
    // bound * accept; the others' least is best.T.
    if (searcher_.options.max_gap > 0)
      best_.floor = std::max(best_.floor, std::min(best_.T, bound * accept_));
    return best_;
  }

 private:
  // The bounds are exact sums of exact terms only up to rounding: a margin
  // far above it keeps every decision safe.
  static constexpr double kSlack = 1 + 1e-9;

  // A and W of a range searched (A = inf: not searched, or it does not
  // fit). X_s prices the edges leaving the range as sent to the next stage
  // (exact when no two stages share a node, and for every edge that ends
  // in the next stage).
  struct Candidate {
    double A = kInf, W = 0;
    const StagePlan* plan = nullptr;
  };

  size_t cells() const { return static_cast<size_t>(stages_) * nb_ * nb_; }
  size_t at(int64_t s, int i, int j) const {
    return (static_cast<size_t>(s) * nb_ + static_cast<size_t>(i)) * nb_ + static_cast<size_t>(j);
  }
  size_t at2(int i, int j) const { return static_cast<size_t>(i) * nb_ + static_cast<size_t>(j); }
  bool range_ok(int64_t s, int i, int j) const {
    return pipeline_detail::range_ok(stages_, nb_, s, i, j);
  }
  int64_t align_of(int64_t s) const { return stage_alignment(searcher_.cluster, s, q_); }
  int64_t copies(int64_t s) const {
    return copies_of(searcher_.pipeline.schedule, stages_, s, microbatches_);
  }
  const std::vector<int>& bounds() const { return mg_.bounds; }
  int sig(int i, int j) const { return mg_.sig[i][j]; }

  void pass(int64_t s, int i, int j) {
    if (floor_only_ || passed_[at(s, i, j)]) return;
    passed_[at(s, i, j)] = 1;
    searcher_.drop(NeedKey{q_, microbatches_, sig(i, j), align_of(s)});
  }

  // A stop (stop.hpp) keeps the floor so far, and the partition of
  // balanced floors once its stages are planned, when it fits (its T an
  // upper bound of the pair's).
  Result<Partition> stopped_with(const Error& e) {
    if (!is_stop(e)) return e;
    best_.stopped = true;
    if (!planned_.empty() && t_of(planned_) < best_.T) {
      best_.T = t_of(planned_);
      take_partition(planned_);
    }
    return best_;
  }

  // X of every range (range_sends(), pipeline_bounds.cpp).
  void sends() {
    range_sends(mg_, sender_, machine_, searcher_.cluster.gpus_per_node, x_far_, x_near_);
  }
  double x_of(int64_t s, int i, int j) const {
    if (s + 1 >= stages_) return 0.0;
    return sender_.near(s, s + 1) ? x_near_[at2(i, j)] : x_far_[at2(i, j)];
  }

  // T >= sum A + (M - 1) * (sum A) / S, before any work.
  double vertex_floor() {
    vs_ = vertex_sums(searcher_, mg_, stages_, microbatches_);
    best_.floor = vs_.least[n_] * spread();
    return best_.floor;
  }
  double spread() const { return 1 + (M_ - 1) / static_cast<double>(stages_); }

  // The stage plans without a cap of the parts between consecutive
  // boundaries (cheap: one block each, and repeated blocks share them): a
  // range's plan minimises M * F + W over its parts' configurations and the
  // edges between them, so its value is at least the sum of its parts'. In
  // the same way a range's F is at least the sum of its parts' least F,
  // which bounds the A of the other stages (least: over the stages'
  // alignments); those plans of least F only from Depth::kFloor on. Not needed by a search without
  // a bound (the first pair).
  std::optional<Error> part_floors() {
    const Graph& micro = mg_.graph;
    least_f_.assign(nb_, 0);
    for (const auto& [align, sum] : vs_.by_alignment) {
      std::vector<double>& v = parts_[align];
      v.assign(nb_, 0);
      for (int t = 0; bounded_ && t + 1 < nb_; ++t) {
        Result<const StagePlan*> sp = searcher_.free_plan(
            micro, sig(t, t + 1), bounds()[t], bounds()[t + 1], align, q_, microbatches_);
        if (!sp) return sp.error();
        v[t + 1] = v[t] + M_ * (*sp)->F + (*sp)->W;
      }
    }
    for (int t = 0; bounded_ && least_f_wanted_ && stages_ > 1 && t + 1 < nb_; ++t) {
      double f = kInf;
      for (const auto& [align, sum] : vs_.by_alignment) {
        Result<double> lf = searcher_.least_f(micro, sig(t, t + 1), bounds()[t], bounds()[t + 1],
                                              align, q_, microbatches_);
        if (!lf) return lf.error();
        // Never below the vertices' floors (equal in exact arithmetic or above).
        f = std::min(f, std::max(*lf, sum[bounds()[t + 1]].F - sum[bounds()[t]].F));
      }
      least_f_[t + 1] = least_f_[t] + f;
    }
    // Each part's value (M * F + W) at least its layers' least values and
    // its plan's, whichever is larger, at the alignment where that is
    // least: a floor of the value of any stages holding it.
    least_value_.assign(nb_, 0);
    for (int t = 0; t + 1 < nb_; ++t) {
      double v = kInf;
      for (const auto& [align, sum] : vs_.by_alignment) {
        const std::vector<double>& part = parts_.at(align);
        v = std::min(v, std::max(sum[bounds()[t + 1]].value - sum[bounds()[t]].value,
                                 part[t + 1] - part[t]));
      }
      least_value_[t + 1] = least_value_[t] + v;
    }
    best_.floor = std::max(best_.floor, least_f_[nb_ - 1] * spread());
    return std::nullopt;
  }

  // The stages before a range hold [0, bounds[i]), those after it
  // [bounds[j], n): their F at least the floors', each part at its least
  // (over vertices or whole parts, whichever sum is larger on each side).
  double before_of(int i) const { return std::max(vs_.least[bounds()[i]], least_f_[i]); }
  double after_of(int j) const {
    return std::max(vs_.least[n_] - vs_.least[bounds()[j]], least_f_[nb_ - 1] - least_f_[j]);
  }

  // For each range, the least T of a partition holding it (inf where even
  // the floors of memory exceed the cap): T >= the other stages' A + M *
  // A_s + W_s, with A >= F + X and M * F_s + W_s >= its parts' values.
  void range_floors() {
    const double cap = capacity();
    for (int64_t s = 0; s < stages_; ++s) {
      const std::vector<VertexFloor>& sum = vs_.by_alignment.at(align_of(s));
      const std::vector<double>& part = parts_.at(align_of(s));
      const double k = static_cast<double>(copies(s));
      for (int i = 0; i < nb_; ++i)
        for (int j = i + 1; j < nb_; ++j) {
          if (!range_ok(s, i, j)) continue;
          const VertexFloor& hi = sum[bounds()[j]];
          const VertexFloor& lo = sum[bounds()[i]];
          const double bytes =
              (hi.weight_bytes - lo.weight_bytes) + k * (hi.activation_bytes - lo.activation_bytes);
          if (prune_ && bytes > cap * kSlack) continue;
          const double before = before_of(i), after = after_of(j);
          const double others = before + after;
          // The largest A is at least this stage's, and at least the mean of
          // the stages before it and of those after it.
          double largest = 0;
          if (s > 0) largest = std::max(largest, before / static_cast<double>(s));
          if (s + 1 < stages_)
            largest = std::max(largest, after / static_cast<double>(stages_ - 1 - s));
          // (M - 1) max A + max W is at least each stage's (M - 1) A + W,
          // so at least their mean over the stages before the range, and
          // over those after it: (M - 1) F + W >= (M - 1) / M * (M * F + W).
          double largest_value = 0;
          const double shrink = (M_ - 1) / M_;
          if (s > 0) largest_value = shrink * least_value_[i] / static_cast<double>(s);
          if (s + 1 < stages_)
            largest_value =
                std::max(largest_value, shrink * (least_value_[nb_ - 1] - least_value_[j]) /
                                            static_cast<double>(stages_ - 1 - s));
          const double x = x_of(s, i, j);
          const double own = std::max({M_ * (hi.F - lo.F), hi.value - lo.value, part[j] - part[i],
                                       weighed_floor(s, i, j)}) +
                             M_ * x;
          const double own_f = std::max(hi.F - lo.F, least_f_[j] - least_f_[i]) + x;
          floor_t_[at(s, i, j)] =
              others + std::max({own, own_f + (M_ - 1) * largest, own_f + largest_value});
        }
    }
  }
  double capacity() const {
    const Cluster& c = searcher_.cluster;
    return c.memory_gib > 0 ? c.capacity_bytes() : kInf;
  }

  // The floor under the cap from the range's layers (WeighedFloors,
  // pipeline_bounds.cpp); 0 without a cap.
  double weighed_floor(int64_t s, int i, int j) {
    const double cap = capacity();
    if (!(cap < kInf) || !prune_) return 0;
    return weighed_.floor(align_of(s), copies(s), bounds()[i], bounds()[j],
                          vs_.by_alignment.begin()->second.back().value);
  }

  // The partition whose largest floor of T is least: that floor bounds T
  // of every partition, and its T bounds the optimum from above.
  double balanced_floor() {
    balanced_ = partitions_.run([&](int64_t s, int i, int j) { return floor_t_[at(s, i, j)]; },
                                [](double base, double f) { return std::max(base, f); });
    return balanced_;
  }
  // T of a partition from its candidates, summed in stage order.
  double t_of(const std::vector<int>& ends) const {
    double sum_a = 0, max_a = 0, max_w = 0;
    int i = 0;
    for (int64_t s = 0; s < stages_; ++s) {
      const Candidate& c = cand_[at(s, i, ends[s])];
      sum_a += c.A;
      max_a = std::max(max_a, c.A);
      max_w = std::max(max_w, c.W);
      i = ends[s];
    }
    return sum_a + (M_ - 1) * max_a + max_w;
  }
  // The configurations of the partition ending its stages at `ends`.
  void take_partition(const std::vector<int>& ends) {
    best_.stage_of.assign(n_, 0);
    best_.configs.assign(n_, Config{});
    int i = 0;
    for (int64_t s = 0; s < stages_; ++s) {
      const int j = ends[s];
      const StagePlan* sp = cand_[at(s, i, j)].plan;
      for (int v = bounds()[i]; v < bounds()[j]; ++v) {
        best_.stage_of[v] = static_cast<int>(s);
        best_.configs[v] = sp->configs[v - bounds()[i]];
      }
      i = j;
    }
  }

  // The stage plan of range (s, i, j), once.
  std::optional<Error> search(int64_t s, int i, int j) {
    Candidate& c = cand_[at(s, i, j)];
    if (searched_[at(s, i, j)]) return std::nullopt;
    searched_[at(s, i, j)] = 1;
    Result<const StagePlan*> sp = searcher_.stage_plan(
        mg_.graph, sig(i, j), bounds()[i], bounds()[j], s, q_, microbatches_, copies(s));
    if (!sp) return sp.error();
    if (!(*sp)->fits) return std::nullopt;
    // T is the least over the partitions only when every stage plan is the
    // least of its own (under a cap, the Lagrangian search's proof).
    best_.optimal = best_.optimal && (*sp)->optimal;
    c.plan = *sp;
    c.W = (*sp)->W;
    c.A = (*sp)->F + x_of(s, i, j);
    return std::nullopt;
  }

  // The partition of balanced floors planned: its T bounds the pair's.
  std::optional<Error> plan_balanced(double& bound) {
    if (!(balanced_ < kInf)) return std::nullopt;
    const std::vector<int> ends = partitions_.ends();
    int i = 0;
    for (int64_t s = 0; s < stages_; ++s) {
      if (std::optional<Error> e = search(s, i, ends[s])) return e;
      i = ends[s];
    }
    planned_ = ends;
    bound = std::min(bound, t_of(ends));
    return std::nullopt;
  }

  // Under the cap, a stage plan that fits has M * F + W >= DP(lambda) -
  // lambda * cap at any memory weight lambda, and DP(lambda) of a range is
  // at least the sum of its parts' (Searcher::part_objective()). Each
  // stage of the partition of balanced floors planned under the cap gives
  // its lambda for the ranges with its copies and alignment.
  std::optional<Error> capped_floors() {
    const double cap = capacity();
    if (planned_.empty() || !prune_ || !(cap < kInf)) return std::nullopt;
    std::vector<std::tuple<int64_t, int64_t, double>> weights;  // k, alignment, lambda
    int from_i = 0;
    for (int64_t s = 0; s < stages_; ++s) {
      const Candidate& c = cand_[at(s, from_i, planned_[s])];
      if (c.plan && c.plan->dual.lambda > 0)
        weights.emplace_back(copies(s), align_of(s), c.plan->dual.lambda);
      from_i = planned_[s];
    }
    std::sort(weights.begin(), weights.end());
    weights.erase(std::unique(weights.begin(), weights.end()), weights.end());
    for (const auto& [k, align, lambda] : weights) {
      std::vector<double> sum(nb_, 0);  // the parts' objectives, summed from part 0
      for (int t = 0; t + 1 < nb_; ++t) {
        Result<double> o =
            searcher_.part_objective(mg_.graph, sig(t, t + 1), bounds()[t], bounds()[t + 1], align,
                                     q_, microbatches_, k, lambda);
        if (!o) return o.error();
        sum[t + 1] = sum[t] + *o;
      }
      for (int64_t s = 0; s < stages_; ++s) {
        if (copies(s) != k || align_of(s) != align) continue;
        for (int i = 0; i < nb_; ++i)
          for (int j = i + 1; j < nb_; ++j) {
            double& f = floor_t_[at(s, i, j)];
            if (!range_ok(s, i, j) || f == kInf) continue;
            f = std::max(f, before_of(i) + after_of(j) + sum[j] - sum[i] - lambda * cap +
                                M_ * x_of(s, i, j));
          }
      }
    }
    return std::nullopt;
  }

  // Every other range whose floor leaves it a chance; the others are
  // passed first, so that the progress counts only what is left.
  std::optional<Error> plan_ranges_left(double bound) {
    auto chance = [&](int64_t s, int i, int j) {
      const double f = floor_t_[at(s, i, j)];
      return !prune_ || (f != kInf && f <= bound * accept_);
    };
    for (int pick = 0; pick < 2; ++pick)
      for (int64_t s = 0; s < stages_; ++s)
        for (int i = 0; i < nb_; ++i)
          for (int j = i + 1; j < nb_; ++j) {
            if (!range_ok(s, i, j) || chance(s, i, j) != (pick == 1)) continue;
            if (pick == 0) {
              pass(s, i, j);
            } else if (std::optional<Error> e = search(s, i, j)) {
              return e;
            }
          }
    return std::nullopt;
  }

  // T = sum A + (M - 1) max A + max W over partitions. For thresholds tA,
  // tW, the least sum of A over partitions whose stages keep A <= tA and W
  // <= tW plus (M - 1) tA + tW bounds T of the partition found from above,
  // and equals the optimum at the optimum's own maxima: so the least over
  // all thresholds is the optimum. Thresholds run upwards and stop once the
  // unconstrained least sum of A plus them cannot beat the best.
  double least_sum(double ta, double tw) {
    return partitions_.run(
        [&](int64_t s, int i, int j) {
          const Candidate& c = cand_[at(s, i, j)];
          return c.A > ta || c.W > tw ? kInf : c.A;
        },
        [](double base, double a) { return base + a; });
  }
  void exact_partition() {
    const double floor_sum = least_sum(kInf, kInf);
    if (floor_sum == kInf) return;
    std::vector<double> a_values, w_values;
    for (const Candidate& c : cand_)
      if (c.A != kInf) {
        a_values.push_back(c.A);
        w_values.push_back(c.W);
      }
    auto unique_sorted = [](std::vector<double>& v) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    };
    unique_sorted(a_values);
    unique_sorted(w_values);
    if (microbatches_ == 1) a_values = {kInf};  // (M - 1) max A is 0
    std::vector<int> best_ends;
    for (double tw : w_values) {
      if (floor_sum + tw >= best_.T) break;
      for (double ta : a_values) {
        if (ta != kInf && floor_sum + (M_ - 1) * ta + tw >= best_.T) break;
        const double sum = least_sum(ta, tw);
        if (sum == kInf) continue;
        const std::vector<int> ends = partitions_.ends();
        const double t = t_of(ends);
        if (t < best_.T) {
          best_.T = t;
          best_ends = ends;
        }
      }
    }
    take_partition(best_ends);
  }

  Searcher& searcher_;
  const Micro& mg_;
  const int64_t stages_, microbatches_;
  const double M_;
  const int nb_, n_;
  const int64_t q_;
  const bool floor_only_, least_f_wanted_, prune_;
  const double beat_, accept_;
  const bool bounded_;
  const ops::Machine machine_;
  const Sender sender_;
  std::vector<char> passed_;
  std::vector<double> x_far_, x_near_;
  VertexSums vs_;
  std::map<int64_t, std::vector<double>> parts_;  // by alignment, summed from part 0
  std::vector<double> least_f_;                   // summed from part 0
  std::vector<double> least_value_;               // summed from part 0
  std::vector<double> floor_t_;
  std::vector<Candidate> cand_;
  std::vector<char> searched_;
  PartitionDp partitions_;
  double balanced_ = kInf;
  std::vector<int> planned_;  // the partition of balanced floors, once planned
  Partition best_;
  WeighedFloors weighed_;
};

}  // namespace

// The best partition of `mg` into `stages` stages for M micro-batches that
// can beat `beat` (pipeline_searcher.hpp): PairSearch's phases.
Result<Partition> best_partition(Searcher& searcher, const Micro& mg, int64_t stages,
                                 int64_t microbatches, double beat, Depth depth) {
  PairSearch pair(searcher, mg, stages, microbatches, beat, depth);
  return pair.run();
}

}  // namespace pase::pipeline_detail
