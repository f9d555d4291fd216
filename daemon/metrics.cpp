#include "daemon/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <vector>

#include "daemon/loop.hpp"
#include "spec/quantity.hpp"

namespace gpuq::daemon {

namespace pm = prometheus;

namespace {

// Bucket bounds, seconds. Waits run from a second to a day (Kueue's admission_wait_time has
// the same span); a cycle is sub-millisecond when little is pending; a commit is an fsync.
const pm::Histogram::BucketBoundaries kWaitBuckets = {1, 5, 15, 60, 300, 900, 3600, 14400, 86400};
const pm::Histogram::BucketBoundaries kCycleBuckets = {0.0001, 0.0005, 0.001, 0.005, 0.01,
                                                       0.05,   0.1,    0.5,   1,     5};
// Bytes, 64 MiB to 1 TiB by fours: a pod's peak memory.
const pm::Histogram::BucketBoundaries kMemoryBuckets = {67108864.0,   268435456.0,   1073741824.0,  4294967296.0,
                                                        17179869184.0, 68719476736.0, 274877906944.0, 1099511627776.0};
const pm::Histogram::BucketBoundaries kCommitBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                        0.05,   0.1,   0.25,   0.5,   1,    2.5};

// Base units to the resource's own: GPUs and cores (not thousandths), bytes.
double natural(Quantity q, ResourceId r) {
  return scale_of(r) == UnitScale::kMilli ? static_cast<double>(q) / 1000.0
                                          : static_cast<double>(q);
}

pm::Family<pm::Counter>& counters(pm::Registry& r, const char* name, const char* help) {
  return pm::BuildCounter().Name(name).Help(help).Register(r);
}

pm::Family<pm::Histogram>& histograms(pm::Registry& r, const char* name, const char* help) {
  return pm::BuildHistogram().Name(name).Help(help).Register(r);
}

}  // namespace

struct Metrics::Impl {
  pm::Registry registry;
  pm::Family<pm::Counter>& admitted =
      counters(registry, "gpuq_admitted_jobs_total", "Jobs admitted, per queue.");
  pm::Family<pm::Counter>& preempted = counters(
      registry, "gpuq_preempted_jobs_total",
      "Jobs preempted, per queue (the victim's), preempting queue and reason (InQueue, Reclaim, "
      "ReclaimWhileBorrowing, FairShare).");
  pm::Family<pm::Counter>& finished =
      counters(registry, "gpuq_finished_jobs_total",
               "Jobs that ended, per queue and state (Succeeded, Failed, Cancelled).");
  pm::Family<pm::Histogram>& wait = histograms(registry, "gpuq_admission_wait_time_seconds",
                                               "Time from submission to admission, per queue.");
  pm::Histogram& cycle = histograms(registry, "gpuq_cycle_duration_seconds",
                                    "One scheduling cycle (the end of a turn of the engine loop).")
                             .Add({}, kCycleBuckets);
  pm::Histogram& commit = histograms(registry, "gpuq_store_commit_duration_seconds",
                                     "One store transaction (write and fsync).")
                              .Add({}, kCommitBuckets);
  pm::Family<pm::Histogram>& estimate =
      histograms(registry, "gpuq_estimate_duration_seconds",
                 "One run of the start-time estimates, by phase: copy (the engine copied on the engine "
                 "thread), what_if (the copy run forward, on the estimator's thread).");
  pm::Family<pm::Counter>& notifications =
      counters(registry, "gpuq_notifications_total",
               "Job notifications (HTTP POST), by result: sent, failed (every attempt), dropped.");
  pm::Family<pm::Counter>& binder_errors =
      counters(registry, "gpuq_binder_errors_total", "Failures of the binder's own, by kind.");
  pm::Family<pm::Counter>& pod_cpu = counters(
      registry, "gpuq_pod_cpu_seconds_total",
      "CPU time the pods of each queue's jobs used, from their cgroups (local executor), counted at each pod's end.");
  pm::Family<pm::Histogram>& pod_memory =
      histograms(registry, "gpuq_pod_memory_peak_bytes",
                 "The most memory a pod held at once, from its cgroup (local executor), per queue, at its end.");
};

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {
  // The kinds every binder can have start at 0 (a family without series is not shown at all).
  for (const char* kind : {"node_lost", "job_lost", "stop_refused", "fact_refused"})
    impl_->binder_errors.Add({{"kind", kind}});
}
Metrics::~Metrics() = default;

void Metrics::admitted(const std::string& queue, double wait_seconds) {
  impl_->admitted.Add({{"queue", queue}}).Increment();
  impl_->wait.Add({{"queue", queue}}, kWaitBuckets).Observe(wait_seconds);
}

void Metrics::preempted(const std::string& queue, const std::string& preempting_queue,
                        std::string_view reason) {
  impl_->preempted
      .Add({{"queue", queue},
            {"preempting_queue", preempting_queue},
            {"reason", std::string(reason)}})
      .Increment();
}

void Metrics::finished(const std::string& queue, std::string_view state) {
  impl_->finished.Add({{"queue", queue}, {"state", std::string(state)}}).Increment();
}

void Metrics::cycle(double seconds) { impl_->cycle.Observe(seconds); }

void Metrics::commit(double seconds, bool ok) {
  if (ok) impl_->commit.Observe(seconds);
}

void Metrics::estimate(double copy_seconds, double what_if_seconds) {
  impl_->estimate.Add({{"phase", "copy"}}, kCycleBuckets).Observe(copy_seconds);
  impl_->estimate.Add({{"phase", "what_if"}}, kCycleBuckets).Observe(what_if_seconds);
}

void Metrics::notification(const char* result) { impl_->notifications.Add({{"result", result}}).Increment(); }

void Metrics::pod_usage(const std::string& queue, double cpu_seconds, std::int64_t memory_peak_bytes) {
  if (cpu_seconds >= 0) impl_->pod_cpu.Add({{"queue", queue}}).Increment(cpu_seconds);
  if (memory_peak_bytes >= 0)
    impl_->pod_memory.Add({{"queue", queue}}, kMemoryBuckets).Observe(static_cast<double>(memory_peak_bytes));
}

void Metrics::binder_error(std::string_view kind) {
  impl_->binder_errors.Add({{"kind", std::string(kind)}}).Increment();
}

std::string Metrics::render(Loop& loop) {
  std::vector<QueueStatus> queues;
  ResourceNames names;
  std::uint64_t last_seq = 0;
  loop.run_sync([&](Core& c) {
    queues = c.queues();
    names = c.names();
    last_seq = c.last_event_seq();
  });
  const TurnStats s = loop.stats();

  pm::Registry now;  // this scrape's reads
  auto gauge = [&](const char* name, const char* help) -> pm::Family<pm::Gauge>& {
    return pm::BuildGauge().Name(name).Help(help).Register(now);
  };
  auto& pending = gauge("gpuq_pending_jobs", "Pending jobs per queue.");
  auto& active = gauge("gpuq_admitted_active_jobs",
                       "Admitted jobs not yet finished (admitted or running), per queue.");
  auto& running = gauge("gpuq_running_jobs", "Running jobs per queue.");
  auto& preempting = gauge("gpuq_preempting_jobs", "Jobs being preempted (stopping), per queue.");
  auto& share = gauge("gpuq_queue_weighted_share",
                      "The queue's weighted share of what its cohort lends (fair-share order).");
  auto& usage =
      gauge("gpuq_queue_resource_usage", "Usage per flavor and resource (GPUs, cores, bytes).");
  auto& nominal = gauge("gpuq_queue_nominal_quota", "Nominal quota per flavor and resource.");
  auto& borrowed =
      gauge("gpuq_queue_resource_borrowed", "Used above nominal quota, per flavor and resource.");
  auto& lent =
      gauge("gpuq_queue_resource_lent",
            "The queue's unused lendable quota that other queues of its cohort use now, per flavor "
            "and resource (the cohort's borrowing split over its lenders by what each can lend).");
  for (const QueueStatus& q : queues) {
    const pm::Labels l = {{"queue", q.spec.name.value}};
    pending.Add(l).Set(static_cast<double>(q.counts.pending));
    active.Add(l).Set(static_cast<double>(q.counts.admitted + q.counts.running));
    running.Add(l).Set(static_cast<double>(q.counts.running));
    preempting.Add(l).Set(static_cast<double>(q.counts.preempting));
    share.Add(l).Set(q.share);
    for (const QueueStatus::Usage& u : q.usage) {
      const pm::Labels fl = {
          {"queue", q.spec.name.value}, {"flavor", u.flavor}, {"resource", names.name(u.resource)}};
      usage.Add(fl).Set(natural(u.used, u.resource));
      nominal.Add(fl).Set(natural(u.nominal, u.resource));
      borrowed.Add(fl).Set(natural(u.borrowed, u.resource));
      lent.Add(fl).Set(natural(u.lent, u.resource));
    }
  }
  auto counter = [&](const char* name, const char* help, double v) {
    pm::BuildCounter().Name(name).Help(help).Register(now).Add({}).Increment(v);
  };
  counter("gpuq_events_total", "Job events written (the last sequence number).",
          static_cast<double>(last_seq));
  counter("gpuq_turns_total", "Turns of the engine loop.", static_cast<double>(s.turns));
  counter("gpuq_store_commits_total", "Transactions written (one per turn with changes).",
          static_cast<double>(s.commits));
  counter("gpuq_store_commit_failures_total",
          "Transactions that failed (their requests got UNAVAILABLE).",
          static_cast<double>(s.commit_failures));
  counter("gpuq_store_jobs_written_total", "Job rows written.",
          static_cast<double>(s.jobs_written));
  gauge("gpuq_store_last_batch_requests", "Requests answered by the last commit (group size).")
      .Add({})
      .Set(static_cast<double>(s.last_batch_requests));

  std::vector<pm::MetricFamily> families = impl_->registry.Collect();
  for (pm::MetricFamily& f : now.Collect()) families.push_back(std::move(f));
  return pm::TextSerializer().Serialize(families);
}

}  // namespace gpuq::daemon
