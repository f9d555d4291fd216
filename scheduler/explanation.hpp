#pragma once
// What `gpuq explain JOB` shows of an unfinished job: the one-line reason, where it stands in
// the order a cycle offers jobs, the parts of that order (like Slurm's sprio), the quota
// arithmetic on each flavor it may use, the room on those flavors' nodes, and its last
// preemption. Engine::explain fills it (scheduler/explain_job.cpp) from the engine's state as
// it is: a read, never a cycle.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "preemption/policy.hpp"
#include "spec/resources.hpp"
#include "spec/types.hpp"

namespace gpuq {

struct JobExplanation {
  std::string reason;  // as Engine::pending_reason (or the state when not pending)

  // Pending: 1-based place in its queue's order (priority, then submission) out of how many wait
  // there (0 of 0: a preemptor holding a booking, which goes next).
  std::size_t queue_position = 0, queue_pending = 0;
  // Where its queue would stand if this job were its head: 1-based among the queues with
  // pending jobs, in the order of the admission cycle's heap (within nominal first, then the
  // lowest weighted share after admission, priority, submission).
  std::size_t cycle_rank = 0, cycle_queues = 0;

  // The parts of that order, as the cycle computes them for this job.
  struct Order {
    bool within_nominal = false;  // its queue stays within nominal with it (offered first)
    std::string flavor;           // the flavor the key was computed on (the first that passes)
    bool share_infinite = false;  // weight 0 and borrowing: offered last
    double share = 0;             // the queue's weighted share with it admitted (per mille)
    double history = 0;           // the part of `share` from the decayed usage history
    double weight = 1;
    std::int32_t priority = 0;
    Time submitted_at = 0;
  } order;

  // Per flavor it may use and resource it asks for (or the queue lists there).
  struct Quota {
    std::string flavor;
    ResourceId resource = 0;
    Quantity requested = 0;  // the job's total
    Quantity nominal = 0, used = 0, borrowed = 0;
    std::optional<Quantity> borrowing_limit, lending_limit;
    Quantity headroom = 0;   // what the queue could still add now (nominal, limits, cohort pool)
    Quantity reachable = 0;  // the most it could ever hold with today's quotas
    std::string cohort;      // empty: none
    Quantity cohort_lendable = 0, cohort_used = 0;  // the pool: what members lend, what is drawn
  };
  std::vector<Quota> quota;

  // Per flavor it may use: the nodes and what is free on them now.
  struct Room {
    std::string flavor;
    std::size_t nodes = 0, open = 0;  // of the flavor; open: take new pods
    // Open nodes that could take one pod of every pod set now (the minimum over its pod sets).
    std::size_t fitting = 0;
    Quantity gpu_free = 0;          // milli, over open nodes
    int largest_free_block = 0;     // most wholly free GPUs on one open node
    Quantity gpu_stranded = 0;      // milli free on open nodes where none of its GPU pods fits
    std::int32_t pods = 0;          // in the job (a gang is admitted whole)
    Quantity gpu_per_pod = 0;       // milli, its largest GPU pod
  };
  std::vector<Room> room;

  struct Preempted {
    std::string by;        // the preemptor's id
    std::string by_queue;  // empty when the preemptor is gone from memory
    PreemptReason reason = PreemptReason::kInQueue;
    Time at = 0;           // 0: before gpuqd last started (not kept across restarts)
  };
  std::optional<Preempted> preempted;  // its last preemption
  std::int32_t preemptions = 0, attempts = 0;
};

}  // namespace gpuq
