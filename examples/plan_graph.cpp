// A minimal tool linking pase_core: plans a pase-graph/1 file for a cluster
// and prints each layer's configuration.
//
//   plan_graph examples/graphs/small_cnn.json 16
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "pase/graph.hpp"
#include "pase/plan.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: plan_graph GRAPH.json [DEVICES]\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "plan_graph: cannot read %s\n", argv[1]);
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  pase::Result<pase::Graph> graph = pase::load_graph(text.str());
  if (!graph) {
    std::fprintf(stderr, "plan_graph: %s\n", graph.error().to_string().c_str());
    return 1;
  }
  pase::Cluster cluster;
  if (argc > 2) cluster.devices = std::atoll(argv[2]);
  pase::Result<pase::Plan> plan = pase::plan(*graph, cluster);
  if (!plan) {
    std::fprintf(stderr, "plan_graph: %s\n", plan.error().to_string().c_str());
    return 1;
  }
  for (const pase::Vertex& v : graph->vertices) {
    std::printf("%-12s %-20s", v.name.c_str(), v.op.c_str());
    for (size_t k = 0; k < v.dims.size(); ++k)
      std::printf(" %s=%lld", v.dims[k].c_str(), static_cast<long long>(plan->strategy[v.id][k]));
    std::printf("\n");
  }
  std::printf("cost %.6e FLOP-equivalents, step %.6f s\n", plan->cost, plan->step_time_s);
  return 0;
}
