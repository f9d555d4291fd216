#pragma once
// /metrics through prometheus-cpp (its registry and text serializer; the HTTP is ours, Beast).
// Counters and histograms live for gpuqd's life in one registry and are recorded where things
// happen: admissions, preemptions and cycles on the engine thread, commits on the writer's,
// binder errors on the binder's (prometheus-cpp's metrics are thread-safe). The per-queue
// gauges are read from the engine at each scrape into a registry of their own, so a deleted
// queue's gauges go with it. Names and labels follow Kueue's (kueue_pending_workloads ->
// gpuq_pending_jobs{queue}); gpuqd(8) (docs/reference/gpuqd.8.md) lists them, deploy/grafana has a dashboard over them.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace gpuq::daemon {

class Loop;

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  void admitted(const std::string& queue, double wait_seconds);
  // `queue` is the victim's, `preempting_queue` the preemptor's; reason as PreemptReason's names.
  void preempted(const std::string& queue, const std::string& preempting_queue, std::string_view reason);
  // state: Succeeded, Failed or Cancelled.
  void finished(const std::string& queue, std::string_view state);
  void cycle(double seconds);
  void commit(double seconds, bool ok);
  // A failure of the binder's own, by kind (bind_failed, evict_failed, pod_lost, ...).
  void binder_error(std::string_view kind);
  // What one pod used (its cgroup's counts; -1: not measured), by its job's queue.
  void pod_usage(const std::string& queue, double cpu_seconds, std::int64_t memory_peak_bytes);
  // One run of the start-time estimates: the engine's copy (on the engine thread), the what-if.
  void estimate(double copy_seconds, double what_if_seconds);
  // A notification's fate: sent, failed (every attempt) or dropped (the queue was full, or gpuqd stopped).
  void notification(const char* result);

  // The text exposition: this registry's families and the gauges read from `loop`'s Core.
  std::string render(Loop& loop);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuq::daemon
