// The best partition of one pair (S, M) (pipeline_searcher.hpp): the stage
// plans of the ranges that lower bounds leave a chance, and the partition
// exact over them (core/docs/pipeline.md, "What the planner chooses" and
// "Pruning").
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "model/cost_model.hpp"
#include "pipeline/pipeline_searcher.hpp"
#include "search/stop.hpp"

namespace pase::pipeline_detail {

VertexSums vertex_sums(Searcher& searcher, const Micro& mg, int64_t stages, int64_t microbatches) {
  const int n = static_cast<int>(mg.graph.vertices.size());
  const int64_t q = searcher.cluster.devices / stages;
  VertexSums out;
  for (int64_t s = 0; s < stages; ++s)
    out.by_alignment.emplace(stage_alignment(searcher.cluster, s, q), std::vector<VertexFloor>{});
  out.least.assign(n + 1, 0);
  for (auto& [align, sum] : out.by_alignment) {
    sum.assign(n + 1, VertexFloor{});
    for (int v = 0; v < n; ++v) {
      const VertexFloor& f = searcher.floors.of(mg.graph, v, mg.print[v], q, align, microbatches);
      sum[v + 1] =
          VertexFloor{sum[v].F + f.F, sum[v].value + f.value, sum[v].weight_bytes + f.weight_bytes,
                      sum[v].activation_bytes + f.activation_bytes};
    }
  }
  for (int v = 0; v < n; ++v) {
    double f = kInf;
    for (const auto& [align, sum] : out.by_alignment) f = std::min(f, sum[v + 1].F - sum[v].F);
    out.least[v + 1] = out.least[v] + f;
  }
  return out;
}

double vertex_floor_of_pair(Searcher& searcher, const Micro& mg, int64_t stages,
                            int64_t microbatches) {
  const double M = static_cast<double>(microbatches);
  return vertex_sums(searcher, mg, stages, microbatches).least.back() *
         (1 + (M - 1) / static_cast<double>(stages));
}

// The best partition of `mg` into `stages` stages for M micro-batches that
// can beat `beat` (the best T of the pairs searched before; inf: none):
// T = inf when none can or none fits. Ranges that cannot be part of such a
// partition are skipped without a stage plan, proved by lower bounds:
//   T >= sum over the other stages of their A + A_s + (M - 1) max A + W_s,
//   with the others' A >= their parts' least F (or their layers' floors),
//   max A >= A_s and >= the mean A of the stages before s and of those
//   after it, M * A_s + W_s >= max(M * the range's floor of F, its
//   vertices' least M * F + W summed, its parts' values) + M * X_s, and, under the cap, M * A_s +
//   W_s >= the sum of its parts' least M * F + W + lambda * memory less lambda * cap, at the weight
//   lambda of a stage of the first partition planned (same k_s and alignment;
//   Searcher::part_objective()); and memory >= the floors' sum;
// and an upper bound, the T of the partition that balances those floors.
// Partition::floor is the least, over partitions, of their largest floor.
Result<Partition> best_partition(Searcher& searcher, const Micro& mg, int64_t stages,
                                 int64_t microbatches, double beat, Depth depth) {
  const bool floor_only = depth != Depth::kPartition;
  const Graph& micro = mg.graph;
  const std::vector<int>& bounds = mg.bounds;
  const std::vector<std::vector<int>>& sig = mg.sig;
  const int nb = static_cast<int>(bounds.size());
  const int n = static_cast<int>(micro.vertices.size());
  const Cluster& cluster = searcher.cluster;
  const int64_t q = cluster.devices / stages;
  const int64_t G = cluster.gpus_per_node;
  const ops::Machine machine = ops::make_machine(cluster);
  const Sender sender{micro, machine, q};
  const double M = static_cast<double>(microbatches);
  auto range_ok = [&](int64_t s, int i, int j) {
    return pipeline_detail::range_ok(stages, nb, s, i, j);
  };
  auto align_of = [&](int64_t s) { return stage_alignment(cluster, s, q); };
  auto at = [&](int64_t s, int i, int j) {
    return (static_cast<size_t>(s) * nb + static_cast<size_t>(i)) * nb + static_cast<size_t>(j);
  };
  auto at2 = [&](int i, int j) { return static_cast<size_t>(i) * nb + static_cast<size_t>(j); };
  // Progress (Searcher::drop): each range of the pair is passed once, when
  // the bounds prune it or, at the latest, when the pair is done.
  std::vector<char> passed(static_cast<size_t>(stages) * nb * nb, 0);
  auto pass = [&](int64_t s, int i, int j) {
    if (floor_only || passed[at(s, i, j)]) return;
    passed[at(s, i, j)] = 1;
    searcher.drop(NeedKey{q, microbatches, sig[i][j], align_of(s)});
  };
  struct AtExit {
    std::function<void()> f;
    ~AtExit() { f(); }
  } pass_all{[&] {
    for (int64_t s = 0; s < stages; ++s)
      for (int i = 0; i < nb; ++i)
        for (int j = i + 1; j < nb; ++j)
          if (range_ok(s, i, j)) pass(s, i, j);
  }};

  // X of [i, j) sent at the rate between nodes (far) and inside one (near),
  // summed in edge order: every edge from the range to a vertex at or after
  // bounds[j].
  std::vector<double> x_far(static_cast<size_t>(nb) * nb, 0), x_near(x_far.size(), 0);
  {
    std::vector<int> part(n + 1);  // part[v]: the i with bounds[i] <= v < bounds[i + 1]
    for (int i = 0; i + 1 < nb; ++i)
      for (int v = bounds[i]; v < bounds[i + 1]; ++v) part[v] = i;
    for (const Edge& e : micro.edges) {
      const int ps = part[e.src], pd = part[e.dst];
      if (ps == pd) continue;
      const double far = sender.price(e, machine.r);
      const double near = G > 0 ? sender.price(e, machine.r1) : far;
      for (int i = 0; i <= ps; ++i)
        for (int j = ps + 1; j <= pd; ++j) {
          x_far[at2(i, j)] += far;
          x_near[at2(i, j)] += near;
        }
    }
  }
  auto x_of = [&](int64_t s, int i, int j) {
    if (s + 1 >= stages) return 0.0;
    return sender.near(s, s + 1) ? x_near[at2(i, j)] : x_far[at2(i, j)];
  };

  const VertexSums vs = vertex_sums(searcher, mg, stages, microbatches);
  const std::map<int64_t, std::vector<VertexFloor>>& sums = vs.by_alignment;
  const std::vector<double>& least = vs.least;
  // The bounds are exact sums of exact terms only up to rounding: a margin
  // far above it keeps every decision safe.
  const double slack = 1 + 1e-9;
  // With a gap accepted (PlanOptions::max_gap), what cannot beat `beat` by
  // more than the gap is passed too, and stays in the pair's floor.
  const double max_gap = searcher.options.max_gap;
  const double accept = max_gap > 0 ? 1 - max_gap : slack;
  Partition best;
  best.boundaries = nb;
  // T >= sum A + (M - 1) * (sum A) / S, before any work.
  const bool prune = searcher.pipeline.prune;
  if (!prune) beat = kInf;
  const double spread = 1 + (M - 1) / static_cast<double>(stages);
  best.floor = least[n] * spread;
  if (best.floor > beat * accept) return best;

  // The stage plans without a cap of the parts between consecutive
  // boundaries (cheap: one block each, and repeated blocks share them): a
  // range's plan minimises M * F + W over its parts' configurations and the
  // edges between them, so its value is at least the sum of its parts'. In
  // the same way a range's F is at least the sum of its parts' least F, which
  // bounds the A of the other stages (least: over the stages' alignments).
  // Not needed by a search without a bound (the first pair).
  const bool bounded =
      prune && depth != Depth::kVertexFloor && (floor_only || beat < kInf || stages > 1);
  // A stop (stop.hpp) while the bounds' plans run keeps the floor so far.
  auto stop_floors = [&](const Error& e) -> Result<Partition> {
    if (!is_stop(e)) return e;
    best.stopped = true;
    return best;
  };
  std::map<int64_t, std::vector<double>> parts;  // by alignment, summed from part 0
  std::vector<double> least_f(nb, 0);            // summed from part 0
  for (const auto& [align, sum] : sums) {
    std::vector<double>& v = parts[align];
    v.assign(nb, 0);
    for (int t = 0; bounded && t + 1 < nb; ++t) {
      Result<const StagePlan*> sp = searcher.free_plan(micro, sig[t][t + 1], bounds[t],
                                                       bounds[t + 1], align, q, microbatches);
      if (!sp) return stop_floors(sp.error());
      v[t + 1] = v[t] + M * (*sp)->F + (*sp)->W;
    }
  }
  for (int t = 0; bounded && stages > 1 && t + 1 < nb; ++t) {
    double f = kInf;
    for (const auto& [align, sum] : sums) {
      Result<double> lf =
          searcher.least_f(micro, sig[t][t + 1], bounds[t], bounds[t + 1], align, q, microbatches);
      if (!lf) return stop_floors(lf.error());
      // Never below the vertices' floors (equal in exact arithmetic or above).
      f = std::min(f, std::max(*lf, sum[bounds[t + 1]].F - sum[bounds[t]].F));
    }
    least_f[t + 1] = least_f[t] + f;
  }
  // The stages before a range hold [0, bounds[i]), those after it
  // [bounds[j], n): their F at least the floors', each part at its least
  // (over vertices or whole parts, whichever sum is larger on each side).
  auto before_of = [&](int i) { return std::max(least[bounds[i]], least_f[i]); };
  auto after_of = [&](int j) {
    return std::max(least[n] - least[bounds[j]], least_f[nb - 1] - least_f[j]);
  };
  auto others_of = [&](int i, int j) { return before_of(i) + after_of(j); };
  best.floor = std::max(best.floor, least_f[nb - 1] * spread);
  if (best.floor > beat * accept) return best;
  // For each candidate, the least T of a partition holding it (inf where
  // even the floors of memory exceed the cap): T >= the other stages' A +
  // M * A_s + W_s, with A >= F + X and M * F_s + W_s >= its parts' values.
  const double cap = cluster.memory_gib > 0 ? cluster.capacity_bytes() : kInf;
  std::vector<double> floor_t(static_cast<size_t>(stages) * nb * nb, kInf);
  for (int64_t s = 0; s < stages; ++s) {
    const std::vector<VertexFloor>& sum = sums.at(align_of(s));
    const std::vector<double>& part = parts.at(align_of(s));
    const double k =
        static_cast<double>(copies_of(searcher.pipeline.schedule, stages, s, microbatches));
    for (int i = 0; i < nb; ++i)
      for (int j = i + 1; j < nb; ++j) {
        if (!range_ok(s, i, j)) continue;
        const VertexFloor& hi = sum[bounds[j]];
        const VertexFloor& lo = sum[bounds[i]];
        const double bytes =
            (hi.weight_bytes - lo.weight_bytes) + k * (hi.activation_bytes - lo.activation_bytes);
        if (prune && bytes > cap * slack) continue;
        const double before = before_of(i), after = after_of(j);
        const double others = before + after;
        // The largest A is at least this stage's, and at least the mean of
        // the stages before it and of those after it.
        double largest = 0;
        if (s > 0) largest = std::max(largest, before / static_cast<double>(s));
        if (s + 1 < stages)
          largest = std::max(largest, after / static_cast<double>(stages - 1 - s));
        const double x = x_of(s, i, j);
        const double own =
            std::max({M * (hi.F - lo.F), hi.value - lo.value, part[j] - part[i]}) + M * x;
        const double own_f = std::max(hi.F - lo.F, least_f[j] - least_f[i]) + x;
        floor_t[at(s, i, j)] = others + std::max(own, own_f + (M - 1) * largest);
      }
  }

  // A and W of every candidate searched (A = inf: not searched, or it does
  // not fit). X_s prices the edges leaving the range as sent to the next
  // stage (exact when no two stages share a node, and for every edge that
  // ends in the next stage).
  struct Candidate {
    double A = kInf, W = 0;
    const StagePlan* plan = nullptr;
  };
  std::vector<Candidate> cand(static_cast<size_t>(stages) * nb * nb);
  std::vector<char> searched(cand.size(), 0);
  auto search = [&](int64_t s, int i, int j) -> std::optional<Error> {
    Candidate& c = cand[at(s, i, j)];
    if (searched[at(s, i, j)]) return std::nullopt;
    searched[at(s, i, j)] = 1;
    const int64_t k = copies_of(searcher.pipeline.schedule, stages, s, microbatches);
    Result<const StagePlan*> sp =
        searcher.stage_plan(micro, sig[i][j], bounds[i], bounds[j], s, q, microbatches, k);
    if (!sp) return sp.error();
    if (!(*sp)->fits) return std::nullopt;
    // T is the least over the partitions only when every stage plan is the
    // least of its own (under a cap, the Lagrangian search's proof).
    best.optimal = best.optimal && (*sp)->optimal;
    c.plan = *sp;
    c.W = (*sp)->W;
    c.A = (*sp)->F + x_of(s, i, j);
    return std::nullopt;
  };

  // The partition whose largest floor of T is least: that floor bounds T of
  // every partition, and its T bounds the optimum from above.
  std::vector<double> dp(static_cast<size_t>(stages + 1) * nb, kInf);
  std::vector<int> from(static_cast<size_t>(stages + 1) * nb, -1);
  auto ends_of = [&]() {
    std::vector<int> ends(stages);
    int j = nb - 1;
    for (int64_t s = stages; s-- > 0;) {
      ends[s] = j;
      j = from[static_cast<size_t>(s + 1) * nb + j];
    }
    return ends;
  };
  // T of a partition from its candidates, summed in stage order.
  auto t_of = [&](const std::vector<int>& ends) {
    double sum_a = 0, max_a = 0, max_w = 0;
    int i = 0;
    for (int64_t s = 0; s < stages; ++s) {
      const Candidate& c = cand[at(s, i, ends[s])];
      sum_a += c.A;
      max_a = std::max(max_a, c.A);
      max_w = std::max(max_w, c.W);
      i = ends[s];
    }
    return sum_a + (M - 1) * max_a + max_w;
  };
  std::fill(dp.begin(), dp.end(), kInf);
  dp[0] = 0;
  for (int64_t s = 0; s < stages; ++s)
    for (int i = 0; i < nb; ++i) {
      const double base = dp[static_cast<size_t>(s) * nb + i];
      if (base == kInf) continue;
      for (int j = i + 1; j < nb; ++j) {
        const double f = floor_t[at(s, i, j)];
        if (f == kInf) continue;
        double& d = dp[static_cast<size_t>(s + 1) * nb + j];
        if (std::max(base, f) < d) {
          d = std::max(base, f);
          from[static_cast<size_t>(s + 1) * nb + j] = i;
        }
      }
    }
  const double balanced = dp[static_cast<size_t>(stages) * nb + nb - 1];
  best.floor = std::max(best.floor, balanced);
  if (floor_only || best.floor > beat * accept) return best;
  // The configurations of the partition ending its stages at `ends`.
  auto take_partition = [&](const std::vector<int>& ends) {
    best.stage_of.assign(n, 0);
    best.configs.assign(n, Config{});
    int i = 0;
    for (int64_t s = 0; s < stages; ++s) {
      const int j = ends[s];
      const StagePlan* sp = cand[at(s, i, j)].plan;
      for (int v = bounds[i]; v < bounds[j]; ++v) {
        best.stage_of[v] = static_cast<int>(s);
        best.configs[v] = sp->configs[v - bounds[i]];
      }
      i = j;
    }
  };
  // A stop once the partition of balanced floors is planned keeps it, when
  // it fits (its T an upper bound of the pair's), with the floor.
  std::vector<int> planned;
  auto stop_with = [&](const Error& e) -> Result<Partition> {
    if (!is_stop(e)) return e;
    best.stopped = true;
    if (!planned.empty() && t_of(planned) < best.T) {
      best.T = t_of(planned);
      take_partition(planned);
    }
    return best;
  };
  double bound = beat;
  if (balanced < kInf) {
    const std::vector<int> ends = ends_of();
    int i = 0;
    for (int64_t s = 0; s < stages; ++s) {
      if (std::optional<Error> e = search(s, i, ends[s])) return stop_with(*e);
      i = ends[s];
    }
    planned = ends;
    bound = std::min(bound, t_of(ends));
    // Under the cap, a stage plan that fits has M * F + W >= DP(lambda) -
    // lambda * cap at any memory weight lambda, and DP(lambda) of a range is
    // at least the sum of its parts' (Searcher::part_objective()). Each
    // stage of that partition planned under the cap gives its lambda for
    // the candidates with its copies and alignment.
    if (prune && cap < kInf) {
      std::vector<std::tuple<int64_t, int64_t, double>> weights;  // k, alignment, lambda
      int from_i = 0;
      for (int64_t s = 0; s < stages; ++s) {
        const Candidate& c = cand[at(s, from_i, ends[s])];
        if (c.plan && c.plan->dual.lambda > 0)
          weights.emplace_back(copies_of(searcher.pipeline.schedule, stages, s, microbatches),
                               align_of(s), c.plan->dual.lambda);
        from_i = ends[s];
      }
      std::sort(weights.begin(), weights.end());
      weights.erase(std::unique(weights.begin(), weights.end()), weights.end());
      for (const auto& [k, align, lambda] : weights) {
        std::vector<double> sum(nb, 0);  // the parts' objectives, summed from part 0
        for (int t = 0; t + 1 < nb; ++t) {
          Result<double> o = searcher.part_objective(micro, sig[t][t + 1], bounds[t], bounds[t + 1],
                                                     align, q, microbatches, k, lambda);
          if (!o) return stop_with(o.error());
          sum[t + 1] = sum[t] + *o;
        }
        for (int64_t s = 0; s < stages; ++s) {
          if (copies_of(searcher.pipeline.schedule, stages, s, microbatches) != k ||
              align_of(s) != align)
            continue;
          for (int i = 0; i < nb; ++i)
            for (int j = i + 1; j < nb; ++j) {
              double& f = floor_t[at(s, i, j)];
              if (!range_ok(s, i, j) || f == kInf) continue;
              f = std::max(f, others_of(i, j) + sum[j] - sum[i] - lambda * cap + M * x_of(s, i, j));
            }
        }
      }
    }
  }
  // Every other candidate whose floor leaves it a chance; the others are
  // passed first, so that the progress counts only what is left.
  auto chance = [&](int64_t s, int i, int j) {
    const double f = floor_t[at(s, i, j)];
    return !prune || (f != kInf && f <= bound * accept);
  };
  for (int pick = 0; pick < 2; ++pick)
    for (int64_t s = 0; s < stages; ++s)
      for (int i = 0; i < nb; ++i)
        for (int j = i + 1; j < nb; ++j) {
          if (!range_ok(s, i, j) || chance(s, i, j) != (pick == 1)) continue;
          if (pick == 0) {
            pass(s, i, j);
          } else if (std::optional<Error> e = search(s, i, j)) {
            return stop_with(*e);
          }
        }

  // T = sum A + (M - 1) max A + max W over partitions. For thresholds tA, tW,
  // the least sum of A over partitions whose stages keep A <= tA and W <= tW
  // plus (M - 1) tA + tW bounds T of the partition found from above, and
  // equals the optimum at the optimum's own maxima: so the least over all
  // thresholds is the optimum. Thresholds run upwards and stop once the
  // unconstrained least sum of A plus them cannot beat the best.
  auto least_sum = [&](double ta, double tw) {
    std::fill(dp.begin(), dp.end(), kInf);
    dp[0] = 0;
    for (int64_t s = 0; s < stages; ++s)
      for (int i = 0; i < nb; ++i) {
        const double base = dp[static_cast<size_t>(s) * nb + i];
        if (base == kInf) continue;
        for (int j = i + 1; j < nb; ++j) {
          const Candidate& c = cand[at(s, i, j)];
          if (c.A == kInf || c.A > ta || c.W > tw) continue;
          double& d = dp[static_cast<size_t>(s + 1) * nb + j];
          if (base + c.A < d) {
            d = base + c.A;
            from[static_cast<size_t>(s + 1) * nb + j] = i;
          }
        }
      }
    return dp[static_cast<size_t>(stages) * nb + nb - 1];
  };
  const double floor_sum = least_sum(kInf, kInf);
  if (floor_sum == kInf) {
    if (max_gap > 0) best.floor = std::max(best.floor, bound * accept);
    return best;
  }
  std::vector<double> a_values, w_values;
  for (const Candidate& c : cand)
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
  if (microbatches == 1) a_values = {kInf};  // (M - 1) max A is 0
  std::vector<int> best_ends;
  for (double tw : w_values) {
    if (floor_sum + tw >= best.T) break;
    for (double ta : a_values) {
      if (ta != kInf && floor_sum + (M - 1) * ta + tw >= best.T) break;
      const double sum = least_sum(ta, tw);
      if (sum == kInf) continue;
      const std::vector<int> ends = ends_of();
      const double t = t_of(ends);
      if (t < best.T) {
        best.T = t;
        best_ends = ends;
      }
    }
  }
  take_partition(best_ends);
  // A partition holding a range passed has T above bound * accept; the
  // others' least is best.T.
  if (max_gap > 0) best.floor = std::max(best.floor, std::min(best.T, bound * accept));
  return best;
}

}  // namespace pase::pipeline_detail
