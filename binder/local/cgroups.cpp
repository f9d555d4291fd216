#include "binder/local/cgroups.hpp"

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "binder/local/cgroup_ops.hpp"
#include "binder/local/proc.hpp"
#include "spec/job_array.hpp"

namespace gpuq::binder {

namespace fs = std::filesystem;
using local::read_small_file;
using local::write_small_file;

namespace {

// The v1 controllers gpuq uses, in the order their hierarchies are kept: the freezer's first
// (it lists and kills a pod's processes), then the limits'.
constexpr const char* kV1Controllers[] = {"freezer", "memory", "cpu", "cpuacct", "pids", "devices"};
constexpr const char* kV2Controllers[] = {"cpu", "memory", "pids"};

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  while (true) {
    const auto at = s.find(sep);
    out.emplace_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

bool has(const std::vector<std::string>& xs, std::string_view x) { return std::find(xs.begin(), xs.end(), x) != xs.end(); }

std::string errno_text() { return std::strerror(errno); }

// `dir` and its missing parents; an error names the one that could not be made.
Result<void> make_dirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"cannot make cgroup " + dir + ": " + ec.message(), ErrorCode::kUnavailable};
  return Ok();
}

Result<void> write_file(const std::string& path, const std::string& text) {
  if (write_small_file(path, text)) return Ok();
  return Error{"cannot write \"" + text + "\" to " + path + ": " + errno_text(), ErrorCode::kUnavailable};
}

// The subtree's path in a hierarchy where gpuqd's cgroup is `own`. Unset, it is gpuqd's own
// cgroup on v2 (delegated to it) and a "gpuq" child of it on v1, where nothing is delegated.
std::string subtree(const std::string& own, const std::string& root, bool v2) {
  if (!root.empty() && root.front() == '/') return root;
  if (root.empty() && v2) return own;
  return (own == "/" ? "" : own) + "/" + (root.empty() ? std::string("gpuq") : root);
}

// A BPF_PROG_TYPE_CGROUP_DEVICE program: a character device of major 195 (NVIDIA) is refused
// unless its minor is one of `allowed`; every other device is left to the other rules. Loaded
// through bpf(2): a few instructions need no compiler, and no library.
int load_device_program(const std::vector<int>& allowed) {
  std::vector<bpf_insn> p;
  auto insn = [&](std::uint8_t code, std::uint8_t dst, std::uint8_t src, std::int16_t off, std::int32_t imm) {
    bpf_insn i{};
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    p.push_back(i);
  };
  // r2 = ctx->access_type & 0xffff (the device type); r3 = ctx->major; r4 = ctx->minor.
  insn(BPF_LDX | BPF_MEM | BPF_W, 2, 1, 0, 0);
  insn(BPF_ALU | BPF_AND | BPF_K, 2, 0, 0, 0xffff);
  insn(BPF_LDX | BPF_MEM | BPF_W, 3, 1, 4, 0);
  insn(BPF_LDX | BPF_MEM | BPF_W, 4, 1, 8, 0);
  // Jumps to `allow` are patched once its place is known.
  std::vector<std::size_t> to_allow;
  to_allow.push_back(p.size());
  insn(BPF_JMP | BPF_JNE | BPF_K, 2, 0, 0, BPF_DEVCG_DEV_CHAR);
  to_allow.push_back(p.size());
  insn(BPF_JMP | BPF_JNE | BPF_K, 3, 0, 0, kNvidiaMajor);
  for (const int minor : allowed) {
    to_allow.push_back(p.size());
    insn(BPF_JMP | BPF_JEQ | BPF_K, 4, 0, 0, minor);
  }
  insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);  // refused
  insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
  const std::size_t allow = p.size();
  insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1);
  insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
  for (const std::size_t at : to_allow) p[at].off = static_cast<std::int16_t>(allow - at - 1);
  static const char kLicense[] = "Apache-2.0";
  bpf_attr attr{};
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<std::uintptr_t>(p.data());
  attr.insn_cnt = static_cast<std::uint32_t>(p.size());
  attr.license = reinterpret_cast<std::uintptr_t>(kLicense);
  return static_cast<int>(::syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof attr));
}

// Attaches the program to the cgroup; with BPF_F_ALLOW_MULTI, so that a program an ancestor has
// (systemd's DevicePolicy) still applies too. The cgroup keeps it once `prog` is closed.
bool attach_device_program(const std::string& dir, int prog) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  bpf_attr attr{};
  attr.target_fd = static_cast<std::uint32_t>(fd);
  attr.attach_bpf_fd = static_cast<std::uint32_t>(prog);
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = BPF_F_ALLOW_MULTI;
  const bool ok = ::syscall(__NR_bpf, BPF_PROG_ATTACH, &attr, sizeof attr) == 0;
  const int err = errno;
  ::close(fd);
  errno = err;
  return ok;
}

// An exclusive flock on the directory, released when the last copy of the pointer goes; an error
// when another process holds it.
Result<std::shared_ptr<int>> lock_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error{"cannot open cgroup " + dir + ": " + errno_text(), ErrorCode::kUnavailable};
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const bool busy = errno == EWOULDBLOCK;
    const std::string why = errno_text();
    ::close(fd);
    return Error{busy ? "cgroup " + dir + " is another gpuqd's; give each gpuqd its own local.cgroupRoot"
                      : "cannot lock cgroup " + dir + ": " + why,
                 ErrorCode::kUnavailable};
  }
  return std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
}

// v1's cpuset: a new cgroup's cpuset.cpus and cpuset.mems are empty, and no process may join it
// until they are set. Each directory from below `mount` down to `dir` gets its parent's.
void inherit_cpuset(const std::string& mount, const std::string& dir) {
  std::string at = mount;
  std::string_view rest = std::string_view(dir).substr(mount.size());
  while (!rest.empty()) {
    while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    const std::size_t slash = std::min(rest.find('/'), rest.size());
    if (slash == 0) break;
    const std::string parent = at;
    at += "/" + std::string(rest.substr(0, slash));
    rest.remove_prefix(slash);
    for (const char* f : {"/cpuset.cpus", "/cpuset.mems"}) {
      std::string mine, theirs;
      if (read_small_file(at + f, mine) && mine.find_first_not_of(" \n") == std::string::npos &&
          read_small_file(parent + f, theirs))
        (void)write_small_file(at + f, theirs);
    }
  }
}

std::string join(const std::vector<std::string>& xs, const char* sep) {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : sep) + x;
  return out;
}

}  // namespace

std::vector<CgroupHierarchy> parse_cgroup_hierarchies(const std::string& mountinfo, const std::string& self_cgroup) {
  // /proc/self/cgroup: "0::/path" (v2) and "N:ctrl,ctrl:/path" (v1).
  std::string v2_own;
  bool has_v2_line = false;
  std::vector<std::pair<std::vector<std::string>, std::string>> v1_own;
  for (const std::string& line : split(self_cgroup, '\n')) {
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.substr(0, a) == "0" && ctrls.empty()) {
      v2_own = path;
      has_v2_line = true;
    } else {
      v1_own.emplace_back(split(ctrls, ','), path);
    }
  }
  std::vector<CgroupHierarchy> out;
  // mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS".
  for (const std::string& line : split(mountinfo, '\n')) {
    const auto fields = split(line, ' ');
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) continue;
    const std::string& fstype = dash[1];
    const std::string& root = fields[3];
    CgroupHierarchy h;
    h.mount = fields[4];
    std::string own;
    if (fstype == "cgroup2") {
      if (!has_v2_line) continue;
      h.v2 = true;
      own = v2_own;
    } else if (fstype == "cgroup") {
      for (const std::string& opt : split(dash[3], ','))
        for (const char* c : {"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "pids", "blkio", "hugetlb",
                              "net_cls", "net_prio", "perf_event", "rdma", "misc"})
          if (opt == c) h.controllers.push_back(opt);
      if (h.controllers.empty()) continue;  // name=systemd and the like
      bool found = false;
      for (const auto& [ctrls, path] : v1_own)
        if (ctrls == h.controllers) {
          own = path;
          found = true;
        }
      if (!found) continue;
    } else {
      continue;
    }
    // A mount of a part of the hierarchy (its root not "/"): gpuqd's path is below that part.
    if (root != "/" && own.rfind(root, 0) == 0) own = own.substr(root.size());
    h.own = own.empty() ? "/" : own;
    out.push_back(std::move(h));
  }
  return out;
}

Result<Cgroups> Cgroups::open(const CgroupSettings& settings) {
  std::string mountinfo, self;
  if (!read_small_file("/proc/self/mountinfo", mountinfo) || !read_small_file("/proc/self/cgroup", self))
    return Error{"cannot read /proc/self/mountinfo or /proc/self/cgroup: " + errno_text(), ErrorCode::kUnavailable};
  return open(settings, parse_cgroup_hierarchies(mountinfo, self));
}

Result<Cgroups> Cgroups::open(const CgroupSettings& settings, const std::vector<CgroupHierarchy>& found) {
  const CgroupHierarchy* v2 = nullptr;
  bool any_v1 = false;
  for (const auto& h : found) {
    if (h.v2 && (v2 == nullptr || h.mount == "/sys/fs/cgroup")) v2 = &h;
    any_v1 = any_v1 || !h.v2;
  }
  using V = CgroupSettings::Version;
  bool use_v2 = settings.version == V::kV2;
  if (settings.version == V::kAuto) use_v2 = v2 != nullptr && (!any_v1 || v2->mount == "/sys/fs/cgroup");
  Cgroups c;
  c.v2_ = use_v2;
  if (use_v2) {
    if (v2 == nullptr) return Error{"no cgroup v2 hierarchy is mounted", ErrorCode::kUnavailable};
    const std::string root = v2->mount + subtree(v2->own, settings.root, true);
    if (auto r = make_dirs(root + "/gpuqd"); !r) return Error{r.error(), r.code()};
    auto lock = lock_dir(root);
    if (!lock) return Error{lock.error(), lock.code()};
    c.lock_ = lock.value();
    // No process may sit in a cgroup whose children get controllers: gpuqd (and the shims it
    // starts) go to a leaf of their own.
    if (auto r = write_file(root + "/gpuqd/cgroup.procs", std::to_string(::getpid())); !r)
      return Error{r.error() + " (gpuqd moves itself into its subtree's leaf \"gpuqd\"; under systemd set "
                                "Delegate=yes, else set local.cgroupRoot to a cgroup it may write)",
                   ErrorCode::kUnavailable};
    std::string available;
    read_small_file(root + "/cgroup.controllers", available);
    const auto have = split(available.substr(0, available.find('\n')), ' ');
    if (auto r = make_dirs(root + "/jobs"); !r) return Error{r.error(), r.code()};
    std::vector<std::string> wanted(std::begin(kV2Controllers), std::end(kV2Controllers));
    if (settings.cpuset) wanted.push_back("cpuset");
    for (const std::string& ctrl : wanted) {
      if (!has(have, ctrl)) {
        c.missing_.push_back(ctrl + ": not available in " + root + " (its parent does not delegate it)");
        continue;
      }
      const std::string plus = "+" + ctrl;
      if (auto r = write_file(root + "/cgroup.subtree_control", plus); !r) {
        c.missing_.push_back(ctrl + ": " + r.error());
        continue;
      }
      if (auto r = write_file(root + "/jobs/cgroup.subtree_control", plus); !r) {
        c.missing_.push_back(ctrl + ": " + r.error());
        continue;
      }
      c.enabled_.push_back(ctrl);
    }
    c.cpuset_ = has(c.enabled_, "cpuset");
    const int prog = load_device_program({});
    if (prog >= 0) {
      c.bpf_devices_ = true;
      ::close(prog);
    } else {
      c.missing_.push_back("devices: a BPF device program cannot be loaded: " + errno_text() +
                           " (it needs CAP_BPF or CAP_SYS_ADMIN)");
    }
    c.roots_.push_back(Root{root, c.enabled_});
    return c;
  }
  // v1: a hierarchy per controller (some mounted together, such as cpu,cpuacct).
  std::vector<std::string> wanted(std::begin(kV1Controllers), std::end(kV1Controllers));
  if (settings.cpuset) wanted.push_back("cpuset");
  for (const std::string& ctrl : wanted) {
    const auto h = std::find_if(found.begin(), found.end(), [&](const auto& x) { return !x.v2 && has(x.controllers, ctrl); });
    if (h == found.end()) {
      c.missing_.push_back(ctrl + ": no cgroup v1 hierarchy has it mounted");
      continue;
    }
    const std::string root = h->mount + subtree(h->own, settings.root, false);
    if (std::any_of(c.roots_.begin(), c.roots_.end(), [&](const Root& r) { return r.dir == root; })) continue;
    if (auto r = make_dirs(root + "/jobs"); !r) {
      c.missing_.push_back(ctrl + ": " + r.error());
      continue;
    }
    if (ctrl == "cpuset") {
      inherit_cpuset(h->mount, root + "/jobs");
      c.cpuset_ = true;
    }
    if (c.roots_.empty()) {
      auto lock = lock_dir(root);
      if (!lock) return Error{lock.error(), lock.code()};
      c.lock_ = lock.value();
    }
    c.roots_.push_back(Root{root, h->controllers});
  }
  if (c.roots_.empty())
    return Error{"no cgroup hierarchy is mounted that gpuqd can write" +
                     (c.missing_.empty() ? std::string() : " (" + join(c.missing_, "; ") + ")"),
                 ErrorCode::kUnavailable};
  return c;
}

std::string Cgroups::describe() const {
  if (roots_.empty()) return "no cgroups";
  if (v2_) {
    std::vector<std::string> what = enabled_;
    if (bpf_devices_) what.push_back("devices");
    return "cgroup v2 at " + roots_.front().dir + " (" + join(what, ", ") + ")";
  }
  std::vector<std::string> dirs;
  for (const Root& r : roots_) dirs.push_back(r.dir);
  return "cgroup v1 at " + join(dirs, ", ");
}

std::string Cgroups::job_dir(const Root& r, const std::string& job) const { return r.dir + "/jobs/job-" + job; }

std::vector<std::string> Cgroups::pod_dirs(const std::string& job, std::size_t pod) const {
  std::vector<std::string> out;
  for (const Root& r : roots_) out.push_back(job_dir(r, job) + "/pod-" + std::to_string(pod));
  return out;
}

int Cgroups::kill_pod(const std::string& job, std::size_t pod) const {
  const auto dirs = pod_dirs(job, pod);
  const int killed = local::kill_cgroup(dirs);
  local::wait_cgroup_empty(dirs, 5000);
  return killed;
}

Result<void> Cgroups::limit_v2(const std::string& dir, const PodCgroupLimits& l) const {
  if (l.cpu > 0 && has(enabled_, "cpu")) {
    // cpu.max "QUOTA PERIOD": 1000m is a whole CPU each 100 ms period.
    const Quantity quota = std::max<Quantity>(1000, l.cpu * 100);
    if (auto r = write_file(dir + "/cpu.max", std::to_string(quota) + " 100000"); !r) return r;
  }
  if (l.memory > 0 && has(enabled_, "memory")) {
    if (auto r = write_file(dir + "/memory.max", std::to_string(l.memory)); !r) return r;
    (void)write_small_file(dir + "/memory.swap.max", "0");  // absent without swap accounting
  }
  if (l.max_processes > 0 && has(enabled_, "pids"))
    if (auto r = write_file(dir + "/pids.max", std::to_string(l.max_processes)); !r) return r;
  if (!l.cpus.empty() && cpuset_)
    if (auto r = write_file(dir + "/cpuset.cpus", l.cpus); !r) return r;
  if (bpf_devices_) {
    std::vector<int> allowed = l.gpu_minors;
    allowed.push_back(254);  // /dev/nvidia-modeset
    allowed.push_back(255);  // /dev/nvidiactl
    const int prog = load_device_program(allowed);
    if (prog < 0) return Error{"cannot load the device program for " + dir + ": " + errno_text(), ErrorCode::kUnavailable};
    const bool ok = attach_device_program(dir, prog);
    const std::string why = errno_text();
    ::close(prog);
    if (!ok) return Error{"cannot attach the device program to " + dir + ": " + why, ErrorCode::kUnavailable};
  }
  return Ok();
}

Result<void> Cgroups::limit_v1(const Root& r, const std::string& dir, const PodCgroupLimits& l) const {
  if (has(r.controllers, "memory") && l.memory > 0) {
    if (auto w = write_file(dir + "/memory.limit_in_bytes", std::to_string(l.memory)); !w) return w;
    // No swap beyond the limit, where swap is accounted; else as little swapping as may be.
    if (!write_small_file(dir + "/memory.memsw.limit_in_bytes", std::to_string(l.memory)))
      (void)write_small_file(dir + "/memory.swappiness", "0");
  }
  if (has(r.controllers, "cpu") && l.cpu > 0) {
    if (auto w = write_file(dir + "/cpu.cfs_period_us", "100000"); !w) return w;
    if (auto w = write_file(dir + "/cpu.cfs_quota_us", std::to_string(std::max<Quantity>(1000, l.cpu * 100))); !w)
      return w;
  }
  if (has(r.controllers, "cpuset")) {
    inherit_cpuset(r.dir, dir);  // the job's and the pod's cgroups get the subtree's CPUs and memory nodes
    if (!l.cpus.empty())
      if (auto w = write_file(dir + "/cpuset.cpus", l.cpus); !w) return w;
  }
  if (has(r.controllers, "pids") && l.max_processes > 0)
    if (auto w = write_file(dir + "/pids.max", std::to_string(l.max_processes)); !w) return w;
  if (has(r.controllers, "devices"))  // Slurm's way on v1: the machine's other GPUs are denied
    for (const int minor : l.other_gpu_minors)
      if (auto w = write_file(dir + "/devices.deny", "c " + std::to_string(kNvidiaMajor) + ":" + std::to_string(minor) + " rwm");
          !w)
        return w;
  return Ok();
}

Result<std::vector<std::string>> Cgroups::prepare(const std::string& job, std::size_t pod,
                                                  const PodCgroupLimits& limits) const {
  std::vector<std::string> dirs = pod_dirs(job, pod);
  // A pod's cgroups left from an earlier attempt are emptied and made anew: fresh counters.
  if (!dirs.empty() && ::access(dirs.front().c_str(), F_OK) == 0) {
    kill_pod(job, pod);
    for (const std::string& d : dirs) ::rmdir(d.c_str());
  }
  std::string plus;  // v2: the controllers the job's cgroup hands down to its pods
  for (const std::string& ctrl : enabled_) plus += (plus.empty() ? "+" : " +") + ctrl;
  for (std::size_t i = 0; i < roots_.size(); ++i) {
    const std::string jdir = job_dir(roots_[i], job);
    if (::mkdir(jdir.c_str(), 0755) != 0 && errno != EEXIST)
      return Error{"cannot make cgroup " + jdir + ": " + errno_text(), ErrorCode::kUnavailable};
    if (v2_ && !plus.empty()) (void)write_small_file(jdir + "/cgroup.subtree_control", plus);
    if (::mkdir(dirs[i].c_str(), 0755) != 0)
      return Error{"cannot make cgroup " + dirs[i] + ": " + errno_text(), ErrorCode::kUnavailable};
    if (auto r = v2_ ? limit_v2(dirs[i], limits) : limit_v1(roots_[i], dirs[i], limits); !r)
      return Error{r.error(), r.code()};
  }
  return dirs;
}

std::vector<int> Cgroups::pod_cpus(const std::string& job, std::size_t pod) const {
  if (!cpuset_) return {};
  for (std::size_t i = 0; i < roots_.size(); ++i) {
    if (!v2_ && !has(roots_[i].controllers, "cpuset")) continue;
    std::string text;
    if (read_small_file(pod_dirs(job, pod)[i] + "/cpuset.cpus", text)) return parse_cpu_list(text);
  }
  return {};
}

std::vector<int> parse_cpu_list(const std::string& text) {
  const auto r = spec::parse_array(std::string_view(text).substr(0, text.find('\n')));
  if (!r) return {};
  return r.value().indices;
}

std::vector<std::string> Cgroups::jobs() const {
  std::vector<std::string> out;
  if (roots_.empty()) return out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(roots_.front().dir + "/jobs", ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory(ec) && name.rfind("job-", 0) == 0) out.push_back(name.substr(4));
  }
  std::sort(out.begin(), out.end());
  return out;
}

int Cgroups::remove_job(const std::string& job) const {
  if (roots_.empty()) return 0;
  int killed = 0;
  std::error_code ec;
  std::vector<std::size_t> pods;
  for (const auto& e : fs::directory_iterator(job_dir(roots_.front(), job), ec)) {
    const std::string name = e.path().filename().string();
    std::size_t n = 0;
    if (e.is_directory(ec) && name.rfind("pod-", 0) == 0 && local::parse_number(std::string_view(name).substr(4), n))
      pods.push_back(n);
  }
  for (const std::size_t pod : pods) {
    killed += kill_pod(job, pod);
    for (const std::string& d : pod_dirs(job, pod)) ::rmdir(d.c_str());
  }
  for (const Root& r : roots_) ::rmdir(job_dir(r, job).c_str());
  return killed;
}

}  // namespace gpuq::binder
