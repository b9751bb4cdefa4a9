// The text of a language model's two answers (pase/answers.hpp), printed by
// `pase plan` before the per-layer plan's own text.
#pragma once

#include <string>

#include "pase/answers.hpp"

namespace pase_cli {

// "best layout": the layout, which engines start it, its step, MFU,
// tokens/s, memory and margin, the step's parts and, with a budget, its
// days and cost; then "per-layer plan": what JAX/GSPMD runs, its gain over
// the best layout and where it differs, or that it gains nothing.
std::string answers_text(const pase::PlanAnswers& answers);

}  // namespace pase_cli
