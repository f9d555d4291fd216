#include "daemon/metrics.hpp"

#include <sstream>

namespace gpuq::daemon {
namespace {

void help(std::ostringstream& out, const char* name, const char* type, const char* text) {
  out << "# HELP " << name << " " << text << "\n# TYPE " << name << " " << type << "\n";
}

// One sample without labels, with its HELP and TYPE lines.
template <class V>
void scalar(std::ostringstream& out, const char* name, const char* type, const char* text, V value) {
  help(out, name, type, text);
  out << name << " " << value << "\n";
}

}  // namespace

std::string render_metrics(Loop& loop) {
  std::vector<QueueStatus> queues;
  ResourceNames names;
  std::uint64_t last_seq = 0;
  CoreMetrics m;
  loop.run_sync([&](Core& c) {
    queues = c.queues();
    names = c.names();
    last_seq = c.last_event_seq();
    m = c.metrics();
  });
  const TurnStats s = loop.stats();
  std::ostringstream out;
  auto per_queue = [&](const char* name, const char* text, auto value) {
    help(out, name, "gauge", text);
    for (const auto& q : queues) out << name << "{queue=\"" << q.spec.name.value << "\"} " << value(q) << "\n";
  };
  per_queue("gpuq_queue_pending_jobs", "Pending jobs per queue.", [](const auto& q) { return q.counts.pending; });
  per_queue("gpuq_queue_admitted_jobs", "Admitted (not yet running) jobs per queue.",
            [](const auto& q) { return q.counts.admitted; });
  per_queue("gpuq_queue_running_jobs", "Running jobs per queue.", [](const auto& q) { return q.counts.running; });
  per_queue("gpuq_queue_preempting_jobs", "Jobs being preempted per queue.",
            [](const auto& q) { return q.counts.preempting; });
  per_queue("gpuq_queue_weighted_share", "The queue's weighted share (fair-share order).",
            [](const auto& q) { return q.share; });
  for (const auto& [metric, text, field] :
       {std::tuple{"gpuq_queue_usage", "Usage per flavor and resource, base units.", 0},
        std::tuple{"gpuq_queue_nominal", "Nominal quota per flavor and resource, base units.", 1},
        std::tuple{"gpuq_queue_borrowed", "Borrowed per flavor and resource, base units.", 2}}) {
    help(out, metric, "gauge", text);
    for (const auto& q : queues)
      for (const auto& u : q.usage)
        out << metric << "{queue=\"" << q.spec.name.value << "\",flavor=\"" << u.flavor << "\",resource=\""
            << names.name(u.resource) << "\"} " << (field == 0 ? u.used : field == 1 ? u.nominal : u.borrowed)
            << "\n";
  }
  scalar(out, "gpuq_admissions_total", "counter", "Jobs admitted since gpuqd started.", m.admissions);
  scalar(out, "gpuq_preemptions_total", "counter", "Jobs preempted since gpuqd started.", m.preemptions);
  scalar(out, "gpuq_jobs_finished_total", "counter", "Jobs that succeeded, failed or were cancelled since gpuqd started.", m.finished);
  help(out, "gpuq_admission_wait_seconds", "histogram", "Time from submission to admission.");
  for (std::size_t b = 0; b < CoreMetrics::kWaitBuckets.size(); ++b)
    out << "gpuq_admission_wait_seconds_bucket{le=\"" << CoreMetrics::kWaitBuckets[b] << "\"} " << m.wait_buckets[b] << "\n";
  out << "gpuq_admission_wait_seconds_bucket{le=\"+Inf\"} " << m.wait_count << "\n";
  out << "gpuq_admission_wait_seconds_sum " << m.wait_sum << "\n";
  out << "gpuq_admission_wait_seconds_count " << m.wait_count << "\n";
  scalar(out, "gpuq_cycles_total", "counter", "Scheduling cycles (one per turn of the engine loop).", m.cycles);
  scalar(out, "gpuq_cycle_seconds_total", "counter", "Time spent scheduling.", m.cycle_seconds_total);
  scalar(out, "gpuq_last_cycle_seconds", "gauge", "The last cycle's duration.", m.last_cycle_seconds);
  scalar(out, "gpuq_events_total", "counter", "Job events written (the last sequence number).", last_seq);
  scalar(out, "gpuq_turns_total", "counter", "Turns of the engine loop.", s.turns);
  scalar(out, "gpuq_store_commits_total", "counter", "Transactions written (one per turn with changes).", s.commits);
  scalar(out, "gpuq_store_commit_failures_total", "counter", "Transactions that failed (requests got UNAVAILABLE).", s.commit_failures);
  scalar(out, "gpuq_store_commit_seconds_total", "counter", "Time in store transactions (write and fsync).", s.commit_seconds_total);
  scalar(out, "gpuq_store_last_commit_seconds", "gauge", "The last store transaction's duration.", s.last_commit_seconds);
  scalar(out, "gpuq_store_last_batch_requests", "gauge", "Requests answered by the last commit (group size).", s.last_batch_requests);
  scalar(out, "gpuq_store_jobs_written_total", "counter", "Job rows written.", s.jobs_written);
  return out.str();
}

}  // namespace gpuq::daemon
