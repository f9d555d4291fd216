#pragma once
// How the local executor starts one pod: the command checked, the environment built, and a
// gpuq-shim spawned in a session of its own (posix_spawn, nothing of gpuqd's inherited: no file
// descriptor beyond stdio, no blocked or ignored signal).
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "binder/local/local_binder.hpp"

namespace gpuq::binder {

struct PodLaunch {
  std::string job;
  std::string queue;
  std::size_t index = 0;
  std::size_t count = 1;
  PodPlacement placement;
  const storage::JobRecord& record;
  std::filesystem::path status;
  std::filesystem::path log;
};

struct StartedPod {
  pid_t pid = -1;
  int pidfd = -1;  // close-on-exec; the caller owns it
  std::uint64_t start_ticks = 0;
};

class Launcher {
 public:
  Launcher() = default;
  Launcher(const LocalConfig& config, const Inventory& inventory);
  // At submit: what the local executor needs (a command; an absolute working directory).
  Result<void> check(const RunSpec& run) const;
  // At start: the command exists and may be run, the working directory exists; else why not.
  std::optional<std::string> precheck(const RunSpec& run) const;
  Result<StartedPod> start(const PodLaunch& pod) const;
  // The environment a pod's command gets (tests read it through the command's output).
  std::vector<std::string> environment(const PodLaunch& pod) const;
  // Appends "[gpuq] text" to a pod's log.
  static void note(const std::filesystem::path& log, const std::string& text);

 private:
  std::filesystem::path shim_;
  std::vector<LocalGpu> gpus_;
  std::vector<std::pair<std::string, std::string>> base_env_;  // gpuqd's, less what gpuq sets
};

}  // namespace gpuq::binder
