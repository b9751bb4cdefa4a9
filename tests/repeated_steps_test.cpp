// Repeated blocks in the dynamic program (search/repeated_steps.hpp,
// core/docs/performance.md "Repeated blocks"): the stretches found, the
// shifted-table test, and run_dp skipping them to the plan of every step
// run: the same to the bit on the paper's flat machine, within rounding on
// the practice model and on nodes.
#include "search/repeated_steps.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cost/configurations.hpp"
#include "model/cost_model.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "pase/presets.hpp"
#include "search/dynamic_program.hpp"
#include "search/ordering.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;

namespace {

struct Prepared {
  std::vector<ConfigSet> configs;
  Ordering ord;
  TableClasses classes;
  ops::Machine machine;
  SearchStats est;
};

Prepared prepare_search(const Graph& g, const Cluster& cluster) {
  Result<std::vector<ConfigSet>> sets = enumerate_all(g, cluster.devices, {});
  REQUIRE(sets.ok());
  Prepared p;
  p.configs = std::move(sets).value();
  std::vector<size_t> counts;
  for (const ConfigSet& c : p.configs) counts.push_back(c.size());
  p.ord = make_ordering(g, Order::kGenSeq, counts);
  p.machine = ops::make_machine(cluster);
  p.classes = table_classes(g, p.configs, p.ord, EndView::of(p.machine));
  p.est = estimate_dp(p.ord, p.configs, &p.classes);
  return p;
}

// Each step's table entries, as run_dp counts them.
std::vector<double> entries_of(const Prepared& p) {
  std::vector<double> out(p.ord.steps.size(), 1);
  for (size_t i = 0; i < out.size(); ++i)
    for (int c : p.classes.steps[i].count) out[i] *= c;
  return out;
}

// run_dp with and without the skip; returns the steps skipped.
uint64_t compare_skip(const Graph& g, const Prepared& p, bool bitwise) {
  DpTuning every_step;
  every_step.repeat = false;
  Result<DpResult> full = run_dp(g, p.configs, p.ord, p.classes, p.machine, p.est, {}, every_step);
  Result<DpResult> skip = run_dp(g, p.configs, p.ord, p.classes, p.machine, p.est, {});
  REQUIRE(full.ok());
  REQUIRE(skip.ok());
  CHECK(full->repeated_steps == 0);
  if (bitwise) {
    CHECK(skip->cost == full->cost);
    CHECK(skip->choice == full->choice);
  } else {
    CHECK(std::abs(skip->cost - full->cost) <= 1e-12 * full->cost);
  }
  return skip->repeated_steps;
}

}  // namespace

TEST_CASE("repeated steps: a table plus a constant, exactly on integers") {
  const double inf = std::numeric_limits<double>::infinity();
  double shift = 0;
  const std::vector<double> a{1, 5, inf, 7}, b{4, 8, inf, 10};
  CHECK(detail::shifted_copy(a.data(), b.data(), a.size(), shift));
  CHECK(shift == 3);
  const std::vector<double> off_by_one{4, 8, inf, 11};
  CHECK_FALSE(detail::shifted_copy(a.data(), off_by_one.data(), a.size(), shift));
  const std::vector<double> finite_there{4, 8, 9, 10};
  CHECK_FALSE(detail::shifted_copy(a.data(), finite_there.data(), a.size(), shift));
  // Fractions: equal within rounding of the largest magnitude.
  const std::vector<double> x{0.1, 1e6 + 0.3}, y{0.1 + 2.5, 1e6 + 0.3 + 2.5};
  CHECK(detail::shifted_copy(x.data(), y.data(), x.size(), shift));
  const std::vector<double> z{0.1 + 2.5, 1e6 + 0.3 + 2.5 + 1e-3};
  CHECK_FALSE(detail::shifted_copy(x.data(), z.data(), x.size(), shift));
}

TEST_CASE("repeated steps: tables that grow alike entry by entry, exactly on integers") {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> growth;
  const std::vector<double> t0{0, 10, inf}, t1{2, 11, inf}, t2{4, 12, inf};
  CHECK(detail::same_growth(t0.data(), t1.data(), t2.data(), t0.size(), growth));
  CHECK(growth == std::vector<double>{2, 1, 0});
  const std::vector<double> bent{4, 13, inf};
  CHECK_FALSE(detail::same_growth(t0.data(), t1.data(), bent.data(), t0.size(), growth));
  const std::vector<double> finite_there{4, 12, 1};
  CHECK_FALSE(detail::same_growth(t0.data(), t1.data(), finite_there.data(), t0.size(), growth));
  CHECK(detail::same_entries(t1.data(), t1.data(), t1.size()));
  CHECK_FALSE(detail::same_entries(t1.data(), t2.data(), t1.size()));
}

namespace {

// A stretch of `windows` windows of one step each, each a min-plus product
// with `a` (row: the entry read; column: the entry made), driven through
// RepeatSkipper as run_dp drives it; step 0 makes the first crossing table.
// Returns the last crossing table and the steps skipped.
std::pair<std::vector<double>, uint64_t> run_windows(const std::vector<std::vector<double>>& a,
                                                     const std::vector<double>& first, int windows,
                                                     bool skip) {
  detail::RepeatedSteps rs{1, 1, windows, {}};
  for (int k = 0; k <= windows; ++k) rs.crossing.push_back(k);
  const size_t steps = static_cast<size_t>(windows) + 1;
  std::vector<RawVector<double>> tables(steps);
  detail::RepeatSkipper repeats(
      skip ? std::vector<detail::RepeatedSteps>{rs} : std::vector<detail::RepeatedSteps>{}, steps);
  tables[0].assign(first.begin(), first.end());
  int runs = 0;
  for (size_t i = 1; i <= steps; ++i) {
    while (!repeats.empty()) {
      const size_t next = repeats.at(i, tables);
      if (next == i) break;
      i = next;
    }
    if (i == steps) break;
    REQUIRE(++runs < 4 * windows);  // no endless undoing
    const RawVector<double>& in = tables[i - 1];
    REQUIRE(in.size() == first.size());
    RawVector<double> out(first.size(), std::numeric_limits<double>::infinity());
    for (size_t r = 0; r < a.size(); ++r)
      for (size_t c = 0; c < a.size(); ++c) out[c] = std::min(out[c], in[r] + a[r][c]);
    tables[i] = std::move(out);
    tables[i - 1].clear();
  }
  return {std::vector<double>(tables[windows].begin(), tables[windows].end()), repeats.skipped()};
}

}  // namespace

TEST_CASE("repeated steps: a skip by growth per entry, and one undone where a path overtakes") {
  const double inf = std::numeric_limits<double>::infinity();
  // Entries 0 and 1 each grow on their own (by 2 and by 1 a window); entry
  // 2 reads both, and from window 20 on the slower one is its cheaper path;
  // entry 3 is entry 2 of the window before (so a skip that took entry 2
  // along the wrong line shows in the last table).
  const std::vector<std::vector<double>> a{
      {2, inf, 2, inf}, {inf, 1, 1, inf}, {inf, inf, inf, 0}, {inf, inf, inf, inf}};
  const std::vector<double> first{0, 20, 2, 2};
  for (int windows : {12, 40}) {
    CAPTURE(windows);
    const auto [every, none_skipped] = run_windows(a, first, windows, false);
    CHECK(none_skipped == 0);
    const auto [skipped, count] = run_windows(a, first, windows, true);
    CHECK(skipped == every);
    CHECK(count > 0);
  }
}

TEST_CASE("repeated steps: skips after a while of overtaking paths, once the tables settle") {
  const double inf = std::numeric_limits<double>::infinity();
  // Three groups as above (an entry growing by 2 a window, one by 1 that
  // starts higher, and an entry reading both), whose slower paths overtake
  // at windows 6, 12 and 18; from then on every entry grows alike. Tries
  // before 18 fail whatever their target; after the first, each waits for
  // twice as many alike boundaries and takes two targets, so the calm
  // windows after 18 are still skipped (before, the failures' budget was
  // spent by then and every window ran).
  const int groups = 3;
  std::vector<std::vector<double>> a(3 * groups, std::vector<double>(3 * groups, inf));
  std::vector<double> first(3 * groups, 0);
  for (int g = 0; g < groups; ++g) {
    a[3 * g][3 * g] = 2;
    a[3 * g][3 * g + 2] = 2;
    a[3 * g + 1][3 * g + 1] = 1;
    a[3 * g + 1][3 * g + 2] = 1;
    first[3 * g + 1] = 6.0 * (g + 1);
  }
  const int windows = 80;
  const auto [every, none_skipped] = run_windows(a, first, windows, false);
  CHECK(none_skipped == 0);
  const auto [skipped, count] = run_windows(a, first, windows, true);
  CHECK(skipped == every);
  CHECK(count >= 40);
}

TEST_CASE("repeated steps: GPT-2's blocks make one stretch and a chain none") {
  Result<Graph> gpt2 = build_model("gpt2", 4, 16);
  REQUIRE(gpt2.ok());
  const Prepared p = prepare_search(*gpt2, Cluster{.devices = 4});
  EdgePrices prices(*gpt2, p.configs, EndView::of(p.machine), kEdgePriceBudget);
  EdgePairs pairs(*gpt2);
  std::vector<std::vector<double>> vcost(gpt2->vertices.size());
  for (size_t v = 0; v < vcost.size(); ++v)
    vcost[v] = vertex_cost_vector(*gpt2, static_cast<int>(v), p.configs[v], p.machine);
  const std::vector<detail::RepeatedSteps> found = detail::find_repeated_steps(
      p.ord, detail::step_signatures(*gpt2, p.ord, p.classes, vcost, prices, pairs), entries_of(p));
  REQUIRE(found.size() == 1);
  // Twelve blocks; the first and the last join other layers' steps.
  CHECK(found[0].windows >= 9);
  CHECK(found[0].windows <= 12);
  CHECK(found[0].crossing.size() == static_cast<size_t>(found[0].windows) + 1);
  CHECK(found[0].period * 12 <= static_cast<int>(p.ord.steps.size()));

  Result<Graph> alexnet = build_model("alexnet");
  REQUIRE(alexnet.ok());
  const Prepared a = prepare_search(*alexnet, Cluster{.devices = 4});
  EdgePrices a_prices(*alexnet, a.configs, EndView::of(a.machine), kEdgePriceBudget);
  std::vector<std::vector<double>> a_cost(alexnet->vertices.size());
  for (size_t v = 0; v < a_cost.size(); ++v)
    a_cost[v] = vertex_cost_vector(*alexnet, static_cast<int>(v), a.configs[v], a.machine);
  CHECK(detail::find_repeated_steps(a.ord,
                                    detail::step_signatures(*alexnet, a.ord, a.classes, a_cost,
                                                            a_prices, EdgePairs(*alexnet)),
                                    entries_of(a))
            .empty());
}

TEST_CASE("repeated steps: skipped blocks give the plan of every step run") {
  // The paper's flat machine prices in whole FLOP-equivalents: the same to
  // the bit. The Transformer of the paper and GPT-2 repeat their blocks.
  for (const char* name : {"transformer", "gpt2"}) {
    CAPTURE(name);
    Result<Graph> g = std::string(name) == "gpt2" ? build_model(name, 8, 64) : build_model(name);
    REQUIRE(g.ok());
    CHECK(compare_skip(*g, prepare_search(*g, Cluster{.devices = 8}), true) > 0);
  }
  // The practice model on nodes of H100s, and a memory weight as a capped
  // plan searches with: within rounding.
  Result<Graph> llama = build_model("llama3-8b", 8, 512);
  REQUIRE(llama.ok());
  Cluster h100 = apply_preset(Cluster{.devices = 16}, *find_preset("h100"));
  h100.cost_model = CostModel::kPractice;
  Prepared p = prepare_search(*llama, h100);
  CHECK(compare_skip(*llama, p, false) > 0);
  p.machine.memory_weight = 1e-3;
  CHECK(compare_skip(*llama, p, false) > 0);
}
