#pragma once
// Invariants of the engine's state, recomputed from the jobs themselves (independently of the
// engine's own counters), for the seeded property tests. Each check REQUIREs; call them inside a
// doctest test case. `jobs` lists every job the engine kept (jobs_of).
//
// Who holds what (preemption/README.md):
// - Admitted and Running jobs hold quota (on job.flavor) and node slots;
// - a victim that is Preempting holds no quota (released when it was chosen) but still holds
//   its `slots`: its residual, what its preemptors did not need, never exclusive;
// - a preemptor with a booking (`reserved`, still Pending) holds quota and node slots.
#include <cstddef>
#include <string>
#include <vector>

#include "scheduler/engine.hpp"

// REQUIRE for the loops over every job and node after every cycle: doctest's bookkeeping only
// when the condition fails, where the same REQUIRE reports it with its operands.
#define GPUQ_REQUIRE_EACH(...)        \
  do {                                \
    if (!(__VA_ARGS__)) {             \
      REQUIRE(__VA_ARGS__);           \
    }                                 \
  } while (false)

namespace gpuq::test {

// The engine's jobs with these ids, in that order; valid until the next submit.
std::vector<const Job*> jobs_of(const Engine& e, const std::vector<std::string>& ids);

bool holds_slots(const Job& j);
bool holds_quota(const Job& j);

// Per node and per GPU: the slots of the jobs holding slots sum to what the node says is used,
// and within its capacity. Gangs are all or nothing (every pod of an admitted job or a booking
// has a slot, on a node of the job's flavor, one its pod set's node constraints allow); residual
// slots are never exclusive.
void check_nodes(const Engine& e, const std::vector<const Job*>& jobs);

// The per-domain free-GPU counters the cluster keeps equal a recount over the domain's nodes.
void check_domains(const Engine& e, std::size_t flavor_count);

// Every queue's usage is the sum over the jobs holding quota, within nominal + borrowingLimit
// (exactly nominal without a cohort); every cohort's pool within its members' lendable quota.
void check_quotas(const Engine& e, const std::vector<const Job*>& jobs);

// The cycle kept admitting until nothing more fit: no pending job that BestEffortFIFO would have
// tried (and no StrictFIFO head) could be admitted now without preempting.
void check_maximal(Engine& e);

std::string describe_cluster(const Engine& e);
std::string describe_job(const Job& j);

}  // namespace gpuq::test
