// plan_pipeline() of pipeline.hpp: the stage plans and the partition
// (core/docs/pipeline.md, "What the planner chooses").
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cost_model.hpp"
#include "pase/pipeline.hpp"
#include "pipeline_model.hpp"
#include "weighted_plan.hpp"

namespace pase {

using namespace pipeline_detail;

namespace {

// A stage plan: its configurations and costs (one micro-batch), or none fits.
struct StagePlan {
  bool fits = false;
  bool optimal = true;
  Strategy configs;
  double F = 0, W = 0;
  MemoryBytes memory;  // one copy of the activations
  SearchStats search;
};

struct Searcher {
  const Graph& graph;
  const Cluster& cluster;
  const PipelineOptions& pipeline;
  const PlanOptions& options;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  // Stage plans by (q, M, range signature, first device mod node size, k);
  // k is 0 for the plan without a cap.
  std::map<std::vector<int64_t>, int> signatures{};
  std::map<std::tuple<int64_t, int64_t, int, int64_t, int64_t>, StagePlan> plans{};
  int64_t searches = 0;
  SearchStats stats{};
  // Progress: stage plans searched of those the search will need (known
  // per (S, M) pair as it starts).
  double done = 0, total = 1, shown = 0;

  int signature(const Graph& micro, int a, int b, const std::vector<std::vector<int64_t>>& prints) {
    std::vector<int64_t> key;
    for (int v = a; v < b; ++v) {
      key.insert(key.end(), prints[v].begin(), prints[v].end());
      key.push_back(-9);
    }
    for (const Edge& e : micro.edges)
      if (e.dst >= a && e.dst < b && e.src >= a) {
        key.push_back(e.src - a);
        key.push_back(e.src_output);
        key.push_back(e.dst - a);
        key.push_back(e.dst_slot);
      }
    return signatures.emplace(std::move(key), static_cast<int>(signatures.size())).first->second;
  }

  void report(double fraction) {
    if (!options.on_progress) return;
    shown = std::max(shown, std::min(1.0, (done + fraction) / total));
    Progress p;
    p.fraction = shown;
    // A pipeline's progress counts stage plans (pipeline.hpp).
    p.vertices_done = static_cast<int>(done);
    p.vertices_total = static_cast<int>(std::max(total, done));
    options.on_progress(p);
  }

  // The plan of stage s = [a, b) of `micro` on q devices, for M micro-batches
  // and k copies of the activations. Without a cap k does not matter; under
  // one, the plan without the cap serves every k it fits with.
  Result<const StagePlan*> stage_plan(const Graph& micro, int sig, int a, int b, int64_t s,
                                      int64_t q, int64_t microbatches, int64_t k) {
    const int64_t align = cluster.gpus_per_node > 0 ? (s * q) % cluster.gpus_per_node : 0;
    Cluster cs = cluster;
    cs.devices = q;
    cs.first_device = align;
    auto free_key = std::make_tuple(q, microbatches, sig, align, int64_t{0});
    auto it = plans.find(free_key);
    if (it == plans.end()) {
      Cluster free = cs;
      free.memory_gib = 0;
      Result<StagePlan> r = search(micro, a, b, free, microbatches, 1);
      if (!r) return r.error();
      it = plans.emplace(free_key, std::move(*r)).first;
    }
    if (cluster.memory_gib <= 0) return &it->second;
    const StageWeights weights{static_cast<double>(microbatches), static_cast<double>(k)};
    if (weights.bytes(it->second.memory) <= cluster.capacity_bytes()) return &it->second;
    auto capped_key = std::make_tuple(q, microbatches, sig, align, k);
    auto c = plans.find(capped_key);
    if (c == plans.end()) {
      Result<StagePlan> r = search(micro, a, b, cs, microbatches, k);
      if (!r) return r.error();
      c = plans.emplace(capped_key, std::move(*r)).first;
    }
    return &c->second;
  }

  Result<StagePlan> search(const Graph& micro, int a, int b, const Cluster& cs,
                           int64_t microbatches, int64_t k) {
    const Graph sub = stage_graph(micro, a, b);
    PlanOptions o = options;
    o.on_progress = [&](const Progress& p) { report(p.fraction); };
    ++searches;
    // The whole graph at M = 1 (S = M = 1) is plan() itself, ties and all.
    const bool whole = a == 0 && b == static_cast<int>(micro.vertices.size()) && microbatches == 1;
    const double m = static_cast<double>(microbatches);
    Result<Plan> r =
        plan_weighted(sub, cs, o, StageWeights{m, static_cast<double>(k), whole ? 0.0 : 1e-13 * m});
    done += 1;
    report(0);
    StagePlan sp;
    if (!r) {
      if (r.error().where == "cluster.memory_gib") return sp;  // nothing fits
      return r.error();
    }
    sp.fits = true;
    sp.optimal = r->optimal;
    sp.configs = r->strategy;
    sp.W = StageWeights::weight_sync(*r);
    sp.F = r->cost - sp.W;
    sp.memory = r->memory;
    sp.search = r->search;
    stats.pairs += r->search.pairs;
    stats.raw_pairs += r->search.raw_pairs;
    stats.table_entries += r->search.table_entries;
    stats.configurations += r->search.configurations;
    stats.peak_bytes = std::max(stats.peak_bytes, r->search.peak_bytes);
    stats.raw_peak_bytes = std::max(stats.raw_peak_bytes, r->search.raw_peak_bytes);
    stats.largest_table = std::max(stats.largest_table, r->search.largest_table);
    stats.max_dependent_set = std::max(stats.max_dependent_set, r->search.max_dependent_set);
    stats.searches += r->search.searches;
    return sp;
  }
};

// The best partition of `micro` into `stages` stages for M micro-batches:
// T, the stage of every vertex and the configurations; T = inf when no
// partition fits.
struct Partition {
  double T = kInf;
  std::vector<int> stage_of;
  Strategy configs;
  bool optimal = true;
  int boundaries = 0;
};

// Stage s over bounds[i] .. bounds[j], i < j, leaving room for the stages
// before and after it (nb boundaries).
bool range_ok(int64_t stages, int nb, int64_t s, int i, int j) {
  if (i >= j || (s == 0) != (i == 0) || (s == stages - 1) != (j == nb - 1)) return false;
  return i >= s && (nb - 1 - j) >= stages - 1 - s;
}

// A micro-batch graph with its allowed boundaries and the signature of the
// range between any two of them.
struct Micro {
  Graph graph;
  std::vector<int> bounds;
  std::vector<std::vector<int>> sig;
};

Micro prepare_micro(Searcher& searcher, Graph graph) {
  Micro m;
  m.graph = std::move(graph);
  m.bounds = allowed_boundaries(m.graph);
  const int n = static_cast<int>(m.graph.vertices.size());
  const int nb = static_cast<int>(m.bounds.size());
  std::vector<std::vector<int64_t>> prints(n);
  for (int v = 0; v < n; ++v) prints[v] = vertex_print(m.graph.vertices[v], model_of(m.graph, v));
  m.sig.assign(nb, std::vector<int>(nb, -1));
  for (int i = 0; i < nb; ++i)
    for (int j = i + 1; j < nb; ++j)
      m.sig[i][j] = searcher.signature(m.graph, m.bounds[i], m.bounds[j], prints);
  return m;
}

Result<Partition> best_partition(Searcher& searcher, const Micro& mg, int64_t stages,
                                 int64_t microbatches) {
  const Graph& micro = mg.graph;
  const std::vector<int>& bounds = mg.bounds;
  const std::vector<std::vector<int>>& sig = mg.sig;
  const int nb = static_cast<int>(bounds.size());
  const int n = static_cast<int>(micro.vertices.size());
  const int64_t q = searcher.cluster.devices / stages;
  const ops::Machine machine = ops::make_machine(searcher.cluster);
  const Sender sender{micro, machine, q};
  auto range_ok = [&](int64_t s, int i, int j) { return pase::range_ok(stages, nb, s, i, j); };

  // A and W of every candidate (A = inf: it does not fit). X_s prices the
  // edges leaving the range as sent to the next stage (exact when no two
  // stages share a node, and for every edge that ends in the next stage).
  struct Candidate {
    double A = kInf, W = 0;
    const StagePlan* plan = nullptr;
  };
  auto at = [&](int64_t s, int i, int j) {
    return (static_cast<size_t>(s) * nb + static_cast<size_t>(i)) * nb + static_cast<size_t>(j);
  };
  std::vector<Candidate> cand(static_cast<size_t>(stages) * nb * nb);
  Partition best;
  best.boundaries = nb;
  for (int64_t s = 0; s < stages; ++s)
    for (int i = 0; i < nb; ++i)
      for (int j = i + 1; j < nb; ++j) {
        if (!range_ok(s, i, j)) continue;
        const int64_t k = copies_of(searcher.pipeline.schedule, stages, s, microbatches);
        Result<const StagePlan*> sp =
            searcher.stage_plan(micro, sig[i][j], bounds[i], bounds[j], s, q, microbatches, k);
        if (!sp) return sp.error();
        if (!(*sp)->fits) continue;
        double x = 0;
        if (s + 1 < stages)
          for (const Edge& e : micro.edges)
            if (e.src >= bounds[i] && e.src < bounds[j] && e.dst >= bounds[j])
              x += sender.edge(e, s, s + 1);
        Candidate& c = cand[at(s, i, j)];
        // T is the least over the partitions only when every stage plan is
        // the least of its own (under a cap, the Lagrangian search's proof).
        best.optimal = best.optimal && (*sp)->optimal;
        c.plan = *sp;
        c.W = (*sp)->W;
        c.A = (*sp)->F + x;
      }

  // T = sum A + (M - 1) max A + max W over partitions. For thresholds tA, tW,
  // the least sum of A over partitions whose stages keep A <= tA and W <= tW
  // plus (M - 1) tA + tW bounds T of the partition found from above, and
  // equals the optimum at the optimum's own maxima: so the least over all
  // thresholds is the optimum. Thresholds run upwards and stop once the
  // unconstrained least sum of A plus them cannot beat the best.
  std::vector<double> dp(static_cast<size_t>(stages + 1) * nb, kInf);
  std::vector<int> from(static_cast<size_t>(stages + 1) * nb, -1);
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
  auto partition = [&]() {
    std::vector<int> ends(stages);
    int j = nb - 1;
    for (int64_t s = stages; s-- > 0;) {
      ends[s] = j;
      j = from[static_cast<size_t>(s + 1) * nb + j];
    }
    return ends;
  };
  const double floor_sum = least_sum(kInf, kInf);
  if (floor_sum == kInf) return best;
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
  const double m1 = static_cast<double>(microbatches - 1);
  std::vector<int> best_ends;
  for (double tw : w_values) {
    if (floor_sum + tw >= best.T) break;
    for (double ta : a_values) {
      if (ta != kInf && floor_sum + m1 * ta + tw >= best.T) break;
      const double sum = least_sum(ta, tw);
      if (sum == kInf) continue;
      // The partition's own T, summed in stage order.
      const std::vector<int> ends = partition();
      double sum_a = 0, max_a = 0, max_w = 0;
      int i = 0;
      for (int64_t s = 0; s < stages; ++s) {
        const Candidate& c = cand[at(s, i, ends[s])];
        sum_a += c.A;
        max_a = std::max(max_a, c.A);
        max_w = std::max(max_w, c.W);
        i = ends[s];
      }
      const double t = sum_a + m1 * max_a + max_w;
      if (t < best.T) {
        best.T = t;
        best_ends = ends;
      }
    }
  }
  best.stage_of.assign(n, 0);
  best.configs.assign(n, Config{});
  int i = 0;
  for (int64_t s = 0; s < stages; ++s) {
    const int j = best_ends[s];
    const StagePlan* sp = cand[at(s, i, j)].plan;
    for (int v = bounds[i]; v < bounds[j]; ++v) {
      best.stage_of[v] = static_cast<int>(s);
      best.configs[v] = sp->configs[v - bounds[i]];
    }
    i = j;
  }
  return best;
}

}  // namespace

Result<PipelinePlan> plan_pipeline(const Graph& graph, const Cluster& cluster,
                                   const PipelineOptions& pipeline, const PlanOptions& options) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  if (graph.model->spec == nullptr)
    return Error{"the graph was not made by build_graph(), load_graph() or build_model()", "graph"};
  if (pipeline.stages < 0)
    return Error{"must be a positive integer or \"auto\"", "pipeline.stages"};
  if (pipeline.microbatches < 0)
    return Error{"must be a positive integer or \"auto\"", "pipeline.microbatches"};
  if (pipeline.max_microbatches < 1)
    return Error{"must be a positive integer", "pipeline.max_microbatches"};
  const int64_t p = cluster.devices;
  std::vector<int64_t> stage_counts, micro_counts;
  if (pipeline.stages == kAuto) {
    for (int64_t s = 1; s <= p; ++s)
      if (p % s == 0) stage_counts.push_back(s);
  } else if (p % pipeline.stages != 0) {
    return Error{std::to_string(pipeline.stages) + " stages do not divide the " +
                     std::to_string(p) + " devices (stage s runs on devices s*q .. (s+1)*q - 1)",
                 "pipeline.stages"};
  } else {
    stage_counts.push_back(pipeline.stages);
  }
  const int64_t batch = common_batch(*graph.model->spec);
  if (pipeline.microbatches == kAuto) {
    for (int64_t m = 1; m <= std::min(batch, pipeline.max_microbatches); ++m)
      if (batch % m == 0) micro_counts.push_back(m);
    if (micro_counts.empty()) micro_counts.push_back(1);
  } else {
    micro_counts.push_back(pipeline.microbatches);
  }

  Searcher searcher{graph, cluster, pipeline, options};
  std::map<int64_t, Micro> micros;
  for (int64_t m : micro_counts) {
    Result<Graph> micro = micro_batch_graph(graph, m);
    if (!micro) {
      if (pipeline.microbatches != kAuto) return micro.error();
      continue;  // "auto" skips a count the graph cannot be lowered at
    }
    micros.emplace(m, prepare_micro(searcher, std::move(*micro)));
  }
  // Progress: the stage plans without a cap that every (S, M) needs, each
  // searched once (those under a cap come on top, as they are found).
  {
    std::set<std::tuple<int64_t, int64_t, int, int64_t>> needed;
    for (int64_t s : stage_counts)
      for (const auto& [m, micro] : micros) {
        const int nb = static_cast<int>(micro.bounds.size());
        const int64_t q = p / s;
        for (int64_t st = 0; st < s; ++st)
          for (int i = 0; i < nb; ++i)
            for (int j = i + 1; j < nb; ++j)
              if (range_ok(s, nb, st, i, j))
                needed.emplace(q, m, micro.sig[i][j],
                               cluster.gpus_per_node > 0 ? (st * q) % cluster.gpus_per_node : 0);
      }
    searcher.total = std::max<double>(1, static_cast<double>(needed.size()));
  }
  double no_pipeline = 0;
  struct Best {
    double T = kInf;
    int64_t stages = 0, microbatches = 0;
    Partition part;
  } best;
  for (int64_t s : stage_counts)
    for (const auto& [m, micro] : micros) {
      const std::vector<int>& bounds = micro.bounds;
      if (s > static_cast<int64_t>(bounds.size()) - 1) {
        if (pipeline.stages != kAuto)
          return Error{std::to_string(s) + " stages, but the graph may be cut at only " +
                           std::to_string(bounds.size() - 2) + " positions (" +
                           std::to_string(bounds.size() - 1) + " stages at most)",
                       "pipeline.stages"};
        continue;
      }
      Result<Partition> part = best_partition(searcher, micro, s, m);
      if (!part) return part.error();
      if (s == 1 && m == 1 && part->T < kInf) no_pipeline = part->T;
      // Ties (1e-12 relative) go to fewer stages, then fewer micro-batches:
      // the order of these loops.
      if (part->T < kInf && (best.T == kInf || part->T < best.T * (1 - 1e-12))) {
        best.T = part->T;
        best.stages = s;
        best.microbatches = m;
        best.part = std::move(*part);
      }
    }
  if (best.T == kInf) {
    if (cluster.memory_gib > 0)
      return Error{"no pipeline of the stage and micro-batch counts tried fits in " +
                       std::to_string(cluster.memory_gib) + " GiB per device",
                   "cluster.memory_gib"};
    return Error{"no micro-batch count divides the batch and lowers the graph",
                 "pipeline.microbatches"};
  }
  Result<PipelinePlan> out =
      assemble(micros.at(best.microbatches).graph, cluster, best.part.stage_of, best.part.configs,
               best.microbatches, pipeline.schedule);
  if (!out) return out.error();
  Plan& plan = out->plan;
  plan.search = searcher.stats;
  plan.search.order = options.order;
  plan.search.threads = std::max(1, options.threads);
  plan.search.time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - searcher.start).count();
  if (cluster.memory_gib > 0) plan.optimal = best.part.optimal;
  out->pipeline.allowed_boundaries = best.part.boundaries;
  out->pipeline.stage_plans = static_cast<int>(searcher.searches);
  out->pipeline.no_pipeline_cost = no_pipeline;
  if (options.on_progress) {
    Progress done;
    done.fraction = 1;
    options.on_progress(done);
  }
  return out;
}

}  // namespace pase
