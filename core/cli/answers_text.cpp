// pase plan's two answers of a language model (answers_text.hpp).
#include "answers_text.hpp"

#include <cstdint>
#include <string>
#include <string_view>

#include "format.hpp"
#include "pase/layout.hpp"

namespace pase_cli {
namespace {

// "both engines start it", "Megatron-LM starts it; torchtitan refuses it
// (ddp: ...)".
std::string engines_text(const pase::RankedLayout& r) {
  if (r.megatron.accepted() && r.torchtitan.accepted())
    return "Megatron-LM and torchtitan start it";
  const auto one = [](std::string_view engine, const pase::EngineVerdict& v) {
    std::string s(engine);
    if (v.accepted()) return s.append(" starts it");
    return s.append(" refuses it (").append(v.rule).append(": ").append(v.message).append(")");
  };
  return one("Megatron-LM", r.megatron) + "; " + one("torchtitan", r.torchtitan);
}

std::string budget_text(double days, double cost) {
  if (!(days > 0)) return "";
  std::string s = format("%.1f days to train", days);
  if (cost > 0) s += format(", $%.3g", cost);
  return s;
}

}  // namespace

std::string answers_text(const pase::PlanAnswers& a) {
  const std::string indent(17, ' ');
  std::string out;
  const pase::LayoutSearch& s = a.layouts;
  const std::string searched = grouped(static_cast<uint64_t>(s.priced)) + " layouts priced in " +
                               seconds_text(s.seconds) + " ('pase layouts' ranks them)";
  if (s.ranked.empty()) {
    out += pad_right("best layout", 17) + "none fits the memory cap (of " + searched + ")\n";
  } else {
    const pase::RankedLayout& b = s.ranked.front();
    out += pad_right("best layout", 17) + pase::layout_text(b.layout) + "\n";
    out += indent + "what the engines run: " + engines_text(b) + "\n";
    std::string figures = seconds_text(b.step_time_s) + " a step, MFU " +
                          format("%.1f%%", 100 * b.mfu) + ", " + format("%.3g", b.tokens_per_s) +
                          " tokens/s, " + gib_text(b.memory.total()) + " per GPU";
    if (b.capacity_bytes > 0)
      figures += " (" + gib_text(b.capacity_bytes - b.memory.total()) + " free)";
    out += indent + figures + "\n";
    out += indent + "compute " + seconds_text(b.parts.compute_s) + ", recomputation " +
           seconds_text(b.parts.recompute_s) + ", exposed communication " +
           seconds_text(b.parts.communication_s) + ", bubble " + seconds_text(b.parts.bubble_s) +
           "\n";
    if (const std::string budget = budget_text(b.days, b.cost); !budget.empty())
      out += indent + budget + "\n";
    out += indent + "the fastest of " + searched + "\n";
  }
  out += pad_right("per-layer plan", 17) +
         "what JAX/GSPMD runs: " + seconds_text(a.per_layer.plan.step_time_s) + " a step";
  if (s.ranked.empty()) {
    out += "\n";
  } else if (a.gain_s < 0) {
    std::string hand;
    for (size_t i = 0; i < a.set_by_hand.size(); ++i)
      hand.append(i == 0                          ? ""
                  : i + 1 == a.set_by_hand.size() ? " and "
                                                  : ", ")
          .append(a.set_by_hand[i]);
    out += ", " + seconds_text(-a.gain_s) + format(" (%.1f%%)", -100 * a.gain_fraction) +
           " slower than the best layout, with " + hand + " set by hand\n";
  } else if (a.layout_wins || !(a.gain_s > 0)) {
    out += ", it gains nothing over the best layout";
    out += a.layout_wins ? " (the plan below is the layout's own)\n" : "\n";
  } else {
    out += ", " + seconds_text(a.gain_s) + format(" (%.1f%%)", 100 * a.gain_fraction) +
           " faster than the best layout\n";
  }
  if (const std::string budget = budget_text(a.days, a.cost); !budget.empty())
    out += indent + budget + "\n";
  // What the search proved: after a stop, how far from the best it may be.
  if (!a.stopped.empty()) {
    out += indent + (a.stopped == "cancelled" ? "cancelled" : "stopped at the time limit") +
           " in " + a.stopped_in + ": the best found, ";
    out += a.gap >= 0 ? "at most " + format("%.1f%%", 100 * a.gap) +
                            " slower than the best possible (no plan under " +
                            seconds_text(a.lower_bound_s) + " a step)\n"
                      : "with no bound proven\n";
  } else if (a.gap > 0) {
    // Ended within the gap accepted (--max-gap), what it left unsearched.
    out += indent + "within the gap accepted: at most " + format("%.1f%%", 100 * a.gap) +
           " slower than the best possible (no plan under " + seconds_text(a.lower_bound_s) +
           " a step)\n";
  }
  if (!a.layout_wins && !s.ranked.empty())
    for (size_t i = 0; i < a.differs_at.size(); ++i)
      out += (i == 0 ? pad_right("  differs at", 17) : indent) + a.differs_at[i] + "\n";
  return out + "\n";
}

}  // namespace pase_cli
