// A practitioner's layout as a pipeline strategy (pase/layout.hpp,
// core/docs/practice-model.md, "Evaluating a layout").
#include "pase/layout.hpp"

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "model/cost_model.hpp"
#include "model/op_table.hpp"
#include "util/text.hpp"

namespace pase {
namespace {

Error layout_error(std::string message, const std::string& field = "") {
  return Error{std::move(message), field.empty() ? "layout" : "layout." + field};
}

// Whether `v` has a dimension named `name` (x: the experts').
bool has_dim(const Vertex& v, std::string_view name) {
  return std::find(v.dims.begin(), v.dims.end(), name) != v.dims.end();
}

// a x b x ..., or nullopt when the product overflows.
std::optional<int64_t> product(std::initializer_list<int64_t> factors) {
  int64_t out = 1;
  for (int64_t f : factors)
    if (__builtin_mul_overflow(out, f, &out)) return std::nullopt;
  return out;
}

// The degrees' bounds, before a graph is built at the layout's global batch
// (the CLI and a request build it first): no degree nor tp x pp x dp x cp
// above the most devices a cluster has (kMaxDevices), so that no product of
// them overflows.
std::optional<Error> check_degrees(const Layout& l) {
  // The degrees first, then counts that no device bounds; a Layout set in
  // code may hold what parse_layout() refuses (below 1).
  const std::pair<const char*, int64_t> counts[] = {{"tp", l.tp},
                                                    {"pp", l.pp},
                                                    {"dp", l.dp},
                                                    {"cp", l.cp},
                                                    {"ep", l.ep},
                                                    {"mbs", l.mbs},
                                                    {"vpp", l.vpp},
                                                    {"etp", l.etp},
                                                    {"dp_shard", l.dp_shard},
                                                    {"pp_first", l.pp_first},
                                                    {"pp_last", l.pp_last},
                                                    {"recompute_blocks", l.recompute_blocks}};
  constexpr size_t kDegrees = 5, kCounts = 7;  // then the items where 0 means "unset"
  for (size_t i = 0; i < std::size(counts); ++i) {
    const auto& [key, n] = counts[i];
    if (n < (i < kCounts ? 1 : 0))
      return layout_error(i < kCounts ? "must be at least 1" : "must not be negative", key);
    if ((i < kDegrees || key == std::string_view("etp") || key == std::string_view("dp_shard")) &&
        n > kMaxDevices)
      return layout_error(std::to_string(n) + " is more than the " + std::to_string(kMaxDevices) +
                              " devices a cluster may have",
                          key);
  }
  if (l.gbs < 0) return layout_error("must not be negative (0: the graph's batch)", "gbs");
  if (l.zero < 0 || l.zero > 3) return layout_error("is not 0, 1, 2 or 3", "zero");
  const std::optional<int64_t> devices = product({l.tp, l.pp, l.dp, l.cp});
  if (!devices || *devices > kMaxDevices)
    return layout_error("tp x pp x dp x cp = " +
                            (devices ? std::to_string(*devices) : std::string("more than 2^63")) +
                            " is more than the " + std::to_string(kMaxDevices) +
                            " devices a cluster may have",
                        "tp");
  return std::nullopt;
}

std::optional<int64_t> positive(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int64_t n = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
    n = n * 10 + (ch - '0');
  }
  return n > 0 ? std::optional<int64_t>(n) : std::nullopt;
}

// The sequence dimension of a vertex that the LLM graphs name by position
// (Norm, Elementwise, the loss: b, d1, d2): a dimension of kind sequence, or
// else the first after the batch of the sequence's length.
std::optional<size_t> sequence_dim(const Vertex& v, int64_t seq) {
  for (size_t i = 0; i < v.kinds.size(); ++i)
    if (v.kinds[i] == DimKind::kSequence) return i;
  for (size_t i = 1; i < v.dom.size(); ++i)
    if (v.dom[i] == seq && v.kinds[i] != DimKind::kBatch) return i;
  return std::nullopt;
}

// " name=value" for an item set (above 0), else nothing.
std::string optional_item(const char* name, int64_t value) {
  return value > 0 ? std::string(" ") + name + "=" + std::to_string(value) : std::string();
}

}  // namespace

Result<Layout> parse_layout(std::string_view text) {
  Layout l;
  std::vector<std::string> seen;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',' || text[i] == '\t')) ++i;
    if (i >= text.size()) break;
    size_t end = i;
    while (end < text.size() && text[end] != ' ' && text[end] != ',' && text[end] != '\t') ++end;
    const std::string_view item = text.substr(i, end - i);
    i = end;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return layout_error(quoted_text(item) + " is not name=value");
    const std::string key(item.substr(0, eq));
    const std::string_view value = item.substr(eq + 1);
    // Known before "given twice", whose field is the key.
    constexpr std::string_view kKnown[] = {
        "tp",      "pp",   "dp",        "cp",      "ep",
        "sp",      "zero", "recompute", "mbs",     "gbs",
        "vpp",     "etp",  "pp_first",  "pp_last", "recompute_blocks",
        "dp_shard"};
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown))
      return layout_error("unknown item " + quoted_text(key) +
                          "; known: tp, pp, dp, cp, ep, sp, zero, recompute, mbs, gbs, vpp, etp, "
                          "pp_first, pp_last, recompute_blocks, dp_shard");
    for (const std::string& s : seen)
      if (s == key) return layout_error("given twice", key);
    seen.push_back(key);
    int64_t* count = key == "tp"                 ? &l.tp
                     : key == "pp"               ? &l.pp
                     : key == "dp"               ? &l.dp
                     : key == "cp"               ? &l.cp
                     : key == "ep"               ? &l.ep
                     : key == "mbs"              ? &l.mbs
                     : key == "gbs"              ? &l.gbs
                     : key == "vpp"              ? &l.vpp
                     : key == "etp"              ? &l.etp
                     : key == "pp_first"         ? &l.pp_first
                     : key == "pp_last"          ? &l.pp_last
                     : key == "recompute_blocks" ? &l.recompute_blocks
                     : key == "dp_shard"         ? &l.dp_shard
                                                 : nullptr;
    if (count != nullptr) {
      std::optional<int64_t> n = positive(value);
      if (!n) return layout_error(quoted_text(value) + " is not a positive integer", key);
      *count = *n;
    } else if (key == "sp") {
      if (value == "on" || value == "true" || value == "1") {
        l.sp = true;
      } else if (value == "off" || value == "false" || value == "0") {
        l.sp = false;
      } else {
        return layout_error(quoted_text(value) + " is not on or off", key);
      }
    } else if (key == "zero") {
      if (value.size() != 1 || value[0] < '0' || value[0] > '3')
        return layout_error(quoted_text(value) + " is not 0, 1, 2 or 3", key);
      l.zero = value[0] - '0';
    } else {  // recompute
      Result<Recompute> r = parse_recompute(value);
      if (!r) return layout_error(r.error().message, key);
      if (*r == Recompute::kAuto)
        return layout_error("a layout states its recomputation: none, selective or full", key);
      l.recompute = *r;
    }
  }
  if (std::optional<Error> e = check_degrees(l)) return *e;
  return l;
}

std::string layout_text(const Layout& l) {
  return "tp=" + std::to_string(l.tp) + " pp=" + std::to_string(l.pp) +
         " dp=" + std::to_string(l.dp) + " cp=" + std::to_string(l.cp) +
         " ep=" + std::to_string(l.ep) + " sp=" + (l.sp ? "on" : "off") +
         " zero=" + std::to_string(l.zero) + " recompute=" + recompute_name(l.recompute) +
         " mbs=" + std::to_string(l.mbs) +
         (l.gbs > 0 ? " gbs=" + std::to_string(l.gbs) : std::string()) +
         " vpp=" + std::to_string(l.vpp) + optional_item("etp", l.etp) +
         optional_item("pp_first", l.pp_first) + optional_item("pp_last", l.pp_last) +
         optional_item("recompute_blocks", l.recompute_blocks) +
         optional_item("dp_shard", l.dp_shard);
}

Result<std::vector<int64_t>> stage_blocks(const Layout& l, int64_t blocks) {
  if (l.pp < 1) return layout_error("must be at least 1", "pp");
  const int64_t given = (l.pp_first > 0 ? 1 : 0) + (l.pp_last > 0 ? 1 : 0);
  if (given > 0 && l.pp < 2) {
    return layout_error("the first and last stage's blocks need a pipeline (pp of at least 2)",
                        l.pp_first > 0 ? "pp_first" : "pp_last");
  }
  const int64_t middle = l.pp - given, rest = blocks - l.pp_first - l.pp_last;
  if (rest < middle || (middle == 0 && rest != 0) || blocks < l.pp)
    return layout_error(
        std::to_string(blocks) + " decoder blocks cannot fill " + std::to_string(l.pp) + " stages" +
            (given > 0 ? " with " + std::to_string(l.pp_first) + " on the first and " +
                             std::to_string(l.pp_last) + " on the last"
                       : std::string()) +
            ", one block or more each",
        "pp");
  std::vector<int64_t> out(static_cast<size_t>(l.pp), 0);
  if (l.pp_first > 0) out.front() = l.pp_first;
  if (l.pp_last > 0) out.back() = l.pp_last;
  // The middle stages as evenly as they go: block b of the rest on middle
  // stage floor(b * middle / rest).
  const size_t offset = l.pp_first > 0 ? 1 : 0;
  for (int64_t b = 0; b < rest; ++b) ++out[offset + static_cast<size_t>(b * middle / rest)];
  return out;
}

Result<LayoutStrategy> layout_strategy(const Graph& graph, const Cluster& cluster,
                                       const Layout& l) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  // A Layout set in code has not been through parse_layout().
  if (std::optional<Error> e = check_degrees(l)) return *e;
  if (l.vpp > 1 && l.pp < 2)
    return layout_error("virtual stages need a pipeline (pp of at least 2)", "vpp");
  const int64_t per_stage = l.tp * l.dp * l.cp;
  if (per_stage * l.pp != cluster.devices)
    return layout_error("tp x pp x dp x cp = " + std::to_string(per_stage * l.pp) +
                            ", but the cluster has " + std::to_string(cluster.devices) + " devices",
                        "tp");
  if ((l.dp * l.cp) % l.ep != 0)
    return layout_error(
        "the experts' degree must divide dp x cp (" + std::to_string(l.dp * l.cp) + ")", "ep");
  // Without experts an ep would be ignored: refuse it rather than price
  // another layout than the one asked for.
  const auto has_experts = [](const Vertex& v) { return has_dim(v, "x"); };
  if (l.ep > 1 && std::none_of(graph.vertices.begin(), graph.vertices.end(), has_experts))
    return layout_error(quoted_text(graph.name) + " has no experts: ep must be 1", "ep");
  const GraphSpec* spec = graph.model->spec.get();
  if (spec == nullptr || spec->inputs.empty() || spec->inputs[0].second.empty())
    return layout_error("the graph has no batch to lay out");
  const int64_t batch = spec->inputs[0].second[0];
  const int64_t gbs = l.gbs == 0 ? batch : l.gbs;
  if (gbs != batch)
    return layout_error("the graph's batch is " + std::to_string(batch) + ", not " +
                            std::to_string(gbs) + " (build it at the global batch)",
                        "gbs");
  const std::optional<int64_t> rank_batch = product({l.mbs, l.dp});
  if (!rank_batch || gbs % *rank_batch != 0)
    return layout_error(std::to_string(gbs) + " is not a multiple of mbs x dp = " +
                            (rank_batch ? std::to_string(*rank_batch) : "more than 2^63"),
                        "gbs");
  const int64_t microbatches = gbs / *rank_batch;
  // The sequence length: the second dimension of the tokens.
  const int64_t seq = spec->inputs[0].second.size() > 1 ? spec->inputs[0].second[1] : 0;
  Result<Graph> micro = micro_batch_graph(graph, microbatches);
  if (!micro) return micro.error();
  const Graph& g = *micro;

  // The decoder blocks, and the stage of each vertex.
  const size_t n = g.vertices.size();
  int blocks = 0;
  size_t first_block_vertex = n;
  for (size_t v = 0; v < n; ++v) {
    const int b = model_of(g, static_cast<int>(v)).block;
    if (b < 0) continue;
    blocks = std::max(blocks, b + 1);
    first_block_vertex = std::min(first_block_vertex, v);
  }
  if (blocks == 0)
    return layout_error("the graph has no decoder blocks (vertices named layer<N>_...)");
  Result<std::vector<int64_t>> per_stage_blocks = stage_blocks(l, blocks);
  if (!per_stage_blocks) return per_stage_blocks.error();
  if (l.vpp > 1 && (l.pp_first > 0 || l.pp_last > 0))
    return layout_error("an interleaved schedule takes stages alike: no pp_first or pp_last",
                        "vpp");
  // Each block's stage, and its place in its stage (for recompute_blocks).
  std::vector<int> block_stage(static_cast<size_t>(blocks));
  std::vector<int64_t> block_place(static_cast<size_t>(blocks));
  {
    int64_t b = 0;
    for (size_t st = 0; st < per_stage_blocks->size(); ++st)
      for (int64_t i = 0; i < (*per_stage_blocks)[st]; ++i, ++b) {
        block_stage[static_cast<size_t>(b)] = static_cast<int>(st);
        block_place[static_cast<size_t>(b)] = i;
      }
  }
  const auto stage_of_block = [&](int b) { return block_stage[static_cast<size_t>(b)]; };
  const int64_t fewest =
      *std::min_element(per_stage_blocks->begin(), per_stage_blocks->end()) / l.vpp;
  if (l.recompute_blocks > 0 && l.recompute != Recompute::kFull)
    return layout_error("counts the blocks of full recomputation: it needs recompute=full",
                        "recompute_blocks");
  if (l.recompute_blocks > fewest)
    return layout_error("at most " + std::to_string(fewest) + ", the blocks of the smallest " +
                            (l.vpp > 1 ? "virtual stage" : "stage") + ", not " +
                            std::to_string(l.recompute_blocks),
                        "recompute_blocks");
  const int64_t etp = l.etp == 0 ? l.tp : l.etp;
  if (l.tp % etp != 0)
    return layout_error("the experts' tensor degree must divide tp (" + std::to_string(l.tp) + ")",
                        "etp");
  if (l.etp > 0 && l.etp != l.tp &&
      std::none_of(graph.vertices.begin(), graph.vertices.end(), has_experts))
    return layout_error(quoted_text(graph.name) + " has no experts: etp is tp's", "etp");
  const int64_t dp_shard = l.dp_shard == 0 ? l.dp : l.dp_shard;
  if (l.dp % dp_shard != 0)
    return layout_error("must divide dp (" + std::to_string(l.dp) + ")", "dp_shard");
  if (dp_shard != l.dp && l.zero != 3)
    return layout_error("hybrid sharding (a shard degree below dp) needs zero=3", "dp_shard");

  LayoutStrategy out;
  out.cluster = cluster;
  out.cluster.training.zero = l.zero;
  out.cluster.training.recompute = l.recompute;
  out.cluster.training.recompute_blocks = -1;
  out.cluster.training.recompute_rest = Recompute::kNone;
  out.cluster.training.recompute_of_block.clear();
  out.cluster.training.zero_replicas = l.dp / dp_shard;
  if (l.recompute_blocks > 0) {
    // The first k blocks of each stage, or of each of its vpp chunks.
    std::vector<Recompute>& modes = out.cluster.training.recompute_of_block;
    modes.assign(static_cast<size_t>(blocks), Recompute::kNone);
    for (int b = 0; b < blocks; ++b) {
      const int64_t chunk = (*per_stage_blocks)[static_cast<size_t>(block_stage[b])] / l.vpp;
      if (block_place[static_cast<size_t>(b)] % chunk < l.recompute_blocks)
        modes[static_cast<size_t>(b)] = Recompute::kFull;
    }
  }
  PipelineStrategy& s = out.strategy;
  s.microbatches = microbatches;
  s.virtual_stages = l.vpp;
  if (l.vpp > 1 && microbatches % l.pp != 0)
    return layout_error("an interleaved schedule needs micro-batches (" +
                            std::to_string(microbatches) + ") a multiple of pp",
                        "vpp");
  // Each virtual stage holds at least one block.
  if (l.vpp > blocks / l.pp)
    return layout_error("at most " + std::to_string(blocks / l.pp) +
                            " virtual stages: " + std::to_string(blocks) + " decoder blocks on " +
                            std::to_string(l.pp) + " stages, one block or more each",
                        "vpp");
  if (l.vpp > 1 && blocks % (l.pp * l.vpp) != 0)
    return layout_error(std::to_string(blocks) + " decoder blocks do not divide into pp x vpp = " +
                            std::to_string(l.pp * l.vpp) + " chunks",
                        "vpp");
  s.configs.resize(n);
  s.stage_of.resize(n);
  for (size_t v = 0; v < n; ++v) {
    const Vertex& vx = g.vertices[v];
    const VertexModel& model = model_of(g, static_cast<int>(v));
    const int b = model.block;
    s.stage_of[v] =
        b >= 0 ? stage_of_block(b) : (v < first_block_vertex ? 0 : static_cast<int>(l.pp) - 1);
    Config c(vx.dom.size(), 1);
    if (vx.op == "Einsum" || vx.op == "Embedding") {
      int64_t kv = 1;  // the key-value heads' share of tp
      for (size_t i = 0; i < vx.dims.size(); ++i)
        if (vx.dims[i] == "h") kv = std::gcd(l.tp, vx.dom[i]);
      // The experts' own products (gate, up, down: experts x, no positions
      // l) take their ep ways out of dp x cp, as Megatron-LM carves expert
      // parallelism: first from cp (gcd(ep, cp)), the rest from dp, which
      // that rest divides when ep divides dp x cp. Their token slots t keep
      // what cp has left, their batch what dp has left. The router and the
      // layers that meet the tokens (slots, dispatch, combine) split as the
      // tokens do, so the edges between them are the all-to-alls.
      const bool experts = has_dim(vx, "x") && !has_dim(vx, "l");
      const int64_t ep_of_cp = std::gcd(l.ep, l.cp), ep_of_dp = l.ep / ep_of_cp;
      for (size_t i = 0; i < vx.dims.size(); ++i) {
        const std::string& d = vx.dims[i];
        if (d == "b") c[i] = experts ? l.dp / ep_of_dp : l.dp;
        if (d == "l" || d == "s") c[i] = l.cp;
        if (d == "h") c[i] = kv;
        if (d == "r") c[i] = l.tp / kv;
        if (d == "f" || d == "v") c[i] = experts ? etp : l.tp;
        if (d == "x" && experts) c[i] = l.ep;
        if (d == "t" && experts) c[i] = l.cp / ep_of_cp * (l.tp / etp);
      }
    } else if (!vx.inputs.empty() && vx.inputs[0].producer >= 0) {
      // As its first input: the producer's tensor split, through this
      // vertex's map of that tensor.
      const Slot& slot = vx.inputs[0];
      const TensorMap& out_map = model_of(g, slot.producer).out_maps[slot.output];
      std::vector<int64_t> split(out_map.size());
      ops::tensor_config(out_map, s.configs[slot.producer].data(), split.data());
      const TensorMap& in_map = model.in_maps[0];
      for (size_t t = 0; t < in_map.size() && t < split.size(); ++t)
        if (in_map[t].size() == 1) c[in_map[t][0]] = split[t];
      // Sequence parallelism: the layers outside the tensor-parallel ones
      // split the sequence tp ways more.
      int64_t used = 1;
      for (int64_t x : c) used *= x;
      if (l.sp && used * l.tp <= per_stage)
        if (std::optional<size_t> i = sequence_dim(vx, seq)) c[*i] *= l.tp;
    } else {
      for (size_t i = 0; i < vx.kinds.size(); ++i)
        if (vx.kinds[i] == DimKind::kBatch) c[i] = l.dp;
    }
    int64_t used = 1;
    for (size_t i = 0; i < c.size(); ++i) {
      if (vx.dom[i] % c[i] != 0) {
        const std::string& d = vx.dims[i];
        const DimKind kind = vx.kinds[i];
        const char* field = d == "b" || kind == DimKind::kBatch                  ? "dp"
                            : d == "l" || d == "s" || kind == DimKind::kSequence ? "cp"
                            : d == "x" || kind == DimKind::kExperts              ? "ep"
                                                                                 : "tp";
        // A vocabulary the engines would pad (core/docs/llm.md) says how.
        const std::string hint =
            kind == DimKind::kVocabulary
                ? "; Megatron-LM pads the vocabulary to a multiple of 128 x tp, which a vocabulary "
                  "padding of 1 turns off"
                : "";
        return layout_error("a split of " + std::to_string(c[i]) + " does not divide " + vx.name +
                                "'s dimension " + d + " (" + std::to_string(vx.dom[i]) + ")" + hint,
                            field);
      }
      used *= c[i];
    }
    if (used > per_stage)
      return layout_error(vx.name + " would split over " + std::to_string(used) +
                          " devices, more than a stage's " + std::to_string(per_stage));
    s.configs[v] = std::move(c);
  }
  return out;
}

int64_t largest_batch(const Graph& graph) {
  int64_t most = 0;  // the most points per sample of a vertex with a batch
  for (const Vertex& v : graph.vertices) {
    int64_t points = 1;
    bool batched = false;
    for (size_t i = 0; i < v.dom.size(); ++i) {
      if (v.kinds[i] == DimKind::kBatch || v.dims[i] == "b") {
        batched = true;
      } else if (__builtin_mul_overflow(points, v.dom[i], &points)) {
        return 0;  // not even batch 1 (build_graph() would not have built it)
      }
    }
    if (batched) most = std::max(most, points);
  }
  // B x most < kMaxElements (op_table.hpp, element_count()).
  return most == 0 ? std::numeric_limits<int64_t>::max() : (kMaxElements - 1) / most;
}

std::optional<Error> check_global_batch(const Graph& graph, int64_t gbs) {
  const int64_t most = largest_batch(graph);
  if (gbs <= most) return std::nullopt;
  return layout_error(std::to_string(gbs) +
                          " is too large: a layer's iteration space has fewer than "
                          "2^62 points, which allows this model a global batch of at most " +
                          std::to_string(most),
                      "gbs");
}

}  // namespace pase
