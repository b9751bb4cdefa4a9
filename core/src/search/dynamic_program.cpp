// The PaSE dynamic program (Elango, IPDPS 2021, Fig. 4 / recurrence 4) on
// tables indexed by equivalence classes of the dependent vertices'
// configurations (dynamic_program.hpp; the classes and the sizes:
// table_classes.cpp; one step: step_runner.hpp). Time: sum over steps of
// |configs(v)| * |T_i| pairs, |T_i| the product of the class counts, fewer
// where the threshold search stops a row early.
#include "search/dynamic_program.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "cost/cost_tables.hpp"
#include "kernels/uninitialised.hpp"
#include "search/repeated_steps.hpp"
#include "search/step_runner.hpp"
#include "search/stop.hpp"

namespace pase {

namespace {

// Sorted rows of the threshold search kept for one search: at most this
// many bytes.
constexpr double kSortedRowsBudget = 64.0 * (1 << 20);

using detail::StepRunner;
using detail::StepShape;
using detail::Term;

bool is_identity(const std::vector<int>& map) {
  for (size_t q = 0; q < map.size(); ++q)
    if (map[q] != static_cast<int>(q)) return false;
  return true;
}

}  // namespace

struct SearchCache::Kept {
  Kept(const Graph& g, const std::vector<ConfigSet>& configs, const ops::Machine& m,
       EdgePrices& prices)
      : graph(&g),
        configs(&configs),
        prices(&prices),
        machine(m),
        matrices(g, configs, machine, prices, kPairMatrixBudget),
        rows(kSortedRowsBudget) {}
  // What the matrices were made for: they serve a search of the same.
  bool serves(const Graph& g, const std::vector<ConfigSet>& c, const ops::Machine& m,
              const EdgePrices& p) const {
    return machine.cost_weight * machine.microbatches == m.cost_weight * m.microbatches &&
           graph == &g && configs == &c && prices == &p;
  }
  const Graph* graph;
  const std::vector<ConfigSet>* configs;
  const EdgePrices* prices;
  ops::Machine machine;
  PairMatrices matrices;
  detail::SortedRowsCache rows;
};

SearchCache::SearchCache() = default;
SearchCache::~SearchCache() = default;

SearchCache::Kept& SearchCache::kept(const Graph& g, const std::vector<ConfigSet>& configs,
                                     const ops::Machine& m, EdgePrices& prices) {
  if (!kept_ || !kept_->serves(g, configs, m, prices)) {
    kept_.reset();
    kept_ = std::make_unique<Kept>(g, configs, m, prices);
  }
  return *kept_;
}

Result<DpResult> run_dp(const Graph& g, const std::vector<ConfigSet>& configs, const Ordering& ord,
                        const ops::Machine& m, const SearchStats& est, const PlanOptions& options) {
  return run_dp(g, configs, ord, table_classes(g, configs, ord, EndView::of(m)), m, est, options);
}

Result<DpResult> run_dp(const Graph& g, const std::vector<ConfigSet>& configs, const Ordering& ord,
                        const TableClasses& classes, const ops::Machine& m, const SearchStats& est,
                        const PlanOptions& options, const DpTuning& tuning, EdgePrices* prices,
                        SearchCache* cache, bool open_last) {
  std::optional<EdgePrices> own;
  if (prices == nullptr) prices = &own.emplace(g, configs, EndView::of(m), kEdgePriceBudget);
  // Matrices made from this run's own prices are this run's alone (another
  // run's own prices may come at the same address).
  std::optional<SearchCache> own_cache;
  SearchCache& matrices_from = cache != nullptr && !own ? *cache : own_cache.emplace();
  if (cache == nullptr) cache = &matrices_from;
  SearchCache::Kept& kept = matrices_from.kept(g, configs, m, *prices);
  PairMatrices& kept_matrices = kept.matrices;
  detail::SortedRowsCache& kept_rows = kept.rows;
  const uint64_t matrix_hits = kept_matrices.hits(), row_hits = kept_rows.hits();
  size_t n_steps = ord.steps.size();
  std::vector<RawVector<double>> tables(n_steps);  // each written in full by its step
  std::vector<RawVector<uint16_t>> args(n_steps);
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
    Progress p;
    p.fraction = frac;
    p.vertices_done = steps_done;
    p.vertices_total = static_cast<int>(n_steps);
    p.current_vertex = current;
    options.on_progress(p);
  };
  auto tick = [&](uint64_t pairs_done) {
    done_pairs += static_cast<double>(pairs_done);
    since_check += pairs_done;
    if (since_check < (uint64_t{1} << 20)) return true;
    since_check = 0;
    if (stop_requested(options)) {
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
    if (cancel_requested(options)) {
      cancelled = true;
      return false;
    }
    return true;
  };
  const int threads = std::max(1, options.threads);
  uint64_t fused_steps = 0;

  // Repeated blocks (repeated_steps.hpp): each vertex's costs first, for
  // the steps' signatures.
  std::vector<std::vector<double>> vcosts(g.vertices.size());
  for (const Step& st : ord.steps)
    vcosts[st.vertex] = cache->vertex_costs.costs(g, st.vertex, configs[st.vertex], m, threads);
  std::vector<double> entries_of(n_steps, 1);
  for (size_t i = 0; i < n_steps; ++i)
    for (int c : classes.steps[i].count) entries_of[i] *= c;
  detail::RepeatSkipper repeats(
      tuning.repeat
          ? detail::find_repeated_steps(
                ord, detail::step_signatures(g, ord, classes, vcosts, *prices, pairs), entries_of)
          : std::vector<detail::RepeatedSteps>{},
      n_steps);

  double total = 0;
  std::vector<double> open_row;  // open_last: the last step's row
  double open_rest = 0;
  // level_of[u]: u's level (1..d) in the current step's dependent set, 0 when
  // not in it. Allocated once and cleared per step, so that a step costs its
  // own size, not the graph's.
  std::vector<int> level_of(g.vertices.size(), 0);
  // Up to i == n_steps: a stretch may end there, and a skip tried in it
  // is confirmed (or undone) at its end.
  for (size_t i = 0; i <= n_steps; ++i) {
    // Skipped steps count as done; a skip may end at the first boundary of
    // the next stretch.
    while (!repeats.empty()) {
      const size_t next = repeats.at(i, tables);
      if (next == i) break;
      if (next < i) {
        // A skip undone: the steps from `next` run after all.
        for (size_t j = next; j < i; ++j) {
          done_pairs -= entries_of[j] * static_cast<double>(configs[ord.steps[j].vertex].size());
          --steps_done;
        }
        i = next;
        continue;
      }
      for (; i < next; ++i) {
        done_pairs += entries_of[i] * static_cast<double>(configs[ord.steps[i].vertex].size());
        ++steps_done;
      }
    }
    if (i == n_steps) break;
    const Step& st = ord.steps[i];
    const DepClasses& dc = classes.steps[i];
    int v = st.vertex;
    current = v;
    // Also checked once per vertex, so that small plans notice a stop too.
    if (stop_requested(options)) return stop_error(options);
    int nv = static_cast<int>(configs[v].size());
    int d = static_cast<int>(st.dep.size());
    // The levels in the step's iteration order (dc.order; the table keeps
    // dep's order): level l iterates dep[at[l - 1]].
    const std::vector<int>& at = dc.order;
    const bool grouped = !dc.group_first.empty();
    const int groups = static_cast<int>(dc.group_first.size());
    StepShape shape;
    shape.nv = nv;
    shape.radix.resize(d);
    shape.out_stride.resize(d);
    std::vector<int64_t> layout(d, 1);  // the table's stride of dep[k]
    for (int k = d - 1; k > 0; --k) layout[k - 1] = layout[k] * dc.count[k];
    for (int l = 0; l < d; ++l) {
      shape.radix[l] = dc.count[at[l]];
      shape.out_stride[l] = layout[at[l]];
      level_of[st.dep[at[l]]] = l + 1;
    }
    if (grouped) {
      shape.groups = groups;
      shape.group_of = dc.group_of.data();
      shape.group_first = dc.group_first.data();
    }
    std::vector<Term> terms;
    const std::vector<double>& vcost = vcosts[v];
    terms.push_back(Term{vcost.data(), 0, nullptr, std::vector<int64_t>(d + 1, 0),
                         std::vector<std::vector<int>>(d + 1)});
    // The innermost terms' class maps over the groups.
    std::vector<std::vector<int>> group_maps;
    group_maps.reserve(st.consumed.size());
    for (int j : st.consumed) {
      // Table j lists ord.steps[j].dep latest first; v is its last dimension.
      const std::vector<int>& dims = ord.steps[j].dep;
      const DepClasses& cj = classes.steps[j];
      Term t{tables[j].data(), 0, nullptr, std::vector<int64_t>(d + 1, 0),
             std::vector<std::vector<int>>(d + 1)};
      int64_t stride = 1;
      const std::vector<int>* of_v = nullptr;
      for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) {
        const std::vector<int>& of = cj.of[k];
        if (dims[k] == v) {
          t.width = cj.count[k];
          of_v = &of;
        } else {
          // T_i's class of dims[k] determines T_j's: read it off the class's
          // least configuration.
          int lvl = level_of[dims[k]];
          t.stride[lvl] = stride;
          t.level = std::max(t.level, lvl);
          const std::vector<int>& first = dc.first[at[lvl - 1]];
          std::vector<int> map(first.size());
          for (size_t q = 0; q < map.size(); ++q) map[q] = of[first[q]];
          if (!is_identity(map)) t.map[lvl] = std::move(map);
        }
        stride *= cj.count[k];
      }
      if (grouped && t.level == d) {
        // Read by group: every member has the same class here.
        std::vector<int> map(groups);
        for (int q = 0; q < groups; ++q) map[q] = (*of_v)[dc.group_first[q]];
        if (t.width != groups || !is_identity(map)) {
          group_maps.push_back(std::move(map));
          t.inner = group_maps.back().data();
        }
      } else if (t.width != nv || !is_identity(*of_v)) {
        t.inner = of_v->data();
      }
      t.size = static_cast<int64_t>(tables[j].size());
      terms.push_back(std::move(t));
    }
    std::vector<std::shared_ptr<const PairMatrix>> matrices;
    matrices.reserve(st.new_neighbors.size());
    for (int u : st.new_neighbors) {
      // One row per class of u in T_i, priced at its least configuration;
      // one column per configuration of v, or per group at the innermost
      // level.
      const int lvl = level_of[u];
      const std::vector<int>& rows = dc.first[at[lvl - 1]];
      const bool by_group = grouped && lvl == d;
      int64_t kept_id = -1;
      matrices.push_back(kept_matrices.get(pairs.between(u, v), u, v, &rows,
                                           by_group ? &dc.group_first : nullptr, threads,
                                           &kept_id));
      const int width = by_group ? groups : nv;
      Term t{matrices.back()->data(), lvl, nullptr, std::vector<int64_t>(d + 1, 0),
             std::vector<std::vector<int>>(d + 1)};
      t.stride[lvl] = width;
      t.size = static_cast<int64_t>(matrices.back()->size());
      t.width = width;
      t.kept = kept_id;
      terms.push_back(std::move(t));
    }
    size_t entries = 1;
    for (int64_t r : shape.radix) entries *= static_cast<size_t>(r);
    tables[i].resize(entries);
    args[i].resize(entries);
    for (int u : st.dep) level_of[u] = 0;
    StepRunner runner(shape, std::move(terms), tables[i].data(), args[i].data(), tuning, threads,
                      &kept_rows);
    fused_steps += runner.fused();
    const int64_t outer = runner.outer();
    const double step_pairs = static_cast<double>(entries) * (grouped ? groups : nv);
    const int workers = step_pairs >= tuning.parallel_pairs
                            ? static_cast<int>(std::min<int64_t>(threads, outer))
                            : 1;
    if (workers <= 1) {
      StepRunner::Scratch s = runner.scratch();
      if (!runner.run(s, 0, outer, tick) || cancelled) return stop_error(options);
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
      if (cancelled) return stop_error(options);
    }
    if (d == 0) done_pairs += nv;
    // The last vertex left open: its row before the minimum, from the
    // same terms (its own costs and the tables it consumes, each indexed by
    // its class alone: the step's dependent set is empty).
    if (open_last && i + 1 == n_steps) {
      open_row.assign(vcost.begin(), vcost.end());
      for (int j : st.consumed) {
        const std::vector<int>& of = classes.steps[j].of[0];
        for (int c = 0; c < nv; ++c) open_row[c] += tables[j][of[c]];
      }
      open_rest = total;  // the other components' least costs
    }
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
  res.shared_matrices = kept_matrices.hits() - matrix_hits;
  res.shared_rows = kept_rows.hits() - row_hits;
  res.fused_steps = fused_steps;
  res.repeated_steps = repeats.skipped();
  res.choice.assign(g.vertices.size(), 0);
  for (size_t i = n_steps; i-- > 0;) {
    const Step& st = ord.steps[i];
    const DepClasses& dc = classes.steps[i];
    int64_t idx = 0;
    for (size_t k = 0; k < st.dep.size(); ++k)
      idx = idx * dc.count[k] + dc.of[k][res.choice[st.dep[k]]];
    res.choice[st.vertex] = args[repeats.source(i)][idx];
  }
  if (open_last && n_steps > 0) {
    // The walk again from each configuration of the open vertex: its steps
    // before it read only vertices chosen after them.
    const int open = ord.steps.back().vertex;
    res.open_cost.resize(open_row.size());
    res.open_choice.resize(open_row.size());
    for (size_t c = 0; c < open_row.size(); ++c) {
      res.open_cost[c] = open_rest + open_row[c];
      std::vector<int>& choice = res.open_choice[c];
      choice = res.choice;
      choice[open] = static_cast<int>(c);
      for (size_t i = n_steps - 1; i-- > 0;) {
        const Step& st = ord.steps[i];
        const DepClasses& dc = classes.steps[i];
        int64_t idx = 0;
        for (size_t k = 0; k < st.dep.size(); ++k)
          idx = idx * dc.count[k] + dc.of[k][choice[st.dep[k]]];
        choice[st.vertex] = args[repeats.source(i)][idx];
      }
    }
  }
  done_pairs = est.pairs;
  report(true);
  return res;
}

}  // namespace pase
