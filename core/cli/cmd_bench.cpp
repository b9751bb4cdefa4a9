// `pase bench`: plans a grid of networks x device counts x orders and prints,
// per case, the search's size, time, memory and speed (ns per visited pair),
// next to a calibration loop that does one table read and one add per pair.
//
// Each case runs in a forked child so that its peak resident memory is its
// own (wait4 reports the child's high-water mark).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_layouts.hpp"
#include "commands.hpp"
#include "flags.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "report.hpp"
#include "util/text.hpp"

namespace pase_cli {

namespace {

struct Case {
  std::string model;
  int64_t devices = 0;
  pase::Order order = pase::Order::kGenSeq;
  pase::Cluster cluster;  // devices included
  int threads = 1;
  int vertices = 0;
  bool ran = false;
  std::string note;  // why it did not run
  pase::SearchStats stats;
  double cost = 0;
  double time_s = 0;
  int searches = 0;  // dynamic-program runs (several under a memory cap)
  double peak_rss_bytes = 0;
};

// What the child sends back through the pipe.
struct Report {
  int ok = 0;
  double cost = 0;
  double time_s = 0;
  int searches = 0;
  char message[256] = {};
};

// One read and one add per pair over a table that stays in cache, with four
// independent sums so that the loop is bound by throughput, not latency: the
// floor for a search that must read every table entry once per pair.
double calibrate_ns_per_pair() {
  std::vector<double> table(1 << 14);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<double>(i % 97);
  const int reps = 8000;
  auto start = std::chrono::steady_clock::now();
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int r = 0; r < reps; ++r) {
    const double* t = table.data();
    for (size_t i = 0; i < table.size(); i += 4) {
      s0 += t[i];
      s1 += t[i + 1];
      s2 += t[i + 2];
      s3 += t[i + 3];
    }
    table[r % table.size()] += 1e-9;  // keep the compiler from hoisting the loop
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  volatile double sink = s0 + s1 + s2 + s3;
  (void)sink;
  return secs * 1e9 / (static_cast<double>(reps) * static_cast<double>(table.size()));
}

void run_case(Case& c, uint64_t max_memory) {
  auto g = pase::build_model(c.model);
  if (!g) {
    c.note = g.error().to_string();
    return;
  }
  c.vertices = static_cast<int>(g->vertices.size());
  const pase::Cluster& cluster = c.cluster;
  pase::PlanOptions opt;
  opt.order = c.order;
  opt.max_memory = max_memory;
  opt.threads = c.threads;
  // The bench measures the exact search: an order over the limit is
  // reported, not bounded.
  opt.search = pase::SearchMode::kExact;
  auto est = pase::estimate(*g, cluster, opt);
  if (!est) {
    c.note = est.error().to_string();
    return;
  }
  c.stats = *est;
  if (max_memory && est->peak_bytes > static_cast<double>(max_memory)) {
    c.note = "needs " + pase::bytes_text(est->peak_bytes) + " of tables (limit " +
             pase::bytes_text(max_memory) + ")";
    return;
  }
  int fds[2];
  if (pipe(fds) != 0) {
    c.note = "pipe failed";
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Report r;
    auto p = pase::plan(*g, cluster, opt);
    if (p) {
      r.ok = 1;
      r.cost = p->cost;
      r.time_s = p->search.time_s;
      r.searches = p->search.searches;
    } else {
      std::snprintf(r.message, sizeof r.message, "%s", p.error().to_string().c_str());
    }
    ssize_t w = write(fds[1], &r, sizeof r);
    _exit(w == static_cast<ssize_t>(sizeof r) ? 0 : 1);
  }
  close(fds[1]);
  Report r;
  ssize_t got = pid > 0 ? read(fds[0], &r, sizeof r) : -1;
  close(fds[0]);
  int status = 0;
  struct rusage ru {};
  if (pid > 0) wait4(pid, &status, 0, &ru);
  if (got != static_cast<ssize_t>(sizeof r)) {
    c.note = "the planning process failed";
    return;
  }
  if (!r.ok) {
    c.note = r.message;
    return;
  }
  c.ran = true;
  c.cost = r.cost;
  c.time_s = r.time_s;
  c.searches = r.searches;
  c.peak_rss_bytes = static_cast<double>(ru.ru_maxrss) * 1024.0;
}

}  // namespace

std::string bench_usage() {
  return "usage: pase bench [--models LIST] [--procs LIST] [--order LIST] [options]\n\n"
         "Plans every network at every device count with every order and prints, per\n"
         "case: vertices, largest dependent set, largest table (entries and bytes),\n"
         "pairs visited (and as many as tables on raw configurations would visit),\n"
         "threads, dynamic-program runs (srch: several under a memory cap), time,\n"
         "peak resident memory, cost and nanoseconds per pair.\n"
         "An order whose tables exceed --max-memory is reported with the memory it\n"
         "would need instead of being run. Each case runs in its own process.\n\n"
         "  --models LIST       comma-separated networks (default: the paper's five;\n"
         "                      name the language models of 'pase models' to add them)\n"
         "  --procs LIST        comma-separated device counts (default 4,8,16,32,64)\n"
         "  --order LIST        comma-separated orders: genseq, bfs, mintable (default genseq)\n"
         "  --preset NAME       a GPU's TFLOP/s, bandwidths and node size (see 'pase\n"
         "                      presets'; not its memory: bench times single searches,\n"
         "                      without a memory cap); the flags below override it\n"
         "  --flops TF          peak TFLOP/s of one device (default 10)\n"
         "  --bandwidth GBS     link bandwidth in GB/s (default 16); with nodes, the\n"
         "                      bandwidth between nodes\n"
         "  --gpus-per-node G   devices per node, with --intra-bandwidth (default: one\n"
         "                      flat network)\n"
         "  --intra-bandwidth GBS\n"
         "                      bandwidth inside a node in GB/s\n"
         "  --cost-model M      paper or practice (default: practice with a preset or\n"
         "                      nodes, else paper; --large: paper)\n"
         "  --max-memory SIZE   table limit per case (default 4GiB)\n"
         "  --threads LIST      comma-separated thread counts, each case run with each\n"
         "                      (default: every core)\n"
         "  --large             the large cases instead of the grid: the Transformer at\n"
         "                      256 and 1024 devices (flat), llama3-8b and gpt3-175b on\n"
         "                      1024 H100 (128 nodes of 8) under the preset's 80 GiB\n"
         "  --published FILE    instead: the practice cost model against the published\n"
         "                      training runs of FILE (examples/published-runs.json):\n"
         "                      each run's layout evaluated, its predicted step time\n"
         "                      beside the measured one, its memory beside the GPU's\n"
         "  --fit               with --published: first fit the practice model's rates\n"
         "                      per GPU kind to the runs (least squares of the log\n"
         "                      error, coordinate descent), print them and price the\n"
         "                      runs with them\n"
         "  --plan SECONDS      with --published: plan each run's model on its cluster\n"
         "                      and global batch as 'pase plan' answers it (the best\n"
         "                      layout, then the per-layer plan with ZeRO, stages,\n"
         "                      micro-batches and recomputation searched, under its\n"
         "                      GPU's memory), with the time limit SECONDS, and print\n"
         "                      both steps beside the published layout's, with the\n"
         "                      time and the proven gap\n"
         "  --goals             instead: the planning-time goals (core/docs/\n"
         "                      performance.md), each planned as 'pase plan' answers\n"
         "                      it under its time limit, with the time and the gap;\n"
         "                      with --published FILE, also Llama 3 405B (its run L1's\n"
         "                      config) on 16,384 H100\n"
         "  --layouts           instead: the layout search (pase layouts) of every\n"
         "                      built-in language model on 8, 64 and 1024 H100 (nodes of\n"
         "                      8) at a global batch of 4 x GPUs and the model's sequence,\n"
         "                      and the engines' verdicts on its top 10 layouts, each\n"
         "                      checked by the engines' rules and by writing the\n"
         "                      accepted exports; --models and --procs narrow it\n"
         "  --json              instead: read a config.json and a strategy with 10,000,\n"
         "                      100,000 and 1,000,000 extra keys and print the time per\n"
         "                      MiB and per key (flat when reading is linear)\n"
         "  --format FORMAT     text (default) or json\n";
}

int run_bench(const Args& args) {
  Flags flags;
  const std::vector<FlagSpec> specs = {{"--models", true},        {"--procs", true},
                                       {"--order", true},         {"--preset", true},
                                       {"--flops", true},         {"--bandwidth", true},
                                       {"--gpus-per-node", true}, {"--intra-bandwidth", true},
                                       {"--max-memory", true},    {"--threads", true},
                                       {"--large", false},        {"--format", true},
                                       {"--published", true},     {"--fit", false},
                                       {"--cost-model", true},    {"--plan", true},
                                       {"--json", false},         {"--layouts", false},
                                       {"--goals", false}};
  if (auto message = parse_flags(args, specs, flags)) return usage_error("bench", *message);
  if (flags.has("--goals")) {
    const std::optional<std::string> published = flags.get("--published");
    if (args.size() != (published ? 3u : 1u))
      return usage_error("bench",
                         "--goals sets its own cases: give it alone, or with --published FILE");
    return run_bench_goals(published);
  }
  if (flags.has("--json")) {
    for (std::string_view name :
         {"--models", "--procs", "--order", "--preset", "--flops", "--bandwidth", "--gpus-per-node",
          "--intra-bandwidth", "--max-memory", "--threads", "--large", "--cost-model",
          "--published", "--fit", "--plan", "--layouts"})
      if (flags.has(name))
        return usage_error("bench",
                           "--json reads its own documents: give it without " + std::string(name));
    bool as_json = false;
    if (auto failure = format_from_flags(flags, as_json)) return failure->report("bench");
    return run_bench_json(as_json);
  }
  if (flags.has("--layouts")) {
    for (std::string_view name :
         {"--order", "--preset", "--flops", "--bandwidth", "--gpus-per-node", "--intra-bandwidth",
          "--max-memory", "--threads", "--large", "--cost-model", "--published", "--fit", "--plan"})
      if (flags.has(name))
        return usage_error("bench",
                           "--layouts sets its own clusters (H100, nodes of 8): give it "
                           "without " +
                               std::string(name));
    bool as_json = false;
    if (auto failure = format_from_flags(flags, as_json)) return failure->report("bench");
    std::vector<std::string> names;
    for (const pase::ModelInfo& m : pase::list_models())
      if (m.llm) names.push_back(m.name);
    if (auto text = flags.get("--models")) names = split_list(*text);
    std::vector<int64_t> counts = {8, 64, 1024};
    if (auto text = flags.get("--procs")) {
      counts.clear();
      for (const std::string& item : split_list(*text)) {
        std::optional<int64_t> n = parse_int(item);
        if (!n || *n < 8 || *n % 8 != 0 || *n > 65536)
          return usage_error(
              "bench", "--procs: '" + *text + "' is not a list of whole nodes of 8 (8 to 65536)");
        counts.push_back(*n);
      }
    }
    return run_bench_layouts(names, counts, as_json);
  }
  if ((flags.has("--fit") || flags.has("--plan")) && !flags.has("--published"))
    return usage_error("bench", "--fit and --plan work on published runs: give --published FILE");
  if (std::optional<std::string> published = flags.get("--published")) {
    for (std::string_view name :
         {"--models", "--procs", "--order", "--preset", "--flops", "--bandwidth", "--gpus-per-node",
          "--intra-bandwidth", "--max-memory", "--threads", "--large", "--cost-model"})
      if (flags.has(name))
        return usage_error("bench",
                           "--published takes each run's own cluster and layout: give "
                           "it without " +
                               std::string(name));
    bool as_json = false;
    if (auto failure = format_from_flags(flags, as_json)) return failure->report("bench");
    double plan_limit = 0;
    if (std::optional<std::string> text = flags.get("--plan")) {
      std::optional<double> limit = parse_double(*text);
      if (!limit || !(*limit > 0))
        return usage_error("bench", "--plan: '" + *text + "' is not a number of seconds");
      if (as_json || flags.has("--fit"))
        return usage_error("bench", "--plan prints text, without --fit");
      plan_limit = *limit;
    }
    return run_bench_published(*published, as_json, flags.has("--fit"), plan_limit);
  }
  const bool large = flags.has("--large");
  if (large)
    for (std::string_view name : {"--models", "--procs", "--order", "--preset", "--flops",
                                  "--bandwidth", "--gpus-per-node", "--intra-bandwidth"})
      if (flags.has(name))
        return usage_error("bench",
                           "--large sets its own cases: give it without " + std::string(name));
  std::vector<int> thread_counts = {pase::default_threads()};
  if (auto text = flags.get("--threads")) {
    thread_counts.clear();
    for (const std::string& item : split_list(*text)) {
      std::optional<int64_t> n = parse_int(item);
      if (!n || *n < 1 || *n > kMaxThreads)
        return usage_error("bench", "--threads: '" + *text +
                                        "' is not a list of thread counts (1 to " +
                                        std::to_string(kMaxThreads) + ", e.g. 1,2)");
      thread_counts.push_back(static_cast<int>(*n));
    }
  }
  bool json = false;
  if (auto failure = format_from_flags(flags, json)) return failure->report("bench");
  // --procs is a list here: only the machine's speeds and nodes go through the
  // shared parser. Each case is one search: a preset's memory is no cap here.
  Flags machine;
  for (std::string_view name : {"--preset", "--flops", "--bandwidth", "--gpus-per-node",
                                "--intra-bandwidth", "--cost-model"})
    if (auto value = flags.get(name)) machine.set(name, *value);
  pase::Cluster cluster;
  if (auto failure = cluster_from_flags(machine, cluster)) return failure->report("bench");
  cluster.memory_gib = 0;
  // The grid of core/docs/performance.md: the paper's networks.
  std::vector<std::string> models;
  for (const pase::ModelInfo& m : pase::list_models())
    if (!m.llm) models.push_back(m.name);
  if (auto text = flags.get("--models")) models = split_list(*text);
  for (const std::string& m : models)
    if (auto spec = pase::model_spec(m); !spec) return input_error(spec.error());
  std::vector<int64_t> procs = {4, 8, 16, 32, 64};
  if (auto text = flags.get("--procs")) {
    procs.clear();
    for (const std::string& item : split_list(*text)) {
      std::optional<int64_t> n = parse_int(item);
      if (!n)
        return usage_error("bench", "--procs: '" + *text + "' is not a list of integers (4,8,16)");
      pase::Cluster c = cluster;
      c.devices = *n;
      if (std::optional<pase::Error> e = pase::check_cluster(c)) return input_error(*e);
      procs.push_back(*n);
    }
  }
  std::vector<pase::Order> orders = {pase::Order::kGenSeq};
  if (auto text = flags.get("--order")) {
    orders.clear();
    for (const std::string& item : split_list(*text)) {
      pase::Result<pase::Order> o = pase::parse_order(item);
      if (!o) return usage_error("bench", "--order: " + o.error().message);
      orders.push_back(*o);
    }
  }
  uint64_t max_memory = uint64_t{4} << 30;
  if (auto text = flags.get("--max-memory")) {
    std::optional<uint64_t> bytes = parse_size(*text);
    if (!bytes)
      return usage_error("bench", "--max-memory: '" + *text + "' is not a size (e.g. 512M, 4GiB)");
    max_memory = *bytes;
  }

  // The cases: the grid, or the large cases of core/docs/performance.md
  // ("Planning at scale"): the Transformer at 256 and 1024 devices on the
  // default flat machine, and two language models on 128 nodes of 8 H100,
  // planned under the preset's 80 GiB.
  std::vector<Case> todo;
  auto add_case = [&](const std::string& model, const pase::Cluster& c, pase::Order o) {
    for (int t : thread_counts) {
      Case k;
      k.model = model;
      k.devices = c.devices;
      k.order = o;
      k.cluster = c;
      k.threads = t;
      todo.push_back(k);
    }
  };
  if (large) {
    pase::Cluster flat;
    for (int64_t p : {256, 1024}) {
      flat.devices = p;
      add_case("transformer", flat, pase::Order::kGenSeq);
    }
    Flags h100;
    h100.set("--preset", "h100");
    h100.set("--procs", "1024");
    // The paper model unless told: the figures of core/docs/performance.md.
    h100.set("--cost-model", flags.get("--cost-model").value_or("paper"));
    pase::Cluster nodes;
    if (auto failure = cluster_from_flags(h100, nodes)) return failure->report("bench");
    for (const char* model : {"llama3-8b", "gpt3-175b"})
      add_case(model, nodes, pase::Order::kGenSeq);
  } else {
    for (const std::string& m : models)
      for (int64_t p : procs)
        for (pase::Order o : orders) {
          pase::Cluster c = cluster;
          c.devices = p;
          add_case(m, c, o);
        }
  }

  double calib = calibrate_ns_per_pair();
  std::vector<Case> cases;
  auto t0 = std::chrono::steady_clock::now();
  auto ns_per_pair = [](const Case& c) {
    return c.stats.pairs > 0 ? c.time_s * 1e9 / c.stats.pairs : 0.0;
  };
  for (Case& c : todo) {
    run_case(c, max_memory);
    if (!json) {
      if (cases.empty()) {
        std::printf("%-12s %5s %-8s %3s %5s %4s %10s %10s %14s %16s %3s %9s %10s %20s %8s\n",
                    "network", "procs", "order", "thr", "verts", "maxD", "largest", "table",
                    "pairs", "raw_pairs", "srch", "time", "peak_rss", "cost", "ns/pair");
      }
      std::string largest = grouped(c.stats.largest_table);
      std::string table = pase::bytes_text(c.stats.largest_table * 8);
      if (c.ran) {
        std::printf("%-12s %5lld %-8s %3d %5d %4d %10s %10s %14s %16s %3d %9s %10s %20s %8.3f\n",
                    c.model.c_str(), static_cast<long long>(c.devices), pase::order_name(c.order),
                    c.threads, c.vertices, c.stats.max_dependent_set, largest.c_str(),
                    table.c_str(), grouped(c.stats.pairs).c_str(),
                    grouped(c.stats.raw_pairs).c_str(), c.searches, seconds_text(c.time_s).c_str(),
                    pase::bytes_text(c.peak_rss_bytes).c_str(), exact(c.cost).c_str(),
                    ns_per_pair(c));
      } else {
        std::printf("%-12s %5lld %-8s %3d %5d %4d %10s %10s  not run: %s\n", c.model.c_str(),
                    static_cast<long long>(c.devices), pase::order_name(c.order), c.threads,
                    c.vertices, c.stats.max_dependent_set, largest.c_str(), table.c_str(),
                    c.note.c_str());
      }
      std::fflush(stdout);
    }
    cases.push_back(c);
  }
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double pairs = 0, secs = 0;
  for (const Case& c : cases)
    if (c.ran) {
      pairs += c.stats.pairs;
      secs += c.time_s;
    }
  double overall = pairs > 0 ? secs * 1e9 / pairs : 0;
  if (!json) {
    std::printf(
        "\ncalibration: %.3f ns per pair (one read + one add, in cache); all cases: %.3f ns per "
        "pair "
        "(%.1fx the calibration)\n",
        calib, overall, calib > 0 ? overall / calib : 0);
    std::printf("total: %zu cases in %s (planning %s)\n", cases.size(), seconds_text(total).c_str(),
                seconds_text(secs).c_str());
    return kExitOk;
  }
  nlohmann::ordered_json doc;
  doc["calibration_ns_per_pair"] = calib;
  doc["ns_per_pair"] = overall;
  doc["total_time_s"] = total;
  doc["cases"] = nlohmann::ordered_json::array();
  for (const Case& c : cases) {
    nlohmann::ordered_json j;
    j["network"] = c.model;
    j["devices"] = c.devices;
    j["order"] = pase::order_name(c.order);
    j["threads"] = c.threads;
    j["gpus_per_node"] = c.cluster.gpus_per_node;
    j["memory_gib"] = c.cluster.memory_gib;
    j["vertices"] = c.vertices;
    j["max_dependent_set"] = c.stats.max_dependent_set;
    j["largest_table"] = c.stats.largest_table;
    j["largest_table_bytes"] = c.stats.largest_table * 8;
    j["pairs"] = c.stats.pairs;
    j["predicted_peak_bytes"] = c.stats.peak_bytes;
    j["raw_pairs"] = c.stats.raw_pairs;
    j["raw_predicted_peak_bytes"] = c.stats.raw_peak_bytes;
    j["ran"] = c.ran;
    if (c.ran) {
      j["searches"] = c.searches;
      j["time_s"] = c.time_s;
      j["peak_rss_bytes"] = c.peak_rss_bytes;
      j["cost"] = c.cost;
      j["ns_per_pair"] = ns_per_pair(c);
    } else {
      j["note"] = c.note;
    }
    doc["cases"].push_back(j);
  }
  return write_stdout(doc.dump(2) + "\n") ? kExitOk : kExitError;
}

}  // namespace pase_cli
