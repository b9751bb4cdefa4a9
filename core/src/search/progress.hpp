// One progress for a whole request (Progress in pase/plan.hpp;
// core/docs/architecture.md, "Progress"). Each search reports its own
// fraction 0..1; each level of the planner maps the fractions of its parts
// into shares of its own (progress_part()), so that a level's fraction rises
// part by part; the request's entry point (plan(), plan_pipeline()) turns
// the whole into what the caller sees (RequestProgress): clamped to the
// most reported so far, so that it never goes back whatever a level does,
// with the phase, the time since the start and an estimate of the time left.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "pase/plan.hpp"
#include "search/stop.hpp"

namespace pase {

// `options` whose on_progress takes a part's fraction f to lo + (hi - lo) * f
// of options' own, its phase named "phase: the part's phase" (or `phase`
// alone when the part names none). Without a callback, options as they are.
inline PlanOptions progress_part(const PlanOptions& options, double lo, double hi,
                                 std::string phase) {
  PlanOptions o = options;
  if (!options.on_progress) return o;
  o.on_progress = [outer = options.on_progress, lo, hi,
                   phase = std::move(phase)](const Progress& p) {
    Progress q = p;
    q.fraction = lo + (hi - lo) * std::clamp(p.fraction, 0.0, 1.0);
    q.phase = phase.empty() ? p.phase : p.phase.empty() ? phase : phase + ": " + p.phase;
    outer(q);
  };
  return o;
}

// The share of part i (from 0) of a sequence whose length is not known in
// advance: after part i the sequence is at (i + 1) / (i + 1 + ahead), as if
// `ahead` more parts were to come. It rises with every part and never
// reaches 1, which the sequence's end (its caller's next part, or the
// request's end) makes up at once.
inline std::pair<double, double> open_part(int i, double ahead) {
  return {i / (i + ahead), (i + 1) / (i + 1 + ahead)};
}

// How many more searches a plan under a memory cap reads as having ahead
// of it (open_part()): its Lagrangian loop ends after a handful.
constexpr double kSearchesAhead = 3;

// A search expected to run longer than kLongSearchSeconds gets a note
// before it starts (Progress::note): the searches it expects times the
// configurations of the space at kSecondsPerConfiguration each, the pace
// measured on deep models (1 to 3 microseconds per configuration and
// search on this repository's 2-core machine; core/docs/performance.md,
// "Deep models").
constexpr double kSecondsPerConfiguration = 2e-6;
constexpr double kLongSearchSeconds = 60;

// The note, or "" for a search expected to be shorter; `what` says what
// the searches are for.
inline std::string long_search_note(uint64_t configurations, double searches,
                                    const std::string& what) {
  const double seconds = static_cast<double>(configurations) * searches * kSecondsPerConfiguration;
  if (!(seconds > kLongSearchSeconds)) return "";
  const int minutes = static_cast<int>(std::ceil(seconds / 60));
  return "a long search: about " + std::to_string(static_cast<int64_t>(std::ceil(searches))) +
         " searches of " + std::to_string(configurations) + " configurations " + what + ", some " +
         std::to_string(minutes) + " min on one core";
}

// The parts of such a sequence, in the order they run (open_part()).
class OpenParts {
 public:
  OpenParts(const PlanOptions& options, double ahead) : options_(options), ahead_(ahead) {}
  // The options of the next part, named `phase`.
  PlanOptions next(std::string phase) {
    const std::pair<double, double> share = open_part(count_++, ahead_);
    return progress_part(options_, share.first, share.second, std::move(phase));
  }

 private:
  const PlanOptions& options_;
  double ahead_;
  int count_ = 0;
};

// The progress and the stop test of one dynamic program (run_dp(), and the
// reference engine of the tests): its pairs done against the estimate, and
// its steps. Only the calling thread reports (a progress callback may not be
// safe to call from another thread), every ~2^20 pairs and once a step, at
// most every percent unless forced; helper threads add their pairs and
// stop when the search is to stop. Stopping is sticky: once any thread
// finds a stop (stop_requested(), or a helper's cancel_requested()), every
// tick after it says stop.
class SearchProgress {
 public:
  SearchProgress(const PlanOptions& options, double total_pairs, int steps)
      : options_(options), total_(total_pairs), steps_(steps) {}
  SearchProgress(const SearchProgress&) = delete;
  SearchProgress& operator=(const SearchProgress&) = delete;

  // The calling thread's pairs; false when the search is to stop.
  bool tick(uint64_t pairs) {
    done_ += static_cast<double>(pairs);
    since_check_ += pairs;
    if (since_check_ < kPairsPerCheck) return !stopped();
    since_check_ = 0;
    if (stop_requested(options_)) stop();
    if (stopped()) return false;
    report();
    return true;
  }
  // A helper thread's pairs; false when the search is to stop.
  bool helper_tick(uint64_t pairs) {
    helpers_done_.fetch_add(pairs, std::memory_order_relaxed);
    if (stopped()) return false;
    if (cancel_requested(options_)) stop();
    return !stopped();
  }
  // Stops every thread's next tick.
  void stop() { stopped_.store(true, std::memory_order_relaxed); }
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

  // A step of `vertex` begins; `pairs` more (or fewer, for steps undone)
  // are done without ticks; a step is done.
  void step_begins(int vertex) { current_ = vertex; }
  void count(double pairs, int steps = 0) {
    done_ += pairs;
    steps_done_ += steps;
  }
  void step_done() {
    ++steps_done_;
    report();
  }
  // The search is done: every pair counted, reported.
  void finish() {
    done_ = total_;
    report(true);
  }

  // The fraction done, when it rose a percent since the last report (or
  // `force`).
  void report(bool force = false) {
    if (!options_.on_progress) return;
    const double done = done_ + static_cast<double>(helpers_done_.load(std::memory_order_relaxed));
    const double fraction = total_ > 0 ? std::min(1.0, done / total_) : 1.0;
    if (!force && fraction - last_report_ < 0.01) return;
    last_report_ = fraction;
    Progress p;
    p.fraction = fraction;
    p.vertices_done = steps_done_;
    p.vertices_total = steps_;
    p.current_vertex = current_;
    options_.on_progress(p);
  }

 private:
  static constexpr uint64_t kPairsPerCheck = uint64_t{1} << 20;
  const PlanOptions& options_;
  const double total_;
  const int steps_;
  double done_ = 0, last_report_ = -1;
  uint64_t since_check_ = 0;
  int steps_done_ = 0, current_ = -1;
  std::atomic<uint64_t> helpers_done_{0};
  std::atomic<bool> stopped_{false};
};

// The caller's progress of one request: options() carries the request's
// deadline (with_deadline(): from PlanOptions::time_limit_s) and a callback that
// keeps the most fraction reported (so the caller's never goes back), fills
// in the elapsed time and the time left, and passes a report on only when
// the fraction rose by half a percent, the phase changed, half a second
// passed or the request is done (with its last steps); finish() reports fraction 1 when the
// request's last report did not. Without a callback, nothing.
class RequestProgress {
 public:
  explicit RequestProgress(const PlanOptions& options)
      : options_(with_deadline(options)), caller_(options.on_progress) {
    if (!options.on_progress) return;
    options_.on_progress = [this](const Progress& p) { report(p); };
  }
  RequestProgress(const RequestProgress&) = delete;
  RequestProgress& operator=(const RequestProgress&) = delete;

  const PlanOptions& options() const { return options_; }

  void finish() {
    if (!caller_ || last_.fraction >= 1) return;
    Progress p = last_;
    p.fraction = 1;
    report(p);
  }

 private:
  using Clock = std::chrono::steady_clock;

  void report(const Progress& p) {
    const Clock::time_point now = Clock::now();
    Progress q = p;
    q.fraction = std::max(shown_, std::clamp(p.fraction, 0.0, 1.0));
    // A report that names no phase (a search's own) goes on with the one
    // before it; the first is "searching".
    if (q.phase.empty()) q.phase = reported_ ? last_.phase : "searching";
    // A note, once given, stays.
    if (q.note.empty()) q.note = last_.note;
    q.elapsed_s = std::chrono::duration<double>(now - start_).count();
    // The time left at the pace so far; not before a percent is done and a
    // tenth of a second gone (the first reports say little of the pace).
    q.seconds_left = q.fraction >= 1 ? 0
                     : q.fraction >= 0.01 && q.elapsed_s >= 0.1
                         ? q.elapsed_s * (1 - q.fraction) / q.fraction
                         : -1;
    // At the end, a search's last steps (with no pairs) are reported too.
    const bool at_end =
        q.fraction >= 1 && (last_.fraction < 1 || q.vertices_done != last_.vertices_done);
    const bool pass = !reported_ || at_end || q.phase != last_.phase || q.note != last_.note ||
                      q.fraction - last_.fraction >= 0.005 ||
                      now - last_time_ >= std::chrono::milliseconds(500);
    shown_ = q.fraction;
    if (!pass) return;
    reported_ = true;
    last_ = q;
    last_time_ = now;
    caller_(q);
  }

  PlanOptions options_;
  std::function<void(const Progress&)> caller_;
  Clock::time_point start_ = Clock::now(), last_time_;
  double shown_ = 0;
  bool reported_ = false;
  Progress last_;
};

}  // namespace pase
