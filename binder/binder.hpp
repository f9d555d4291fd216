#pragma once
// The Binder (DESIGN.md, Binders): what puts admitted jobs where they run and stops them. gpuqd's
// Core calls it on the engine thread with the engine's decisions: bind() for an admission (with
// what the job runs), stop() for a job that must stop (a preemption victim, given its grace
// period). What the binder then observes (started, finished with an exit code, stopped, node
// lost) comes back as BinderFacts through the Report it was given, which feeds them to the
// engine (the none binder reports at once, inside the call; a binder with real processes or pods
// reports later, by posting to the engine thread). The local executor (issue 5) and the
// Kubernetes binder implement the same interface.
#include <functional>
#include <utility>

#include "scheduler/model.hpp"
#include "storage/store.hpp"

namespace gpuq::binder {

using Report = std::function<void(const BinderFact&)>;

class Binder {
 public:
  virtual ~Binder() = default;
  // Starts an admitted job's pods where the engine placed them (nodes, GPU indices).
  virtual void bind(const Admission& admission, const storage::RunSpec& run) = 0;
  // Stops a job, giving it `grace` seconds before it is killed; JobStopped when it has.
  virtual void stop(const JobId& job, Time grace) = 0;
};

// No processes: an admitted job is running at once and a stopped job has stopped at once. The
// default until the local executor, and what the tests of the daemon's API use.
class NoneBinder final : public Binder {
 public:
  explicit NoneBinder(Report report) : report_(std::move(report)) {}
  void bind(const Admission& admission, const storage::RunSpec&) override { report_(JobStarted{admission.job}); }
  void stop(const JobId& job, Time) override { report_(JobStopped{job}); }

 private:
  Report report_;
};

}  // namespace gpuq::binder
