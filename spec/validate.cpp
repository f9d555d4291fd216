#include "spec/validate.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "spec/enums.hpp"
#include "spec/limits.hpp"
#include "spec/quantity.hpp"

namespace gpuq::spec {

namespace {

bool alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool name_char(char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; }

std::string count(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}
std::string count(std::size_t n, const std::string& what) {
  return count(n, what.c_str(), (what + "s").c_str());
}

// Why `name` breaks the name rule, or "" when it keeps it.
std::string name_problem(std::string_view name, std::size_t max_length, bool owner = false) {
  if (name.size() > max_length)
    return "is " + count(name.size(), "character") + " long; at most " +
           std::to_string(max_length) + " are allowed";
  const bool first_ok = alnum(name.front()) || (owner && name.front() == '_');
  for (char c : name)
    if (!(name_char(c) || (owner && c == '@')))
      return std::string("holds ") + (static_cast<unsigned char>(c) < 0x20 || c == 0x7f
                                          ? std::string("a control character")
                                          : "'" + std::string(1, c) + "'");
  if (!first_ok) return "begins with '" + std::string(1, name.front()) + "'";
  if (name.find("..") != std::string_view::npos) return "holds \"..\"";
  return {};
}

const char* kNameRule = "use letters, digits, '-', '_' and '.', beginning with a letter or a digit";

std::string shown(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return quoted(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}

std::string shown(Quantity q, ResourceId r) { return quoted(format_quantity(q, r)); }

void check_not_negative(Quantity q, ResourceId r, const Path& at) {
  if (q < 0) fail(at, shown(q, r) + " is negative; it must be >= 0");
}

void check_resources(const ResourceVec& v, Path& at, const ResourceNames& names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto r = static_cast<ResourceId>(i);
    Path::Key k(at, names.name(r));
    check_not_negative(v[r], r, at);
  }
}

// A Kubernetes label name segment or value: alphanumeric at both ends, '-', '_', '.' inside.
std::string segment_problem(std::string_view s) {
  if (s.size() > limits::kLabelSegment)
    return "is " + count(s.size(), "character") + " long; at most " +
           std::to_string(limits::kLabelSegment) + " are allowed";
  for (char c : s)
    if (!name_char(c))
      return std::string("holds ") + (static_cast<unsigned char>(c) < 0x20 || c == 0x7f
                                          ? std::string("a control character")
                                          : "'" + std::string(1, c) + "'");
  if (!alnum(s.front()) || !alnum(s.back())) return "must begin and end with a letter or a digit";
  return {};
}

// A DNS subdomain (a label key's prefix): lowercase letters, digits, '-' and '.'.
std::string prefix_problem(std::string_view s) {
  if (s.size() > limits::kLabelPrefix)
    return "has a prefix of " + count(s.size(), "character") + "; at most " +
           std::to_string(limits::kLabelPrefix) + " are allowed";
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
      return "has a prefix that is not a DNS name (lowercase letters, digits, '-' and '.')";
  return {};
}

std::string text_problem(std::string_view s, std::size_t max_length) {
  if (s.size() > max_length)
    return "is " + count(s.size(), "byte") + " long; at most " + std::to_string(max_length) +
           " are allowed";
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "holds a control character";
  return {};
}

// A string the local executor hands to execve: no NUL, at most Linux's MAX_ARG_STRLEN.
std::string exec_problem(std::string_view s) {
  if (s.find('\0') != std::string_view::npos) return "holds a NUL character";
  if (s.size() > limits::kArgBytes)
    return "is " + count(s.size(), "byte") + " long; at most " + std::to_string(limits::kArgBytes) +
           " are allowed (Linux's limit for one argument)";
  return {};
}

void check_not_negative_limit(std::int64_t v, const char* key, Path& at) {
  if (v >= 0) return;
  Path::Key k(at, key);
  fail(at, quoted(std::to_string(v)) + " must be >= 0 (0: no limit)");
}

void check_guardrails(const QueueSpec& q, Path& at) {
  if (q.max_gpus_per_job && *q.max_gpus_per_job < 0) {
    Path::Key k(at, "maxGpusPerJob");
    fail(at, shown(*q.max_gpus_per_job, kGpu) + " is negative; it must be >= 0 GPUs");
  }
  check_not_negative_limit(q.max_pods_per_job, "maxPodsPerJob", at);
  check_not_negative_limit(q.max_running_jobs_per_user, "maxRunningJobsPerUser", at);
  check_not_negative_limit(q.max_pending_jobs_per_user, "maxPendingJobsPerUser", at);
  check_not_negative_limit(q.max_retries, "maxRetries", at);
  check_not_negative_limit(q.max_submits_per_user_per_minute, "maxSubmitsPerUserPerMinute", at);
  for (const auto& [key, v] : {std::pair{"maxRuntime", q.max_runtime},
                               std::pair{"defaultMaxRuntime", q.default_max_runtime},
                               std::pair{"runtimeEstimate", q.runtime_estimate}})
    if (v && *v <= 0) {
      Path::Key k(at, key);
      fail(at, quoted(std::to_string(*v)) + " must be > 0 seconds");
    }
  if (q.max_runtime && q.default_max_runtime && *q.default_max_runtime > *q.max_runtime) {
    Path::Key k(at, "defaultMaxRuntime");
    fail(at, quoted(std::to_string(*q.default_max_runtime)) + " is more than maxRuntime " +
                 quoted(std::to_string(*q.max_runtime)) + "; it must be <= maxRuntime");
  }
  if (q.max_grace_period && *q.max_grace_period < 0) {
    Path::Key k(at, "maxGracePeriod");
    fail(at, quoted(std::to_string(*q.max_grace_period)) + " must be >= 0 seconds");
  }
  {
    Path::Key idle(at, "idle");
    for (const auto& [key, v] : {std::pair{"warnAfter", q.idle.warn_after}, std::pair{"cancelAfter", q.idle.cancel_after}})
      if (v && *v <= 0) {
        Path::Key k(at, key);
        fail(at, quoted(std::to_string(*v) + "s") + " is not allowed; it must be a duration > 0, e.g. 2h");
      }
    if (q.idle.warn_after && q.idle.cancel_after && *q.idle.cancel_after < *q.idle.warn_after) {
      Path::Key k(at, "cancelAfter");
      fail(at, quoted(std::to_string(*q.idle.cancel_after) + "s") + " is less than warnAfter " +
                   quoted(std::to_string(*q.idle.warn_after) + "s") + "; it must be >= warnAfter");
    }
  }
  Path::Key k(at, "allowedPriorityClasses");
  check_count(q.allowed_priority_classes.size(), limits::kPriorityClasses, "classes", at);
  for (std::size_t i = 0; i < q.allowed_priority_classes.size(); ++i) {
    Path::Index ci(at, i);
    check_name(q.allowed_priority_classes[i], at);
    for (std::size_t j = 0; j < i; ++j)
      if (q.allowed_priority_classes[j] == q.allowed_priority_classes[i])
        fail(at, quoted(q.allowed_priority_classes[i]) + " is listed twice");
  }
}

// A role's users (user names, as owners) and groups (names); "*" stands for everyone.
void check_members(const Members& m, const char* role, Path& at) {
  Path::Key r(at, role);
  for (const auto& [key, list] : {std::pair{"users", &m.users}, std::pair{"groups", &m.groups}}) {
    Path::Key k(at, key);
    check_count(list->size(), limits::kRoleMembers, key, at);
    for (std::size_t i = 0; i < list->size(); ++i) {
      Path::Index ni(at, i);
      const std::string& name = (*list)[i];
      if (name == "*") continue;
      if (name.empty()) fail(at, "is empty; name a " + std::string(key == std::string("users") ? "user" : "group") + " or \"*\" for everyone");
      if (auto why = name_problem(name, limits::kName, /*owner=*/true); !why.empty())
        fail(at, quoted(name) + " is not a " + (key == std::string("users") ? "user" : "group") +
                     " name: it " + why + "; use letters, digits, '-', '_', '.' and '@', or \"*\" for everyone");
    }
  }
}

// A Kubernetes namespace (a DNS-1123 label): why `s` is not one, or "".
std::string dns_label_problem(std::string_view s) {
  if (s.size() > limits::kLabelSegment)
    return "is " + count(s.size(), "character") + " long; at most " + std::to_string(limits::kLabelSegment) +
           " are allowed";
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
      return std::string("holds ") + (static_cast<unsigned char>(c) < 0x20 || c == 0x7f
                                          ? std::string("a control character")
                                          : "'" + std::string(1, c) + "'");
  if (s.front() == '-' || s.back() == '-') return "must begin and end with a letter or a digit";
  return {};
}

// An image reference (a queue's defaultImage and allowedImages, a job's image).
void check_image(std::string_view image, const Path& at) {
  std::string why;
  if (image.size() > limits::kImage)
    why = "is " + count(image.size(), "byte") + " long; at most " + std::to_string(limits::kImage) + " are allowed";
  for (std::size_t i = 0; i < image.size() && why.empty(); ++i) {
    const char c = image[i];
    if (c == ' ' || (c >= '\t' && c <= '\r'))
      why = "holds whitespace";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      why = "holds a control character";
  }
  if (!why.empty())
    fail(at, quoted(image) + " is not an image: it " + why +
                 "; use a reference such as nvcr.io/nvidia/pytorch:24.05-py3 (at most " +
                 std::to_string(limits::kImage) + " bytes, no whitespace or control characters)");
}

// A queue's kubernetes block (binder kubernetes). Its podTemplate's content is checked where it
// is read (spec/yaml_read.hpp), where the tree is; here only its size.
void check_kubernetes(const QueueKubernetes& k, Path& at) {
  if (k.empty()) return;
  Path::Key kk(at, "kubernetes");
  {
    Path::Key n(at, "namespace");
    if (k.ns.empty())
      fail(at, std::string("is required when kubernetes.") +
                   (!k.default_image.empty()     ? "defaultImage"
                    : !k.allowed_images.empty() ? "allowedImages"
                                                : "podTemplate") +
                   " is set; name the namespace the queue's pods are made in");
    if (auto why = dns_label_problem(k.ns); !why.empty())
      fail(at, quoted(k.ns) + " is not a namespace: it " + why +
                   "; use 1 to 63 lowercase letters, digits and '-', beginning and ending with a letter or a digit");
  }
  {
    Path::Key a(at, "allowedImages");
    check_count(k.allowed_images.size(), limits::kAllowedImages, "images", at);
    for (std::size_t i = 0; i < k.allowed_images.size(); ++i) {
      Path::Index ii(at, i);
      if (k.allowed_images[i].empty())
        fail(at, "is empty; an empty prefix would allow every image (leave allowedImages out for that)");
      check_image(k.allowed_images[i], at);
    }
  }
  if (!k.default_image.empty()) {
    Path::Key d(at, "defaultImage");
    check_image(k.default_image, at);
    const bool allowed =
        k.allowed_images.empty() || std::any_of(k.allowed_images.begin(), k.allowed_images.end(), [&](const std::string& p) {
          return k.default_image.starts_with(p);
        });
    if (!allowed) {
      std::string prefixes;
      for (std::size_t i = 0; i < k.allowed_images.size() && i < 5; ++i)
        prefixes += (i ? ", " : "") + quoted(k.allowed_images[i]);
      if (k.allowed_images.size() > 5) prefixes += " (and " + std::to_string(k.allowed_images.size() - 5) + " more)";
      fail(at, quoted(k.default_image) + " is not within allowedImages; it must begin with one of " + prefixes);
    }
  }
  if (k.pod_template.size() > limits::kPodTemplateBytes) {
    Path::Key p(at, "podTemplate");
    fail(at, "is " + count(k.pod_template.size(), "byte") + " long as JSON; at most " +
                 std::to_string(limits::kPodTemplateBytes) + " are allowed");
  }
}

}  // namespace

void check_count(std::size_t n, std::size_t limit, std::string_view things, const Path& at, Counted how) {
  if (n > limit)
    fail(at, std::string(how == Counted::kListed ? "lists " : "has ") + std::to_string(n) + " " +
                 std::string(things) + "; at most " + std::to_string(limit) + " are allowed");
}

void check_name(std::string_view name, const Path& at) {
  if (name.empty()) fail(at, "is empty");
  if (auto why = name_problem(name, limits::kName); !why.empty())
    fail(at, quoted(name) + " is not a name: it " + why + "; " + kNameRule);
}

void check_job_id(std::string_view id, const Path& at) {
  if (id.empty()) fail(at, "is empty");
  if (auto why = name_problem(id, limits::kJobId); !why.empty())
    fail(at, quoted(id) + " is not a job id: it " + why + "; use 1 to " +
                 std::to_string(limits::kJobId) +
                 " letters, digits, '-', '_' and '.', beginning with a letter or a digit");
}

void check_label_key(std::string_view key, const Path& at) {
  if (key.empty()) fail(at, "is empty; a label key is a name such as zone or gpuq.io/rack");
  const auto slash = key.find('/');
  std::string why;
  if (slash != std::string_view::npos) {
    why = slash == 0 ? "has an empty prefix" : prefix_problem(key.substr(0, slash));
    if (why.empty() && slash + 1 == key.size()) why = "has an empty name after '/'";
    if (why.empty()) why = segment_problem(key.substr(slash + 1));
  } else {
    why = segment_problem(key);
  }
  if (!why.empty())
    fail(at, quoted(key) + " is not a label key: it " + why +
                 "; use [prefix/]name, the name up to 63 letters, digits, '-', '_' and '.', the "
                 "prefix a DNS name "
                 "such as gpuq.io");
}

void check_label_value(std::string_view value, const Path& at) {
  if (value.empty()) return;
  if (auto why = segment_problem(value); !why.empty())
    fail(at, quoted(value) + " is not a label value: it " + why +
                 "; use up to 63 letters, digits, '-', '_' and '.' (or nothing)");
}

void check_labels(const std::map<std::string, std::string>& labels, Path& at) {
  check_count(labels.size(), limits::kLabels, "labels", at, Counted::kHeld);
  for (const auto& [key, value] : labels) {
    Path::Key k(at, key);
    check_label_key(key, at);
    check_label_value(value, at);
  }
}

void validate(const QueueSpec& q, Path& at, const ResourceNames& names) {
  {
    Path::Key k(at, "name");
    check_name(q.name.value, at);
  }
  if (!q.cohort.empty()) {
    Path::Key k(at, "cohort");
    check_name(q.cohort, at);
  }
  // As Kueue: 0 is allowed (an infinite share while the queue borrows); any other weight is at
  // least 1e-9.
  if (!std::isfinite(q.weight) || q.weight < 0 || (q.weight > 0 && q.weight < 1e-9)) {
    Path::Key k(at, "weight");
    fail(at, shown(q.weight) + " must be 0 (borrowers last) or a number from 0.000000001 up");
  }
  {
    Path::Key quotas(at, "quotas");
    check_count(q.quotas.size(), limits::kQuotaFlavors, "flavors", at);
    for (std::size_t i = 0; i < q.quotas.size(); ++i) {
      Path::Index fi(at, i);
      const FlavorQuota& fq = q.quotas[i];
      {
        Path::Key k(at, "flavor");
        check_name(fq.flavor, at);
        for (std::size_t j = 0; j < i; ++j)
          if (q.quotas[j].flavor == fq.flavor) fail(at, quoted(fq.flavor) + " is listed twice");
      }
      Path::Key res(at, "resources");
      for (const auto& [r, rq] : fq.resources) {
        Path::Key rk(at, names.name(r));
        {
          Path::Key k(at, "nominal");
          check_not_negative(rq.nominal, r, at);
        }
        for (const auto& [key, limit] : {std::pair{"borrowingLimit", rq.borrowing_limit},
                                         std::pair{"lendingLimit", rq.lending_limit}}) {
          if (!limit) continue;
          Path::Key k(at, key);
          check_not_negative(*limit, r, at);
          if (q.cohort.empty())
            fail(at, shown(*limit, r) +
                         " needs the queue to be in a cohort; set its cohort or leave out " + key);
        }
      }
    }
  }
  {
    Path::Key p(at, "preemption");
    const PreemptionSpec& pre = q.preemption;
    if (pre.min_runtime < 0) {
      Path::Key k(at, "minRuntime");
      fail(at, quoted(std::to_string(pre.min_runtime)) + " must be >= 0 seconds");
    }
    // As in Kueue: other queues' jobs are candidates only through reclaimWithinCohort.
    if (pre.borrow_within_cohort != BorrowWithinCohortPolicy::kNever &&
        pre.reclaim_within_cohort == ReclaimPolicy::kNever) {
      Path::Key k(at, "borrowWithinCohort");
      fail(at, "policy LowerPriority needs reclaimWithinCohort LowerPriority or Any (it is Never)");
    }
  }
  if (q.max_pending_jobs < 0) {
    Path::Key k(at, "maxPendingJobs");
    fail(at, quoted(std::to_string(q.max_pending_jobs)) + " must be >= 0 (0: no limit)");
  }
  check_guardrails(q, at);
  if (q.submitters) check_members(*q.submitters, "submitters", at);
  check_members(q.viewers, "viewers", at);
  check_kubernetes(q.kubernetes, at);
  Path::Key k(at, "notify");
  validate(q.notify, at);
}

void validate(const NodeSpec& n, Path& at, const ResourceNames& names) {
  {
    Path::Key k(at, "name");
    check_name(n.name, at);
  }
  {
    Path::Key k(at, "flavor");
    check_name(n.flavor, at);
  }
  {
    Path::Key k(at, "capacity");
    check_resources(n.capacity, at, names);
    Path::Key g(at, "gpu");
    if (n.capacity[kGpu] % kMilliPerGpu != 0)
      fail(at,
           shown(n.capacity[kGpu], kGpu) + " is not a whole number of GPUs; a node has whole GPUs");
    if (n.capacity[kGpu] / kMilliPerGpu > limits::kNodeGpus)
      fail(at, shown(n.capacity[kGpu], kGpu) + " is too many; a node has at most " +
                   std::to_string(limits::kNodeGpus) + " GPUs");
  }
  {
    Path::Key k(at, "labels");
    check_labels(n.labels, at);
  }
  if (!n.taints.empty()) {
    Path::Key k(at, "taints");
    check_taints(n.taints, at);
  }
  if (n.dedicated_to) {
    Path::Key k(at, "dedicatedTo");
    check_name(n.dedicated_to->value, at);
  }
}

void validate(const JobSpec& j, Path& at, const ResourceNames& names) {
  if (!j.id.empty()) {
    Path::Key k(at, "id");
    check_job_id(j.id.value, at);
  }
  {
    Path::Key k(at, "queue");
    if (j.queue.empty()) fail(at, "is empty; name the queue to submit to");
    check_name(j.queue.value, at);
  }
  if (!j.owner.empty()) {
    Path::Key k(at, "owner");
    if (auto why = name_problem(j.owner, limits::kName, /*owner=*/true); !why.empty())
      fail(at, quoted(j.owner) + " is not a user name: it " + why +
                   "; use letters, digits, '-', '_', '.' and '@', beginning with a letter, a digit "
                   "or '_'");
  }
  if (!j.name.empty()) {
    Path::Key k(at, "name");
    if (auto why = text_problem(j.name, limits::kJobName); !why.empty())
      fail(at, quoted(j.name) + " " + why);
  }
  {
    Path::Key k(at, "pods");
    if (j.pod_sets.empty()) fail(at, "is empty; a job needs at least one pod set");
    check_count(j.pod_sets.size(), limits::kPodSets, "pod sets", at);
    std::int64_t pods = 0;
    for (std::size_t i = 0; i < j.pod_sets.size(); ++i) {
      Path::Index pi(at, i);
      const PodSet& s = j.pod_sets[i];
      if (!s.name.empty()) {
        Path::Key nk(at, "name");
        if (auto why = name_problem(s.name, limits::kPodSetName); !why.empty())
          fail(at, quoted(s.name) + " is not a pod set name: it " + why + "; " + kNameRule);
      }
      {
        Path::Key ck(at, "count");
        if (s.count < 1 || s.count > limits::kPodsPerJob)
          fail(at, quoted(std::to_string(s.count)) + " must be 1.." +
                       std::to_string(limits::kPodsPerJob));
      }
      pods += s.count;
      validate(s.where, at);
      Path::Key rk(at, "resources");
      check_resources(s.per_pod, at, names);
    }
    if (pods > limits::kPodsPerJob)
      fail(at, "ask for " + std::to_string(pods) + " pods in all; a job has at most " +
                   std::to_string(limits::kPodsPerJob));
  }
  {
    Path::Key k(at, "flavors");
    check_count(j.flavors.size(), limits::kJobFlavors, "flavors", at);
    for (std::size_t i = 0; i < j.flavors.size(); ++i) {
      Path::Index fi(at, i);
      check_name(j.flavors[i], at);
    }
  }
  if (j.max_runtime && *j.max_runtime <= 0) {
    Path::Key k(at, "maxRuntime");
    fail(at, quoted(std::to_string(*j.max_runtime)) + " must be > 0 seconds");
  }
  if (j.expected_runtime && *j.expected_runtime <= 0) {
    Path::Key k(at, "expectedRuntime");
    fail(at, quoted(std::to_string(*j.expected_runtime)) + " must be > 0 seconds");
  }
  if (j.expected_runtime && j.max_runtime && *j.expected_runtime > *j.max_runtime) {
    Path::Key k(at, "expectedRuntime");
    fail(at, quoted(std::to_string(*j.expected_runtime)) + " is more than maxRuntime " +
                 quoted(std::to_string(*j.max_runtime)) + "; it must be <= maxRuntime");
  }
  if (j.grace_period < 0) {
    Path::Key k(at, "gracePeriod");
    fail(at, quoted(std::to_string(j.grace_period)) + " must be >= 0 seconds");
  }
  if (j.retries < 0 || j.retries > limits::kRetries) {
    Path::Key k(at, "retries");
    fail(at, quoted(std::to_string(j.retries)) + " must be 0.." + std::to_string(limits::kRetries));
  }
  if (j.array_throttle < 0) {
    Path::Key k(at, "arrayThrottle");
    fail(at, quoted(std::to_string(j.array_throttle)) + " must be >= 0 (0: no cap)");
  }
}

void validate(const NotifySpec& n, Path& at) {
  if (n.empty() && n.on.empty()) return;
  {
    Path::Key k(at, "url");
    if (n.url.empty()) fail(at, "is empty; give the http:// URL to POST to");
    if (n.url.size() > 2048) fail(at, "is " + std::to_string(n.url.size()) + " bytes; at most 2048 are allowed");
    if (n.url.rfind("http://", 0) != 0)
      fail(at, quoted(n.url) + " is not an http:// URL (https:// is not supported yet)");
    for (char c : n.url)
      if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) fail(at, quoted(n.url) + " holds a space or a control character");
  }
  Path::Key k(at, "on");
  static constexpr std::string_view kEvents[] = {"started", "finished", "failed", "preempted", "cancelled"};
  for (std::size_t i = 0; i < n.on.size(); ++i) {
    Path::Index ik(at, i);
    if (std::find(std::begin(kEvents), std::end(kEvents), n.on[i]) == std::end(kEvents))
      fail(at, quoted(n.on[i]) + " is not an event; use started, finished, failed, preempted or cancelled");
    if (std::find(n.on.begin(), n.on.begin() + static_cast<std::ptrdiff_t>(i), n.on[i]) != n.on.begin() + static_cast<std::ptrdiff_t>(i))
      fail(at, quoted(n.on[i]) + " is listed twice");
  }
}

void validate(const RunSpec& r, Path& at) {
  {
    Path::Key k(at, "command");
    check_count(r.command.size(), limits::kCommandArgs, "arguments", at, Counted::kHeld);
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < r.command.size(); ++i) {
      Path::Index ai(at, i);
      if (auto why = exec_problem(r.command[i]); !why.empty()) fail(at, "the argument " + why);
      bytes += r.command[i].size() + 1;
    }
    if (bytes > limits::kCommandBytes)
      fail(at, "is " + std::to_string(bytes) + " bytes in all; at most " +
                   std::to_string(limits::kCommandBytes) + " are allowed");
  }
  {
    Path::Key k(at, "env");
    check_count(r.env.size(), limits::kEnvEntries, "variables", at, Counted::kHeld);
    std::size_t bytes = 0;
    for (const auto& [name, value] : r.env) {
      Path::Key nk(at, name);
      if (name.empty()) fail(at, "a variable name is empty");
      if (name.find('=') != std::string::npos)
        fail(at, quoted(name) + " is not a variable name: it holds '='");
      if (auto why = exec_problem(name + "=" + value); !why.empty())
        fail(at, "the variable " + why);
      bytes += name.size() + value.size() + 2;
    }
    if (bytes > limits::kEnvBytes)
      fail(at, "is " + std::to_string(bytes) + " bytes in all; at most " +
                   std::to_string(limits::kEnvBytes) + " are allowed");
  }
  if (!r.working_dir.empty()) {
    Path::Key k(at, "workingDir");
    if (r.working_dir.find('\0') != std::string::npos) fail(at, "holds a NUL character");
    if (r.working_dir.size() > limits::kWorkingDir)
      fail(at, "is " + count(r.working_dir.size(), "byte") + " long; at most " +
                   std::to_string(limits::kWorkingDir) + " are allowed");
  }
  if (!r.image.empty()) {
    Path::Key k(at, "image");
    check_image(r.image, at);
  }
  if (!r.tty_size.empty()) {
    Path::Key k(at, "ttySize");
    const auto x = r.tty_size.find('x');
    const auto dimension = [](std::string_view d) {
      return !d.empty() && d.size() <= 5 && d.find_first_not_of("0123456789") == std::string_view::npos &&
             std::stoi(std::string(d)) >= 1 && std::stoi(std::string(d)) <= 10000;
    };
    if (!r.tty || x == std::string::npos || !dimension(std::string_view(r.tty_size).substr(0, x)) ||
        !dimension(std::string_view(r.tty_size).substr(x + 1)))
      fail(at, quoted(r.tty_size.substr(0, 32)) + " is not ROWSxCOLS (1 to 10000 each) of a job with a terminal (tty)");
  }
}

void validate(const PriorityClasses& c, Path& at) {
  check_count(c.by_name.size(), limits::kPriorityClasses, "classes", at);
  for (const auto& [name, value] : c.by_name) {
    Path::Key k(at, name);
    if (!name.empty() && name.find_first_not_of("-+0123456789") == std::string::npos)
      fail(at, "a class name must not be a number");
    check_name(name, at);
  }
}

void validate(const SchedulingPolicy& p, Path& at) {
  {
    Path::Key t(at, "topology");
    Path::Key l(at, "levels");
    check_count(p.topology_levels.size(), limits::kTopologyLevels, "levels", at);
    for (std::size_t i = 0; i < p.topology_levels.size(); ++i) {
      Path::Index li(at, i);
      check_label_key(p.topology_levels[i], at);
      for (std::size_t k = 0; k < i; ++k)
        if (p.topology_levels[k] == p.topology_levels[i])
          fail(at, quoted(p.topology_levels[i]) + " is listed twice");
    }
  }
  Path::Key fs(at, "fairSharing");
  if (p.usage_half_life < 0) {
    Path::Key k(at, "usageHalfLife");
    fail(at, quoted(std::to_string(p.usage_half_life)) + " must be > 0 seconds");
  }
  Path::Key st(at, "preemptionStrategies");
  const auto& s = p.fair_sharing.strategies;
  // Kueue's valid sets: either one alone, or both with LessThanOrEqualToFinalShare first.
  if (s.empty() || s.size() > 2)
    fail(at, "lists " + count(s.size(), "strategy", "strategies") + "; list one or both of " +
                 one_of(enum_words<FairShareStrategy>()));
  if (s.size() == 2 && s[0] == s[1]) {
    Path::Index i(at, 1);
    fail(at, quoted(to_string(s[1])) + " is listed twice");
  } else if (s.size() == 2 && s[0] != FairShareStrategy::kLessThanOrEqualToFinalShare) {
    fail(at, std::string("[") + to_string(s[0]) + ", " + to_string(s[1]) +
                 "] is not a valid order; with both, LessThanOrEqualToFinalShare comes first "
                 "(as in Kueue)");
  }
}

}  // namespace gpuq::spec
