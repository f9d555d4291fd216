#pragma once
// A queue's guardrails on one submission (QueueSpec: maxGpusPerJob, maxPodsPerJob, maxRuntime
// and defaultMaxRuntime, maxGracePeriod, allowedPriorityClasses), checked where a job is
// submitted (gpuqd's Core::submit) once its queue is known. The limits that count a user's jobs
// (maxPendingJobsPerUser, maxSubmitsPerUserPerMinute) need the daemon's state and are the Core's;
// maxRunningJobsPerUser and nonPreemptibleMayBorrow are the engine's (scheduler/).
#include "spec/result.hpp"
#include "spec/types.hpp"

namespace gpuq::spec {

// Refuses (INVALID_ARGUMENT) a submission that asks more than the queue allows, naming the
// field, the value, the limit and the queue's key: `spec.pods: the job asks 16 GPUs; queue
// "vision" allows at most 8 per job (maxGpusPerJob)`. Otherwise gives the job what the queue
// sets for a job that asks none: maxRuntime (defaultMaxRuntime, else maxRuntime) and, with
// allowedPriorityClasses, the default priority class (the class of priority 0). Changes `sub`
// only when it returns Ok.
Result<void> apply_guardrails(const QueueSpec& q, const PriorityClasses& classes, Submission& sub);

// A queue's allowedPriorityClasses against gpuqd's classes (priorityClasses in its config): each
// must be one of them (INVALID_ARGUMENT naming the index, the class and the known ones).
Result<void> check_allowed_classes(const QueueSpec& q, const PriorityClasses& classes);

// GPUs as people say them: "8", "1.5", "0.25".
std::string gpus_text(Quantity milli);

}  // namespace gpuq::spec
