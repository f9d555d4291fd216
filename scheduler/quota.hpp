#pragma once
// Quotas with Kueue's ClusterQueue semantics, for queue q and flavor-resource r:
//   guaranteed(q,r) = lendingLimit set ? max(0, nominal - lendingLimit) : 0   (never lent)
//   usage(q,r) <= nominal + borrowingLimit                                (unbounded when unset)
//   usage above guaranteed draws on the cohort pool, whose size is the members' lendable quota
//   (nominal - guaranteed); a queue without a cohort uses exactly its nominal.
// A flavor a queue does not list cannot be used by it. Under a listed flavor, gpu is always
// limited (unlisted means nominal 0); any other resource the queue does not list there is not
// limited by quota (only by node capacity).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "drf/share.hpp"
#include "scheduler/cluster.hpp"
#include "spec/resources.hpp"
#include "spec/types.hpp"

namespace gpuq {

inline constexpr Quantity kUnbounded = INT64_MAX / 4;

// Which limit stopped a request.
enum class QuotaLimit { kNominal, kBorrowingLimit, kCohortPool };

struct QuotaShortfall {
  FlavorId flavor = kNoFlavor;
  ResourceId resource = 0;
  Quantity requested = 0;
  Quantity available = 0;  // what the queue could still add (never negative)
  QuotaLimit limit = QuotaLimit::kNominal;
  Quantity used = 0;       // the queue's usage when it was checked
  Quantity bound = 0;      // the limit that stopped it: nominal, or nominal + borrowingLimit
  Quantity nominal = 0;
};

class QuotaBook {
 public:
  struct Row {  // one queue's quota for one flavor
    bool present = false;
    ResourceVec nominal, cap, guaranteed, lendable;
    std::array<bool, kMaxResources> listed{};
  };
  struct QueueQuota {
    bool unlimited = true;        // no quotas at all
    std::vector<FlavorId> order;  // flavors in the order they are tried
    std::vector<Row> rows;        // by FlavorId
    std::vector<ResourceVec> usage;  // by FlavorId
    int cohort = -1;
    double weight = 1.0;
  };
  struct Cohort {
    std::string name;
    std::vector<QueueIdx> members;
    std::vector<ResourceVec> lendable;  // by FlavorId: sum of the members' lendable quota
    std::vector<ResourceVec> used;      // by FlavorId: sum of max(0, usage - guaranteed)
    ResourceVec lendable_total;         // lendable summed over all flavors (Kueue's DRS)
  };

  // Sets queue q's quota. flavors[i] is the id of spec.quotas[i].flavor.
  void set_queue(QueueIdx q, const QueueSpec& spec, const std::vector<FlavorId>& flavors);
  void set_flavor_count(std::size_t n);

  const QueueQuota& queue(QueueIdx q) const { return queues_[q]; }
  const Cohort* cohort_of(QueueIdx q) const {
    int c = queues_[q].cohort;
    return c < 0 ? nullptr : &cohorts_[c];
  }
  const std::vector<Cohort>& cohorts() const { return cohorts_; }
  bool has_flavor(QueueIdx q, FlavorId f) const;

  // Most that q could still add of r on flavor f right now (kUnbounded when unlimited).
  Quantity headroom(QueueIdx q, FlavorId f, ResourceId r) const;
  // The first resource that does not fit, or nullopt when d fits.
  std::optional<QuotaShortfall> check(QueueIdx q, FlavorId f, const ResourceVec& d) const;
  bool within_nominal(QueueIdx q, FlavorId f, const ResourceVec& d) const;
  bool within_cap(QueueIdx q, FlavorId f, const ResourceVec& d) const;
  // The most q could ever hold of r on f with today's quotas (everyone else idle).
  Quantity reachable(QueueIdx q, FlavorId f, ResourceId r) const;

  void add(QueueIdx q, FlavorId f, const ResourceVec& d) { charge(q, f, d, +1); }
  void remove(QueueIdx q, FlavorId f, const ResourceVec& d) { charge(q, f, d, -1); }
  const ResourceVec& usage(QueueIdx q, FlavorId f) const { return queues_[q].usage[f]; }
  // Bumped by every change to any queue's usage or quota: while it stays the same, every answer
  // of this book stays the same (the admission cycle uses it to skip recomputing a heap key).
  std::uint64_t version() const { return version_; }

  // Kueue's DominantResourceShare, with `extra` added on flavor f first: per resource, what q
  // uses above its nominal summed over its flavors, per mille of what the cohort lends of that
  // resource over all flavors; the largest, over q's weight (drf::Share). 0 without a cohort.
  // Only for queues with quotas.
  drf::Share borrowing_share(QueueIdx q, FlavorId f, const ResourceVec* extra) const;
  // Whether q uses more than its nominal of anything, on any flavor (Kueue: DRS.IsBorrowing).
  bool borrowing_any(QueueIdx q) const;

 private:
  void charge(QueueIdx q, FlavorId f, const ResourceVec& d, int sign);
  void rebuild_cohorts();

  std::vector<QueueQuota> queues_;
  std::vector<std::string> cohort_names_;  // by queue
  std::vector<Cohort> cohorts_;
  std::size_t flavors_ = 0;
  std::uint64_t version_ = 0;
};

}  // namespace gpuq
