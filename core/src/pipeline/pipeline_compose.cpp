// The composition of repeated blocks (pipeline_compose.hpp; core/docs/
// pipeline.md, "Composing the repeated blocks").
#include "pipeline/pipeline_compose.hpp"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

#include "cost/configurations.hpp"
#include "model/cost_model.hpp"
#include "search/dynamic_program.hpp"
#include "search/ordering.hpp"
#include "search/stop.hpp"

namespace pase::pipeline_detail {

namespace {

// The index of the least entry (the first of equals).
int arg_min(const std::vector<double>& v) {
  return static_cast<int>(std::min_element(v.begin(), v.end()) - v.begin());
}

// A range's search runs about this many of its blocks before the repeated-
// block skip settles (repeated_steps.hpp; on GPT-3's blocks on 256 GPUs
// the searches of 4, 8 and 16 blocks take 1.4, 1.9 and 1.9 s, core/docs/
// pipeline.md, "Composing the repeated blocks").
constexpr int kSettleWindows = 8;

}  // namespace

int head_segments(const Micro& mg) {
  const Graph& g = mg.graph;
  const std::vector<int>& bounds = mg.bounds;
  const int nb = static_cast<int>(bounds.size());
  if (nb < 5) return 0;  // fewer than two middle segments
  for (int t = 2; t + 2 < nb; ++t)
    if (mg.sig[t][t + 1] != mg.sig[1][2]) return 0;
  for (int t = 3; t + 1 < nb; ++t)
    if (mg.print[bounds[t] - 1] != mg.print[bounds[2] - 1]) return 0;
  // The edges that cross each boundary, as seen from the segment after it.
  std::vector<std::vector<std::tuple<int, int, int>>> into(nb);
  for (const Edge& e : g.edges) {
    // The boundaries t with e.src < bounds[t] <= e.dst.
    const auto first = std::upper_bound(bounds.begin(), bounds.end(), e.src);
    const auto last = std::upper_bound(bounds.begin(), bounds.end(), e.dst);
    if (last - first == 0) continue;
    if (last - first > 1) return 0;  // an edge past a segment
    const int t = static_cast<int>(first - bounds.begin());
    if (e.src != bounds[t] - 1) return 0;  // not from the stream
    into[t].emplace_back(e.dst - bounds[t], e.src_output, e.dst_slot);
  }
  for (auto& edges : into) std::sort(edges.begin(), edges.end());
  if (into[2].empty()) return 0;
  for (int t = 3; t + 2 < nb; ++t)
    if (into[t] != into[2]) return 0;
  // The first block follows the head as the others follow a block, or
  // the head holds it.
  const bool alike = mg.print[bounds[1] - 1] == mg.print[bounds[2] - 1] && into[1] == into[2];
  return alike ? 1 : 2;
}

Result<Composition> Composition::make(const Micro& mg, const Cluster& cs,
                                      const PlanOptions& options, const StageWeights& weights,
                                      const std::function<void(int, int)>& progress) {
  const Graph& g = mg.graph;
  const std::vector<int>& bounds = mg.bounds;
  const int nb = static_cast<int>(bounds.size());
  Composition out;
  out.bounds_ = bounds;
  out.n_ = static_cast<int>(g.vertices.size());
  // The machine of SpaceSearch::once(): the stage's value, no memory weight.
  const ops::Machine m = weighted_machine(cs, weights, 1, 0);
  PlanOptions o = options;
  o.on_progress = nullptr;

  // One piece: the vertices [first, last) of g, the first one pinned at
  // configuration `pinned` of `stream` (its cost then taken out: it is
  // the piece before's), the last one open when `open`. The space of a
  // pinned piece is prepared once (`kept`): the pinned vertex's one
  // configuration is one class whichever it is, so only its numbers change.
  struct Searched {
    DpResult dp;
    std::vector<ConfigSet> sets;
    double pinned_cost = 0;
  };
  struct Kept {
    std::vector<ConfigSet> sets;  // before the pin
    SearchSpace space;
  };
  auto search = [&](int first, int last, const ConfigSet* stream, int pinned, bool open,
                    std::optional<Kept>& kept) -> Result<Searched> {
    const Graph piece = stage_graph(g, first, last);
    if (!kept) {
      Result<SearchSpace> space = prepare_space(piece, cs, o);
      if (!space) return space.error();
      kept.emplace(Kept{space->configs, std::move(*space)});
      SearchSpace& sp = kept->space;
      if (stream != nullptr) sp.configs[0] = ConfigSet{stream->dims, {}};
      if (stream != nullptr) sp.configs[0].data.assign(stream->at(0), stream->at(0) + stream->dims);
      std::vector<size_t> counts;
      for (const ConfigSet& c : sp.configs) counts.push_back(c.size());
      sp.ord = make_ordering(piece, o.order, counts,
                             open ? static_cast<int>(piece.vertices.size()) - 1 : -1);
      finish_space(piece, cs, sp);
    }
    SearchSpace& space = kept->space;
    if (stream != nullptr)
      std::copy(stream->at(pinned), stream->at(pinned) + stream->dims,
                space.configs[0].data.begin());
    if (bounded_instead(space.est, o))
      return Error{"a block's tables exceed the search's memory limit", "max_memory"};
    SearchCache cache;
    Result<DpResult> dp = run_dp(piece, space.configs, space.ord, space.classes, m, space.est, o,
                                 {}, nullptr, &cache, open);
    if (!dp) return dp.error();
    ++out.searches_;
    Searched s;
    s.sets = kept->sets;
    if (stream != nullptr)
      s.pinned_cost = cache.vertex_costs.costs(piece, 0, space.configs[0], m, o.threads)[0];
    s.dp = std::move(*dp);
    return s;
  };
  auto piece_of = [](DpResult& dp, double less = 0) {
    Piece p;
    p.cost = std::move(dp.open_cost);
    for (double& c : p.cost) c -= less;
    p.choice = std::move(dp.open_choice);
    return p;
  };

  out.head_segments_ = head_segments(mg);
  if (out.head_segments_ == 0) return Error{"the graph's blocks do not compose", "pipeline"};
  std::optional<Kept> head_space, free_space, row_space, tail_space;
  Result<Searched> head = search(0, bounds[out.head_segments_], nullptr, 0, true, head_space);
  if (!head) return head.error();
  const ConfigSet stream = head->sets.back();
  const int streams = static_cast<int>(stream.size());
  const int total = streams * 2 + 2;
  int done = 1;
  if (progress) progress(done, total);
  out.head_sets_ = head->sets;
  out.head_ = piece_of(head->dp);
  Result<Searched> free = search(bounds[1], bounds[2], nullptr, 0, true, free_space);
  if (!free) return free.error();
  if (free->sets.back().data != stream.data)
    return Error{"the stream's configurations differ between blocks", "pipeline"};
  out.free_sets_ = free->sets;
  out.free_ = piece_of(free->dp);
  if (progress) progress(++done, total);
  for (int c = 0; c < streams; ++c) {
    Result<Searched> row = search(bounds[2] - 1, bounds[3], &stream, c, true, row_space);
    if (!row) return row.error();
    if (c == 0) {
      if (row->sets[0].data != stream.data || row->sets.back().data != stream.data)
        return Error{"the stream's configurations differ between blocks", "pipeline"};
      out.row_sets_ = row->sets;
    }
    out.rows_.push_back(piece_of(row->dp, row->pinned_cost));
    if (progress) progress(++done, total);
  }
  out.tail_.cost.resize(streams);
  out.tail_.choice.resize(streams);
  for (int c = 0; c < streams; ++c) {
    Result<Searched> tail = search(bounds[nb - 2] - 1, out.n_, &stream, c, false, tail_space);
    if (!tail) return tail.error();
    if (c == 0) out.tail_sets_ = tail->sets;
    out.tail_.cost[c] = tail->dp.cost - tail->pinned_cost;
    out.tail_.choice[c] = std::move(tail->dp.choice);
    if (progress) progress(++done, total);
  }
  out.from_head_ = out.sweep(out.head_.cost, out.head_segments_, nb - 2);
  out.from_free_ = out.sweep(out.free_.cost, 1, nb - 3);
  return out;
}

Composition::Sweep Composition::sweep(const std::vector<double>& first, int from,
                                      int segments) const {
  const size_t streams = first.size();
  Sweep s;
  s.best.resize(segments + 1);
  s.from.resize(segments + 1);
  s.first = from;
  s.best[from] = first;
  for (int k = from + 1; k <= segments; ++k) {
    std::vector<double>& best = s.best[k];
    std::vector<int>& from = s.from[k];
    best.assign(streams, std::numeric_limits<double>::infinity());
    from.assign(streams, 0);
    const std::vector<double>& before = s.best[k - 1];
    for (size_t c = 0; c < streams; ++c) {
      const std::vector<double>& row = rows_[c].cost;
      for (size_t d = 0; d < streams; ++d) {
        const double v = before[c] + row[d];
        if (v < best[d]) {
          best[d] = v;
          from[d] = static_cast<int>(c);
        }
      }
    }
  }
  return s;
}

std::vector<int> Composition::chain(const Sweep& s, int k, int c) const {
  std::vector<int> out(k - s.first + 1);
  out.back() = c;
  for (int t = static_cast<int>(out.size()) - 1; t >= 1; --t)
    out[t - 1] = s.from[s.first + t][out[t]];
  return out;
}

void Composition::append(Strategy& out, const std::vector<ConfigSet>& sets,
                         const std::vector<int>& choice, int skip) const {
  for (size_t v = skip; v < sets.size(); ++v) {
    const int64_t* c = sets[v].at(choice[v]);
    out.emplace_back(c, c + sets[v].dims);
  }
}

std::optional<Composition::Range> Composition::range(int i, int j) const {
  const int nb = static_cast<int>(bounds_.size());
  const bool to_tail = j == nb - 1;
  if (i >= nb - 2 || (i == 0 && to_tail) || i >= j) return std::nullopt;
  // Segments [i, j) with the tail's own left out.
  const int k = (to_tail ? nb - 2 : j) - i;
  const Sweep& s = i == 0 ? from_head_ : from_free_;
  if (k < s.first) return std::nullopt;
  Range out;
  int last = 0;
  if (to_tail) {
    double best = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < tail_.cost.size(); ++c) {
      const double v = s.best[k][c] + tail_.cost[c];
      if (v < best) {
        best = v;
        last = static_cast<int>(c);
      }
    }
    out.value = best;
  } else {
    last = arg_min(s.best[k]);
    out.value = s.best[k][last];
  }
  const std::vector<int> streams = chain(s, k, last);
  if (i == 0)
    append(out.configs, head_sets_, head_.choice[streams[0]], 0);
  else
    append(out.configs, free_sets_, free_.choice[streams[0]], 0);
  for (size_t t = 1; t < streams.size(); ++t)
    append(out.configs, row_sets_, rows_[streams[t - 1]].choice[streams[t]], 1);
  if (to_tail) append(out.configs, tail_sets_, tail_.choice[last], 1);
  return out;
}

}  // namespace pase::pipeline_detail

namespace pase::pipeline_detail {

Result<std::optional<StagePlan>> Searcher::composed(const Graph& micro, int a, int b,
                                                    const Cluster& free, int64_t microbatches) {
  const auto none = std::optional<StagePlan>{};
  auto found = micros.find(&micro);
  if (found == micros.end()) return none;
  const Micro& mg = *found->second;
  if (pipeline.compose == Compose::kOff) return none;
  const auto at = [&](int v) {
    return static_cast<int>(std::lower_bound(mg.bounds.begin(), mg.bounds.end(), v) -
                            mg.bounds.begin());
  };
  const int i = at(a), j = at(b);
  // A single segment (a part, the pruning bounds') is searched: no block
  // to compose.
  if (j - i < 2) return none;
  const auto key = std::make_tuple(&micro, free.devices, microbatches, free.first_device);
  auto it = compositions.find(key);
  if (it == compositions.end()) {
    const int heads = head_segments(mg);
    if (heads > 0 && pipeline.compose == Compose::kAuto) {
      // As renting before buying: the ranges are searched until their
      // searches have cost what the composition would (2 |C| + 2 pieces of
      // about a block each, |C| the stream's configurations; a range's
      // search about min(its blocks, kSettleWindows) blocks), then
      // composed. The time is then at most about twice the cheaper
      // choice's, whichever ranges the pairs turn out to need.
      auto [spent, fresh] = composition_spent.emplace(key, std::make_pair(0.0, 0.0));
      if (fresh) {
        Result<ConfigSet> stream =
            enumerate_vertex(mg.graph, mg.bounds[2] - 1, free.devices, options.enumeration);
        spent->second.second = stream ? 2.0 * static_cast<double>(stream->size()) + 2 : kInf;
      }
      auto& [windows, price] = spent->second;
      if (windows < price) {
        windows += std::min(j - i, kSettleWindows);
        return none;
      }
    }
    std::shared_ptr<const Composition> made;
    if (heads > 0) {
      const double m = static_cast<double>(microbatches);
      // The weights of search(): ties to the smaller A.
      const StageWeights weights{m, 1, 1e-13 * m, 1};
      Result<Composition> c =
          Composition::make(mg, free, options, weights, [&](int done_pieces, int pieces) {
            Progress p;
            p.fraction = static_cast<double>(done_pieces) / pieces;
            report(p);
          });
      // A stop ends the search; a piece whose tables are too large for the
      // exact search (the ranges then take the bounded one) leaves the key
      // to the range searches.
      if (!c && is_stop(c.error())) return c.error();
      if (c) {
        searches += c->searches();
        made = std::make_shared<const Composition>(std::move(*c));
      }
    }
    it = compositions.emplace(key, std::move(made)).first;
  }
  if (!it->second) return none;
  std::optional<Composition::Range> range = it->second->range(i, j);
  if (!range) return none;
  Result<Plan> plan = evaluate(stage_graph(micro, a, b), free, range->configs);
  if (!plan) return plan.error();
  done += 1;
  report();
  return std::optional<StagePlan>(take(*plan, free));
}

}  // namespace pase::pipeline_detail
