// The dynamic program over the partitions of a micro-batch graph's parts
// into S stages (core/docs/pipeline.md, "Pruning"): stage s holds the
// parts between boundaries i and j, i < j, of nb boundaries. PairSearch
// (pipeline_partition.cpp) runs it twice over: for the partition of
// balanced floors (the least largest floor) and, in the exact partition,
// for the least sum of A under thresholds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pipeline/pipeline_model.hpp"

namespace pase::pipeline_detail {

class PartitionDp {
 public:
  PartitionDp(int64_t stages, int nb)
      : stages_(stages),
        nb_(nb),
        dp_(static_cast<size_t>(stages + 1) * nb, kInf),
        from_(static_cast<size_t>(stages + 1) * nb, -1) {}

  // The least combine(that of the stages before, value(s, i, j)) of stage
  // s over [i, j) (value infinite: no such stage), over the partitions of
  // the whole graph; its stages' ends are ends() until the next run.
  // O(S nb^2) calls of value.
  template <class Value, class Combine>
  double run(Value value, Combine combine) {
    std::fill(dp_.begin(), dp_.end(), kInf);
    dp_[0] = 0;
    for (int64_t s = 0; s < stages_; ++s)
      for (int i = 0; i < nb_; ++i) {
        const double base = dp_[cell(s, i)];
        if (base == kInf) continue;
        for (int j = i + 1; j < nb_; ++j) {
          const double f = value(s, i, j);
          if (f == kInf) continue;
          double& d = dp_[cell(s + 1, j)];
          if (combine(base, f) < d) {
            d = combine(base, f);
            from_[cell(s + 1, j)] = i;
          }
        }
      }
    return dp_[cell(stages_, nb_ - 1)];
  }

  // The boundary each stage of the last run's partition ends at.
  std::vector<int> ends() const {
    std::vector<int> out(static_cast<size_t>(stages_));
    int j = nb_ - 1;
    for (int64_t s = stages_; s-- > 0;) {
      out[static_cast<size_t>(s)] = j;
      j = from_[cell(s + 1, j)];
    }
    return out;
  }

 private:
  size_t cell(int64_t s, int i) const {
    return static_cast<size_t>(s) * static_cast<size_t>(nb_) + static_cast<size_t>(i);
  }

  int64_t stages_;
  int nb_;
  std::vector<double> dp_;  // by (stages so far, boundary reached)
  std::vector<int> from_;   // the arg-min: where that last stage began
};

}  // namespace pase::pipeline_detail
