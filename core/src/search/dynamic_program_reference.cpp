// The reference dynamic program for the tests: the PaSE recurrence (Elango,
// IPDPS 2021, Fig. 4 / recurrence 4) on tables indexed by the raw
// configurations of the dependent vertices, as the planner ran it before the
// equivalence classes (dynamic_program.cpp). Time: sum over steps of
// |configs(v)| * prod over u in D(i) of |configs(u)| pairs.
#include <algorithm>
#include <limits>

#include "cost/cost_tables.hpp"
#include "search/dynamic_program.hpp"
#include "search/progress.hpp"
#include "search/stop.hpp"

namespace pase {

// The reference engine's own recurrence runner, named apart from the
// engine's (search/step_runner.hpp) so that both may share one translation
// unit (a unity build).
namespace reference {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A summand of the recurrence: data[offset(phi) + c] with c fastest.
struct Term {
  const double* data = nullptr;
  std::vector<int64_t> stride;  // by level 1..d (index 0 unused)
  int level = 0;                // deepest level it depends on, 0 = none
};

class StepRunner {
 public:
  StepRunner(int nv, std::vector<int64_t> radix, std::vector<Term> terms, double* out,
             uint16_t* arg)
      : nv_(nv),
        d_(static_cast<int>(radix.size())),
        radix_(std::move(radix)),
        terms_(std::move(terms)),
        out_(out),
        arg_(arg) {
    off_.assign(terms_.size(), 0);
    by_level_.resize(d_ + 1);
    for (size_t t = 0; t < terms_.size(); ++t)
      by_level_[terms_[t].level].push_back(static_cast<int>(t));
    acc_.assign(static_cast<size_t>(d_ + 1) * nv_, 0.0);
    for (int t : by_level_[0])
      for (int c = 0; c < nv_; ++c) acc_[c] += terms_[t].data[c];
  }

  // Fills the whole table; `tick` is called after each innermost row with the
  // number of pairs done and returns false to stop.
  template <class Tick>
  bool run(Tick&& tick) {
    if (d_ == 0) {
      innermost_scalar();
      return true;
    }
    return level(1, 0, tick);
  }

 private:
  void innermost_scalar() {
    double best = kInf;
    int arg = 0;
    for (int c = 0; c < nv_; ++c)
      if (acc_[c] < best) {
        best = acc_[c];
        arg = c;
      }
    out_[0] = best;
    arg_[0] = static_cast<uint16_t>(arg);
  }

  template <class Tick>
  bool level(int k, int64_t out_base, Tick& tick) {
    const double* prev = acc_.data() + static_cast<size_t>(k - 1) * nv_;
    const std::vector<int>& mine = by_level_[k];
    int64_t n = radix_[k - 1];
    if (k == d_) {
      for (int64_t phi = 0; phi < n; ++phi) {
        row(prev, mine, out_base + phi);
        for (size_t t = 0; t < terms_.size(); ++t) off_[t] += terms_[t].stride[k];
      }
      for (size_t t = 0; t < terms_.size(); ++t) off_[t] -= n * terms_[t].stride[k];
      return tick(static_cast<uint64_t>(n) * nv_);
    }
    double* acc = acc_.data() + static_cast<size_t>(k) * nv_;
    for (int64_t phi = 0; phi < n; ++phi) {
      std::copy(prev, prev + nv_, acc);
      for (int t : mine) {
        const double* src = terms_[t].data + off_[t];
        for (int c = 0; c < nv_; ++c) acc[c] += src[c];
      }
      if (!level(k + 1, (out_base + phi) * radix_[k], tick)) return false;
      for (size_t t = 0; t < terms_.size(); ++t) off_[t] += terms_[t].stride[k];
    }
    for (size_t t = 0; t < terms_.size(); ++t) off_[t] -= n * terms_[t].stride[k];
    return true;
  }

  // min over c of prev[c] + the innermost terms, for one output entry.
  void row(const double* prev, const std::vector<int>& mine, int64_t out_index) {
    double best = kInf;
    int arg = 0;
    if (mine.size() == 1) {
      const double* a = terms_[mine[0]].data + off_[mine[0]];
      for (int c = 0; c < nv_; ++c) {
        double s = prev[c] + a[c];
        if (s < best) {
          best = s;
          arg = c;
        }
      }
    } else if (mine.size() == 2) {
      const double* a = terms_[mine[0]].data + off_[mine[0]];
      const double* b = terms_[mine[1]].data + off_[mine[1]];
      for (int c = 0; c < nv_; ++c) {
        double s = prev[c] + a[c] + b[c];
        if (s < best) {
          best = s;
          arg = c;
        }
      }
    } else {
      for (int c = 0; c < nv_; ++c) {
        double s = prev[c];
        for (int t : mine) s += terms_[t].data[off_[t] + c];
        if (s < best) {
          best = s;
          arg = c;
        }
      }
    }
    out_[out_index] = best;
    arg_[out_index] = static_cast<uint16_t>(arg);
  }

  int nv_, d_;
  std::vector<int64_t> radix_;
  std::vector<Term> terms_;
  double* out_;
  uint16_t* arg_;
  std::vector<int64_t> off_;
  std::vector<std::vector<int>> by_level_;
  std::vector<double> acc_;  // (d + 1) rows of nv partial sums
};

}  // namespace
}  // namespace reference

Result<DpResult> run_dp_reference(const Graph& g, const std::vector<ConfigSet>& configs,
                                  const Ordering& ord, const ops::Machine& m,
                                  const SearchStats& est, const PlanOptions& options) {
  size_t n_steps = ord.steps.size();
  std::vector<std::vector<double>> tables(n_steps);
  std::vector<std::vector<uint16_t>> args(n_steps);
  std::vector<PairEdges> pairs = group_edges(g);
  auto pair_of = [&](int a, int b) -> const std::vector<int>& {
    PairEdges key{std::min(a, b), std::max(a, b), {}};
    auto it = std::lower_bound(pairs.begin(), pairs.end(), key,
                               [](const PairEdges& x, const PairEdges& y) {
                                 return std::pair(x.a, x.b) < std::pair(y.a, y.b);
                               });
    return it->edges;
  };

  SearchProgress progress(options, est.pairs, static_cast<int>(n_steps));
  auto tick = [&progress](uint64_t pairs) { return progress.tick(pairs); };

  double total = 0;
  // level_of[u]: u's level (1..d) in the current step's dependent set, 0 when
  // not in it. Allocated once and cleared per step, so that a step costs its
  // own size, not the graph's.
  std::vector<int> level_of(g.vertices.size(), 0);
  for (size_t i = 0; i < n_steps; ++i) {
    const Step& st = ord.steps[i];
    int v = st.vertex;
    progress.step_begins(v);
    // Also checked once per vertex, so that small plans notice a stop too.
    if (stop_requested(options)) return stop_error(options);
    int nv = static_cast<int>(configs[v].size());
    int d = static_cast<int>(st.dep.size());
    std::vector<int64_t> radix(d);
    for (int k = 0; k < d; ++k) {
      radix[k] = static_cast<int64_t>(configs[st.dep[k]].size());
      level_of[st.dep[k]] = k + 1;
    }
    std::vector<reference::Term> terms;
    std::vector<double> vcost = vertex_cost_vector(g, v, configs[v], m);
    terms.push_back(reference::Term{vcost.data(), std::vector<int64_t>(d + 1, 0), 0});
    for (int j : st.consumed) {
      // Table j lists ord.steps[j].dep latest first; v is its last dimension.
      const std::vector<int>& dims = ord.steps[j].dep;
      reference::Term t{tables[j].data(), std::vector<int64_t>(d + 1, 0), 0};
      int64_t stride = 1;
      for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) {
        if (dims[k] != v) {
          int lvl = level_of[dims[k]];
          t.stride[lvl] = stride;
          t.level = std::max(t.level, lvl);
        }
        stride *= static_cast<int64_t>(configs[dims[k]].size());
      }
      terms.push_back(std::move(t));
    }
    std::vector<PairMatrix> matrices;
    matrices.reserve(st.new_neighbors.size());
    for (int u : st.new_neighbors) {
      matrices.push_back(pair_matrix(g, configs, pair_of(u, v), u, v, m));
      reference::Term t{matrices.back().data(), std::vector<int64_t>(d + 1, 0), level_of[u]};
      t.stride[level_of[u]] = nv;
      terms.push_back(std::move(t));
    }
    size_t entries = 1;
    for (int64_t r : radix) entries *= static_cast<size_t>(r);
    tables[i].assign(entries, 0.0);
    args[i].assign(entries, 0);
    for (int u : st.dep) level_of[u] = 0;
    reference::StepRunner runner(nv, radix, std::move(terms), tables[i].data(), args[i].data());
    if (!runner.run(tick) || progress.stopped()) return stop_error(options);
    if (d == 0) progress.count(nv);
    for (int j : st.consumed) {
      tables[j].clear();
      tables[j].shrink_to_fit();
    }
    if (d == 0) total += tables[i][0];
    progress.step_done();
  }

  // Back-substitution: a step's dependent set is processed later, so walking
  // the steps backwards finds every index already chosen.
  DpResult res;
  res.cost = total;
  res.choice.assign(g.vertices.size(), 0);
  for (size_t i = n_steps; i-- > 0;) {
    const Step& st = ord.steps[i];
    int64_t idx = 0;
    for (int u : st.dep) idx = idx * static_cast<int64_t>(configs[u].size()) + res.choice[u];
    res.choice[st.vertex] = args[i][idx];
  }
  progress.finish();
  return res;
}

}  // namespace pase
