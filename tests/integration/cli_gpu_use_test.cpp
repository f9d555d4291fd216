// GPU use through a real gpuqd with the local executor and a fake nvidia-smi whose output the
// test changes (docs/tasks/standalone.md, GPU idleness): bad output is counted and survived; a job's mean
// utilization shows in `gpuq ls -o wide`, `gpuq show` and `gpuq usage`; under a queue with
// idle: {warnAfter: 1s, cancelAfter: 3s} an idle job is warned (an event) and then cancelled
// with a reason that says so, while a busy one runs on.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include "tests/integration/cli_run.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;

namespace {

// 4 GPUs for discovery; for sampling, GPU i at the percentage in util-<i> (87 without one), or
// whatever `broken` holds when it exists.
std::string fake_nvidia_smi(const fs::path& dir) {
  const fs::path p = dir / "nvidia-smi";
  std::ofstream(p) << "#!/bin/sh\n"
                      "case \"$*\" in\n"
                      "*utilization.gpu*)\n"
                      "  if [ -f " << (dir / "broken").string() << " ]; then cat " << (dir / "broken").string()
                   << "; exit 0; fi\n"
                      "  for i in 0 1 2 3; do u=$(cat " << (dir / "util-").string()
                   << "$i 2>/dev/null || echo 87); echo \"$i, $u, 1024\"; done ;;\n"
                      "*) for i in 0 1 2 3; do echo \"$i, GPU-fake-$i, NVIDIA H100 80GB HBM3, 81559\"; done ;;\n"
                      "esac\n";
  ::chmod(p.c_str(), 0755);
  return p.string();
}

// Atomically, so the script never reads half a file.
void put(const fs::path& p, const std::string& text) {
  std::ofstream(p.string() + ".tmp") << text;
  fs::rename(p.string() + ".tmp", p);
}

// local_executor_config's, with the fake nvidia-smi sampled every 100 ms and the queue's idle
// policy.
std::string config(const fs::path& dir) {
  std::string c = local_executor_config(dir);
  const auto replace = [&c](const std::string& from, const std::string& to) {
    const auto at = c.find(from);
    REQUIRE(at != std::string::npos);
    c.replace(at, from.size(), to);
  };
  replace("  nvidiaSmi: \"\"\n  gpus: 4\n", "  nvidiaSmi: " + fake_nvidia_smi(dir) + "\n  gpuSampleInterval: 100ms\n");
  replace("    preemption: {withinQueue: LowerPriority}\n", "    idle: {warnAfter: 1s, cancelAfter: 3s}\n");
  return c;
}

// Polls `ok` until it holds, at most 30 s.
template <class F>
bool eventually(F ok) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!ok()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

std::string run_job(Daemon& d, const std::string& id) {
  const Run r = gpuq_cmd(d, {"submit", "--id", id, "-q", "q", "--gpus", "1", "--", "sleep", "120"});
  REQUIRE_MESSAGE(r.rc == 0, r.out << r.err);
  REQUIRE(eventually([&] { return get(d, id).state() == v1::JOB_STATE_RUNNING; }));
  const v1::Job j = get(d, id);
  REQUIRE(j.placement_size() == 1);
  REQUIRE(j.placement(0).gpus_size() == 1);
  return std::to_string(j.placement(0).gpus(0));
}

}  // namespace

TEST_CASE("GPU use: sampled from nvidia-smi, shown by ls, show and usage; idle jobs warned, then cancelled") {
  TempDir dir;
  put(dir.path / "broken", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\n");
  Daemon d(dir.path, true, config(dir.path));

  // Bad output: counted, logged, and gpuqd goes on.
  CHECK(eventually([&] { return d.http_get("/metrics").find("gpuq_binder_errors_total{kind=\"gpu_sample_failed\"}") !=
                                std::string::npos; }));
  put(dir.path / "broken", "0, 87\n1, 200, 3\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  fs::remove(dir.path / "broken");

  const std::string busy_gpu = run_job(d, "busy");
  const std::string idle_gpu = run_job(d, "idle");
  put(dir.path / ("util-" + idle_gpu), "0\n");

  // Idle for 1 s: an event (a note: Running to Running) says so; after 3 s it is cancelled.
  REQUIRE(eventually([&] { return get(d, "idle").state() == v1::JOB_STATE_CANCELLED; }));
  const v1::Job idle = get(d, "idle");
  INFO(idle.reason());
  CHECK(idle.reason().find("cancelled: idle for ") == 0);
  CHECK(idle.reason().find(" on GPU " + idle_gpu + " (queue q: idle.cancelAfter 3s)") != std::string::npos);
  CHECK(idle.has_gpu_util_percent());

  // The busy job runs on, sampled at 87%.
  REQUIRE(eventually([&] { return get(d, "busy").gpu_samples() >= 3; }));
  const v1::Job busy = get(d, "busy");
  CHECK(busy.state() == v1::JOB_STATE_RUNNING);
  CHECK(busy.gpu_util_percent() == doctest::Approx(87));
  CHECK(busy.gpu_memory_peak_mib() == 1024);
  CHECK(busy.idle_since() == 0);

  Run r = gpuq_cmd(d, {"ls", "-o", "wide"});
  REQUIRE(r.rc == 0);
  INFO(r.out);
  CHECK(lines_of(r.out).at(0).find(" GPU-UTIL ") != std::string::npos);
  CHECK(row_of(r.out, "busy").find(" 87% ") != std::string::npos);
  r = gpuq_cmd(d, {"show", "busy"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("GPU use:     87% mean over ") != std::string::npos);
  CHECK(r.out.find(" samples, peak memory 1024 MiB\n") != std::string::npos);

  // Usage: the busy job's mean, by job; the column appears because some job was sampled.
  REQUIRE(gpuq_cmd(d, {"cancel", "busy"}).rc == 0);
  REQUIRE(eventually([&] { return get(d, "busy").state() == v1::JOB_STATE_CANCELLED; }));
  CHECK(get(d, "busy").gpu_util_percent() == doctest::Approx(87));  // as written with its end
  r = gpuq_cmd(d, {"usage", "--by", "job", "--since", "0"});
  REQUIRE(r.rc == 0);
  CHECK(lines_of(r.out).at(1).find("GPU-UTIL") != std::string::npos);
  CHECK(row_of(r.out, "busy").find(" 87% ") != std::string::npos);
  r = gpuq_cmd(d, {"usage", "--by", "job", "--since", "0", "-o", "json"});
  REQUIRE(r.rc == 0);
  bool found = false;
  const boost::json::value usage = parse_json(r.out);
  for (const auto& row : usage.at("rows").as_array())
    if (str(row.at("key")) == "busy") {
      found = true;
      CHECK(row.at("gpu_util_percent").to_number<double>() == doctest::Approx(87));
    }
  CHECK(found);

  // The warning, once, before the cancel, in the job's events.
  Watch w(d, {"--from", "0"});
  CHECK(eventually([&] { return w.out().find("cancelled: idle for") != std::string::npos; }));
  w.finish();
  const std::string events = w.out();
  INFO(events);
  const std::string warning = "s on GPU " + idle_gpu + " (queue q: idle.warnAfter 1s; it is cancelled once idle for 3s)";
  const auto warned = events.find(warning);
  CHECK(warned != std::string::npos);
  CHECK(warned < events.find("cancelled: idle for"));
  CHECK(events.find(warning, warned + 1) == std::string::npos);  // once
}
