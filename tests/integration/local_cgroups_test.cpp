// The local executor's cgroups through a real gpuqd (binder/local/CGROUPS.md): a job opens only
// its own GPUs' device files, is killed alone at its memory limit with that reason, leaves no
// process behind when cancelled, and what its killed supervisor left is found and counted by
// the next gpuqd. Each on cgroup v1 and on v2, where this machine has them writable (as root, as
// CI runs); the device files are made with mknod in the test's folder (NVIDIA's major, 195):
// one the cgroup allows answers ENXIO on open (no driver here), one it denies EPERM.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/local_helpers.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;

namespace {

// Whether a child cgroup can be made (and removed) below this process's own in the hierarchy
// mounted at `mount` whose /proc/self/cgroup line names `controllers` ("" for v2): mounted is not
// enough, a container may have it read-only.
bool writable(const std::string& mount, const std::string& controllers) {
  std::istringstream in(slurp("/proc/self/cgroup"));
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos || line.substr(a + 1, b - a - 1) != controllers) continue;
    const std::string probe = mount + line.substr(b + 1) + "/gpuq-test-probe-" + std::to_string(::getpid());
    if (::mkdir(probe.c_str(), 0755) != 0) return false;
    ::rmdir(probe.c_str());
    return true;
  }
  return false;
}

// The cgroup versions this machine lets the test hold jobs in: mounted and writable, as root.
// (Which controllers gpuqd gets there, the tests read from its start-up log: has_limit().)
std::vector<std::string> versions() {
  std::vector<std::string> out;
  if (::geteuid() != 0) return out;
  std::string v2_mount, freezer_mount, freezer_controllers;
  std::istringstream in(slurp("/proc/self/mountinfo"));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::istringstream words(line);
    for (std::string w; words >> w;) f.push_back(w);
    const auto dash = std::find(f.begin(), f.end(), "-");
    if (dash == f.end() || f.end() - dash < 4) continue;
    if (dash[1] == "cgroup2") v2_mount = f[4];
    if (dash[1] == "cgroup" && ("," + dash[3] + ",").find(",freezer,") != std::string::npos) {
      freezer_mount = f[4];
      freezer_controllers = "freezer";
    }
  }
  if (!freezer_mount.empty() && writable(freezer_mount, freezer_controllers)) out.push_back("v1");
  if (!v2_mount.empty() && writable(v2_mount, "")) out.push_back("v2");
  return out;
}

// Whether the gpuqd of `dir` holds pods to `controller` (its start-up log names each it cannot).
bool has_limit(const fs::path& dir, const std::string& controller) {
  const std::string log = slurp(dir / "gpuqd.err") + slurp(dir / "gpuqd.out");
  return log.find("what=\"" + controller + ":") == std::string::npos;
}

std::string config(const fs::path& dir, const std::string& version, const std::string& extra = "") {
  return local_executor_config(dir, "  cgroups: required\n  cgroupVersion: " + version + "\n" + extra,
                               "{gpu: {nominal: 4}, cpu: {nominal: 1000}, memory: {nominal: 1Ti}}");
}

// Two children and a daemon in a session of its own whose parent has exited, their pids in
// DIR/pids; DIR/NAME once they all run.
std::string forking_script(const std::string& dir, const std::string& ready) {
  return "sleep 1000 & echo $! >> " + dir + "/pids; sleep 1000 & echo $! >> " + dir +
         "/pids; (setsid sh -c 'sleep 1000 & echo $! >> " + dir + "/pids' &); sleep 1; touch " + dir + "/" + ready +
         "; wait";
}

v1::SubmitJobRequest job(const std::string& id, const std::string& script, const std::string& gpus = "1",
                         const std::string& memory = "", const std::string& on_node_loss = "",
                         const std::string& cpu = "500m") {
  v1::SubmitJobRequest r;
  auto* s = r.mutable_spec();
  s->set_id(id);
  s->set_queue("q");
  auto* p = s->add_pod_sets();
  p->set_count(1);
  (*p->mutable_resources())["gpu"] = gpus;
  (*p->mutable_resources())["cpu"] = cpu;
  if (!memory.empty()) (*p->mutable_resources())["memory"] = memory;
  s->set_grace_period_seconds(2);
  s->set_on_node_loss(on_node_loss);
  for (const char* a : {"sh", "-c"}) s->add_command(a);
  s->add_command(script);
  return r;
}

// Waits up to 10 s for every pid to be gone.
bool all_gone(const std::vector<pid_t>& pids) {
  for (int i = 0; i < 200; ++i) {
    bool any = false;
    for (pid_t p : pids) any = any || alive(p);
    if (!any) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::vector<pid_t> pids_in(const fs::path& file) {
  std::vector<pid_t> out;
  std::istringstream in(slurp(file));
  for (pid_t p; in >> p;) out.push_back(p);
  return out;
}

// Runs `body` once per cgroup version this machine has, in a fresh folder each; says so when it
// has none.
template <class F>
void each_version(F body) {
  const auto vs = versions();
  if (vs.empty()) MESSAGE("no writable cgroups here (not root, or none mounted): nothing to check; CI runs as root");
  for (const std::string& v : vs) {
    CAPTURE(v);
    TempDir dir;
    body(v, dir.path);
  }
}

}  // namespace

TEST_CASE("cgroups: a job given one GPU of four opens its own device file and not the others, whatever its env says") {
  each_version([](const std::string& v, const fs::path& dir) {
    for (int i = 0; i < 4; ++i) {
      const std::string dev = (dir / ("nvidia" + std::to_string(i))).string();
      REQUIRE_MESSAGE(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(195, static_cast<unsigned>(i))) == 0, dev);
    }
    Daemon d(dir, true, config(dir, v));
    submit_ok(d, job("first", "touch " + dir.string() + "/first.ready; sleep 60"));
    wait_file(dir / "first.ready");
    // It sets CUDA_VISIBLE_DEVICES to every GPU, and tries each device file.
    const std::string probe =
        "echo \"given=$CUDA_VISIBLE_DEVICES\"; export CUDA_VISIBLE_DEVICES=0,1,2,3; "
        "for i in 0 1 2 3; do python3 -c 'import errno, os, sys\n"
        "try:\n os.open(sys.argv[1], os.O_RDONLY); print(sys.argv[2], \"opened\")\n"
        "except OSError as e: print(sys.argv[2], errno.errorcode[e.errno])' " +
        dir.string() + "/nvidia$i $i; done";
    submit_ok(d, job("probe", probe));
    wait_state(d, "probe", v1::JOB_STATE_SUCCEEDED);
    grpc::ClientContext ctx;
    v1::LogsRequest lr;
    lr.set_id("probe");
    auto reader = d.jobs->Logs(&ctx, lr);
    std::string out;
    for (v1::LogChunk c; reader->Read(&c);) out += c.data();
    INFO(out);
    const auto at = out.find("given=");
    REQUIRE(at != std::string::npos);
    const int given = std::stoi(out.substr(at + 6));
    for (int i = 0; i < 4; ++i)
      CHECK(out.find(std::to_string(i) + (i == given ? " ENXIO" : " EPERM")) != std::string::npos);
    // Its CPU time, from its cgroup, is in /metrics and on the job (v2 counts it without a cpu
    // controller too): four pythons took some.
    CHECK(d.http_get("/metrics").find("gpuq_pod_cpu_seconds_total{queue=\"q\"}") != std::string::npos);
    const v1::Job done = get(d, "probe");
    REQUIRE(done.has_cpu_seconds());
    CHECK(done.cpu_seconds() > 0);
    REQUIRE(cancel(d, "first").ok());
  });
}

TEST_CASE("cgroups: a job past its memory is killed alone, with the out-of-memory reason; its neighbour runs on") {
  each_version([](const std::string& v, const fs::path& dir) {
    Daemon d(dir, true, config(dir, v));
    if (!has_limit(dir, "memory")) {
      MESSAGE("no memory controller for " << v << " here: nothing to check");  // the hybrid machines' v2
      return;
    }
    submit_ok(d, job("calm", "touch " + dir.string() + "/calm.ready; sleep 60", "1", "64Mi"));
    wait_file(dir / "calm.ready");
    // 256 MiB written, in a cgroup of 64 MiB.
    submit_ok(d, job("hog", "python3 -c 'b = b\"x\" * (256 << 20); print(len(b))'", "1", "64Mi"));
    const v1::Job hog = wait_state(d, "hog", v1::JOB_STATE_FAILED);
    CHECK(hog.reason().find("out of memory: 64 MiB limit") == 0);
    // Its peak memory, from its cgroup, is in /metrics: at most the limit.
    const std::string metrics = d.http_get("/metrics");
    REQUIRE(hog.has_memory_peak_bytes());
    CHECK(hog.memory_peak_bytes() > 0);
    CHECK(hog.memory_peak_bytes() <= 64 << 20);
    CHECK(metrics.find("gpuq_pod_memory_peak_bytes_count{queue=\"q\"} 1") != std::string::npos);
    CHECK(metrics.find("gpuq_pod_memory_peak_bytes_bucket{queue=\"q\",le=\"67108864\"} 1") != std::string::npos);
    CHECK(get(d, "calm").state() == v1::JOB_STATE_RUNNING);
    REQUIRE(cancel(d, "calm").ok());
  });
}

TEST_CASE("cgroups: cancel leaves nothing of a job behind, children and a double-forked daemon included") {
  each_version([](const std::string& v, const fs::path& dir) {
    const std::string p = dir.string();
    Daemon d(dir, true, config(dir, v));
    submit_ok(d, job("forks", forking_script(p, "forks.ready")));
    wait_file(dir / "forks.ready");
    const auto pids = pids_in(dir / "pids");
    REQUIRE(pids.size() == 3);
    for (pid_t pid : pids) CHECK(alive(pid));
    REQUIRE(cancel(d, "forks").ok());
    CHECK(all_gone(pids));
  });
}

TEST_CASE("cgroups: after gpuqd and the job's supervisor are killed, the next gpuqd finds, counts and stops what is left") {
  each_version([](const std::string& v, const fs::path& dir) {
    const std::string p = dir.string();
    {
      Daemon d(dir, true, config(dir, v));
      submit_ok(d, job("orphaned", forking_script(p, "ready"), "1", "", "Fail"));
      wait_file(dir / "ready");
      wait_state(d, "orphaned", v1::JOB_STATE_RUNNING);
      d.stop(SIGKILL);
    }
    const pid_t shim = std::stoi(slurp(dir / "run" / "orphaned" / "pod-0.pid").substr(4));
    REQUIRE(::kill(shim, SIGKILL) == 0);
    const auto pids = pids_in(dir / "pids");
    REQUIRE(pids.size() == 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (pid_t pid : pids) CHECK(alive(pid));  // the job's shell died with its supervisor; they did not
    Daemon d(dir, true, config(dir, v));
    const v1::Job j = wait_state(d, "orphaned", v1::JOB_STATE_FAILED);
    CHECK(j.reason() == "lost: its supervisor (gpuq-shim) ended without an outcome; 3 process(es) left in its cgroup "
                        "were killed");
    CHECK(all_gone(pids));
  });
}

TEST_CASE("cgroups: with local.cpuset, pods that ask for whole CPUs each get CPUs of their own") {
  each_version([](const std::string& v, const fs::path& dir) {
    const std::string p = dir.string();
    Daemon d(dir, true, config(dir, v, "  cpuset: true\n"));
    for (const char* id : {"a", "b"})
      submit_ok(d, job(id, "grep Cpus_allowed_list /proc/self/status > " + p + "/" + id + ".cpus; sleep 60", "1", "", "", "1"));
    wait_file(dir / "a.cpus");
    wait_file(dir / "b.cpus");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::string a = slurp(dir / "a.cpus"), b = slurp(dir / "b.cpus");
    INFO(a << b);
    // A hierarchy without a cpuset controller (these hybrid machines' v2) says so at start.
    if (!has_limit(dir, "cpuset")) {
      MESSAGE("no cpuset controller for " << v << " here: " << a);
    } else {
      CHECK(a != b);
      CHECK(a.find_first_of(",-") == std::string::npos);  // one CPU each
      CHECK(b.find_first_of(",-") == std::string::npos);
    }
    REQUIRE(cancel(d, "a").ok());
    REQUIRE(cancel(d, "b").ok());
  });
}
