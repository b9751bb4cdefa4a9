// The composition of a language model's repeated blocks (core/docs/
// pipeline.md, "Composing the repeated blocks"): the stage plans without a
// cap of every range of a micro-batch graph, on one stage size, place in a
// node and micro-batch count, from one block's costs between the
// configurations of its input and output streams, by min-plus products.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "pipeline/pipeline_searcher.hpp"
#include "search/weighted_plan.hpp"

namespace pase::pipeline_detail {

// The graph's segments are the stretches between consecutive boundaries:
// one decoder block each, the embeddings before the first, the final norm
// and the loss after the last (the tail). The graph composes when it has
// two middle segments or more, all alike, and every boundary between
// segments is crossed by the outputs of one vertex only (the stream: the
// residual add before it), alike at every boundary after the first. The
// head piece, searched whole, is the first segment when its last vertex
// is alike to the blocks' stream add (GPT-2's sum of the embeddings), else
// the first two (a Llama's embedding, then its first block): 1 or 2; 0:
// the graph does not compose.
int head_segments(const Micro& mg);

class Composition {
 public:
  // The pieces' searches for `weights` on `cs` (its devices and first
  // device; no cap): the head and a middle block to each configuration of
  // their output stream, a middle block and the tail from each
  // configuration of their input stream. `progress(done, total)` after each.
  // Errors: a stop (stop.hpp); "pipeline" when the graph does not compose
  // (head_segments() 0) or its stream's configurations differ between
  // pieces; "max_memory" when a piece's tables exceed the exact search's
  // limit; and the searches'. Searcher::composed() leaves the ranges to
  // their own searches on any of them but a stop.
  static Result<Composition> make(const Micro& mg, const Cluster& cs, const PlanOptions& options,
                                  const StageWeights& weights,
                                  const std::function<void(int, int)>& progress = {});

  // The strategy of least value of the range [bounds[i], bounds[j]) (its
  // vertices' configurations in order) with that value, the search's
  // objective; none for the tail alone, for a range from the start shorter
  // than the head piece (no block to compose) and for the whole graph.
  struct Range {
    Strategy configs;
    double value = 0;
  };
  std::optional<Range> range(int i, int j) const;
  // The configurations of the stream.
  size_t streams() const { return head_.cost.size(); }
  // Searches made.
  int searches() const { return searches_; }
  // A middle block's least value from input stream configuration `from` to
  // output `to`, and from a free input (a stage's first block) to `to`.
  double block(size_t from, size_t to) const { return rows_[from].cost[to]; }
  double first_block(size_t to) const { return free_.cost[to]; }
  // The stream's configurations (the last vertex of the head's).
  const ConfigSet& stream() const { return head_sets_.back(); }

 private:
  // One piece searched: by stream configuration (its output's, or its
  // input's for the tail), the least value and the configuration index of
  // each of the piece's vertices.
  struct Piece {
    std::vector<double> cost;
    std::vector<std::vector<int>> choice;
  };
  // A sweep from a first vector through k - 1 middle blocks, for every k:
  // best[k][c] the least value with the stream at c after k segments,
  // from[k][c] the stream's configuration before the last of them.
  struct Sweep {
    int first = 1;  // the segments of its first vector
    std::vector<std::vector<double>> best;
    std::vector<std::vector<int>> from;
  };
  Sweep sweep(const std::vector<double>& first, int from, int segments) const;
  // The configurations along the chain that ends at c after k segments:
  // the stream's after the first vector's segments, then after each block.
  std::vector<int> chain(const Sweep& s, int k, int c) const;
  void append(Strategy& out, const std::vector<ConfigSet>& sets, const std::vector<int>& choice,
              int skip) const;

  std::vector<int> bounds_;
  int n_ = 0;
  int head_segments_ = 1;
  Piece head_, free_;        // the head, a middle block from a free input: by output
  std::vector<Piece> rows_;  // a middle block from each input configuration: by output
  Piece tail_;               // the tail: by input
  // The pieces' vertices' configurations (a row's first vertex: the
  // stream before it, every configuration).
  std::vector<ConfigSet> head_sets_, free_sets_, row_sets_, tail_sets_;
  Sweep from_head_, from_free_;
  int searches_ = 0;
};

}  // namespace pase::pipeline_detail
