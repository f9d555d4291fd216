// The local executor's pieces that need no daemon: GPU discovery (nvidia-smi's output, a fake
// nvidia-smi, the virtual fallback), the node it makes, the checks before a command is started,
// and the environment a pod gets.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "binder/local/gpu_sampler.hpp"
#include "binder/local/local_binder.hpp"
#include "binder/local/spawn.hpp"
#include "spec/job_array.hpp"

using namespace gpuq;
using namespace gpuq::binder;
namespace fs = std::filesystem;

namespace {

struct Scratch {
  fs::path dir;
  Scratch() {
    char tmpl[] = "/tmp/gpuq-local-XXXXXX";
    dir = ::mkdtemp(tmpl);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path script(const std::string& name, const std::string& body) const {
    const fs::path p = dir / name;
    std::ofstream(p) << "#!/bin/sh\n" << body;
    ::chmod(p.c_str(), 0755);
    return p;
  }
};

const char* kTwoH100 =
    "0, GPU-6b3e0c6e-1111-2222-3333-444455556666, NVIDIA H100 80GB HBM3, 81559 MiB\n"
    "1, GPU-7c4f1d7f-1111-2222-3333-444455556666, NVIDIA H100 80GB HBM3, 81559 MiB\n";

}  // namespace

TEST_CASE("nvidia-smi's CSV gives index, UUID, model and memory; anything else names the line") {
  auto gpus = parse_nvidia_smi(kTwoH100);
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[1].index == 1);
  CHECK(gpus[1].uuid == "GPU-7c4f1d7f-1111-2222-3333-444455556666");
  CHECK(gpus[0].name == "NVIDIA H100 80GB HBM3");
  CHECK(gpus[0].memory_mib == 81559);
  CHECK(parse_nvidia_smi("\n").empty());
  CHECK_THROWS_WITH(parse_nvidia_smi("0, GPU-x, H100\n"),
                    doctest::Contains("line 1 \"0, GPU-x, H100\": expected index, uuid, name, memory.total"));
  CHECK_THROWS_WITH(parse_nvidia_smi(std::string(kTwoH100) + "x, GPU-y, H100, 1 MiB\n"),
                    doctest::Contains("line 3"));
}

TEST_CASE("discovery: nvidia-smi's GPUs when it runs, else the configured virtual ones") {
  Scratch s;
  LocalConfig c;
  c.nvidia_smi = s.script("nvidia-smi", std::string("cat <<'EOF'\n") + kTwoH100 + "EOF\n").string();
  auto inv = discover(c);
  REQUIRE(inv.ok());
  CHECK(inv.value().source == "nvidia-smi");
  CHECK(inv.value().gpus.size() == 2);
  CHECK(inv.value().cpu > 0);
  CHECK(inv.value().memory > 0);

  c.nvidia_smi = s.script("broken-smi", "echo 'NVIDIA-SMI has failed' ; exit 9\n").string();
  c.gpus = 3;
  c.model = "virtual";
  inv = discover(c);
  REQUIRE(inv.ok());
  CHECK(inv.value().source == "config");
  CHECK(inv.value().gpus.size() == 3);
  CHECK(inv.value().gpus[2].uuid.empty());

  c.nvidia_smi = (s.dir / "not-there").string();
  CHECK(discover(c).value().gpus.size() == 3);

  c.nvidia_smi = s.script("garbled-smi", "echo 'zero, x, y, z'\n").string();
  CHECK(discover(c).error().find("local.nvidiaSmi: nvidia-smi output line 1") == 0);

  c.nvidia_smi = "";
  c.reserve_cpu = Quantity{1} << 40;
  CHECK(discover(c).error().find("local.reserve.cpu") == 0);
}

TEST_CASE("the node is this machine: its GPUs in milli-GPU, its CPU and memory less the reserve") {
  LocalConfig c;
  c.node = "box";
  c.flavor = "a100";
  Inventory inv;
  inv.gpus = parse_nvidia_smi(kTwoH100);
  inv.cpu = 16000;
  inv.memory = Quantity{64} << 30;
  NodeSpec n = local_node(c, inv);
  CHECK(n.name == "box");
  CHECK(n.flavor == "a100");
  CHECK(n.capacity[kGpu] == 2000);
  CHECK(n.capacity[kCpu] == 16000);
  CHECK(n.labels.at("gpuq.io/gpu-model") == "NVIDIA-H100-80GB-HBM3");  // a valid label value
  CHECK(pod_log_path("/l", "j1", 3) == fs::path("/l/j1/pod-3.log"));
}

TEST_CASE("cgroups: the hierarchies and gpuqd's place in them, from mountinfo and /proc/self/cgroup") {
  // A hybrid machine (v1 controllers, v2 at unified) and a pure v2 one under systemd.
  const std::string hybrid_mounts =
      "30 25 0:26 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:9 - cgroup cgroup rw,memory\n"
      "31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:10 - cgroup cgroup rw,cpu,cpuacct\n"
      "32 25 0:28 / /sys/fs/cgroup/systemd rw,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd\n"
      "33 25 0:29 / /sys/fs/cgroup/unified rw,relatime shared:12 - cgroup2 cgroup2 rw\n"
      "34 25 0:30 / /sys/fs/cgroup/freezer rw,relatime shared:13 - cgroup cgroup rw,freezer\n"
      "40 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n";
  const std::string hybrid_self = "5:freezer:/\n4:memory:/box/1\n3:cpu,cpuacct:/\n1:name=systemd:/x\n0::/x\n";
  const auto h = parse_cgroup_hierarchies(hybrid_mounts, hybrid_self);
  REQUIRE(h.size() == 4);
  CHECK(h[0].mount == "/sys/fs/cgroup/memory");
  CHECK(h[0].own == "/box/1");
  CHECK(h[1].controllers == std::vector<std::string>{"cpu", "cpuacct"});
  CHECK(h[2].v2);
  CHECK(h[2].own == "/x");
  CHECK(h[3].controllers == std::vector<std::string>{"freezer"});
  const auto v2 = parse_cgroup_hierarchies(
      "29 22 0:25 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
      "0::/system.slice/gpuqd.service\n");
  REQUIRE(v2.size() == 1);
  CHECK(v2[0].own == "/system.slice/gpuqd.service");
  // A mount of part of the hierarchy: gpuqd's path is below it.
  const auto part = parse_cgroup_hierarchies("29 22 0:25 /lxc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "0::/lxc/a\n");
  REQUIRE(part.size() == 1);
  CHECK(part[0].own == "/a");
  // CPU lists as the kernel writes them.
  CHECK(parse_cpu_list("0-2,5\n") == std::vector<int>{0, 1, 2, 5});
  CHECK(parse_cpu_list("") == std::vector<int>{});
  CHECK(spec::array_text({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8");  // what gpuqd writes to cpuset.cpus
  CHECK(spec::array_text({}) == "");
  // No hierarchy at all: cgroups are not available, and the reason says so.
  CHECK(Cgroups::open(CgroupSettings{}, {}).error().find("no cgroup hierarchy") == 0);
  CgroupSettings v2only;
  v2only.version = CgroupSettings::Version::kV2;
  CHECK(Cgroups::open(v2only, {}).error() == "no cgroup v2 hierarchy is mounted");
}

TEST_CASE("before a pod starts: the command must exist and be executable, the directory must exist") {
  Scratch s;
  LocalConfig c;
  Inventory inv;
  Launcher l(c, inv);
  const auth::Account me = auth::own_account();
  RunSpec run;
  CHECK(l.check(run, auth::own_account().name).code() == ErrorCode::kInvalidArgument);
  run.command = {"sh", "-c", "true"};
  run.working_dir = "relative/dir";
  CHECK(l.check(run, auth::own_account().name).error().find("spec.working_dir: \"relative/dir\" is not an absolute path") == 0);
  run.working_dir = s.dir.string();
  CHECK(l.check(run, auth::own_account().name).ok());
  CHECK_FALSE(l.precheck(run, me).has_value());

  run.command = {"gpuq-no-such-command"};
  CHECK(l.precheck(run, me).value().find("cannot run \"gpuq-no-such-command\": command not found (PATH=") == 0);
  run.env["PATH"] = s.dir.string();
  s.script("only-here", "true\n");
  run.command = {"only-here"};
  CHECK_FALSE(l.precheck(run, me).has_value());  // the job's own PATH is searched
  const fs::path plain = s.dir / "plain.sh";
  std::ofstream(plain) << "echo\n";
  run.command = {"./plain.sh"};  // relative to the working directory
  CHECK(l.precheck(run, me).value() == "cannot run \"./plain.sh\": Permission denied");
  run.working_dir = (s.dir / "gone").string();
  CHECK(l.precheck(run, me).value().find("working directory") == 0);
  // A job of another account is not checked here (as root that would tell its owner what
  // exists where they may not look): the shim's child checks as the owner.
  auth::Account other = me;
  other.uid = me.uid + 1;
  CHECK_FALSE(l.precheck(run, other).has_value());
}

TEST_CASE("a pod's environment: its GPUs by UUID when known, gpuq's variables over the job's") {
  LocalConfig c;
  Inventory inv;
  inv.gpus = parse_nvidia_smi(kTwoH100);
  Launcher l(c, inv);
  storage::JobRecord rec;
  rec.run.env = {{"CUDA_VISIBLE_DEVICES", "7"}, {"MINE", "x"}};
  PodPlacement where{0, "box", {1}, 500};
  PodLaunch pod{"j1", "vision", 1, 2, where, rec, "/s", "/l", {}};
  auto env = l.environment(pod, auth::own_account());
  auto has = [&](const std::string& kv) { return std::find(env.begin(), env.end(), kv) != env.end(); };
  CHECK(has("CUDA_VISIBLE_DEVICES=GPU-7c4f1d7f-1111-2222-3333-444455556666"));
  CHECK(has("MINE=x"));
  CHECK(has("GPUQ_JOB_ID=j1"));
  CHECK(has("GPUQ_QUEUE=vision"));
  CHECK(has("GPUQ_POD_INDEX=1"));
  CHECK(has("GPUQ_POD_COUNT=2"));
  CHECK(has("GPUQ_GPU_MILLI=500"));
  pod.placement.gpus.clear();
  env = l.environment(pod, auth::own_account());
  CHECK(has("CUDA_VISIBLE_DEVICES="));  // no GPU: none visible
  CHECK_FALSE(std::any_of(env.begin(), env.end(), [](const std::string& kv) { return kv.rfind("GPUQ_GPU_MILLI=", 0) == 0; }));
}

TEST_CASE("a job of another account gets its identity and none of gpuqd's environment beyond PATH and locale") {
  ::setenv("GPUQD_ONLY_SECRET", "s3cret", 1);
  ::setenv("LC_TIME", "C", 1);
  Launcher l(LocalConfig{}, Inventory{});
  ::unsetenv("GPUQD_ONLY_SECRET");
  storage::JobRecord rec;
  rec.run.env = {{"HOME", "/scratch/alice"}, {"USER", "root"}};
  PodLaunch pod{"j1", "vision", 0, 1, PodPlacement{0, "box", {}, 0}, rec, "/s", "/l", {}};
  auth::Account alice;
  alice.name = "alice";
  alice.uid = auth::own_account().uid + 4242;
  alice.home = "/home/alice";
  alice.shell = "/bin/bash";
  auto env = l.environment(pod, alice);
  auto has = [&](const std::string& kv) { return std::find(env.begin(), env.end(), kv) != env.end(); };
  auto has_name = [&](const std::string& name) {
    return std::any_of(env.begin(), env.end(), [&](const std::string& kv) { return kv.rfind(name + "=", 0) == 0; });
  };
  CHECK_FALSE(has_name("GPUQD_ONLY_SECRET"));
  CHECK(has_name("PATH"));
  CHECK(has("LC_TIME=C"));
  CHECK(has("USER=alice"));  // the job cannot claim another name
  CHECK(has("LOGNAME=alice"));
  CHECK(has("HOME=/scratch/alice"));  // its own HOME wins
  CHECK(has("SHELL=/bin/bash"));
  rec.run.env.clear();
  env = l.environment(pod, alice);
  CHECK(has("HOME=/home/alice"));
  // gpuqd's own account keeps gpuqd's environment.
  ::setenv("GPUQD_ONLY_SECRET", "s3cret", 1);
  Launcher own(LocalConfig{}, Inventory{});
  ::unsetenv("GPUQD_ONLY_SECRET");
  env = own.environment(pod, auth::own_account());
  CHECK(has("GPUQD_ONLY_SECRET=s3cret"));
  CHECK(has("USER=" + auth::own_account().name));
}

TEST_CASE("a job's owner must be an account the executor can run as") {
  Launcher l(LocalConfig{}, Inventory{});
  RunSpec run;
  run.command = {"true"};
  CHECK(l.check(run, auth::own_account().name));
  auto r = l.check(run, "gpuq-no-such-user");
  REQUIRE_FALSE(r);
  CHECK(r.code() == ErrorCode::kPermissionDenied);
  if (::geteuid() == 0) {
    CHECK(r.error() == "spec.owner: user \"gpuq-no-such-user\" has no account on this machine (no passwd entry); "
                       "the local executor runs each job as its owner, so it can run none of theirs");
    CHECK(l.check(run, "nobody"));
    CHECK(l.run_as("nobody").value().uid != 0);
  } else {
    const std::string self = auth::own_account().name;
    CHECK(r.error().find("spec.owner: gpuqd runs as " + self + " without root, so it runs every job as " + self) == 0);
    CHECK_FALSE(l.check(run, "nobody"));
  }
}

TEST_CASE("GPU samples: index, utilization and memory used per GPU; unreadable GPUs left out; bad lines named") {
  auto g = parse_gpu_readings("0, 87, 40960\n1, 0, 3\n\n2, [N/A], 100\n3, 5 %, [N/A]\n");
  REQUIRE(g.size() == 3);
  CHECK(g[0].index == 0);
  CHECK(g[0].utilization == 87);
  CHECK(g[0].memory_used_mib == 40960);
  CHECK(g[1].utilization == 0);
  CHECK(g[2].index == 3);  // GPU 2's utilization is not known: no reading of it
  CHECK(g[2].utilization == 5);
  CHECK(g[2].memory_used_mib == 0);
  CHECK(parse_gpu_readings("").empty());
  CHECK_THROWS_WITH(parse_gpu_readings("0, 87\n"),
                    doctest::Contains("line 1 \"0, 87\": expected index, utilization.gpu, memory.used"));
  CHECK_THROWS_WITH(parse_gpu_readings("0, 1, 2\nx, 1, 2\n"), doctest::Contains("line 2 \"x, 1, 2\": index \"x\""));
  CHECK_THROWS_WITH(parse_gpu_readings("0, 101, 2\n"), doctest::Contains("utilization \"101\" is not a percentage"));
  CHECK_THROWS_WITH(parse_gpu_readings("0, busy, 2\n"), doctest::Contains("utilization \"busy\""));
  CHECK_THROWS(parse_gpu_readings("NVIDIA-SMI has failed because it couldn't communicate with the driver\n"));
}

TEST_CASE("a bounded run: the output of a command that exits 0; a slow, loud or failing one is cut off and says why") {
  Scratch s;
  auto ok = run_bounded({s.script("ok", "echo \"$1\"\n").string(), "arg"}, std::chrono::seconds(10), 1024);
  CHECK(ok.error.empty());
  CHECK(ok.out == "arg\n");
  auto slow = run_bounded({s.script("slow", "sleep 30\n").string()}, std::chrono::milliseconds(200), 1024);
  CHECK(slow.error.find("no answer within 200 ms") == 0);
  auto loud = run_bounded({s.script("loud", "yes\n").string()}, std::chrono::seconds(10), 4096);
  CHECK(loud.error.find("more than 4096 bytes") == 0);
  CHECK(loud.out.empty());
  auto failing = run_bounded({s.script("failing", "echo half; exit 3\n").string()}, std::chrono::seconds(10), 1024);
  CHECK(failing.error == "exit code 3");
  CHECK(failing.out.empty());
  CHECK(run_bounded({(s.dir / "missing").string()}, std::chrono::seconds(1), 1024).error.find("cannot run") == 0);
}

TEST_CASE("the sampler reports nvidia-smi's readings for its node; bad output is counted, not reported") {
  Scratch s;
  const fs::path out = s.dir / "smi.csv";
  std::ofstream(out) << "0, 42, 100\n1, 0, 0\n";
  GpuSampler::Options o;
  o.nvidia_smi = s.script("nvidia-smi", "case \"$*\" in *utilization.gpu*) cat " + out.string() + ";; *) exit 1;; esac\n")
                     .string();
  o.node = "box";
  std::vector<GpuSample> got;
  auto errors = std::make_shared<ErrorCounter>();
  std::vector<std::string> kinds;
  errors->set([&](std::string_view k) { kinds.emplace_back(k); });
  GpuSampler sampler(o, [&](GpuSample x) { got.push_back(std::move(x)); }, errors);
  CHECK(sampler.sample_once());
  REQUIRE(got.size() == 1);
  CHECK(got[0].node == "box");
  REQUIRE(got[0].gpus.size() == 2);
  CHECK(got[0].gpus[0].utilization == 42);
  std::ofstream(out) << "garbage\n";
  CHECK_FALSE(sampler.sample_once());
  CHECK(got.size() == 1);
  CHECK(kinds == std::vector<std::string>{"gpu_sample_failed"});
}
