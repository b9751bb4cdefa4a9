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
#include "search/progress.hpp"
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

namespace {

// One run of the program (run_dp()), its phases one method each, in the
// order they run:
//   1. prepare(): every vertex's costs, and the stretches of repeated
//      blocks from the steps' signatures (repeated_steps.hpp);
//   2. for each step: skip_repeats() (a stretch's steps skipped, or a skip
//      undone), make_terms() (the step's terms: its vertex's costs, the
//      tables it consumes, the pair matrices of its new neighbours),
//      run_step() (its table's rows, on the threads), then end_step()
//      (the last vertex's row kept when it is left open, the consumed
//      tables freed);
//   3. back_substitute(): each vertex's configuration, walking the steps
//      backwards, and again from each configuration of the open vertex.
class DpRun {
 public:
  DpRun(const Graph& g, const std::vector<ConfigSet>& configs, const Ordering& ord,
        const TableClasses& classes, const ops::Machine& m, const SearchStats& est,
        const PlanOptions& options, const DpTuning& tuning, EdgePrices* prices, SearchCache* cache,
        bool open_last)
      : g_(g),
        configs_(configs),
        ord_(ord),
        classes_(classes),
        m_(m),
        options_(options),
        tuning_(tuning),
        open_last_(open_last),
        prices_(prices != nullptr
                    ? prices
                    : &own_prices_.emplace(g, configs, EndView::of(m), kEdgePriceBudget)),
        // Matrices made from this run's own prices are this run's alone
        // (another run's own prices may come at the same address).
        matrices_from_(cache != nullptr && !own_prices_ ? *cache : own_cache_.emplace()),
        cache_(cache != nullptr ? *cache : matrices_from_),
        kept_(matrices_from_.kept(g, configs, m, *prices_)),
        matrix_hits_(kept_.matrices.hits()),
        row_hits_(kept_.rows.hits()),
        n_steps_(ord.steps.size()),
        tables_(n_steps_),
        args_(n_steps_),
        pairs_(g),
        progress_(options, est.pairs, static_cast<int>(n_steps_)),
        threads_(std::max(1, options.threads)),
        level_of_(g.vertices.size(), 0) {}

  Result<DpResult> run() {
    prepare();
    // Up to i == n_steps: a stretch may end there, and a skip tried in it
    // is confirmed (or undone) at its end.
    for (size_t i = 0; i <= n_steps_; ++i) {
      i = skip_repeats(i);
      if (i == n_steps_) break;
      progress_.step_begins(ord_.steps[i].vertex);
      // Also checked once per vertex, so that small plans notice a stop too.
      if (stop_requested(options_)) return stop_error(options_);
      StepTerms terms;
      make_terms(i, terms);
      if (!run_step(i, terms)) return stop_error(options_);
      end_step(i);
    }
    DpResult res = back_substitute();
    progress_.finish();
    return res;
  }

 private:
  // A step's terms, and what they point into.
  struct StepTerms {
    StepShape shape;
    std::vector<Term> terms;
    std::vector<std::vector<int>> group_maps;  // the innermost terms' class maps over the groups
    std::vector<std::shared_ptr<const PairMatrix>> matrices;
  };

  // 1. Each vertex's costs first, for the steps' signatures, and the
  // stretches of repeated blocks.
  void prepare() {
    vcosts_.resize(g_.vertices.size());
    for (const Step& st : ord_.steps)
      vcosts_[st.vertex] =
          cache_.vertex_costs.costs(g_, st.vertex, configs_[st.vertex], m_, threads_);
    entries_of_.assign(n_steps_, 1);
    for (size_t i = 0; i < n_steps_; ++i)
      for (int c : classes_.steps[i].count) entries_of_[i] *= c;
    repeats_.emplace(
        tuning_.repeat
            ? detail::find_repeated_steps(
                  ord_, detail::step_signatures(g_, ord_, classes_, vcosts_, *prices_, pairs_),
                  entries_of_)
            : std::vector<detail::RepeatedSteps>{},
        n_steps_);
  }

  // The pairs of step i (its entries times v's configurations).
  double step_pairs(size_t i) const {
    return entries_of_[i] * static_cast<double>(configs_[ord_.steps[i].vertex].size());
  }

  // 2a. The step to run from i on: skipped steps count as done; a skip may
  // end at the first boundary of the next stretch; a skip undone runs its
  // steps after all.
  size_t skip_repeats(size_t i) {
    while (!repeats_->empty()) {
      const size_t next = repeats_->at(i, tables_);
      if (next == i) break;
      if (next < i) {
        for (size_t j = next; j < i; ++j) progress_.count(-step_pairs(j), -1);
        i = next;
        continue;
      }
      for (; i < next; ++i) progress_.count(step_pairs(i), 1);
    }
    return i;
  }

  // 2b. Step i's terms: v's own costs, the tables it consumes (each read
  // through its classes' maps), and one pair matrix per new neighbour.
  void make_terms(size_t i, StepTerms& out) {
    const Step& st = ord_.steps[i];
    const DepClasses& dc = classes_.steps[i];
    const int v = st.vertex;
    const int nv = static_cast<int>(configs_[v].size());
    const int d = static_cast<int>(st.dep.size());
    // The levels in the step's iteration order (dc.order; the table keeps
    // dep's order): level l iterates dep[order[l - 1]].
    const std::vector<int>& order = dc.order;
    const bool grouped = !dc.group_first.empty();
    const int groups = static_cast<int>(dc.group_first.size());
    StepShape& shape = out.shape;
    shape.nv = nv;
    shape.radix.resize(d);
    shape.out_stride.resize(d);
    std::vector<int64_t> layout(d, 1);  // the table's stride of dep[k]
    for (int k = d - 1; k > 0; --k) layout[k - 1] = layout[k] * dc.count[k];
    for (int l = 0; l < d; ++l) {
      shape.radix[l] = dc.count[order[l]];
      shape.out_stride[l] = layout[order[l]];
      level_of_[st.dep[order[l]]] = l + 1;
    }
    if (grouped) {
      shape.groups = groups;
      shape.group_of = dc.group_of.data();
      shape.group_first = dc.group_first.data();
    }
    std::vector<Term>& terms = out.terms;
    terms.push_back(Term{vcosts_[v].data(), 0, nullptr, std::vector<int64_t>(d + 1, 0),
                         std::vector<std::vector<int>>(d + 1)});
    out.group_maps.reserve(st.consumed.size());
    for (int j : st.consumed) {
      // Table j lists ord.steps[j].dep latest first; v is its last dimension.
      const std::vector<int>& dims = ord_.steps[j].dep;
      const DepClasses& cj = classes_.steps[j];
      Term t{tables_[j].data(), 0, nullptr, std::vector<int64_t>(d + 1, 0),
             std::vector<std::vector<int>>(d + 1)};
      int64_t stride = 1;
      const std::vector<int>* classes_of_v = nullptr;
      for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) {
        const std::vector<int>& class_of = cj.of[k];
        if (dims[k] == v) {
          t.width = cj.count[k];
          classes_of_v = &class_of;
        } else {
          // T_i's class of dims[k] determines T_j's: read it off the class's
          // least configuration.
          const int level = level_of_[dims[k]];
          t.stride[level] = stride;
          t.level = std::max(t.level, level);
          const std::vector<int>& first = dc.first[order[level - 1]];
          std::vector<int> map(first.size());
          for (size_t q = 0; q < map.size(); ++q) map[q] = class_of[first[q]];
          if (!is_identity(map)) t.map[level] = std::move(map);
        }
        stride *= cj.count[k];
      }
      if (grouped && t.level == d) {
        // Read by group: every member has the same class here.
        std::vector<int> map(groups);
        for (int q = 0; q < groups; ++q) map[q] = (*classes_of_v)[dc.group_first[q]];
        if (t.width != groups || !is_identity(map)) {
          out.group_maps.push_back(std::move(map));
          t.inner = out.group_maps.back().data();
        }
      } else if (t.width != nv || !is_identity(*classes_of_v)) {
        t.inner = classes_of_v->data();
      }
      t.size = static_cast<int64_t>(tables_[j].size());
      terms.push_back(std::move(t));
    }
    out.matrices.reserve(st.new_neighbors.size());
    for (int u : st.new_neighbors) {
      // One row per class of u in T_i, priced at its least configuration;
      // one column per configuration of v, or per group at the innermost
      // level.
      const int level = level_of_[u];
      const std::vector<int>& rows = dc.first[order[level - 1]];
      const bool by_group = grouped && level == d;
      int64_t kept_id = -1;
      out.matrices.push_back(kept_.matrices.get(pairs_.between(u, v), u, v, &rows,
                                                by_group ? &dc.group_first : nullptr, threads_,
                                                &kept_id));
      const int width = by_group ? groups : nv;
      Term t{out.matrices.back()->data(), level, nullptr, std::vector<int64_t>(d + 1, 0),
             std::vector<std::vector<int>>(d + 1)};
      t.stride[level] = width;
      t.size = static_cast<int64_t>(out.matrices.back()->size());
      t.width = width;
      t.kept = kept_id;
      terms.push_back(std::move(t));
    }
    for (int u : st.dep) level_of_[u] = 0;
  }

  // 2c. Step i's table and arg-min table, on the threads when the step is
  // large; false when the search is to stop.
  bool run_step(size_t i, StepTerms& step) {
    const DepClasses& dc = classes_.steps[i];
    const bool grouped = !dc.group_first.empty();
    const int groups = static_cast<int>(dc.group_first.size());
    size_t entries = 1;
    for (int64_t r : step.shape.radix) entries *= static_cast<size_t>(r);
    tables_[i].resize(entries);
    args_[i].resize(entries);
    StepRunner runner(step.shape, std::move(step.terms), tables_[i].data(), args_[i].data(),
                      tuning_, threads_, &kept_.rows);
    fused_steps_ += runner.fused();
    const int64_t outer = runner.outer();
    const double pairs = static_cast<double>(entries) * (grouped ? groups : step.shape.nv);
    const int workers =
        pairs >= tuning_.parallel_pairs ? static_cast<int>(std::min<int64_t>(threads_, outer)) : 1;
    auto tick = [this](uint64_t n) { return progress_.tick(n); };
    if (workers <= 1) {
      StepRunner::Scratch s = runner.scratch();
      return runner.run(s, 0, outer, tick) && !progress_.stopped();
    }
    // The outermost states in chunks, taken in turn by the calling thread
    // and workers - 1 helpers; each entry is computed by one of them, by
    // the same code, so the table is the same as with one thread.
    auto helper_tick = [this](uint64_t n) { return progress_.helper_tick(n); };
    const int64_t chunk = std::max<int64_t>(1, outer / (static_cast<int64_t>(workers) * 8));
    std::atomic<int64_t> next{0};
    auto work = [&](bool caller) {
      StepRunner::Scratch s = runner.scratch();
      while (!progress_.stopped()) {
        const int64_t lo = next.fetch_add(chunk);
        if (lo >= outer) break;
        const int64_t hi = std::min(outer, lo + chunk);
        if (!(caller ? runner.run(s, lo, hi, tick) : runner.run(s, lo, hi, helper_tick))) {
          progress_.stop();
          break;
        }
      }
    };
    std::vector<std::thread> helpers;
    helpers.reserve(workers - 1);
    for (int w = 1; w < workers; ++w) helpers.emplace_back(work, false);
    work(true);
    for (std::thread& h : helpers) h.join();
    return !progress_.stopped();
  }

  // 2d. After step i: its row kept when its vertex is the open last one
  // (its own costs and the tables it consumes, each indexed by its class
  // alone: the step's dependent set is empty), the consumed tables freed,
  // a component's least cost added to the total.
  void end_step(size_t i) {
    const Step& st = ord_.steps[i];
    const int nv = static_cast<int>(configs_[st.vertex].size());
    const bool alone = st.dep.empty();
    if (alone) progress_.count(nv);
    if (open_last_ && i + 1 == n_steps_) {
      const std::vector<double>& vcost = vcosts_[st.vertex];
      open_row_.assign(vcost.begin(), vcost.end());
      for (int j : st.consumed) {
        const std::vector<int>& of = classes_.steps[j].of[0];
        for (int c = 0; c < nv; ++c) open_row_[c] += tables_[j][of[c]];
      }
      open_rest_ = total_;  // the other components' least costs
    }
    for (int j : st.consumed) {
      tables_[j].clear();
      tables_[j].shrink_to_fit();
    }
    if (alone) total_ += tables_[i][0];
    progress_.step_done();
  }

  // 3. Back-substitution: a step's dependent set is processed later, so
  // walking the steps backwards from `from` finds every configuration
  // already chosen; its class in the step's table is the index.
  void walk_back(size_t from, std::vector<int>& choice) const {
    for (size_t i = from; i-- > 0;) {
      const Step& st = ord_.steps[i];
      const DepClasses& dc = classes_.steps[i];
      int64_t idx = 0;
      for (size_t k = 0; k < st.dep.size(); ++k)
        idx = idx * dc.count[k] + dc.of[k][choice[st.dep[k]]];
      choice[st.vertex] = args_[repeats_->source(i)][idx];
    }
  }

  DpResult back_substitute() const {
    DpResult res;
    res.cost = total_;
    res.shared_matrices = kept_.matrices.hits() - matrix_hits_;
    res.shared_rows = kept_.rows.hits() - row_hits_;
    res.fused_steps = fused_steps_;
    res.repeated_steps = repeats_->skipped();
    res.choice.assign(g_.vertices.size(), 0);
    walk_back(n_steps_, res.choice);
    if (!open_last_ || n_steps_ == 0) return res;
    // The walk again from each configuration of the open vertex: its steps
    // before it read only vertices chosen after them.
    const int open = ord_.steps.back().vertex;
    res.open_cost.resize(open_row_.size());
    res.open_choice.resize(open_row_.size());
    for (size_t c = 0; c < open_row_.size(); ++c) {
      res.open_cost[c] = open_rest_ + open_row_[c];
      std::vector<int>& choice = res.open_choice[c];
      choice = res.choice;
      choice[open] = static_cast<int>(c);
      walk_back(n_steps_ - 1, choice);
    }
    return res;
  }

  const Graph& g_;
  const std::vector<ConfigSet>& configs_;
  const Ordering& ord_;
  const TableClasses& classes_;
  const ops::Machine& m_;
  const PlanOptions& options_;
  const DpTuning& tuning_;
  const bool open_last_;
  std::optional<EdgePrices> own_prices_;
  EdgePrices* prices_;
  std::optional<SearchCache> own_cache_;
  SearchCache& matrices_from_;
  SearchCache& cache_;
  SearchCache::Kept& kept_;
  const uint64_t matrix_hits_, row_hits_;
  const size_t n_steps_;
  std::vector<RawVector<double>> tables_;  // each written in full by its step
  std::vector<RawVector<uint16_t>> args_;
  EdgePairs pairs_;
  SearchProgress progress_;
  const int threads_;
  // level_of_[u]: u's level (1..d) in the current step's dependent set, 0
  // when not in it. Allocated once and cleared per step, so that a step
  // costs its own size, not the graph's.
  std::vector<int> level_of_;
  std::vector<std::vector<double>> vcosts_;
  std::vector<double> entries_of_;
  std::optional<detail::RepeatSkipper> repeats_;
  uint64_t fused_steps_ = 0;
  double total_ = 0;
  std::vector<double> open_row_;  // open_last: the last step's row
  double open_rest_ = 0;
};

}  // namespace

Result<DpResult> run_dp(const Graph& g, const std::vector<ConfigSet>& configs, const Ordering& ord,
                        const TableClasses& classes, const ops::Machine& m, const SearchStats& est,
                        const PlanOptions& options, const DpTuning& tuning, EdgePrices* prices,
                        SearchCache* cache, bool open_last) {
  return DpRun(g, configs, ord, classes, m, est, options, tuning, prices, cache, open_last).run();
}

}  // namespace pase
