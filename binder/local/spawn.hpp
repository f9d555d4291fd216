#pragma once
// How the local executor starts one pod: the command checked, the environment built, and a
// gpuq-shim spawned in a session of its own (posix_spawn, nothing of gpuqd's inherited: no file
// descriptor beyond stdio, no blocked or ignored signal).
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "auth/account.hpp"
#include "binder/local/local_binder.hpp"

namespace gpuq::binder {

// A pod's terminal input (RunSpec::tty): a FIFO in its job's run directory, which its shim reads.
std::filesystem::path pod_input_path(const std::filesystem::path& job_run_dir, int pod);

struct PodLaunch {
  std::string job;
  std::string queue;
  std::size_t index = 0;
  std::size_t count = 1;
  PodPlacement placement;
  const storage::JobRecord& record;
  std::filesystem::path status;
  std::filesystem::path log;
  std::vector<std::string> cgroups;  // the pod's cgroups, made by gpuqd, which its job joins
};

struct StartedPod {
  pid_t pid = -1;
  int pidfd = -1;  // close-on-exec; the caller owns it
  std::uint64_t start_ticks = 0;
  // The shim waits on this socket before it starts the job (its --go-fd): Launcher::go once its
  // pid is recorded. Closed without it (gpuqd gone), the shim ends and the job never starts.
  int go_fd = -1;
};

class Launcher {
 public:
  Launcher() = default;
  Launcher(const LocalConfig& config, const Inventory& inventory);
  // At submit: what the local executor needs (a command; an absolute working directory) and
  // whether it can run the job as `owner`: gpuqd as root runs each job as its owner, who needs
  // an account here; gpuqd without root runs jobs only as its own account.
  Result<void> check(const RunSpec& run, const std::string& owner) const;
  // At start, for a job run as gpuqd's own account: the command exists and may be run, the
  // working directory exists; else why not. (A job of another account is checked as its owner,
  // by the shim.)
  std::optional<std::string> precheck(const RunSpec& run, const auth::Account& as) const;
  // Starts the pod as `as` (run_as of its owner, looked up once per job).
  Result<StartedPod> start(const PodLaunch& pod, const auth::Account& as) const;
  // Lets a started pod's job begin (its shim's pid is on disk), and closes go_fd.
  static void go(StartedPod& pod);
  // The environment a pod's command gets (tests read it through the command's output), as `as`.
  std::vector<std::string> environment(const PodLaunch& pod, const auth::Account& as) const;
  // Whom a job of `owner` runs as; an error when it cannot (no account, or gpuqd without root).
  Result<auth::Account> run_as(const std::string& owner) const;
  // "each job as its owner" or "every job as gpuq (gpuqd has no root)": for gpuqd's start-up log.
  std::string describe_identity() const;
  // Appends "[gpuq] text" to a pod's log, made if need be as start makes it (`as`'s, mode 0600,
  // never through a link; no account: gpuqd's).
  static void note(const std::filesystem::path& log, const std::string& text, const auth::Account* as);

 private:
  std::filesystem::path shim_;
  std::vector<LocalGpu> gpus_;
  std::vector<std::pair<std::string, std::string>> base_env_;  // gpuqd's, less what gpuq sets
  auth::Account self_;  // the account gpuqd runs as
  bool root_ = false;   // gpuqd may run jobs as other accounts
};

}  // namespace gpuq::binder
