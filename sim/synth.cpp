#include "sim/synth.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

namespace gpuq::sim {
namespace {

// Uniform in [0, 1) from 53 random bits: the same on every platform (std distributions are not).
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

struct Shape {
  int pods, gpus_per_pod, milli;  // milli < 1000: a share of one GPU
  double weight;
};
constexpr Shape kShapes[] = {{1, 1, 500, 0.055}, {1, 1, 1000, 0.495}, {1, 2, 1000, 0.15},
                             {1, 4, 1000, 0.15},  {1, 8, 1000, 0.10},  {2, 8, 1000, 0.05}};
constexpr double kMinDuration = 120, kMaxDuration = 8 * 3600;

double mean_gpu_seconds() {
  // E[duration] for log-uniform on [a, b] is (b - a) / ln(b / a).
  const double mean_duration = (kMaxDuration - kMinDuration) / std::log(kMaxDuration / kMinDuration);
  double gpus = 0;
  for (const Shape& s : kShapes) gpus += s.weight * s.pods * s.gpus_per_pod * s.milli / 1000.0;
  return gpus * mean_duration;
}

}  // namespace

std::string synth_trace(const SynthOptions& o) {
  std::mt19937_64 rng(o.seed);
  const double rate = o.load * static_cast<double>(o.gpus) / mean_gpu_seconds();  // jobs per second
  double total = 0;
  for (std::size_t q = 0; q < o.queues; ++q) total += 1.0 / static_cast<double>(q + 1);
  std::string out = "id,submit,queue,priority,pods,gpu,cpu,memory,duration,max_runtime,checkpoint\n";
  out.reserve(o.jobs * 64);
  double t = 0;
  for (std::size_t i = 0; i < o.jobs; ++i) {
    t += -std::log(1.0 - unit(rng)) / rate;
    // Queue: Zipf-like, q0 the busiest.
    double pick = unit(rng) * total;
    std::size_t q = 0;
    while (q + 1 < o.queues && pick >= 1.0 / static_cast<double>(q + 1)) pick -= 1.0 / static_cast<double>(++q);
    double s = unit(rng);
    const Shape* shape = &kShapes[0];
    for (const Shape& c : kShapes) {
      shape = &c;
      if (s < c.weight) break;
      s -= c.weight;
    }
    const double duration = kMinDuration * std::pow(kMaxDuration / kMinDuration, unit(rng));
    const bool high = unit(rng) < 0.05;
    const bool checkpoint = unit(rng) < o.checkpoint_share;
    const int gpus = shape->gpus_per_pod;
    char gpu[16];
    if (shape->milli < 1000) std::snprintf(gpu, sizeof gpu, "%dm", shape->milli);
    else std::snprintf(gpu, sizeof gpu, "%d", gpus);
    char row[160];
    std::snprintf(row, sizeof row, "j%zu,%lld,q%zu,%d,%d,%s,%d,%dGi,%lld,,%s\n", i, static_cast<long long>(t), q,
                  high ? 100 : 0, shape->pods, gpu, 4 * gpus, 32 * gpus, static_cast<long long>(duration) + 1,
                  checkpoint ? "600" : "");
    out += row;
  }
  return out;
}

std::string synth_cluster(const SynthOptions& o) {
  std::string out = "# " + std::to_string(o.gpus) + " GPUs in nodes of 8 (gpuq sim synth)\nnodes:\n";
  for (std::size_t n = 0, left = o.gpus; left > 0; ++n) {
    const std::size_t g = std::min<std::size_t>(8, left);
    left -= g;
    out += "  - {name: n" + std::to_string(n) + ", flavor: default, capacity: {gpu: " + std::to_string(g) +
           ", cpu: 64, memory: 512Gi}}\n";
  }
  return out;
}

std::string synth_queues(const SynthOptions& o) {
  std::string out = "# " + std::to_string(o.queues) + " queues sharing " + std::to_string(o.gpus) +
                    " GPUs in one cohort (gpuq sim synth)\nqueues:\n";
  const std::size_t share = std::max<std::size_t>(1, o.gpus / std::max<std::size_t>(1, o.queues));
  for (std::size_t q = 0; q < o.queues; ++q)
    out += "  - name: q" + std::to_string(q) +
           "\n    cohort: all\n    quotas:\n      - flavor: default\n        resources:\n          gpu: {nominal: " +
           std::to_string(share) + "}\n          cpu: {nominal: " + std::to_string(share * 8) +
           "}\n          memory: {nominal: " + std::to_string(share * 64) +
           "Gi}\n    preemption:\n      withinQueue: LowerPriority\n      reclaimWithinCohort: Any\n";
  return out;
}

}  // namespace gpuq::sim
