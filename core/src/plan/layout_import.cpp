// Which of the three a pasted layout is (a layout's own items, Megatron-LM
// arguments or torchtitan job TOML) and the reader for it
// (pase/layout_import.hpp; the mapping in core/docs/practice-model.md,
// "Importing a layout"). The readers themselves are in
// plan/layout_import_megatron.cpp and plan/layout_import_torchtitan.cpp.
#include "pase/layout_import.hpp"

#include <algorithm>
#include <string_view>

#include "plan/layout_import_detail.hpp"

namespace pase {
namespace {

// The items of parse_layout(): a `key = value` line with one of them is ours.
constexpr std::string_view kLayoutItems[] = {
    "tp",        "pp",  "dp",  "cp",  "ep",       "sp",      "zero",
    "recompute", "mbs", "gbs", "vpp", "pp_first", "pp_last", "recompute_blocks",
    "dp_shard",  "etp"};

}  // namespace

LayoutSyntax layout_syntax(std::string_view text) {
  // Line by line, comments left out: a table header or a key of another
  // name assigned is TOML; a word that starts with "--" an argument list.
  bool assigns_other_key = false, has_flag = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    while (!line.empty() && import_detail::is_space(line.front())) line.remove_prefix(1);
    while (!line.empty() && import_detail::is_space(line.back())) line.remove_suffix(1);
    if (line.empty()) continue;
    const auto key_char = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '-' || c == '.' || c == '"';
    };
    // [table] or [[array of tables]], nothing else on the line.
    if (line.front() == '[' && line.back() == ']') {
      std::string_view inner = line.substr(1, line.size() - 2);
      if (!inner.empty() && inner.front() == '[' && inner.back() == ']')
        inner = inner.substr(1, inner.size() - 2);
      if (!inner.empty() &&
          std::all_of(inner.begin(), inner.end(), [&](char c) { return key_char(c) || c == ' '; }))
        return LayoutSyntax::kTorchtitan;
    }
    size_t k = 0;
    while (k < line.size() && key_char(line[k])) ++k;
    const std::string_view key = line.substr(0, k);
    size_t eq = k;
    while (eq < line.size() && (line[eq] == ' ' || line[eq] == '\t')) ++eq;
    if (k > 0 && key.front() != '-' && eq < line.size() && line[eq] == '=' &&
        !import_detail::listed(kLayoutItems, key))
      assigns_other_key = true;
    for (size_t i = 0; i + 1 < line.size(); ++i)
      if (line.substr(i, 2) == "--" && (i == 0 || import_detail::is_space(line[i - 1])))
        has_flag = true;
  }
  if (has_flag) return LayoutSyntax::kMegatron;
  return assigns_other_key ? LayoutSyntax::kTorchtitan : LayoutSyntax::kLayout;
}

Result<Layout> read_any_layout(std::string_view text, int64_t devices, int64_t blocks) {
  switch (layout_syntax(text)) {
    case LayoutSyntax::kMegatron:
      return layout_from_megatron_args(text, devices, blocks);
    case LayoutSyntax::kTorchtitan:
      return layout_from_torchtitan_toml(text, devices, blocks);
    case LayoutSyntax::kLayout:
      break;
  }
  return parse_layout(text);
}

}  // namespace pase
