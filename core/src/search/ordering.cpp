// GenerateSeq (Elango, IPDPS 2021, Fig. 3), breadth-first order, and the
// dependent sets D(i) of any sequence; the names of the orders and search
// modes (pase/plan.hpp).
#include "search/ordering.hpp"

#include <algorithm>
#include <numeric>
#include <queue>
#include <set>

namespace pase {

const char* order_name(Order order) {
  switch (order) {
    case Order::kGenSeq:
      return "genseq";
    case Order::kBfs:
      return "bfs";
    case Order::kMinTable:
      return "mintable";
  }
  return "?";
}

const char* search_mode_name(SearchMode mode) {
  switch (mode) {
    case SearchMode::kAuto:
      return "auto";
    case SearchMode::kExact:
      return "exact";
    case SearchMode::kBounded:
      return "bounded";
  }
  return "?";
}

Adjacency make_adjacency(const Graph& g) {
  Adjacency adj(g.vertices.size());
  for (const Edge& e : g.edges) {
    if (e.src == e.dst) continue;
    adj[e.src].push_back(e.dst);
    adj[e.dst].push_back(e.src);
  }
  for (auto& a : adj) {
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
  }
  return adj;
}

namespace {

std::vector<int> set_union(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  out.reserve(a.size() + b.size());
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

void erase_value(std::vector<int>& s, int x) {
  auto it = std::lower_bound(s.begin(), s.end(), x);
  if (it != s.end() && *it == x) s.erase(it);
}

}  // namespace

std::vector<int> genseq_sequence(const Adjacency& adj, const std::vector<double>* weights) {
  int n = static_cast<int>(adj.size());
  // S[v]: the dependent set v would have if processed next. It holds the
  // unprocessed vertices joined to v through processed ones only.
  std::vector<std::vector<int>> s(adj);
  auto key = [&](int v) {
    if (!weights) return static_cast<double>(s[v].size());
    double k = 1;
    for (int u : s[v]) k *= (*weights)[u];
    return k;
  };
  std::set<std::pair<double, int>> heap;
  std::vector<double> keys(n);
  for (int v = 0; v < n; ++v) heap.insert({keys[v] = key(v), v});
  std::vector<int> seq;
  seq.reserve(n);
  while (!heap.empty()) {
    int v = heap.begin()->second;
    heap.erase(heap.begin());
    seq.push_back(v);
    for (int w : s[v]) {
      std::vector<int> merged = set_union(s[w], s[v]);
      erase_value(merged, v);
      erase_value(merged, w);
      s[w] = std::move(merged);
      heap.erase({keys[w], w});
      heap.insert({keys[w] = key(w), w});
    }
  }
  return seq;
}

std::vector<int> bfs_sequence(const Adjacency& adj) {
  int n = static_cast<int>(adj.size());
  std::vector<char> seen(n, 0);
  std::vector<int> seq;
  seq.reserve(n);
  for (int root = 0; root < n; ++root) {
    if (seen[root]) continue;
    std::queue<int> q;
    q.push(root);
    seen[root] = 1;
    while (!q.empty()) {
      int v = q.front();
      q.pop();
      seq.push_back(v);
      for (int u : adj[v])
        if (!seen[u]) {
          seen[u] = 1;
          q.push(u);
        }
    }
  }
  return seq;
}

Ordering make_steps(const Adjacency& adj, const std::vector<int>& sequence, Order order) {
  int n = static_cast<int>(adj.size());
  Ordering out;
  out.order = order;
  out.position.assign(n, -1);
  for (int i = 0; i < static_cast<int>(sequence.size()); ++i) out.position[sequence[i]] = i;
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::vector<std::vector<int>> comp_dep(n);  // by component root: its dependent set (ids, sorted)
  std::vector<int> comp_step(n, -1);          // by component root: the step that made its table
  std::vector<char> done(n, 0);
  for (int i = 0; i < static_cast<int>(sequence.size()); ++i) {
    int v = sequence[i];
    Step st;
    st.vertex = v;
    std::vector<int> roots;
    std::vector<int> dep;
    for (int u : adj[v]) {
      if (done[u]) {
        roots.push_back(find(u));
      } else {
        st.new_neighbors.push_back(u);
        dep.push_back(u);
      }
    }
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    for (int r : roots) {
      dep = set_union(dep, comp_dep[r]);
      st.consumed.push_back(comp_step[r]);
      comp_dep[r].clear();
      comp_dep[r].shrink_to_fit();
    }
    erase_value(dep, v);
    std::sort(st.consumed.begin(), st.consumed.end());
    done[v] = 1;
    for (int r : roots) parent[r] = v;
    comp_dep[v] = dep;
    comp_step[v] = i;
    std::sort(dep.begin(), dep.end(),
              [&](int a, int b) { return out.position[a] > out.position[b]; });
    st.dep = std::move(dep);
    out.steps.push_back(std::move(st));
  }
  return out;
}

Ordering make_ordering(const Graph& g, Order order, const std::vector<size_t>& config_counts,
                       int last) {
  Adjacency adj = make_adjacency(g);
  std::vector<int> seq;
  if (order == Order::kBfs) {
    seq = bfs_sequence(adj);
  } else if (order == Order::kMinTable) {
    std::vector<double> w(config_counts.begin(), config_counts.end());
    seq = genseq_sequence(adj, &w);
  } else {
    seq = genseq_sequence(adj, nullptr);
  }
  if (last >= 0) {
    erase_value(seq, last);
    seq.push_back(last);
  }
  return make_steps(adj, seq, order);
}

}  // namespace pase
