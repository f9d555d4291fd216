#pragma once
// A Core on a fresh state file for the daemon tests: quota-less queues sharing one 8-GPU node,
// the none binder (it runs what is admitted at once). Time is the test's (Core's `now`).
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "daemon/core.hpp"
#include "tests/support/builders.hpp"

namespace gpuq::test {

inline daemon::CoreConfig one_node_core(const std::string& file, std::vector<std::string> queues = {"a"}) {
  daemon::CoreConfig c;
  c.state_file = file;
  c.start_specs = [queues](ResourceNames&, std::vector<QueueSpec>& qs, std::vector<NodeSpec>& nodes) {
    qs.clear();
    for (const std::string& q : queues) qs.push_back(unlimited_queue(q));
    nodes = {node("n", "h100", res(gpus(8)))};
  };
  return c;
}

// Queue `a` (8 GPUs of h100, preempting lower priorities within it) on one 8-GPU node.
inline daemon::CoreConfig preempting_core(const std::string& file) {
  daemon::CoreConfig c;
  c.state_file = file;
  c.start_specs = [](ResourceNames&, std::vector<QueueSpec>& qs, std::vector<NodeSpec>& nodes) {
    QueueSpec a = queue("a", "", "h100", {{kGpu, gpus(8)}});
    a.preemption.within_queue = WithinQueuePolicy::kLowerPriority;
    qs = {a};
    nodes = {node("n", "h100", res(gpus(8)))};
  };
  return c;
}

inline std::unique_ptr<daemon::Core> open_core(const daemon::CoreConfig& c, Time now) {
  auto core = daemon::Core::open(c, now);
  INFO((core.ok() ? std::string() : core.error()));
  REQUIRE(core.ok());
  return std::move(core).value();
}

}  // namespace gpuq::test
