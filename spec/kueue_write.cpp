// gpuq queue specs to Kueue YAML (spec/kueue.hpp): what `gpuq queues export --format kueue`
// writes, read back by read_kueue into the same specs.
#include <algorithm>
#include <charconv>
#include <set>

#include "spec/enums.hpp"
#include "spec/kueue.hpp"
#include "spec/quantity.hpp"

namespace gpuq::spec {

namespace {

// Names are gpuq names (letters, digits, - _ .) or resource names (also /): never a character
// that needs escaping, but quoted so that "1" or "true" stay strings.
std::string q(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string kueue_resource_name(ResourceId r, const ResourceNames& names) {
  return r == kGpu ? "nvidia.com/gpu" : names.name(r);
}

std::string shortest(double v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// A flavor's resources by name: the order a queue's quotas come in (from a proto map, from a
// YAML mapping) says nothing, so groups are found and written in this one.
std::vector<ResourceId> resources_of(const FlavorQuota& f, const ResourceNames& names) {
  std::vector<ResourceId> out;
  for (const auto& [r, quota] : f.resources) out.push_back(r);
  std::sort(out.begin(), out.end(), [&](ResourceId a, ResourceId b) { return names.name(a) < names.name(b); });
  return out;
}

const ResourceQuota& quota_of(const FlavorQuota& f, ResourceId r) {
  for (const auto& [id, quota] : f.resources)
    if (id == r) return quota;
  throw SpecError("flavor " + f.flavor + ": no such resource");  // resources_of's own ids: never
}

// Consecutive flavors that list the same resources form one resource group (Kueue: every flavor
// of a group lists its covered resources, in order); a resource may be in one group only, so a
// queue whose flavors cannot be grouped that way is refused.
std::vector<std::vector<const FlavorQuota*>> groups_of(const QueueSpec& s, const ResourceNames& names) {
  std::vector<std::vector<const FlavorQuota*>> groups;
  std::set<ResourceId> used;
  for (const FlavorQuota& f : s.quotas) {
    if (!groups.empty() && resources_of(*groups.back().front(), names) == resources_of(f, names)) {
      groups.back().push_back(&f);
      continue;
    }
    for (ResourceId r : resources_of(f, names))
      if (!used.insert(r).second)
        throw SpecError("queue " + quoted(s.name.value) + ": flavor " + quoted(f.flavor) + " lists " +
                        names.name(r) +
                        " with other resources than the flavors before it, which Kueue cannot say (a "
                        "resource belongs to one resource group, whose flavors all list the same "
                        "resources); give its flavors the same resources");
    groups.push_back({&f});
  }
  return groups;
}

void write_quota(std::string& out, ResourceId r, const ResourceQuota& quota, const ResourceNames& names) {
  out += "      - name: " + q(kueue_resource_name(r, names)) + "\n";
  out += "        nominalQuota: " + q(format_quantity(quota.nominal, r)) + "\n";
  if (quota.borrowing_limit) out += "        borrowingLimit: " + q(format_quantity(*quota.borrowing_limit, r)) + "\n";
  if (quota.lending_limit) out += "        lendingLimit: " + q(format_quantity(*quota.lending_limit, r)) + "\n";
}

void write_cluster_queue(std::string& out, const QueueSpec& s, const ResourceNames& names) {
  const auto groups = groups_of(s, names);
  out += "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: " + q(s.name.value) +
         "\nspec:\n  namespaceSelector: {}\n";
  if (!s.cohort.empty()) out += "  cohort: " + q(s.cohort) + "\n";
  out += std::string("  queueingStrategy: ") + to_string(s.strategy) + "\n";
  out += "  resourceGroups:\n";
  for (const auto& group : groups) {
    out += "  - coveredResources: [";
    bool first = true;
    for (ResourceId r : resources_of(*group.front(), names)) {
      out += (first ? "" : ", ") + q(kueue_resource_name(r, names));
      first = false;
    }
    out += "]\n    flavors:\n";
    for (const FlavorQuota* f : group) {
      out += "    - name: " + q(f->flavor) + "\n      resources:\n";
      for (ResourceId r : resources_of(*f, names)) write_quota(out, r, quota_of(*f, r), names);
    }
  }
  const PreemptionSpec& p = s.preemption;
  out += "  preemption:\n";
  out += std::string("    withinClusterQueue: ") + to_string(p.within_queue) + "\n";
  out += std::string("    reclaimWithinCohort: ") + to_string(p.reclaim_within_cohort) + "\n";
  out += std::string("    borrowWithinCohort:\n      policy: ") + to_string(p.borrow_within_cohort) + "\n";
  if (p.borrow_max_priority_threshold)
    out += "      maxPriorityThreshold: " + std::to_string(*p.borrow_max_priority_threshold) + "\n";
  if (s.weight != 1.0) out += "  fairSharing:\n    weight: " + q(shortest(s.weight)) + "\n";
}

// What a gpuq queue holds that Kueue's ClusterQueue has no field for.
void warn_unexported(const QueueSpec& s, std::vector<std::string>& warnings) {
  auto lost = [&](const std::string& field, const std::string& value) {
    warnings.push_back("queue " + s.name.value + ": " + field + " " + value +
                       " is not exported: Kueue's ClusterQueue has no such field");
  };
  auto secs = [](std::int64_t v) { return std::to_string(v) + "s"; };
  if (s.preemption.min_runtime != 0) lost("preemption.minRuntime", secs(s.preemption.min_runtime));
  if (s.max_pending_jobs != 0) lost("maxPendingJobs", std::to_string(s.max_pending_jobs));
  if (s.max_gpus_per_job) lost("maxGpusPerJob", format_quantity(*s.max_gpus_per_job, kGpu));
  if (s.max_pods_per_job != 0) lost("maxPodsPerJob", std::to_string(s.max_pods_per_job));
  if (s.max_runtime) lost("maxRuntime", secs(*s.max_runtime));
  if (s.default_max_runtime) lost("defaultMaxRuntime", secs(*s.default_max_runtime));
  if (s.runtime_estimate) lost("runtimeEstimate", secs(*s.runtime_estimate));
  if (s.max_grace_period) lost("maxGracePeriod", secs(*s.max_grace_period));
  if (!s.allowed_priority_classes.empty())
    lost("allowedPriorityClasses", std::to_string(s.allowed_priority_classes.size()) + " classes");
  if (!s.notify.empty()) lost("notify", s.notify.url);
  if (s.non_preemptible_may_borrow) lost("nonPreemptibleMayBorrow", "true");
  if (s.max_running_jobs_per_user != 0) lost("maxRunningJobsPerUser", std::to_string(s.max_running_jobs_per_user));
  if (s.max_pending_jobs_per_user != 0) lost("maxPendingJobsPerUser", std::to_string(s.max_pending_jobs_per_user));
  if (s.max_submits_per_user_per_minute != 0)
    lost("maxSubmitsPerUserPerMinute", std::to_string(s.max_submits_per_user_per_minute));
  if (s.max_retries != 0) lost("maxRetries", std::to_string(s.max_retries));
  if (s.submitters) lost("submitters", "(a role)");
  if (!s.viewers.empty()) lost("viewers", "(a role)");
  if (!s.kubernetes.empty()) lost("kubernetes", "(namespace " + (s.kubernetes.ns.empty() ? std::string("unset") : s.kubernetes.ns) + ")");
}

}  // namespace

std::string write_kueue(const std::vector<QueueSpec>& queues, const ResourceNames& names,
                        std::vector<std::string>& warnings) {
  std::string flavors, cqs;
  std::set<std::string> seen;
  for (const QueueSpec& s : queues) {
    if (s.quotas.empty()) {
      warnings.push_back("queue " + s.name.value +
                         " is not exported: it has no quotas (limited only by free capacity), and a "
                         "Kueue ClusterQueue without resourceGroups admits nothing");
      continue;
    }
    write_cluster_queue(cqs, s, names);
    warn_unexported(s, warnings);
    for (const FlavorQuota& f : s.quotas)
      if (seen.insert(f.flavor).second)
        flavors += "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: " +
                   q(f.flavor) + "\n";
  }
  return "# Kueue objects written by gpuq queues export --format kueue\n" + flavors + cqs;
}

}  // namespace gpuq::spec
