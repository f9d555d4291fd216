#pragma once
// A job's flavors to try, in order (Job::candidates): one pointer to an immutable list shared by
// every job with the same list. Jobs of a queue mostly have its flavor order, so a million
// pending jobs share a few lists instead of each holding a vector and its heap block (56 bytes
// a job: BENCHMARKS.md, Memory per pending job). The lists are interned process-wide and never
// freed (as many as distinct lists: queues x accepted-flavor choices), so a copy of an engine
// (the estimator's) and the engine it came from may share them across threads: a list never
// changes once made.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "scheduler/cluster.hpp"

namespace gpuq {

class FlavorList {
 public:
  FlavorList() = default;
  explicit FlavorList(const std::vector<FlavorId>& flavors);

  const FlavorId* begin() const { return list_->data(); }
  const FlavorId* end() const { return list_->data() + list_->size(); }
  std::size_t size() const { return list_->size(); }
  bool empty() const { return list_->empty(); }
  FlavorId front() const { return list_->front(); }
  FlavorId operator[](std::size_t i) const { return (*list_)[i]; }
  // Interned: the same list is the same pointer.
  friend bool operator==(const FlavorList& a, const FlavorList& b) { return a.list_ == b.list_; }

 private:
  static const std::vector<FlavorId>* none();
  const std::vector<FlavorId>* list_ = none();
};

}  // namespace gpuq
