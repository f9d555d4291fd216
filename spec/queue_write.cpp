// gpuq queue specs as Queue objects (spec/queue_write.hpp; strings as JSON writes them, which
// YAML reads as double-quoted scalars): what `gpuq queues export --format
// objects` and `gpuq apply --dry-run --output objects` write, read back by read_queue_object
// into the same specs.
#include "spec/queue_write.hpp"

#include <charconv>

#include "spec/enums.hpp"
#include "spec/quantity.hpp"
#include "spec/yaml_json.hpp"
#include "spec/yaml_read.hpp"

namespace gpuq::spec {

namespace {

std::string yaml_number(double v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string yaml_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_string(items[i]);
  return out + "]";
}

std::string yaml_members(const Members& m) {
  return "{users: " + yaml_list(m.users) + ", groups: " + yaml_list(m.groups) + "}";
}

}  // namespace

std::string write_queue_object(const QueueSpec& s, const ResourceNames& names) {
  std::string o = "apiVersion: " + std::string(kQueueApiVersion) + "\nkind: Queue\nmetadata:\n  name: " +
                  json_string(s.name.value) + "\nspec:\n";
  const std::size_t empty_size = o.size();
  if (!s.cohort.empty()) o += "  cohort: " + json_string(s.cohort) + "\n";
  if (s.weight != 1.0) o += "  weight: " + yaml_number(s.weight) + "\n";
  if (s.strategy != QueueingStrategy::kBestEffortFIFO) o += "  queueingStrategy: " + std::string(to_string(s.strategy)) + "\n";
  if (!s.quotas.empty()) {
    o += "  quotas:\n";
    for (const FlavorQuota& f : s.quotas) {
      o += "    - flavor: " + json_string(f.flavor) + "\n      resources:\n";
      for (const auto& [r, rq] : f.resources) {
        o += "        " + json_string(names.name(r)) + ": {nominal: " + json_string(format_quantity(rq.nominal, r));
        if (rq.borrowing_limit) o += ", borrowingLimit: " + json_string(format_quantity(*rq.borrowing_limit, r));
        if (rq.lending_limit) o += ", lendingLimit: " + json_string(format_quantity(*rq.lending_limit, r));
        o += "}\n";
      }
    }
  }
  const PreemptionSpec& p = s.preemption;
  if (p.within_queue != WithinQueuePolicy::kNever || p.reclaim_within_cohort != ReclaimPolicy::kNever ||
      p.borrow_within_cohort != BorrowWithinCohortPolicy::kNever || p.borrow_max_priority_threshold || p.min_runtime != 0) {
    o += "  preemption:\n";
    o += "    withinQueue: " + std::string(to_string(p.within_queue)) + "\n";
    o += "    reclaimWithinCohort: " + std::string(to_string(p.reclaim_within_cohort)) + "\n";
    o += "    borrowWithinCohort: {policy: " + std::string(to_string(p.borrow_within_cohort));
    if (p.borrow_max_priority_threshold) o += ", maxPriorityThreshold: " + std::to_string(*p.borrow_max_priority_threshold);
    o += "}\n";
    if (p.min_runtime != 0) o += "    minRuntime: " + std::to_string(p.min_runtime) + "\n";
  }
  const auto count = [&](const char* key, std::int64_t v) {
    if (v != 0) o += std::string("  ") + key + ": " + std::to_string(v) + "\n";
  };
  count("maxPendingJobs", s.max_pending_jobs);
  if (s.max_gpus_per_job) o += "  maxGpusPerJob: " + json_string(format_quantity(*s.max_gpus_per_job, kGpu)) + "\n";
  count("maxPodsPerJob", s.max_pods_per_job);
  if (s.max_runtime) o += "  maxRuntime: " + std::to_string(*s.max_runtime) + "\n";
  if (s.default_max_runtime) o += "  defaultMaxRuntime: " + std::to_string(*s.default_max_runtime) + "\n";
  if (s.runtime_estimate) o += "  runtimeEstimate: " + std::to_string(*s.runtime_estimate) + "\n";
  if (s.max_grace_period) o += "  maxGracePeriod: " + std::to_string(*s.max_grace_period) + "\n";
  if (!s.allowed_priority_classes.empty()) o += "  allowedPriorityClasses: " + yaml_list(s.allowed_priority_classes) + "\n";
  if (s.non_preemptible_may_borrow) o += "  nonPreemptibleMayBorrow: true\n";
  count("maxRunningJobsPerUser", s.max_running_jobs_per_user);
  count("maxPendingJobsPerUser", s.max_pending_jobs_per_user);
  count("maxSubmitsPerUserPerMinute", s.max_submits_per_user_per_minute);
  count("maxRetries", s.max_retries);
  if (!s.idle.empty()) {
    o += "  idle: {";
    if (s.idle.warn_after) o += "warnAfter: " + std::to_string(*s.idle.warn_after);
    if (s.idle.cancel_after) o += std::string(s.idle.warn_after ? ", " : "") + "cancelAfter: " + std::to_string(*s.idle.cancel_after);
    o += "}\n";
  }
  if (s.submitters) o += "  submitters: " + yaml_members(*s.submitters) + "\n";
  if (!s.viewers.empty()) o += "  viewers: " + yaml_members(s.viewers) + "\n";
  if (!s.notify.empty() || !s.notify.on.empty()) o += "  notify: {url: " + json_string(s.notify.url) + ", \"on\": " + yaml_list(s.notify.on) + "}\n";
  if (!s.kubernetes.empty()) {
    const QueueKubernetes& k = s.kubernetes;
    o += "  kubernetes:\n";
    if (!k.ns.empty()) o += "    namespace: " + json_string(k.ns) + "\n";
    if (!k.default_image.empty()) o += "    defaultImage: " + json_string(k.default_image) + "\n";
    if (!k.allowed_images.empty()) o += "    allowedImages: " + yaml_list(k.allowed_images) + "\n";
    if (!k.pod_template.empty()) o += "    podTemplate: " + k.pod_template + "\n";  // JSON is YAML
  }
  if (o.size() == empty_size) o += "  {}\n";
  return o;
}

std::string write_queue_objects(const std::vector<QueueSpec>& queues, const ResourceNames& names) {
  std::string out;
  for (std::size_t i = 0; i < queues.size(); ++i) out += (i ? "---\n" : "") + write_queue_object(queues[i], names);
  return out;
}

}  // namespace gpuq::spec
