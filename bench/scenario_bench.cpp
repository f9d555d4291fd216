// scenario_bench: one scheduling cycle as a user runs it, `gpuq sim scenario FILE`, timed as a
// whole process (reading and checking the YAML, loading the engine, the cycle, the JSON out),
// beside the engine alone on the same input.
//
// For each node count it writes a scenario: Q queues (one cohort, nominal quotas that sum to the
// cluster), N nodes of 8 GPUs / 128 cores / 1 TiB with two labels, and J pending one-GPU jobs
// (12 cores, 96 GiB) spread over the queues, in block-style YAML as a person would write it.
// Then:
//   whole command: `gpuq sim scenario FILE > out.json`, --runs times, medians of wall and CPU
//                  time (the child's user + system time); admissions/s = admitted / wall;
//   engine alone:  the same specs built in memory (no YAML), submit() of every job and one
//                  schedule(), medians over --runs.
// Nothing is asserted about time. See bench/README.md.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "scheduler/engine.hpp"

namespace {

using namespace gpuq;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string gpuq = GPUQ_PATH;
  std::vector<int> nodes{2500, 10000};
  int jobs = 20000;
  int queues = 100;
  int runs = 5;
  std::string keep;  // write the scenarios here and keep them
};

constexpr Quantity kGi = Quantity{1} << 30;
constexpr int kGpus = 8, kCores = 128, kMemGi = 1024, kJobCores = 12, kJobMemGi = 96;

std::string queue_name(int q) {
  char b[16];
  std::snprintf(b, sizeof b, "q%03d", q);
  return b;
}
std::string node_name(int n) {
  char b[24];
  std::snprintf(b, sizeof b, "node-%05d", n);
  return b;
}
std::string job_id(int j) {
  char b[24];
  std::snprintf(b, sizeof b, "job-%06d", j);
  return b;
}

// Each queue's nominal: an equal part of the cluster (rounded down to whole GPUs).
struct Nominal {
  long long gpu, cpu, mem_gi;
};
Nominal nominal(int nodes, int queues) {
  const long long gpu = 1LL * nodes * kGpus / queues;
  return {gpu, gpu * kCores / kGpus, gpu * kMemGi / kGpus};
}

std::string scenario_yaml(int nodes, int queues, int jobs) {
  std::ostringstream y;
  const Nominal nom = nominal(nodes, queues);
  y << "now: 1000\nqueues:\n";
  for (int q = 0; q < queues; ++q)
    y << "  - name: " << queue_name(q) << "\n    cohort: all\n    quotas:\n      - flavor: h100\n"
      << "        resources:\n          gpu: {nominal: " << nom.gpu << "}\n          cpu: {nominal: " << nom.cpu
      << "}\n          memory: {nominal: " << nom.mem_gi << "Gi}\n";
  y << "nodes:\n";
  for (int n = 0; n < nodes; ++n)
    y << "  - name: " << node_name(n) << "\n    flavor: h100\n    capacity: {gpu: " << kGpus << ", cpu: " << kCores
      << ", memory: " << kMemGi << "Gi}\n    labels: {zone: z" << n % 4 << ", rack: r" << n / 32 << "}\n";
  y << "pending:\n";
  for (int j = 0; j < jobs; ++j)
    y << "  - id: " << job_id(j) << "\n    queue: " << queue_name(j % queues) << "\n    priority: " << j % 3
      << "\n    submittedAt: " << j / 40 << "\n    pods:\n      - resources: {gpu: 1, cpu: " << kJobCores
      << ", memory: " << kJobMemGi << "Gi}\n";
  return y.str();
}

// The same state as specs, for the engine alone.
struct Specs {
  std::vector<QueueSpec> queues;
  std::vector<NodeSpec> nodes;
  std::vector<JobSpec> jobs;
};
Specs scenario_specs(int nodes, int queues, int jobs) {
  Specs s;
  const Nominal nom = nominal(nodes, queues);
  for (int q = 0; q < queues; ++q) {
    QueueSpec qs;
    qs.name = QueueName(queue_name(q));
    qs.cohort = "all";
    FlavorQuota fq;
    fq.flavor = "h100";
    fq.resources.push_back({kGpu, ResourceQuota{nom.gpu * 1000, {}, {}}});
    fq.resources.push_back({kCpu, ResourceQuota{nom.cpu * 1000, {}, {}}});
    fq.resources.push_back({kMemory, ResourceQuota{nom.mem_gi * kGi, {}, {}}});
    qs.quotas.push_back(fq);
    s.queues.push_back(qs);
  }
  for (int n = 0; n < nodes; ++n) {
    NodeSpec ns;
    ns.name = node_name(n);
    ns.flavor = "h100";
    ns.capacity[kGpu] = kGpus * 1000;
    ns.capacity[kCpu] = kCores * 1000;
    ns.capacity[kMemory] = kMemGi * kGi;
    ns.labels = {{"zone", "z" + std::to_string(n % 4)}, {"rack", "r" + std::to_string(n / 32)}};
    s.nodes.push_back(ns);
  }
  for (int j = 0; j < jobs; ++j) {
    JobSpec js;
    js.id = JobId(job_id(j));
    js.queue = QueueName(queue_name(j % queues));
    js.priority = j % 3;
    js.submitted_at = j / 40;
    PodSet p;
    p.per_pod[kGpu] = 1000;
    p.per_pod[kCpu] = kJobCores * 1000;
    p.per_pod[kMemory] = kJobMemGi * kGi;
    js.pod_sets.push_back(p);
    s.jobs.push_back(js);
  }
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct ProcessTime {
  double wall = 0, cpu = 0;
  long max_rss_kib = 0;
};

// Runs `gpuq sim scenario file` with stdout to `out`.
ProcessTime run_gpuq(const std::string& gpuq, const std::string& file, const std::string& out) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> args{gpuq, "sim", "scenario", file};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto t0 = Clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, gpuq.c_str(), &fa, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("cannot run " + gpuq);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) throw std::runtime_error("wait4 failed");
  ProcessTime t;
  t.wall = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(gpuq + " sim scenario " + file + " failed (status " + std::to_string(status) + ")");
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
  t.cpu = secs(ru.ru_utime) + secs(ru.ru_stime);
  t.max_rss_kib = ru.ru_maxrss;
  return t;
}

// Admissions in the command's output: the entries of "admitted" (one "queue" key each line).
std::size_t count_admitted(const std::string& out) {
  std::ifstream in(out);
  std::string line;
  std::size_t n = 0;
  bool in_admitted = false;
  while (std::getline(in, line)) {
    if (line.rfind("  \"admitted\"", 0) == 0) in_admitted = true;
    else if (line.rfind("  \"", 0) == 0) in_admitted = false;
    else if (in_admitted && line.find("\"job\"") != std::string::npos) ++n;
  }
  return n;
}

struct EngineTime {
  double submit = 0, schedule = 0;
  std::size_t admitted = 0;
};

EngineTime run_engine(const Specs& s) {
  Engine engine;
  for (const auto& q : s.queues)
    if (auto r = engine.apply_queue(q); !r) throw std::runtime_error(r.error());
  for (const auto& n : s.nodes)
    if (auto r = engine.upsert_node(n, 1000); !r) throw std::runtime_error(r.error());
  std::vector<JobSpec> jobs = s.jobs;  // copied outside the timer
  EngineTime t;
  const auto t0 = Clock::now();
  for (auto& j : jobs)
    if (auto r = engine.submit(std::move(j), 1000); !r) throw std::runtime_error(r.error());
  const auto t1 = Clock::now();
  const auto decisions = engine.schedule(1000);
  const auto t2 = Clock::now();
  t.submit = std::chrono::duration<double>(t1 - t0).count();
  t.schedule = std::chrono::duration<double>(t2 - t1).count();
  for (const auto& d : decisions) t.admitted += std::holds_alternative<Admission>(d) ? 1 : 0;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"scenario_bench: gpuq sim scenario as a whole process, and the engine alone"};
  app.add_option("--gpuq", o.gpuq, "the gpuq binary");
  app.add_option("--nodes", o.nodes, "node counts")->delimiter(',');
  app.add_option("--jobs", o.jobs, "pending one-GPU jobs");
  app.add_option("--queues", o.queues, "queues (one cohort)");
  app.add_option("--runs", o.runs, "runs of each measurement (medians)");
  app.add_option("--keep", o.keep, "write the scenario files into this folder and keep them");
  CLI11_PARSE(app, argc, argv);

  namespace fs = std::filesystem;
  const fs::path dir = o.keep.empty() ? fs::temp_directory_path() / ("scenario_bench." + std::to_string(getpid()))
                                      : fs::path(o.keep);
  fs::create_directories(dir);
  std::printf("scenario_bench: jobs=%d queues=%d runs=%d gpuq=%s\n", o.jobs, o.queues, o.runs, o.gpuq.c_str());
  std::printf("%7s %9s | %9s %9s %9s %8s %11s | %10s %11s %12s %12s\n", "nodes", "yaml MiB", "wall ms",
              "cpu ms", "admitted", "RSS MiB", "adm/s(wall)", "submit ms", "schedule ms", "adm/s(sched)",
              "adm/s(both)");
  std::vector<double> walls;
  for (int nodes : o.nodes) {
    const std::string file = (dir / ("scenario-" + std::to_string(nodes) + ".yaml")).string();
    const std::string text = scenario_yaml(nodes, o.queues, o.jobs);
    std::ofstream(file) << text;
    const std::string out = (dir / ("out-" + std::to_string(nodes) + ".json")).string();
    std::vector<double> wall, cpu;
    long rss = 0;
    for (int r = 0; r < o.runs; ++r) {
      auto t = run_gpuq(o.gpuq, file, out);
      wall.push_back(t.wall);
      cpu.push_back(t.cpu);
      rss = std::max(rss, t.max_rss_kib);
    }
    const std::size_t admitted = count_admitted(out);
    const Specs specs = scenario_specs(nodes, o.queues, o.jobs);
    std::vector<double> sub, sched, both;
    std::size_t engine_admitted = 0;
    for (int r = 0; r < o.runs; ++r) {
      auto t = run_engine(specs);
      sub.push_back(t.submit);
      sched.push_back(t.schedule);
      both.push_back(t.submit + t.schedule);
      engine_admitted = t.admitted;
    }
    if (engine_admitted != admitted) {
      std::fprintf(stderr, "scenario_bench: the engine admitted %zu, gpuq sim scenario %zu\n", engine_admitted, admitted);
      return 1;
    }
    const double w = median(wall);
    walls.push_back(w);
    std::printf("%7d %9.2f | %9.1f %9.1f %9zu %8.1f %11.0f | %10.1f %11.1f %12.0f %12.0f\n", nodes,
                static_cast<double>(text.size()) / (1 << 20), w * 1e3, median(cpu) * 1e3, admitted,
                static_cast<double>(rss) / 1024, static_cast<double>(admitted) / w, median(sub) * 1e3,
                median(sched) * 1e3, static_cast<double>(admitted) / median(sched),
                static_cast<double>(admitted) / median(both));
  }
  if (walls.size() >= 2)
    std::printf("whole command, %d nodes vs %d nodes: %.2fx\n", o.nodes.back(), o.nodes.front(),
                walls.back() / walls.front());
  if (o.keep.empty()) fs::remove_all(dir);
  return 0;
}
