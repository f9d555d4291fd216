// Limits on how many of a group of jobs hold resources at once, besides the queue's
// maxRunningJobsPerUser (guardrails.cpp): an array's throttle (gpuq submit --array 0-99%8, as
// Slurm's %8) and a singleton (--singleton: one job of an owner's with its name at a time, as
// Slurm's --dependency=singleton, across queues). Admission passes such a job over, as one whose
// owner is at maxRunningJobsPerUser, so the queue's next job may go; a member that ends lets
// the next in.
#include "scheduler/engine.hpp"

namespace gpuq {
namespace {

std::string array_key(const JobSpec& s) { return "a" + s.array_id; }
std::string name_key(const JobSpec& s) { return "s" + s.owner + '\x1f' + s.name; }

}  // namespace

// Called with count_owner's `running`: wherever a job starts or stops holding resources.
void Engine::count_groups(const Job& job, int running) {
  const JobSpec& s = job.spec;
  auto add = [&](std::string key) {
    auto it = running_groups_.try_emplace(std::move(key), 0).first;
    it->second = static_cast<std::uint32_t>(static_cast<int>(it->second) + running);
    if (it->second == 0) running_groups_.erase(it);
  };
  if (!s.array_id.empty() && s.array_throttle > 0) add(array_key(s));
  if (!s.name.empty() && !s.owner.empty()) add(name_key(s));
}

bool Engine::at_run_limit(const Job& job) const {
  if (at_user_limit(job)) return true;
  const JobSpec& s = job.spec;
  if (s.array_throttle > 0 && !s.array_id.empty() &&
      running_in(array_key(s)) >= static_cast<std::uint32_t>(s.array_throttle))
    return true;
  return s.singleton && !s.name.empty() && !s.owner.empty() && running_in(name_key(s)) > 0;
}

std::string Engine::run_limit_reason(const Job& job) const {
  if (at_user_limit(job)) return user_limit_reason(job);
  const JobSpec& s = job.spec;
  if (s.singleton && !s.name.empty() && running_in(name_key(s)) > 0)
    return "singleton: another job of user " + s.owner + " named \"" + s.name +
           "\" is admitted or running; it waits until that one ends";
  const std::uint32_t n = running_in(array_key(s));
  return "array " + s.array_id + " has " + std::to_string(n) + " member" + (n == 1 ? "" : "s") +
         " admitted or running, its throttle (%" + std::to_string(s.array_throttle) +
         "); it waits until one of them ends";
}

}  // namespace gpuq
