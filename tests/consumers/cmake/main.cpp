// A program that links the installed library: plans a built-in network on a
// flat ring of devices and prints the plan, its layers grouped by how they
// are split.
//
//   plan_model [MODEL=alexnet] [DEVICES=8]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "pase/summary.hpp"
#include "pase/version.hpp"

int main(int argc, char** argv) {
  const std::string model = argc > 1 ? argv[1] : "alexnet";
  pase::Cluster cluster;
  cluster.devices = argc > 2 ? std::atoll(argv[2]) : 8;

  pase::Result<pase::Graph> graph = pase::build_model(model);
  if (!graph) {
    std::fprintf(stderr, "plan_model: %s\n", graph.error().to_string().c_str());
    return 1;
  }
  pase::Result<pase::Plan> plan = pase::plan(*graph, cluster);
  if (!plan) {
    std::fprintf(stderr, "plan_model: %s\n", plan.error().to_string().c_str());
    return 1;
  }
  std::printf("pase %s: %s on %lld devices\n", pase::version(), model.c_str(),
              static_cast<long long>(cluster.devices));
  for (const pase::LayerGroup& group : pase::summarize(*graph, *plan))
    std::printf("  %s: %zu %s\n", group.label.c_str(), group.vertices.size(),
                group.vertices.size() == 1 ? "layer" : "layers");
  std::printf("step %.6f s, cost %.6e FLOP-equivalents\n", plan->step_time_s, plan->cost);
  return 0;
}
