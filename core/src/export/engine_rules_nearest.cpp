// The nearest layout that the engines' start-up rules accept
// (export/engine_rules.hpp; core/docs/export.md, "The engines' start-up
// rules"): each broken rule mended by the smallest change that mends it.
// The rules themselves are in export/engine_rules.cpp.
#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "export/engine_rules.hpp"
#include "export/engine_rules_detail.hpp"
#include "util/divisors.hpp"

namespace pase {
namespace engine_rules_detail {
namespace {

// The layouts that may mend `rule`, nearest first.
std::vector<Layout> rules_candidates(const EngineRules& r, const Layout& l,
                                     const std::string& rule) {
  std::vector<Layout> out;
  // tp and cp lowered to t and c, the factor going to dp (dp x cp and the
  // world size kept when cp alone is lowered); etp kept dividing tp.
  const auto lowered = [&](int64_t t, int64_t c) {
    Layout x = l;
    x.tp = t;
    x.cp = c;
    x.dp = l.dp * (l.tp / t) * (l.cp / c);
    if (x.etp > 0) x.etp = std::gcd(x.etp, t);
    if (t == 1) x.sp = false;
    return x;
  };
  if (rule == "world-size") {
    const int64_t model = rules_product({l.tp, l.pp, l.cp});
    if (model > 0 && r.devices % model == 0) {
      Layout x = l;
      x.dp = r.devices / model;
      if (x.dp_shard > 0 && x.dp % x.dp_shard != 0) x.dp_shard = 0;
      out.push_back(x);
    }
  } else if (rule == "heads" || rule == "mlp-width") {
    const std::vector<int64_t> ts = divisors(l.tp);
    for (auto t = ts.rbegin(); t != ts.rend(); ++t)
      if (*t < l.tp) out.push_back(lowered(*t, l.cp));
  } else if (rule == "sequence-length") {
    std::vector<std::pair<int64_t, int64_t>> tc;
    for (int64_t t : divisors(l.tp))
      for (int64_t c : divisors(l.cp))
        if (t * c < l.tp * l.cp) tc.push_back({t, c});
    std::sort(tc.begin(), tc.end(), [](const auto& a, const auto& b) {
      return std::make_tuple(a.first * a.second, a.first) >
             std::make_tuple(b.first * b.second, b.first);
    });
    for (const auto& [t, c] : tc) out.push_back(lowered(t, c));
  } else if (rule == "pipeline-layers") {
    Layout x = l;
    x.pp_first = x.pp_last = 0;
    if (l.vpp > 1 || l.pp == 1) {
      out.push_back(x);
    } else {
      // Megatron-LM's split with the fewest blocks on the fullest stage,
      // then the fewest of pp_first and pp_last changed, then the least.
      const int64_t blocks = r.config.num_layers;
      std::vector<std::tuple<int64_t, int, int64_t, int64_t, int64_t>> splits;
      for (int64_t f = 0; f <= blocks; ++f)
        for (int64_t s = 0; f + s <= blocks; ++s) {
          const int64_t middle = l.pp - (f > 0 ? 1 : 0) - (s > 0 ? 1 : 0);
          const int64_t rest = blocks - f - s;
          // rules_megatron_split()'s checks, without its messages.
          if (f + s == 0
                  ? blocks % l.pp != 0
                  : middle < 0 || (rest > 0) != (middle > 0) || (middle > 0 && rest % middle != 0))
            continue;
          const int64_t each = middle > 0 ? rest / middle : blocks / l.pp;
          const int64_t fullest = std::max({f, s, each});
          const int changed = (f != l.pp_first ? 1 : 0) + (s != l.pp_last ? 1 : 0);
          splits.emplace_back(fullest, changed, std::abs(f - l.pp_first) + std::abs(s - l.pp_last),
                              f, s);
        }
      std::sort(splits.begin(), splits.end());
      for (size_t i = 0; i < splits.size() && i < 16; ++i) {
        x.pp_first = std::get<3>(splits[i]);
        x.pp_last = std::get<4>(splits[i]);
        out.push_back(x);
      }
    }
  } else if (rule == "virtual-stages") {
    for (int64_t v = l.vpp - 1; v >= 1; --v) {
      Layout x = l;
      x.vpp = v;
      out.push_back(x);
    }
  } else if (rule == "interleave-microbatches" || rule == "batch") {
    const int64_t local = l.dp > 0 && l.gbs % l.dp == 0 ? l.gbs / l.dp : 0;
    for (int64_t m = l.mbs - 1; m >= 1; --m)
      if (local > 0 && local % m == 0) {
        Layout x = l;
        x.mbs = m;
        out.push_back(x);
      }
    if (rule == "interleave-microbatches") {
      Layout x = l;
      x.vpp = 1;
      out.push_back(x);
    }
  } else if (rule == "sequence-parallel") {
    Layout x = l;
    x.sp = l.tp > 1;
    out.push_back(x);
  } else if (rule == "expert-parallel") {
    if (r.config.num_experts == 0) {
      Layout x = l;
      x.ep = 1;
      out.push_back(x);
    }
    for (int64_t e = l.ep - 1; e >= 1; --e)
      if (l.ep % e == 0) {
        Layout x = l;
        x.ep = e;
        out.push_back(x);
      }
  } else if (rule == "expert-tensor") {
    for (int64_t e : {int64_t{0}, int64_t{1}}) {
      Layout x = l;
      x.etp = e;
      out.push_back(x);
    }
  } else if (rule == "ddp" || rule == "hsdp") {
    // HSDP over the fewest ranks that the rule allows (dp_shard = dp: FSDP);
    // for torchtitan first those whose shards still hold the experts' ranks.
    std::vector<int64_t> ds;
    for (int64_t d : divisors(l.dp))
      if (d > 1 && (rule == "ddp" || d >= l.dp_shard)) ds.push_back(d);
    const auto holds_experts = [&](int64_t d) {
      return r.megatron() || l.ep == 1 ||
             rules_product({d, l.cp, l.tp}) % (l.ep * rules_expert_tp(l)) == 0;
    };
    std::stable_partition(ds.begin(), ds.end(), holds_experts);
    for (int64_t d : ds) {
      Layout x = l;
      x.zero = 3;
      x.dp_shard = d == l.dp ? 0 : d;
      out.push_back(x);
    }
  } else if (rule == "zero-stage") {
    Layout x = l;
    x.zero = 2;
    out.push_back(x);
  }
  return out;
}

bool rules_breaks(const std::vector<EngineRefusal>& refusals, const std::string& rule) {
  return std::any_of(refusals.begin(), refusals.end(),
                     [&](const EngineRefusal& e) { return e.rule == rule; });
}

}  // namespace
}  // namespace engine_rules_detail

std::optional<Layout> nearest_accepted_layout(ExportTarget target, const LlmConfig& config,
                                              int64_t seq, const Layout& layout, int64_t devices,
                                              int64_t gpus_per_node) {
  const engine_rules_detail::EngineRules r{target, config, seq, devices, gpus_per_node};
  Layout l = layout;
  std::set<std::string> seen;
  // Each pass mends the first broken rule with the nearest candidate that
  // mends it (the rules it breaks then mended in turn); a layout seen before
  // (a cycle) or a rule that no candidate mends ends the search.
  for (int pass = 0; pass < 64; ++pass) {
    const std::vector<EngineRefusal> refusals = r.check(l);
    if (refusals.empty()) return l;
    if (!seen.insert(layout_text(l)).second) return std::nullopt;
    const std::string& rule = refusals.front().rule;
    std::optional<Layout> mended;
    for (const Layout& c : engine_rules_detail::rules_candidates(r, l, rule))
      if (!engine_rules_detail::rules_breaks(r.check(c), rule)) {
        mended = c;
        break;
      }
    if (!mended) return std::nullopt;
    l = *mended;
  }
  return std::nullopt;
}

}  // namespace pase
