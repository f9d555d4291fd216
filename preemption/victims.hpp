#pragma once
// The victim search (README.md in this folder has the rules). The engine describes each candidate and answers
// questions about its own state through World; this code owns only the order, the policy rules
// and the minimal set, so it can be read, tested and replaced on its own.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "drf/share.hpp"
#include "preemption/policy.hpp"
#include "spec/types.hpp"

namespace gpuq::preemption {

// A job that holds resources and might be stopped. `job` and `queue` are the engine's handles.
struct Candidate {
  std::uint32_t job = 0;
  std::uint32_t queue = 0;
  std::int32_t priority = 0;
  std::int64_t submitted_at = 0;
  std::uint64_t submit_order = 0;  // tie-break between equal submission times
  std::int64_t admitted_at = 0;    // admission time: later is more recent
  std::string_view id;             // unique: the last tie-break of every order (Kueue's UID)
  bool preempting = false;         // already stopping for another preemptor
};

struct Preemptor {
  std::uint32_t queue = 0;
  std::int32_t priority = 0;
  std::int64_t submitted_at = 0;
  std::uint64_t submit_order = 0;
  PreemptionSpec policy;
  FairSharingConfig fair;
  // Classic mode: the queue uses less than its nominal of every resource the preemptor needs
  // on the flavor tried (before the preemptor is added).
  bool under_nominal = false;
  // The queue stays within its nominal of those resources with the preemptor added. Fair mode:
  // Kueue's FairSharingPreemptWithinNominal (on by default). Classic mode: without it, a reclaim
  // that must not borrow can only succeed by taking jobs of the preemptor's own queue.
  bool within_nominal_after = false;
};

struct Target {
  Candidate victim;
  PreemptReason reason = PreemptReason::kInQueue;
};

// The engine's state as the search sees it. remove() and restore() are exact inverses; the
// search restores everything it removed before it returns.
class World {
 public:
  // As if the candidate had stopped: its quota and its place on the nodes are freed.
  virtual void remove(const Candidate& c) = 0;
  virtual void restore(const Candidate& c) = 0;
  // Whether the preemptor fits now, on quota and on the nodes; within its nominal when
  // borrowing is not allowed.
  virtual bool fits(bool allow_borrowing) = 0;
  // Whether the queue uses more than its nominal of a resource the preemptor needs.
  virtual bool borrowing(std::uint32_t queue) const = 0;
  // Fair sharing: whether the queue uses more than its nominal of anything (Kueue's
  // DRS.IsBorrowing); a queue's weighted share now; the preemptor's queue's with the preemptor
  // added; the candidate's queue's without the candidate.
  virtual bool borrowing_any(std::uint32_t queue) const = 0;
  virtual drf::Share share(std::uint32_t queue) const = 0;
  virtual drf::Share preemptor_share() const = 0;
  virtual drf::Share share_without(const Candidate& c) const = 0;
  // Where the candidate runs (the nodes it holds room on, as numbers), when the preemptor needs
  // room on nodes and not only quota; empty otherwise. The classic search uses it when taking
  // candidates in the victim order cannot make the preemptor fit (the victims quota allows free
  // room on different nodes): it tries again with the candidates of one place first.
  virtual std::vector<std::uint32_t> places(const Candidate&) const { return {}; }

 protected:
  ~World() = default;
};

// Whether the policy lets the preemptor take this candidate at all (its queue's borrowing is
// checked later, as victims are taken, except for jobs already stopping: their quota is gone).
// The same rules hold for jobs already stopping, as in Kueue: a job may wait for another's
// victim only if it could have chosen that victim itself.
bool eligible(const Preemptor& p, const Candidate& c);

// The victim order (Kueue's CandidatesOrdering): stopping first, other queues before the
// preemptor's own, lower priority, most recently admitted, then id.
bool victim_before(const Candidate& a, const Candidate& b, std::uint32_t preemptor_queue);

// One queue's candidates in victim order (lower priority, most recently admitted, then id),
// produced as the search asks for them: the engine walks its own ordered index and skips what
// the policy, minRuntime or the flavor rule out, so a search that needs a few victims never
// looks at every job of the cohort. Every candidate is eligible, not stopping, of queue().
class Run {
 public:
  virtual std::uint32_t queue() const = 0;
  virtual std::optional<Candidate> next() = 0;

 protected:
  ~Run() = default;
};

// The minimal set of victims that lets the preemptor fit, or empty when none does. `stopping`
// are the eligible jobs already stopping (any order); `runs` one per queue that may give
// victims, in any order.
std::vector<Target> find_victims(const Preemptor& p, std::vector<Candidate> stopping,
                                 const std::vector<Run*>& runs, World& world);

// The same over a list of eligible candidates in any order (grouped into runs here).
std::vector<Target> find_victims(const Preemptor& p, std::vector<Candidate> candidates, World& world);

}  // namespace gpuq::preemption
