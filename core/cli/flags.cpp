// Flag parsing of the subcommands (flags.hpp).
#include "flags.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "pase/plan.hpp"

namespace pase_cli {

bool Flags::has(std::string_view name) const { return values_.find(name) != values_.end(); }

std::optional<std::string> Flags::get(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Flags::all(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

void Flags::set(std::string_view name, std::string value) {
  values_[std::string(name)] = {std::move(value)};
}

void Flags::add(std::string_view name, std::string value) {
  values_[std::string(name)].push_back(std::move(value));
}

std::optional<std::string> parse_flags(const Args& args, const std::vector<FlagSpec>& specs,
                                       Flags& flags, std::vector<std::string>* positional) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-o") arg = "--output";  // the short form of --output
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      if (positional == nullptr || (arg.size() > 1 && arg[0] == '-')) {
        return "unexpected argument '" + std::string(arg) + "'";
      }
      positional->emplace_back(arg);
      continue;
    }
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    auto spec =
        std::find_if(specs.begin(), specs.end(), [&](const FlagSpec& s) { return s.name == name; });
    if (spec == specs.end()) return "unknown flag '" + std::string(name) + "'";
    if (flags.has(name) && !spec->repeatable) {
      return std::string(name) + " is given more than once";
    }
    if (!spec->takes_value) {
      if (inline_value) return std::string(name) + " takes no value";
      flags.add(name, "");
      continue;
    }
    if (inline_value) {
      flags.add(name, std::string(*inline_value));
      continue;
    }
    // A following flag is not a value (negative numbers have a single dash).
    if (i + 1 >= args.size() || args[i + 1].substr(0, 2) == "--") {
      return std::string(name) + " needs a value";
    }
    flags.add(name, std::string(args[++i]));
  }
  return std::nullopt;
}

std::optional<int64_t> parse_int(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

std::optional<double> parse_double(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_size(std::string_view text) {
  size_t split = 0;
  while (split < text.size() &&
         ((text[split] >= '0' && text[split] <= '9') || text[split] == '.')) {
    ++split;
  }
  std::string suffix(text.substr(split));
  std::transform(suffix.begin(), suffix.end(), suffix.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::pair<std::string_view, double> kUnits[] = {
      {"", 1},       {"b", 1},        {"k", 0x1p10},   {"kib", 0x1p10}, {"kb", 1e3},
      {"m", 0x1p20}, {"mib", 0x1p20}, {"mb", 1e6},     {"g", 0x1p30},   {"gib", 0x1p30},
      {"gb", 1e9},   {"t", 0x1p40},   {"tib", 0x1p40}, {"tb", 1e12}};
  const auto* unit = std::find_if(std::begin(kUnits), std::end(kUnits),
                                  [&](const auto& u) { return u.first == suffix; });
  if (unit == std::end(kUnits)) return std::nullopt;
  std::string_view number = text.substr(0, split);
  if (number.find('.') == std::string_view::npos) {
    // Whole numbers stay exact (a double would round above 2^53).
    uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
    if (ec != std::errc() || ptr != number.data() + number.size() || number.empty()) {
      return std::nullopt;
    }
    const auto scale = static_cast<uint64_t>(unit->second);
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(n, scale, &bytes)) return std::nullopt;
    return bytes;
  }
  std::optional<double> value = parse_double(number);
  if (!value) return std::nullopt;
  const double bytes = std::floor(*value * unit->second);
  if (!(bytes >= 0) || bytes >= 0x1p64) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  while (true) {
    size_t comma = text.find(',');
    items.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return items;
    text = text.substr(comma + 1);
  }
}

const std::vector<FlagSpec> kGraphFlags = {{"--model", true},     {"--batch", true},
                                           {"--seq", true},       {"--graph", true},
                                           {"--dim", true, true}, {"--vocab-padding", true}};
const std::vector<FlagSpec> kClusterFlags = {
    {"--procs", true},           {"--preset", true},
    {"--flops", true},           {"--bandwidth", true},
    {"--gpus-per-node", true},   {"--intra-bandwidth", true},
    {"--memory", true},          {"--zero", true},
    {"--param-bytes", true},     {"--grad-bytes", true},
    {"--optimizer-bytes", true}, {"--activation-bytes", true},
    {"--cost-model", true},      {"--memory-bandwidth", true},
    {"--recompute", true},       {"--headroom", true}};

std::vector<FlagSpec> join(std::initializer_list<std::vector<FlagSpec>> groups) {
  std::vector<FlagSpec> all;
  for (const auto& group : groups) all.insert(all.end(), group.begin(), group.end());
  return all;
}

std::optional<std::string> threads_from_flags(const Flags& flags, int& threads) {
  std::optional<std::string> text = flags.get("--threads");
  if (!text) {
    threads = pase::default_threads();
    return std::nullopt;
  }
  std::optional<int64_t> n = parse_int(*text);
  if (!n || *n < 1 || *n > kMaxThreads)
    return "--threads: '" + *text + "' is not a thread count (a whole number from 1 to " +
           std::to_string(kMaxThreads) + ")";
  threads = static_cast<int>(*n);
  return std::nullopt;
}

std::optional<std::string> time_limit_from_flags(const Flags& flags, double& seconds) {
  std::optional<std::string> text = flags.get("--time-limit");
  if (!text) return std::nullopt;
  std::optional<double> s = parse_double(*text);
  if (!s || !(*s > 0) || *s > pase::kMaxTimeLimitSeconds)
    return "--time-limit: '" + *text + "' is not a number of seconds above 0 and at most " +
           std::to_string(static_cast<int64_t>(pase::kMaxTimeLimitSeconds));
  seconds = *s;
  return std::nullopt;
}

std::optional<std::string> max_gap_from_flags(const Flags& flags, double& gap) {
  std::optional<std::string> text = flags.get("--max-gap");
  if (!text) return std::nullopt;
  std::string number = *text;
  const bool percent = !number.empty() && number.back() == '%';
  if (percent) number.pop_back();
  std::optional<double> g = parse_double(number);
  if (g && percent) *g /= 100;
  if (!g || !(*g >= 0 && *g < 1))
    return "--max-gap: '" + *text +
           "' is not a gap at least 0 and under 1 (a fraction, 0.01, or a percentage, 1%)";
  gap = *g;
  return std::nullopt;
}

std::optional<std::string> pipeline_from_flags(const Flags& flags,
                                               std::optional<pase::PipelineOptions>& pipeline) {
  std::optional<std::string> stages = flags.get("--stages");
  std::optional<std::string> micro = flags.get("--microbatches");
  std::optional<std::string> schedule = flags.get("--schedule");
  if (!stages && !micro && !schedule) return std::nullopt;
  pase::PipelineOptions p;
  auto count = [](const std::string& flag, const std::string& text,
                  int64_t& out) -> std::optional<std::string> {
    if (text == "auto") {
      out = pase::kAuto;
      return std::nullopt;
    }
    std::optional<int64_t> n = parse_int(text);
    if (!n || *n < 1) return flag + ": '" + text + "' is not a positive whole number or auto";
    out = *n;
    return std::nullopt;
  };
  if (stages)
    if (auto e = count("--stages", *stages, p.stages)) return e;
  if (micro)
    if (auto e = count("--microbatches", *micro, p.microbatches)) return e;
  if (schedule) {
    if (*schedule == "1f1b") {
      p.schedule = pase::Schedule::k1F1B;
    } else if (*schedule == "gpipe") {
      p.schedule = pase::Schedule::kGPipe;
    } else {
      return "--schedule: '" + *schedule + "' is not a schedule (1f1b or gpipe)";
    }
  }
  pipeline = p;
  return std::nullopt;
}

std::optional<std::string> parse_planning_flags(const Args& args, std::vector<FlagSpec> extra,
                                                Flags& flags) {
  return parse_flags(args, join({kGraphFlags, kClusterFlags, std::move(extra)}), flags);
}

}  // namespace pase_cli
