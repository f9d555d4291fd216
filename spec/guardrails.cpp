#include "spec/guardrails.hpp"

#include <algorithm>

#include "spec/error.hpp"

namespace gpuq::spec {

namespace {

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

Error refused(const std::string& field, const std::string& what) {
  return Error{"spec." + field + ": " + what, ErrorCode::kInvalidArgument};
}

std::string queue_of(const QueueSpec& q) { return "queue \"" + q.name.value + "\""; }

// The class a job naming none gets: the first (by name) of priority 0, as Kubernetes gives a
// pod without a class priority 0.
const std::string* default_class(const PriorityClasses& classes) {
  for (const auto& [name, value] : classes.by_name)
    if (value == 0) return &name;
  return nullptr;
}

bool is_number(const std::string& text) {
  return !text.empty() && text.find_first_not_of("+-0123456789") == std::string::npos;
}

Result<void> check_priority(const QueueSpec& q, const PriorityClasses& classes, Submission& sub) {
  const auto& allowed = q.allowed_priority_classes;
  if (allowed.empty()) return Ok();
  const auto in_list = [&](const std::string& c) { return std::find(allowed.begin(), allowed.end(), c) != allowed.end(); };
  const std::string pick = "; name one of " + listed(allowed) + " (its allowedPriorityClasses)";
  if (sub.priority.empty()) {
    const std::string* d = default_class(classes);
    if (d == nullptr)
      return refused("priority", "the job names no priority class and there is no default class (one of priority 0); " +
                                     queue_of(q) + " needs one" + pick);
    if (!in_list(*d))
      return refused("priority", "the job names no priority class, so it would get the default class " + *d +
                                     ", which " + queue_of(q) + " does not allow" + pick);
    sub.priority = *d;  // shown as the class it got
    return Ok();
  }
  if (is_number(sub.priority))
    return refused("priority", quoted(sub.priority) + " is a number; " + queue_of(q) +
                                   " takes only priority classes" + pick);
  if (!in_list(sub.priority))
    return refused("priority", "class " + sub.priority + " is not allowed in " + queue_of(q) + pick);
  return Ok();
}

}  // namespace

std::string gpus_text(Quantity milli) {
  std::string out = std::to_string(milli / kMilliPerGpu);
  if (Quantity frac = milli % kMilliPerGpu; frac != 0) {
    std::string f = std::to_string(1000 + frac).substr(1);
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out;
}

Result<void> apply_guardrails(const QueueSpec& q, const PriorityClasses& classes, Submission& sub) {
  const JobSpec& job = sub.job;
  const std::string per_job = " per job";
  if (q.max_gpus_per_job || q.max_pods_per_job > 0) {
    Quantity gpus = 0;
    std::int64_t pods = 0;
    for (const PodSet& s : job.pod_sets) {
      Quantity set = 0;
      if (__builtin_mul_overflow(s.per_pod[kGpu], Quantity{s.count}, &set) || __builtin_add_overflow(gpus, set, &gpus))
        gpus = INT64_MAX;  // more than any limit
      pods += s.count;
    }
    if (q.max_gpus_per_job && gpus > *q.max_gpus_per_job)
      return refused("pods", "the job asks " + gpus_text(gpus) + " GPUs; " + queue_of(q) + " allows at most " +
                                 gpus_text(*q.max_gpus_per_job) + per_job + " (maxGpusPerJob)");
    if (q.max_pods_per_job > 0 && pods > q.max_pods_per_job)
      return refused("pods", "the job asks " + std::to_string(pods) + " pods; " + queue_of(q) + " allows at most " +
                                 std::to_string(q.max_pods_per_job) + per_job + " (maxPodsPerJob)");
  }
  if (q.max_runtime && job.max_runtime && *job.max_runtime > *q.max_runtime)
    return refused("maxRuntime", "the job asks " + std::to_string(*job.max_runtime) + " s; " + queue_of(q) +
                                     " allows at most " + std::to_string(*q.max_runtime) + " s (maxRuntime)");
  if (q.max_grace_period && job.grace_period > *q.max_grace_period)
    return refused("gracePeriod", "the job asks " + std::to_string(job.grace_period) + " s; " + queue_of(q) +
                                      " allows at most " + std::to_string(*q.max_grace_period) +
                                      " s (maxGracePeriod)");
  if (q.max_retries > 0 && job.retries > q.max_retries)
    return refused("retries", "the job asks " + std::to_string(job.retries) + "; " + queue_of(q) + " allows at most " +
                                  std::to_string(q.max_retries) + " (maxRetries)");
  if (auto r = check_priority(q, classes, sub); !r) return r;
  if (!job.max_runtime) {
    if (q.default_max_runtime)
      sub.job.max_runtime = q.default_max_runtime;
    else if (q.max_runtime)
      sub.job.max_runtime = q.max_runtime;
  }
  return Ok();
}

Result<void> check_allowed_classes(const QueueSpec& q, const PriorityClasses& priority_classes) {
  const auto& classes = priority_classes.by_name;
  for (std::size_t i = 0; i < q.allowed_priority_classes.size(); ++i) {
    const std::string& c = q.allowed_priority_classes[i];
    if (classes.count(c) > 0) continue;
    std::string known;
    for (const auto& [name, value] : classes) known += (known.empty() ? "" : ", ") + name;
    return Error{"allowedPriorityClasses[" + std::to_string(i) + "]: \"" + c + "\" is not a priority class; " +
                     (known.empty() ? "gpuqd has none: define priorityClasses in its config"
                                    : "gpuqd's classes are " + known + " (priorityClasses in its config)"),
                 ErrorCode::kInvalidArgument};
  }
  return Ok();
}

}  // namespace gpuq::spec
