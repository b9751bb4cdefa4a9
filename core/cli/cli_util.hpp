// Shared pieces of the pase subcommands: flag parsing, reading inputs,
// reporting errors with the right exit status, and text formatting.
//
// Exit status: 0 success, 1 bad input (kExitError), 2 usage error (kExitUsage).
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "pase/graph.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase_cli {

using Args = std::vector<std::string_view>;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// ---- Reporting ----------------------------------------------------------------

// A usage mistake: says what is wrong and where to read how it should be.
inline int usage_error(std::string_view command, const std::string& message) {
  std::fprintf(stderr, "pase: %s\n", message.c_str());
  if (command.empty()) {
    std::fprintf(stderr, "Try 'pase --help' for more information.\n");
  } else {
    std::fprintf(stderr, "Try 'pase %.*s --help' for more information.\n",
                 static_cast<int>(command.size()), command.data());
  }
  return kExitUsage;
}

// Bad input: "pase: error: <where>: <message>".
inline int input_error(const pase::Error& error) {
  std::fprintf(stderr, "pase: error: %s\n", error.to_string().c_str());
  return kExitError;
}

// How a file argument is named in messages ("-" is standard input).
inline std::string display_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

// An error found in a file: the file name leads, as in a compiler message.
inline pase::Error in_file(const std::string& path, pase::Error error) {
  const std::string name = display_name(path);
  error.where = error.where.empty() ? name : name + ": " + error.where;
  return error;
}

inline bool write_stdout(std::string_view text) {
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() &&
         std::fflush(stdout) == 0;
}

// ---- Flags ----------------------------------------------------------------------

struct FlagSpec {
  std::string_view name;  // "--procs"
  bool takes_value;
};

// The flags given to a subcommand, by name; switches map to "".
class Flags {
 public:
  bool has(std::string_view name) const { return values_.find(name) != values_.end(); }
  std::optional<std::string> get(std::string_view name) const {
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }
  void set(std::string_view name, std::string value) { values_[std::string(name)] = value; }

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

// Parses `--name value`, `--name=value` and switches. Returns an error message
// for anything not in `specs`, a missing value or a repeated flag.
inline std::optional<std::string> parse_flags(const Args& args, const std::vector<FlagSpec>& specs,
                                              Flags& flags) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      return "unexpected argument '" + std::string(arg) + "'";
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
    if (flags.has(name)) return std::string(name) + " is given more than once";
    if (!spec->takes_value) {
      if (inline_value) return std::string(name) + " takes no value";
      flags.set(name, "");
      continue;
    }
    if (inline_value) {
      flags.set(name, std::string(*inline_value));
      continue;
    }
    // A following flag is not a value (negative numbers have a single dash).
    if (i + 1 >= args.size() || args[i + 1].substr(0, 2) == "--") {
      return std::string(name) + " needs a value";
    }
    flags.set(name, std::string(args[++i]));
  }
  return std::nullopt;
}

inline std::optional<int64_t> parse_int(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

inline std::optional<double> parse_double(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// A byte count: plain bytes, or a number with K/M/G/T (powers of 1024, also
// written KiB/MiB/GiB/TiB) or KB/MB/GB/TB (powers of 1000). "0" means no limit.
inline std::optional<uint64_t> parse_size(std::string_view text) {
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

// ---- Inputs ---------------------------------------------------------------------

// Reads a file ("-": standard input) whole. Stops a little past the document
// limit: the parser then reports the size instead of the CLI filling memory.
inline pase::Result<std::string> read_file(const std::string& path) {
  std::string text;
  const size_t limit = pase::kMaxDocumentBytes + 1;
  if (path == "-") {
    char buffer[1 << 16];
    size_t n = 0;
    while (text.size() < limit && (n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0) {
      text.append(buffer, n);
    }
    if (std::ferror(stdin)) return pase::Error{"cannot read", display_name(path)};
    return text;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return pase::Error{"is a directory", path};
  std::ifstream in(path, std::ios::binary);
  if (!in) return pase::Error{std::string("cannot open: ") + std::strerror(errno), path};
  char buffer[1 << 16];
  while (text.size() < limit && in) {
    in.read(buffer, sizeof buffer);
    text.append(buffer, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return pase::Error{"cannot read", path};
  return text;
}

inline bool write_file(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  return static_cast<bool>(out);
}

// ---- Shared flag groups ------------------------------------------------------------

inline const std::vector<FlagSpec> kGraphFlags = {
    {"--model", true}, {"--batch", true}, {"--graph", true}};
inline const std::vector<FlagSpec> kClusterFlags = {
    {"--procs", true}, {"--flops", true}, {"--bandwidth", true}};

inline std::vector<FlagSpec> join(std::initializer_list<std::vector<FlagSpec>> groups) {
  std::vector<FlagSpec> all;
  for (const auto& group : groups) all.insert(all.end(), group.begin(), group.end());
  return all;
}

// The outcome of turning flags into values: a usage error (exit 2) or an
// input error (exit 1), reported by the caller.
struct Failure {
  bool usage = true;
  std::string message;
  pase::Error error;

  static Failure bad_usage(std::string message) { return {true, std::move(message), {}}; }
  static Failure bad_input(pase::Error error) { return {false, {}, std::move(error)}; }
  int report(std::string_view command) const {
    return usage ? usage_error(command, message) : input_error(error);
  }
};

// Which graph the flags ask for; checked for usage before anything is loaded.
struct GraphSource {
  std::string model;
  int64_t batch = 0;  // 0: the model's default
  std::string path;
};

inline std::optional<Failure> graph_source_from_flags(const Flags& flags, GraphSource& source) {
  const bool model = flags.has("--model");
  const bool graph = flags.has("--graph");
  if (model == graph) {
    return Failure::bad_usage(model ? "give either --model or --graph, not both"
                                    : "missing --model NAME or --graph FILE");
  }
  if (std::optional<std::string> batch = flags.get("--batch")) {
    if (!model) return Failure::bad_usage("--batch applies only to --model");
    std::optional<int64_t> n = parse_int(*batch);
    if (!n) return Failure::bad_usage("--batch: '" + *batch + "' is not an integer");
    if (*n <= 0) {
      return Failure::bad_input(
          pase::Error{"must be a positive integer, not " + std::to_string(*n), "batch"});
    }
    source.batch = *n;
  }
  if (model) source.model = *flags.get("--model");
  if (graph) source.path = *flags.get("--graph");
  return std::nullopt;
}

// Values that do not parse are usage errors; values that parse but make no
// machine (--procs 0, --flops -1) are input errors found by check_cluster().
inline std::optional<Failure> cluster_from_flags(const Flags& flags, pase::Cluster& cluster) {
  if (std::optional<std::string> procs = flags.get("--procs")) {
    std::optional<int64_t> n = parse_int(*procs);
    if (!n) return Failure::bad_usage("--procs: '" + *procs + "' is not an integer");
    cluster.devices = *n;
  }
  const std::pair<std::string_view, double*> numbers[] = {{"--flops", &cluster.tflops},
                                                          {"--bandwidth", &cluster.bandwidth_gbps}};
  for (const auto& [name, out] : numbers) {
    if (std::optional<std::string> text = flags.get(name)) {
      std::optional<double> d = parse_double(*text);
      if (!d) {
        return Failure::bad_usage(std::string(name) + ": '" + *text + "' is not a number");
      }
      *out = *d;
    }
  }
  if (std::optional<pase::Error> error = pase::check_cluster(cluster)) {
    return Failure::bad_input(std::move(*error));
  }
  return std::nullopt;
}

// "text" or "json".
inline std::optional<Failure> format_from_flags(const Flags& flags, bool& json) {
  std::string format = flags.get("--format").value_or("text");
  if (format != "text" && format != "json") {
    return Failure::bad_usage("--format: '" + format + "' is not one of text, json");
  }
  json = format == "json";
  return std::nullopt;
}

inline pase::Result<pase::Graph> load_source(const GraphSource& source) {
  if (!source.model.empty()) return pase::build_model(source.model, source.batch);
  pase::Result<std::string> text = read_file(source.path);
  if (!text) return text.error();
  pase::Result<pase::GraphSpec> spec = pase::parse_graph_spec(*text);
  if (!spec) return in_file(source.path, spec.error());
  // A document without a name is reported under its file name.
  if (spec->name.empty()) {
    spec->name = std::filesystem::path(source.path).stem().string();
  }
  pase::Result<pase::Graph> graph = pase::build_graph(std::move(*spec));
  if (!graph) return in_file(source.path, graph.error());
  return graph;
}

// ---- Text output ----------------------------------------------------------------------

inline std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

// The shortest text that reads back as the same double.
inline std::string exact(double value) {
  char buffer[64];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, ptr) : format("%.17g", value);
}

inline std::string grouped(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// A count that may exceed 64 bits (predicted sizes of absurd orders).
inline std::string grouped(double n) {
  if (n < 1e15) return grouped(static_cast<uint64_t>(n));
  return format("%.3g", n);
}

inline std::string bytes_text(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? std::to_string(bytes) + " B" : format("%.1f ", value) + kUnits[unit];
}

inline std::string bytes_text(double bytes) {
  if (bytes < 0x1p60) return bytes_text(static_cast<uint64_t>(bytes));
  return format("%.3g EiB", bytes / 0x1p60);
}

inline std::string seconds_text(double s) {
  if (s < 1e-3) return format("%.4g us", s * 1e6);
  if (s < 1) return format("%.4g ms", s * 1e3);
  return format("%.4g s", s);
}

inline std::string percent(double part, double whole) {
  return whole > 0 ? format("%.1f%%", 100 * part / whole) : "-";
}

// "b=128/8 c=3 n=96/2": every dimension with its size; split ones carry "/split".
inline std::string config_text(const pase::Vertex& vertex, const pase::Config& config) {
  std::string text;
  for (size_t d = 0; d < vertex.dims.size(); ++d) {
    if (!text.empty()) text += ' ';
    text += vertex.dims[d];
    text += '=';
    text += std::to_string(d < vertex.dom.size() ? vertex.dom[d] : 0);
    if (d < config.size() && config[d] != 1) {
      text += '/';
      text += std::to_string(config[d]);
    }
  }
  return text;
}

inline std::string pad_right(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

inline std::string pad_left(std::string text, size_t width) {
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text;
}

inline std::string cluster_text(const pase::Cluster& cluster) {
  return std::to_string(cluster.devices) + (cluster.devices == 1 ? " device" : " devices") + " (" +
         format("%g", cluster.tflops) + " TFLOP/s, " + format("%g", cluster.bandwidth_gbps) +
         " GB/s links)";
}

// The header, the per-layer table and the cost summary, shared by plan and eval.
inline std::string plan_text(const pase::Graph& graph, const pase::Cluster& cluster,
                             const pase::Plan& plan) {
  std::string out = graph.name + ": " + std::to_string(graph.vertices.size()) + " vertices, " +
                    std::to_string(graph.edges.size()) + " edges on " + cluster_text(cluster) +
                    "\n\n";
  size_t name_width = 5, op_width = 2;
  for (const pase::Vertex& v : graph.vertices) {
    name_width = std::max(name_width, v.name.size());
    op_width = std::max(op_width, std::strlen(pase::op_name(v.op)));
  }
  out += pad_left("id", 5) + "  " + pad_right("layer", name_width) + "  " +
         pad_right("op", op_width) + "  " + pad_right("cost", 10) + "  configuration\n";
  for (size_t i = 0; i < graph.vertices.size(); ++i) {
    const pase::Vertex& v = graph.vertices[i];
    const double cost = i < plan.layers.size() ? plan.layers[i].total : 0;
    const pase::Config config = i < plan.strategy.size() ? plan.strategy[i] : pase::Config{};
    out += pad_left(std::to_string(v.id), 5) + "  " + pad_right(v.name, name_width) + "  " +
           pad_right(pase::op_name(v.op), op_width) + "  " + pad_right(format("%.3e", cost), 10) +
           "  " + config_text(v, config) + "\n";
  }
  // Labels padded to one width so that the numbers line up.
  auto line = [](std::string_view label, const std::string& value) {
    return pad_right(std::string(label), 17) + value + "\n";
  };
  out += "\n";
  out += line("cost",
              format("%.6e", plan.cost) + " FLOP-equivalents (exactly " + exact(plan.cost) + ")");
  out += line("  compute", format("%.6e", plan.compute) + "  " + percent(plan.compute, plan.cost));
  out += line("  communication", format("%.6e", plan.comm) + "  " + percent(plan.comm, plan.cost));
  out += line("  redistribution",
              format("%.6e", plan.redistribution) + "  " + percent(plan.redistribution, plan.cost));
  out += line("step time", seconds_text(plan.step_time_s) + " (predicted)");
  return out;
}

inline std::string search_text(const pase::SearchStats& s) {
  return pad_right("search", 17) + std::string(pase::order_name(s.order)) + " order, " +
         seconds_text(s.time_s) + ", largest dependent set " + std::to_string(s.max_dependent_set) +
         ", " + grouped(s.configurations) + " configurations\n" + pad_right("", 17) +
         grouped(s.table_entries) + " table entries (largest " + grouped(s.largest_table) + "), " +
         grouped(s.pairs) + " pairs, tables " + bytes_text(s.peak_bytes) + "\n";
}

// "4,8,16" -> {"4", "8", "16"}; empty items are kept (and rejected by parsers).
inline std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  while (true) {
    size_t comma = text.find(',');
    items.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return items;
    text = text.substr(comma + 1);
  }
}

// Columns are padded; line ends are not.
inline std::string trim_line_ends(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    if (ch == '\n') {
      while (!out.empty() && out.back() == ' ') out.pop_back();
    }
    out += ch;
  }
  return out;
}

}  // namespace pase_cli
