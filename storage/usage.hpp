#pragma once
// Accounting over the state file (Admin.Usage, `gpuq usage`; storage/README.md, Usage): per
// queue, user, flavor or job, the GPU time jobs held within a period, the part of it lost to
// preemption, jobs by outcome and the waits for a first admission. Quantities are integers
// (milli-GPU-seconds); hours and cost are the API's.
//
// A job's GPU time comes from its events, not from its row alone: each admission opens an
// attempt (Pending -> Admitted) that lasts while the job is Admitted, Running or Preempting and
// ends when it waits again or finishes. attempts_of() is that walk, pure, so it is tested on
// its own; usage_rows.cpp reads the rows and events it walks.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "scheduler/model.hpp"

namespace gpuq::storage {

enum class UsageBy { kQueue, kUser, kFlavor, kJob };

struct UsageQuery {
  UsageBy by = UsageBy::kQueue;
  Time since = 0;  // the period is [since, until)
  Time until = 0;
  Time now = 0;       // attempts still open count up to min(until, now)
  std::string queue;  // only this queue's jobs ("": any)
  std::string user;   // only this owner's jobs ("": any)
  // Paging, rows in key order: groups after `after_key` (unset: from the first; "" is a key),
  // jobs after submission number `after_number`; at most `limit` rows (0: all).
  std::optional<std::string> after_key;
  std::uint64_t after_number = 0;
  std::size_t limit = 0;
};

struct UsageRow {
  std::string key;  // the queue, the user, the flavor ("" for jobs never admitted) or the job id
  // By job: the job's submission number (its page token), queue, owner, flavor (its last
  // admission's) and state now.
  std::uint64_t number = 0;
  std::string queue, user, flavor;
  JobState state = JobState::kPending;
  // GPU time held within the period, per flavor (milli-GPU-seconds: 1 GPU for 1 h is 3,600,000).
  std::map<std::string, std::int64_t> held;
  std::int64_t lost = 0;  // of it, in attempts that ended in preemption (the job ran again)
  // Jobs that ended within the period, by how; and those submitted before its end that had not
  // ended by then.
  std::int64_t succeeded = 0, failed = 0, cancelled = 0, unfinished = 0;
  // Jobs first admitted within the period, and the waits from submission to that admission
  // (nearest-rank percentiles, seconds; 0 when waited is 0).
  std::int64_t waited = 0;
  Time wait_p50 = 0, wait_p90 = 0;
  // GPU utilization (JobRecord::gpu_use): of `held`, the part held by jobs that were sampled, and
  // the sum over those jobs of GPU time x their mean utilization (percent), for a GPU-time
  // weighted mean.
  std::int64_t sampled_held = 0;
  double util_held = 0;
  std::optional<double> gpu_util() const {
    if (sampled_held <= 0) return std::nullopt;
    return util_held / static_cast<double>(sampled_held);
  }

  std::int64_t held_total() const {
    std::int64_t t = 0;
    for (const auto& [flavor, ms] : held) t += ms;
    return t;
  }
};

// What the walk needs of a job row.
struct JobFacts {
  std::uint64_t number = 0;
  std::string id, queue, owner, flavor;
  JobState state = JobState::kPending;
  Time submitted_at = 0, admitted_at = 0, finished_at = 0;
  std::int64_t gpu_milli = 0;
  std::int32_t attempts = 0, preemptions = 0;
  std::int64_t gpu_samples = 0, gpu_util_sum = 0;  // JobRecord::gpu_use
};

// One of a job's events, as stored.
struct StateChange {
  Time at = 0;
  std::optional<JobState> from;  // nullopt: the submission
  JobState to = JobState::kPending;
  std::string flavor;
};

// One admission of a job: it held its GPUs over [start, end).
struct Attempt {
  Time start = 0, end = 0;
  std::string flavor;
  bool preempted = false;  // it was preempted and went back to wait: its run time is lost
};

struct JobAttempts {
  std::vector<Attempt> attempts;
  std::optional<Time> first_admitted;  // unknown when pruned events held it
  std::string last_flavor;             // the flavor of its last attempt, else the row's
};

// A job's attempts from its events in order (those at or after its submission). An attempt still
// open ends at `now`. Where the events do not say:
// - no events at all (pruned by jobRetention, or never written): the row's one admission,
//   [admitted_at, finished_at or now), as before accounting had events;
// - the first kept event is not the submission (older ones pruned): if the job held GPUs then,
//   that attempt began at the row's admitted_at when that is earlier, else at that event (less
//   than it held); attempts wholly before it are not known. The first admission is then known
//   only for a job never requeued (its admitted_at);
// - a change that left no event (gpuqd stopped while a job was being preempted: it waits again
//   from the restart; a job that could not be restored at start ended): the attempt ends at the
//   last event that shows it holding, or at the row's finished_at for a job that ended.
JobAttempts attempts_of(const JobFacts& job, std::span<const StateChange> events, Time now);

// Adds one job to the rows of a query (keyed by the query's grouping; by job: one row).
class UsageTally {
 public:
  explicit UsageTally(const UsageQuery& q) : q_(q) {}
  // Whether the job had anything in the period (GPU time, an end, unfinished, a first admission).
  bool add(const JobFacts& job, const JobAttempts& attempts);
  // The rows in key order (groups) or in the order added (jobs), with their percentiles.
  std::vector<UsageRow> rows();

 private:
  UsageRow& row(const std::string& key, const JobFacts& job);
  UsageQuery q_;
  std::map<std::string, UsageRow> groups_;
  std::vector<UsageRow> jobs_;
  std::map<std::string, std::vector<Time>> waits_;  // by key (by job: the job id)
};

}  // namespace gpuq::storage
