// When a request stops before its search is done (core/docs/pipeline.md,
// "A time limit"): cancelled (PlanOptions::cancel) or past its deadline
// (PlanOptions::time_limit_s, made PlanOptions::deadline by the entry
// point). The one test that every search polls, and the error a search
// returns when it stops; the levels above it (the Lagrangian loop, the
// pipeline search, the answers) keep what they found and say what they
// proved.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <string>

#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase {

inline bool cancel_requested(const PlanOptions& options) {
  return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed);
}

inline bool past_deadline(const PlanOptions& options) {
  return options.deadline != std::chrono::steady_clock::time_point::max() &&
         std::chrono::steady_clock::now() >= options.deadline;
}

// Whether the search is to stop now.
inline bool stop_requested(const PlanOptions& options) {
  return cancel_requested(options) || past_deadline(options);
}

// "cancelled", or the time limit's error at "time_limit_s": "the time limit
// of 30 s was reached before " + `before`.
inline Error stop_error(const PlanOptions& options,
                        const std::string& before = "a plan was found") {
  if (cancel_requested(options) || !past_deadline(options)) return Error{"cancelled", ""};
  const double s = options.time_limit_s;
  std::string limit = s > 0 ? std::to_string(static_cast<long long>(std::ceil(s))) + " s" : "";
  return Error{"the time limit" + (limit.empty() ? std::string() : " of " + limit) +
                   " was reached before " + before,
               "time_limit_s"};
}

// Whether `e` is stop_error()'s.
inline bool is_stop(const Error& e) {
  return e.where == "time_limit_s" || (e.where.empty() && e.message == "cancelled");
}

// `options` with its deadline set from time_limit_s, unless a caller set it
// before (the entry points call it; nested ones keep their caller's).
inline PlanOptions with_deadline(const PlanOptions& options) {
  PlanOptions o = options;
  if (o.time_limit_s > 0 && o.deadline == std::chrono::steady_clock::time_point::max())
    o.deadline = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(std::min(o.time_limit_s, kMaxTimeLimitSeconds)));
  return o;
}

}  // namespace pase
