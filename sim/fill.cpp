#include "sim/fill.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

#include <boost/json.hpp>

#include "scheduler/cluster.hpp"
#include "scheduler/fragmentation.hpp"
#include "scheduler/placement.hpp"
#include "scheduler/topology.hpp"
#include "sim/scenario.hpp"
#include "spec/enums.hpp"

namespace gpuq::sim {

namespace {

// Uniform in [0, n) from 64-bit draws by rejection: the same numbers on every platform (the
// standard distributions are implementation-defined).
std::uint64_t below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x;
  do x = rng();
  while (x >= limit);
  return x % n;
}

Cluster make_cluster(const std::vector<OpenbNode>& nodes, Quantity& capacity) {
  Cluster cluster;
  capacity = 0;
  for (const NodeSpec& spec : openb_nodes_as_specs(nodes, "gpu")) {
    if (!cluster.upsert(spec, 0, kNoQueue)) throw std::invalid_argument("node \"" + spec.name + "\" cannot be added");
    capacity += spec.capacity[kGpu];
  }
  if (capacity == 0) throw std::invalid_argument("the node list has no GPU");
  return cluster;
}

}  // namespace

FillRun run_fill(const std::vector<OpenbNode>& nodes, const std::vector<OpenbPod>& pods, PlacementPolicy policy,
                 double target, std::uint64_t seed) {
  if (pods.empty()) throw std::invalid_argument("the pod list is empty");
  FillRun run;
  run.seed = seed;
  Cluster cluster = make_cluster(nodes, run.capacity_milli);
  std::vector<ResourceVec> shapes;
  std::vector<NodeConstraints> wheres;  // each pod's: the GPU models it accepts (gpu_spec)
  std::vector<PodShape> mix;
  std::vector<NodeConstraints> where_sets;
  for (const OpenbPod& p : pods) {
    shapes.push_back(p.resources());
    wheres.push_back(p.where());
    mix.push_back(shape_of(shapes.back()));
    mix.back().where = intern_where(where_sets, wheres.back());  // FGD's pod type has the model
  }
  // The typical mix of the trace as given (FGD: before it is extended).
  const FragModel model = FragModel::typical(mix, std::move(where_sets));

  // The order: the pods shuffled, then drawn ones until the target (the one that would pass it
  // is not added).
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> order(pods.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[below(rng, i)]);
  Quantity asked = 0;
  for (const ResourceVec& s : shapes) asked += s[kGpu];
  const auto limit = static_cast<Quantity>(std::llround(target * static_cast<double>(run.capacity_milli)));
  while (true) {
    const std::size_t i = below(rng, pods.size());
    if (asked + shapes[i][kGpu] > limit) break;
    asked += shapes[i][kGpu];
    order.push_back(i);
  }

  Topology topology;
  const auto started = std::chrono::steady_clock::now();
  std::vector<PodSet> one(1);
  for (std::size_t i : order) {
    one[0].per_pod = shapes[i];
    one[0].where = wheres[i];
    PlacementRequest req{0, 0, false, &one, policy, &model};
    run.arrived_milli += shapes[i][kGpu];
    ++run.pods;
    if (auto slots = place(cluster, topology, req); !slots) ++run.failed;
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  double frag = 0;
  const FragModel published = model.as_published();  // frag_ratio: FGD's own measure
  for (NodeIdx i = 0; i < cluster.size(); ++i) {
    const Node& n = cluster.node(i);
    run.allocated_milli += n.used[kGpu];
    const std::uint64_t allowed = model.allowed(
        i, cluster.nodes_version(), [&](const NodeConstraints& where) { return cluster.allows(i, where); });
    frag += published.fragmentation(n.capacity[kCpu] - n.used[kCpu], n.gpu_free, allowed);
  }
  run.alloc_ratio = static_cast<double>(run.allocated_milli) / static_cast<double>(run.capacity_milli);
  run.frag_ratio = frag / static_cast<double>(run.capacity_milli);
  return run;
}

FillSummary summarize(PlacementPolicy policy, double target, std::vector<FillRun> runs) {
  FillSummary s;
  s.policy = to_string(policy);
  s.target = target;
  s.runs = std::move(runs);
  if (s.runs.empty()) return s;
  s.alloc_ratio_min = s.alloc_ratio_max = s.runs.front().alloc_ratio;
  for (const FillRun& r : s.runs) {
    s.alloc_ratio_mean += r.alloc_ratio;
    s.alloc_ratio_min = std::min(s.alloc_ratio_min, r.alloc_ratio);
    s.alloc_ratio_max = std::max(s.alloc_ratio_max, r.alloc_ratio);
    s.frag_ratio_mean += r.frag_ratio;
    s.failed_pods_mean += static_cast<double>(r.failed);
  }
  const auto n = static_cast<double>(s.runs.size());
  s.alloc_ratio_mean /= n;
  s.frag_ratio_mean /= n;
  s.failed_pods_mean /= n;
  return s;
}

namespace {

// Rounded so that the JSON is the same on every run and platform (the sums are exact integers;
// the ratios are printed to 1e-6).
double round6(double x) { return std::round(x * 1e6) / 1e6; }

boost::json::object summary_json(const FillSummary& s) {
  boost::json::object o;
  o["policy"] = s.policy;
  o["target"] = round6(s.target);
  boost::json::array seeds, runs;
  for (const FillRun& r : s.runs) {
    seeds.push_back(r.seed);
    runs.push_back({{"seed", r.seed},
                    {"pods", r.pods},
                    {"failed_pods", r.failed},
                    {"capacity_milli_gpu", r.capacity_milli},
                    {"arrived_milli_gpu", r.arrived_milli},
                    {"allocated_milli_gpu", r.allocated_milli},
                    {"alloc_ratio", round6(r.alloc_ratio)},
                    {"frag_ratio", round6(r.frag_ratio)}});
  }
  o["seeds"] = std::move(seeds);
  o["alloc_ratio_mean"] = round6(s.alloc_ratio_mean);
  o["alloc_ratio_min"] = round6(s.alloc_ratio_min);
  o["alloc_ratio_max"] = round6(s.alloc_ratio_max);
  o["frag_ratio_mean"] = round6(s.frag_ratio_mean);
  o["failed_pods_mean"] = round6(s.failed_pods_mean);
  o["runs"] = std::move(runs);
  return o;
}

}  // namespace

std::string to_json(const std::vector<FillSummary>& summaries) {
  if (summaries.size() == 1) return to_compact_json(summary_json(summaries.front())) + "\n";
  boost::json::array all;
  for (const FillSummary& s : summaries) all.push_back(summary_json(s));
  return to_compact_json(all) + "\n";
}

std::string to_table(const std::vector<FillSummary>& summaries) {
  std::ostringstream out;
  out << "POLICY       SEEDS  ALLOC% MEAN  MIN     MAX     FRAG% MEAN  FAILED PODS MEAN\n";
  char line[160];
  for (const FillSummary& s : summaries) {
    std::snprintf(line, sizeof line, "%-12s %-6zu %-11.2f %-7.2f %-7.2f %-11.2f %.1f\n", s.policy.c_str(),
                  s.runs.size(), 100 * s.alloc_ratio_mean, 100 * s.alloc_ratio_min, 100 * s.alloc_ratio_max,
                  100 * s.frag_ratio_mean, s.failed_pods_mean);
    out << line;
  }
  return out.str();
}

std::vector<std::uint64_t> parse_seeds(const std::string& text) {
  std::vector<std::uint64_t> out;
  auto number = [&](const std::string& t) -> std::uint64_t {
    std::size_t used = 0;
    std::uint64_t v = 0;
    try {
      v = std::stoull(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (t.empty() || used != t.size() || t[0] == '-' || t[0] == '+')
      throw std::invalid_argument("--seeds \"" + text + "\": \"" + t + "\" is not a seed; use N, A-B or A,B,C");
    return v;
  };
  std::stringstream parts(text);
  for (std::string part; std::getline(parts, part, ',');) {
    const auto dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(number(part));
      continue;
    }
    const std::uint64_t a = number(part.substr(0, dash)), b = number(part.substr(dash + 1));
    if (b < a || b - a > 100000)
      throw std::invalid_argument("--seeds \"" + text + "\": range " + part + " is not A-B with A <= B (at most 100000 seeds)");
    for (std::uint64_t s = a; s <= b; ++s) out.push_back(s);
  }
  if (out.empty()) throw std::invalid_argument("--seeds \"" + text + "\": no seed given");
  return out;
}

}  // namespace gpuq::sim
