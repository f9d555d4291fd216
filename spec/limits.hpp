#pragma once
// Limits on everything a user can make large, enforced by spec/validate.hpp for every front end
// (YAML, the API, traces, Kubernetes), so that no input can make gpuqd slow for others. Each
// error names its limit. docs/reference/limits.md lists them; keep the two in step.
#include <cstddef>
#include <cstdint>

namespace gpuq::spec::limits {

// Queue, cohort, node, flavor and priority class names, and owners: Kubernetes' 253 for names.
inline constexpr std::size_t kName = 253;
// Job ids name the local executor's files and directories.
inline constexpr std::size_t kJobId = 63;
// A job's name is free text, shown in listings.
inline constexpr std::size_t kJobName = 253;
// Pod set names (as Kueue's podSets[].name).
inline constexpr std::size_t kPodSetName = 63;
// Label keys and values, as Kubernetes: an optional DNS prefix of at most 253 ("gpuq.io/"), a
// name segment of at most 63; values of at most 63.
inline constexpr std::size_t kLabelPrefix = 253;
inline constexpr std::size_t kLabelSegment = 63;
// Labels on one node (Node Feature Discovery puts a few hundred on a GPU node).
inline constexpr std::size_t kLabels = 1024;

// Node constraints of a pod set and taints of a node (spec/constraints.hpp). Kubernetes sets no
// such limits; these are far above what a real pod carries, and bound what matching a pod set
// against every node may cost.
inline constexpr std::size_t kNodeSelector = 32;       // nodeSelector pairs
inline constexpr std::size_t kAffinityTerms = 8;       // required affinity terms (ORed)
inline constexpr std::size_t kTermRequirements = 16;   // requirements in one term (ANDed)
inline constexpr std::size_t kRequirementValues = 64;  // values of one requirement
inline constexpr std::size_t kTolerations = 32;
inline constexpr std::size_t kTaints = 32;             // taints on one node

// Pod sets per job (Kueue: 8), pods per pod set and per job.
inline constexpr std::size_t kPodSets = 8;
inline constexpr std::int64_t kPodsPerJob = 100'000;
// Flavors a job accepts; flavors in one queue's quotas (Kueue: 16 per resource group).
inline constexpr std::size_t kJobFlavors = 16;
inline constexpr std::size_t kQuotaFlavors = 16;
// GPUs on one node.
inline constexpr std::int64_t kNodeGpus = 255;

// What the local executor runs: arguments and environment entries, and their total size (well
// under Linux's 2 MiB for both), each argument or NAME=VALUE under Linux's MAX_ARG_STRLEN.
inline constexpr std::size_t kCommandArgs = 4096;
inline constexpr std::size_t kCommandBytes = 256 * 1024;
inline constexpr std::size_t kEnvEntries = 4096;
inline constexpr std::size_t kEnvBytes = 256 * 1024;
inline constexpr std::size_t kArgBytes = 128 * 1024 - 1;
inline constexpr std::size_t kWorkingDir = 4095;  // PATH_MAX - 1

// Times a failed job is requeued (JobSpec::retries); a queue's maxRetries caps it lower. Jobs
// one job waits for (gpuq submit --after-*).
inline constexpr std::int32_t kRetries = 100;
inline constexpr std::size_t kDependencies = 64;

// Users, and groups, named in one of a queue's roles (submitters, viewers).
inline constexpr std::size_t kRoleMembers = 1000;

// A queue's kubernetes block: an image reference (its defaultImage, each of its allowedImages'
// prefixes, a job's image), how many allowedImages, and its podTemplate as JSON text.
inline constexpr std::size_t kImage = 512;
inline constexpr std::size_t kAllowedImages = 64;
inline constexpr std::size_t kPodTemplateBytes = 65536;

// Cluster-wide settings.
inline constexpr std::size_t kPriorityClasses = 1000;
inline constexpr std::size_t kTopologyLevels = 8;

}  // namespace gpuq::spec::limits
