// The local executor: pods as gpuq-shim processes, watched through pidfds on the binder's own
// thread (local_binder.hpp). The engine thread calls bind/stop/adopt/...; spawning, signalling
// and the exit handling run on the binder thread, in the order the engine thread asked for them.
#include "binder/local/local_binder.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "binder/local/gpu_sampler.hpp"
#include "binder/local/proc.hpp"
#include "binder/local/shim_status.hpp"
#include "binder/local/spawn.hpp"
#include "spec/job_array.hpp"

namespace gpuq::binder {

namespace fs = std::filesystem;
namespace asio = boost::asio;
using local::ShimStatus;

namespace {

struct Pod {
  pid_t pid = -1;
  // Owns the pidfd of the pod's shim: readable once the shim has exited, which it does only
  // when every process of the pod is gone.
  std::unique_ptr<asio::posix::stream_descriptor> pidfd;
  bool done = false;
  bool lost = false;  // gone without a status file
  int leftovers = 0;  // lost: the processes then found in its cgroup, and killed
  std::optional<ShimStatus> status;
};

struct Tracked {
  std::string queue;  // the job's, for the pods' usage
  std::vector<Pod> pods;
  Time grace = -1;  // the grace its shims were started with; -1: not known (adopted)
  bool stop_requested = false;
  std::optional<BinderFact> fact;  // the last fact, once reported; kept until forget()
};

struct PidFile {
  pid_t pid = -1;
  std::uint64_t start = 0;
  std::string boot;
};

std::optional<PidFile> read_pid_file(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  PidFile f;
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    try {
      if (k == "pid") f.pid = static_cast<pid_t>(std::stol(v));
      if (k == "start") f.start = std::stoull(v);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (k == "boot") f.boot = v;
  }
  if (f.pid <= 0) return std::nullopt;
  return f;
}

void write_pid_file(const fs::path& p, const PidFile& f) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "pid=" << f.pid << "\nstart=" << f.start << "\nboot=" << f.boot << "\n";
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) spdlog::error("event=pid_file_failed path={} error=\"{}\"", p.string(), ec.message());
}

// A pod that could not be started: the same outcome the shim reports when its exec fails.
ShimStatus not_started(const std::string& why) {
  ShimStatus s;
  s.outcome = ShimStatus::Outcome::kError;
  s.code = 127;
  s.error = why;
  return s;
}

// local.cpuset: the whole CPUs a pod asking for `cpu` millicores gets.
std::size_t whole_cpus(Quantity cpu) { return static_cast<std::size_t>((cpu + 999) / 1000); }

bool failed(const Pod& p) {
  if (p.lost) return true;
  if (!p.status) return false;
  return p.status->max_runtime_exceeded || p.status->outcome != ShimStatus::Outcome::kExited ||
         p.status->code != 0;
}

// When every pod is done: what the engine hears.
BinderFact final_fact(const JobId& id, const Tracked& t) {
  if (t.stop_requested) return JobStopped{id};
  for (const Pod& p : t.pods)
    if (p.lost)
      return JobLost{id, p.leftovers == 0 ? std::string("lost")
                                          : "lost: its supervisor (gpuq-shim) ended without an outcome; " +
                                                std::to_string(p.leftovers) + " process(es) left in its cgroup were killed"};
  const Pod* first = nullptr;
  std::size_t first_index = 0;
  for (std::size_t i = 0; i < t.pods.size(); ++i)
    if (failed(t.pods[i]) && (first == nullptr || t.pods[i].status->ended_at < first->status->ended_at)) {
      first = &t.pods[i];
      first_index = i;
    }
  if (first == nullptr) return JobFinished{id, 0, {}};
  int code = local::exit_code_of(*first->status);
  if (code == 0) code = 1;  // a max runtime exceeded by a job that exited 0 on SIGTERM still failed
  std::string reason = local::describe(*first->status);
  if (t.pods.size() > 1) reason = "pod " + std::to_string(first_index) + ": " + reason;
  return JobFinished{id, code, reason};
}

}  // namespace

struct LocalBinder::State {
  LocalConfig config;
  std::shared_ptr<ErrorCounter> errors;  // the binder's (/metrics)
  std::shared_ptr<UsageCounter> usage;   // the binder's (/metrics)
  Inventory inventory;
  Report report;
  std::string boot;
  Launcher launcher;
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  std::thread thread;
  // Engine thread only.
  std::vector<std::function<void()>> open, closed;
  std::set<std::string> adopted;  // by adopt(), until stop_strays()
  GpuReport gpu_report;                 // set before start()
  std::unique_ptr<GpuSampler> sampler;  // from start() to halt(), with GPUs from nvidia-smi
  // Both threads.
  std::mutex mu;
  std::map<std::string, Tracked> jobs;

  fs::path run_dir(const std::string& job) const { return config.run_dir / job; }
  fs::path pid_path(const std::string& job, std::size_t pod) const {
    return run_dir(job) / ("pod-" + std::to_string(pod) + ".pid");
  }
  fs::path status_path(const std::string& job, std::size_t pod) const {
    return run_dir(job) / ("pod-" + std::to_string(pod) + ".status");
  }

  void spawn(const Admission& a, const storage::JobRecord& rec);
  void watch(const std::string& job, std::size_t pod, int pidfd);
  void pod_exited(const std::string& job, std::size_t pod);
  void finish_if_done(const std::string& job, Tracked& t, std::unique_lock<std::mutex>& lock);
  // `report_unknown`: a job not held here is reported stopped (nothing of it runs).
  void stop_job(const std::string& job, bool now = false, bool report_unknown = true);
  void stop_within(const std::string& job, Time grace);
  // With cgroups: the pod's cgroups made and limited for its placement (the directories to pass
  // its shim), or why not; none without cgroups.
  Result<std::vector<std::string>> pod_cgroups(const std::string& job, std::size_t pod, const PodPlacement& placement,
                                               const storage::JobRecord& rec);
  // local.cpuset: the CPUs each running pod holds, by CPU (with `mu`). A pod takes the lowest free
  // ones; what it held is free again once it is done.
  std::vector<int> cpus_allowed;  // gpuqd's affinity: the CPUs the node's capacity counts
  std::map<int, std::pair<std::string, std::size_t>> cpu_taken;
  std::vector<int> take_cpus(const std::string& job, std::size_t pod, std::size_t n);
  void release_cpus(const std::string& job, std::size_t pod);
  // With cgroups: kills what is left in a pod whose shim is gone; how many processes there were.
  int kill_pod_leftovers(const std::string& job, std::size_t pod) const;
};

std::vector<int> LocalBinder::State::take_cpus(const std::string& job, std::size_t pod, std::size_t n) {
  release_cpus(job, pod);  // an earlier attempt's
  std::vector<int> got;
  for (const int c : cpus_allowed) {
    if (got.size() == n) break;
    if (cpu_taken.count(c) == 0) got.push_back(c);
  }
  if (got.size() < n) return {};
  for (const int c : got) cpu_taken[c] = {job, pod};
  return got;
}

void LocalBinder::State::release_cpus(const std::string& job, std::size_t pod) {
  for (auto it = cpu_taken.begin(); it != cpu_taken.end();)
    it = it->second.first == job && it->second.second == pod ? cpu_taken.erase(it) : std::next(it);
}

Result<std::vector<std::string>> LocalBinder::State::pod_cgroups(const std::string& job, std::size_t pod,
                                                                 const PodPlacement& placement,
                                                                 const storage::JobRecord& rec) {
  if (!inventory.cgroups) return std::vector<std::string>{};
  PodCgroupLimits l;
  if (placement.pod_set < rec.spec.pod_sets.size()) {
    l.cpu = rec.spec.pod_sets[placement.pod_set].per_pod[kCpu];
    l.memory = rec.spec.pod_sets[placement.pod_set].per_pod[kMemory];
  }
  l.max_processes = config.max_processes_per_pod;
  if (inventory.cgroups->has_cpuset() && l.cpu > 0) {
    // Whole CPUs, as many as the request rounded up. The engine counts millicores, so rounding
    // can ask for more than are free: such a pod shares the others' CPUs (its bandwidth limit
    // still holds it), and the log says so.
    const std::size_t n = whole_cpus(l.cpu);
    const auto cpus = take_cpus(job, pod, n);
    if (cpus.empty())
      spdlog::warn("event=cpuset_short job={} pod={} cpus={} free={} note=\"it runs on the CPUs the others do not hold\"",
                   job, pod, n, cpus_allowed.size() - std::min(cpus_allowed.size(), cpu_taken.size()));
    l.cpus = spec::array_text(cpus);
  }
  for (std::size_t g = 0; g < inventory.gpus.size(); ++g) {
    const bool own = std::find(placement.gpus.begin(), placement.gpus.end(), static_cast<int>(g)) != placement.gpus.end();
    (own ? l.gpu_minors : l.other_gpu_minors).push_back(inventory.gpus[g].minor);
  }
  return inventory.cgroups->prepare(job, pod, l);
}

int LocalBinder::State::kill_pod_leftovers(const std::string& job, std::size_t pod) const {
  if (!inventory.cgroups) return 0;
  const int n = inventory.cgroups->kill_pod(job, pod);
  if (n > 0) spdlog::warn("event=pod_leftovers_killed job={} pod={} processes={}", job, pod, n);
  return n;
}

// Binder thread. Starts every pod of the job; a pod that cannot start is done with an error
// outcome, and the others are stopped.
void LocalBinder::State::spawn(const Admission& a, const storage::JobRecord& rec) {
  const std::string& id = a.job.value;
  std::error_code ec;
  fs::remove_all(run_dir(id), ec);
  fs::create_directories(run_dir(id), ec);
  fs::create_directories(config.log_dir / id, ec);
  Tracked t;
  t.queue = a.queue.value;
  t.pods.resize(a.pods.size());
  t.grace = rec.spec.grace_period;
  // Whom the job runs as, looked up once and before the lock (checked at submit; the account
  // may be gone since).
  const Result<auth::Account> as = launcher.run_as(rec.spec.owner);
  std::optional<std::string> bad = as ? launcher.precheck(rec.run, as.value()) : std::optional(as.error());
  if (bad) {
    (*errors)("start_refused");
    for (std::size_t i = 0; i < a.pods.size(); ++i) {
      launcher.note(pod_log_path(config.log_dir, id, static_cast<int>(i)), *bad, as ? &as.value() : nullptr);
      t.pods[i].done = true;
      t.pods[i].status = not_started(*bad);
    }
  }
  std::unique_lock lock(mu);
  Tracked& tracked = jobs[id] = std::move(t);
  for (std::size_t i = 0; i < a.pods.size(); ++i) {
    if (tracked.pods[i].done) continue;
    PodLaunch launch{id, a.queue.value, i, a.pods.size(), a.pods[i], rec,
                     status_path(id, i), pod_log_path(config.log_dir, id, static_cast<int>(i)), {}};
    // A pod that cannot start is done, with the reason in its log and its outcome.
    auto not_starting = [&](std::string_view kind, const std::string& why) {
      (*errors)(kind);
      release_cpus(id, i);
      launcher.note(launch.log, why, &as.value());
      tracked.pods[i].done = true;
      tracked.pods[i].status = not_started(why);
    };
    auto cgroups = pod_cgroups(id, i, a.pods[i], rec);
    if (!cgroups) {
      not_starting("cgroup_failed", cgroups.error());
      continue;
    }
    launch.cgroups = std::move(cgroups).value();
    auto started = launcher.start(launch, as.value());
    if (!started) {
      not_starting("start_failed", started.error());
      continue;
    }
    StartedPod pod = std::move(started).value();
    tracked.pods[i].pid = pod.pid;
    // The pid on disk first, then the job may begin: a gpuqd killed in between leaves a shim that
    // ends without starting it (its --go-fd), and the restart, finding no pid file, starts it.
    write_pid_file(pid_path(id, i), PidFile{pod.pid, pod.start_ticks, boot});
    Launcher::go(pod);
    watch(id, i, pod.pidfd);
  }
  spdlog::info("event=pods_started job={} pods={}", id, a.pods.size());
  bool running = false;
  for (const Pod& p : tracked.pods) running = running || !p.done;
  if (running) {
    lock.unlock();
    report(JobStarted{a.job});
    lock.lock();
  }
  finish_if_done(id, tracked, lock);
}

void LocalBinder::State::watch(const std::string& job, std::size_t pod, int pidfd) {
  auto sd = std::make_unique<asio::posix::stream_descriptor>(io, pidfd);
  sd->async_wait(asio::posix::stream_descriptor::wait_read, [this, job, pod](const boost::system::error_code& ec) {
    if (ec != asio::error::operation_aborted) pod_exited(job, pod);
  });
  jobs[job].pods[pod].pidfd = std::move(sd);
}

void LocalBinder::State::pod_exited(const std::string& job, std::size_t pod) {
  std::unique_lock lock(mu);
  auto it = jobs.find(job);
  if (it == jobs.end() || pod >= it->second.pods.size() || it->second.pods[pod].done) return;
  Tracked& t = it->second;
  Pod& p = t.pods[pod];
  p.done = true;
  release_cpus(job, pod);
  if (p.pid > 0) (void)::waitpid(p.pid, nullptr, WNOHANG);  // ours: reap it; adopted: ECHILD
  p.pidfd.reset();
  p.status = local::read_status_file(status_path(job, pod).string());
  if (p.status && (p.status->cpu_usec >= 0 || p.status->memory_peak >= 0)) {
    (*usage)(PodUsage{job, t.queue, p.status->cpu_usec, p.status->memory_peak});
    spdlog::info("event=pod_usage job={} pod={} cpu_usec={} memory_peak_bytes={}", job, pod, p.status->cpu_usec,
                 p.status->memory_peak);
  }
  if (!p.status) {
    p.lost = true;
    (*errors)("pod_lost");
    spdlog::warn("event=pod_lost job={} pod={} note=\"gpuq-shim ended without a status file\"", job, pod);
    p.leftovers = kill_pod_leftovers(job, pod);
  }
  finish_if_done(job, t, lock);
}

// Called with `lock` held; releases it to report.
void LocalBinder::State::finish_if_done(const std::string& job, Tracked& t, std::unique_lock<std::mutex>& lock) {
  if (t.fact) return;
  bool all_done = true, any_failed = false;
  for (const Pod& p : t.pods) {
    all_done = all_done && p.done;
    any_failed = any_failed || (p.done && failed(p));
  }
  if (!all_done) {
    // One pod of a gang failed: the job has failed; its other pods stop (with their grace).
    if (any_failed && !t.stop_requested)
      for (Pod& p : t.pods)
        if (!p.done && p.pidfd) (void)local::pidfd_signal(p.pidfd->native_handle(), SIGTERM);
    return;
  }
  t.fact = final_fact(JobId(job), t);
  const BinderFact fact = *t.fact;
  lock.unlock();
  report(fact);
}

// SIGTERM: each shim gives its command the job's grace period, then kills it; SIGUSR1 (now):
// the shim kills it at once, also while it is already waiting out the grace period.
void LocalBinder::State::stop_job(const std::string& job, bool now, bool report_unknown) {
  std::unique_lock lock(mu);
  auto it = jobs.find(job);
  if (it == jobs.end()) {
    lock.unlock();
    if (report_unknown) report(JobStopped{JobId(job)});  // nothing of it runs here
    return;
  }
  Tracked& t = it->second;
  if (t.fact) return;  // it ended by itself; that fact is on its way
  t.stop_requested = true;
  const int sig = now ? SIGUSR1 : SIGTERM;
  for (Pod& p : t.pods)
    if (!p.done && p.pidfd) (void)local::pidfd_signal(p.pidfd->native_handle(), sig);
  spdlog::info("event=stop_sent job={} signal={}", job, now ? "SIGUSR1 (kill now)" : "SIGTERM");
}

LocalBinder::LocalBinder(LocalConfig config, Inventory inventory, Report report) : s_(std::make_unique<State>()) {
  s_->config = std::move(config);
  s_->inventory = std::move(inventory);
  s_->report = std::move(report);
  s_->errors = errors_;
  s_->usage = usage_;
  s_->boot = local::boot_id();
  s_->launcher = Launcher(s_->config, s_->inventory);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) s_->cpus_allowed.push_back(c);
  s_->guard.emplace(s_->io.get_executor());
}

LocalBinder::~LocalBinder() { halt(); }

void LocalBinder::halt() {
  if (s_->sampler) s_->sampler->stop();
  s_->guard.reset();
  s_->io.stop();
  if (s_->thread.joinable()) s_->thread.join();
}

const Inventory& LocalBinder::inventory() const { return s_->inventory; }

std::optional<fs::path> LocalBinder::log_path(const JobId& job, int pod) const {
  return pod_log_path(s_->config.log_dir, job.value, pod);
}

// Into the pod's FIFO, which its shim reads and copies to the terminal.
Result<void> LocalBinder::write_input(const JobId& job, int pod, std::string_view data) const {
  const fs::path path = pod_input_path(s_->config.run_dir / job.value, pod);
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)  // ENXIO: no reader (its shim is not running); ENOENT: no run directory
    return Error{"job \"" + job.value + "\" is not running: its terminal takes no input", ErrorCode::kFailedPrecondition};
  const ssize_t n = ::write(fd, data.data(), data.size());
  const int error = errno;
  ::close(fd);
  if (n < 0 && error == EAGAIN)
    return Error{"job \"" + job.value + "\" is not reading its input; try again later", ErrorCode::kResourceExhausted};
  if (n != static_cast<ssize_t>(data.size()))
    return Error{"job \"" + job.value + "\": its input took " + std::to_string(std::max<ssize_t>(n, 0)) + " of " +
                     std::to_string(data.size()) + " bytes",
                 ErrorCode::kUnavailable};
  return Ok();
}

void LocalBinder::start() {
  spdlog::info("event=local_executor runs=\"{}\"", s_->launcher.describe_identity());
  s_->thread = std::thread([this] { s_->io.run(); });
  // Virtual GPUs have nothing to sample: their jobs show no GPU use.
  if (s_->inventory.source == "nvidia-smi" && s_->config.gpu_sample_interval_ms > 0 && s_->gpu_report) {
    GpuSampler::Options o;
    o.nvidia_smi = s_->config.nvidia_smi;
    o.interval = std::chrono::milliseconds(s_->config.gpu_sample_interval_ms);
    o.node = local_node(s_->config, s_->inventory).name;
    s_->sampler = std::make_unique<GpuSampler>(std::move(o), s_->gpu_report, s_->errors);
    s_->sampler->start();
    spdlog::info("event=gpu_sampling nvidia_smi={} interval_ms={}", s_->config.nvidia_smi,
                 s_->config.gpu_sample_interval_ms);
  }
}

void LocalBinder::set_gpu_report(GpuReport report) { s_->gpu_report = std::move(report); }

Result<void> LocalBinder::check_run(const RunSpec& run, const std::string& owner) const {
  return s_->launcher.check(run, owner);
}

void LocalBinder::bind(const Admission& admission, const storage::JobRecord& job) {
  s_->open.push_back([s = s_.get(), admission, job] { s->spawn(admission, job); });
}

void LocalBinder::stop(const JobId& job, Time grace) {
  s_->open.push_back([s = s_.get(), id = job.value, grace] {
    s->stop_job(id);
    s->stop_within(id, grace);
  });
}

// Binder thread. Each shim waits out the grace it was started with; a shorter one (a queue's
// maxGracePeriod lowered since, applied by the engine to a victim) is kept here: the job is
// killed at its end if it still runs.
void LocalBinder::State::stop_within(const std::string& job, Time grace) {
  {
    std::lock_guard lock(mu);
    auto it = jobs.find(job);
    if (it == jobs.end() || it->second.fact || it->second.grace < 0 || grace >= it->second.grace) return;
  }
  auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::seconds(std::max<Time>(grace, 0)));
  timer->async_wait([this, timer, job](const boost::system::error_code& ec) {
    if (ec) return;
    spdlog::info("event=grace_capped job={}", job);
    stop_job(job, /*now=*/true, /*report_unknown=*/false);  // nothing if it ended meanwhile
  });
}

void LocalBinder::stop_now(const JobId& job) {
  s_->open.push_back([s = s_.get(), id = job.value] { s->stop_job(id, /*now=*/true); });
}

void LocalBinder::turn_closed() {
  for (auto& f : s_->open) s_->closed.push_back(std::move(f));
  s_->open.clear();
}

void LocalBinder::turn_written(bool ok) {
  if (ok)
    for (auto& f : s_->closed) asio::post(s_->io, std::move(f));
  s_->closed.clear();
}

void LocalBinder::forget(const JobId& job) {
  asio::post(s_->io, [s = s_.get(), id = job.value] {
    std::lock_guard lock(s->mu);
    auto it = s->jobs.find(id);
    if (it == s->jobs.end() || !it->second.fact) return;  // started again meanwhile
    s->jobs.erase(it);
    std::error_code ec;
    fs::remove_all(s->run_dir(id), ec);
    if (s->inventory.cgroups) s->inventory.cgroups->remove_job(id);
  });
}

// Start-up or rebuild (engine thread). Reads the pod files of a job the state file says runs.
std::optional<BinderFact> LocalBinder::adopt(const storage::JobRecord& job) {
  State& s = *s_;
  const std::string& id = job.spec.id.value;
  std::unique_lock lock(s.mu);
  s.adopted.insert(id);
  if (auto it = s.jobs.find(id); it != s.jobs.end()) return it->second.fact;  // a rebuild: known
  Tracked t;
  t.queue = job.spec.queue.value;
  t.pods.resize(job.placement.size());
  bool any_started = false;
  std::vector<std::pair<std::size_t, int>> alive;
  for (std::size_t i = 0; i < t.pods.size(); ++i) {
    Pod& p = t.pods[i];
    const auto pf = read_pid_file(s.pid_path(id, i));
    if (!pf) {
      p.done = p.lost = true;
      continue;
    }
    any_started = true;
    if (pf->boot == s.boot && pf->start != 0 && local::process_start_ticks(pf->pid) == pf->start) {
      const int fd = local::pidfd_open(pf->pid);
      // Checked again once the pidfd is held: it cannot stand for a later process of that pid.
      if (fd >= 0 && local::process_start_ticks(pf->pid) == pf->start) {
        p.pid = pf->pid;
        alive.emplace_back(i, fd);
        // Its CPUs of its own (local.cpuset) are taken again; a pod that got none (too few
        // were free) holds its parent's set, which is not its own.
        if (s.inventory.cgroups && s.inventory.cgroups->has_cpuset() && job.spec.pod_sets.size() > job.placement[i].pod_set) {
          const Quantity cpu = job.spec.pod_sets[job.placement[i].pod_set].per_pod[kCpu];
          const auto cpus = s.inventory.cgroups->pod_cpus(id, i);
          if (cpu > 0 && cpus.size() == whole_cpus(cpu))
            for (const int c : cpus) s.cpu_taken[c] = {id, i};
        }
        continue;
      }
      if (fd >= 0) ::close(fd);
    }
    p.done = true;
    p.status = local::read_status_file(s.status_path(id, i).string());
    p.lost = !p.status;
    // Its supervisor is gone; what it ran may not be (the job's children outlive it): found
    // through the pod's cgroup, counted and killed.
    if (p.lost) p.leftovers = s.kill_pod_leftovers(id, i);
  }
  if (!any_started) {
    // Admitted, but gpuqd stopped before the pods were started: start them now.
    Admission a;
    a.job = job.spec.id;
    a.queue = job.spec.queue;
    a.flavor = job.flavor;
    a.pods = job.placement;
    lock.unlock();
    asio::post(s.io, [&s, a, job] { s.spawn(a, job); });
    spdlog::info("event=pods_adopted job={} note=\"never started; starting them now\"", id);
    return std::nullopt;
  }
  Tracked& tracked = s.jobs[id] = std::move(t);
  for (const auto& [pod, fd] : alive) s.watch(id, pod, fd);
  spdlog::info("event=pods_adopted job={} running={} of={}", id, alive.size(), tracked.pods.size());
  if (alive.empty()) {
    tracked.fact = final_fact(job.spec.id, tracked);
    return tracked.fact;
  }
  s.finish_if_done(id, tracked, lock);  // stops the rest of a gang with a failed or lost pod
  return std::nullopt;
}

// Engine thread, after adopt(). Every pod on disk or tracked that no adopted job owns is killed
// now (SIGUSR1: the shim kills its job at once) and waited for, up to 10 s.
void LocalBinder::stop_strays() {
  State& s = *s_;
  std::vector<std::tuple<std::string, pid_t, int>> waiting;  // (job, pid, pidfd)
  std::set<std::string> stray_dirs;
  std::set<std::string> keep;  // the jobs whose cgroups stay: adopted or tracked
  {
    std::lock_guard lock(s.mu);
    for (auto& [id, t] : s.jobs) {
      if (s.adopted.count(id) > 0 || t.fact) continue;
      t.stop_requested = true;
      for (Pod& p : t.pods)
        if (!p.done && p.pidfd) {
          (void)local::pidfd_signal(p.pidfd->native_handle(), SIGUSR1);
          waiting.emplace_back(id, p.pid, ::dup(p.pidfd->native_handle()));
        }
    }
    std::error_code ec;
    for (const auto& dir : fs::directory_iterator(s.config.run_dir, ec)) {
      const std::string id = dir.path().filename().string();
      if (s.adopted.count(id) > 0 || s.jobs.count(id) > 0) continue;
      stray_dirs.insert(id);
      for (std::size_t i = 0;; ++i) {
        const auto pf = read_pid_file(s.pid_path(id, i));
        if (!pf) {
          if (!fs::exists(s.pid_path(id, i))) break;
          continue;
        }
        if (pf->boot != s.boot || pf->start == 0 || local::process_start_ticks(pf->pid) != pf->start) continue;
        const int fd = local::pidfd_open(pf->pid);
        if (fd < 0) continue;
        if (local::process_start_ticks(pf->pid) != pf->start) {
          ::close(fd);
          continue;
        }
        (void)local::pidfd_signal(fd, SIGUSR1);
        waiting.emplace_back(id, pf->pid, fd);
      }
    }
    keep = s.adopted;
    for (const auto& [id, t] : s.jobs) keep.insert(id);
    s.adopted.clear();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (auto& [id, pid, fd] : waiting) {
    pollfd pfd{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (::poll(&pfd, 1, static_cast<int>(std::max<std::int64_t>(0, left.count()))) == 1) {
      spdlog::warn("event=stray_stopped job={} note=\"it ran for no job gpuqd holds running\"", id);
      (void)::waitpid(pid, nullptr, WNOHANG);  // ours (a rebuild): reap it
    } else {
      spdlog::error("event=stray_still_running job={} note=\"killed, but not gone after 10 s\"", id);
      stray_dirs.erase(id);
    }
    ::close(fd);
  }
  std::error_code ec;
  for (const std::string& id : stray_dirs) fs::remove_all(s.run_dir(id), ec);
  // A job's cgroup that no job gpuqd holds owns: whatever is still in it is killed (a supervisor
  // gone, its job's children not), and the cgroup removed.
  if (s.inventory.cgroups)
    for (const std::string& id : s.inventory.cgroups->jobs()) {
      if (keep.count(id) > 0) continue;
      if (const int n = s.inventory.cgroups->remove_job(id); n > 0)
        spdlog::warn("event=stray_cgroup_stopped job={} processes={}", id, n);
    }
}

}  // namespace gpuq::binder
