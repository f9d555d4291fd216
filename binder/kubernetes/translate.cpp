#include "binder/kubernetes/translate.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "spec/limits.hpp"

namespace gpuq::binder::k8s {

std::string job_id_of(const std::string& ns, const std::string& name, const std::string& uid) {
  std::string hex;
  for (char c : uid)
    if (std::isxdigit(static_cast<unsigned char>(c)) && hex.size() < 5) hex += static_cast<char>(std::tolower(c));
  while (hex.size() < 5) hex += '0';
  const std::size_t room = spec::limits::kJobId - ns.size() - 1 - 6;
  std::string base = name.substr(0, std::min(name.size(), room));
  while (!base.empty() && (base.back() == '-' || base.back() == '.')) base.pop_back();
  return ns + "." + base + "-" + hex;
}

std::optional<std::string> queue_of(const PodInfo& pod, const std::string& ns_default, std::string& why) {
  for (const char* label : {kQueueLabel, kKueueQueueLabel})
    if (auto it = pod.labels.find(label); it != pod.labels.end() && !it->second.empty()) return it->second;
  if (!ns_default.empty()) return ns_default;
  why = std::string("no queue: label the pod ") + kQueueLabel + "=QUEUE (or " + kKueueQueueLabel +
        "), or annotate namespace " + pod.ns + " with " + kDefaultQueueAnnotation + "=QUEUE";
  return std::nullopt;
}

namespace {

// A count from 1 to 10000 in a label or annotation; 0 when it is not one.
int count_of(const std::string& s) {
  int n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  return ec == std::errc() && p == s.data() + s.size() && n >= 1 && n <= 10000 ? n : 0;
}

// One declaration of a pod's gang: what says it (for messages), the group, its size.
struct Declared {
  std::string by;  // "gpuq.io/pod-group-size", "PodGroup scheduling.x-k8s.io ns/name", ...
  GroupRef ref;
  std::string why;  // why its size is not known
};

}  // namespace

std::optional<GroupRef> group_of(const PodInfo& pod, const PodGroupSizes& podgroups, std::string& why,
                                 const std::set<std::string>& unwatched) {
  std::vector<Declared> found;
  const auto label = [&](const char* k) {
    auto it = pod.labels.find(k);
    return it == pod.labels.end() ? std::string() : it->second;
  };
  const auto annotation = [&](const char* k) -> std::optional<std::string> {
    auto it = pod.annotations.find(k);
    return it == pod.annotations.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  // A name with its size in an annotation beside it.
  const auto counted = [&](const std::string& name, const std::string& key, const char* count_key) {
    Declared d{count_key, {name, key, 0, false, ""}, ""};
    const auto n = annotation(count_key);
    if (!n)
      d.why = "pod group " + name + ": annotation " + count_key + " is missing; set it to the number of pods";
    else if ((d.ref.size = count_of(*n)) == 0)
      d.why = "pod group " + name + ": annotation " + count_key + "=\"" + *n +
              "\" is not allowed; use a number of pods from 1 to 10000";
    found.push_back(std::move(d));
  };
  // A name of a PodGroup object, whose minMember is the size (a JobSet: its pods' count).
  const auto object = [&](const std::string& name, const char* group) {
    const bool jobset = std::string_view(group) == kJobSetGroup;
    const char* kind = jobset ? "JobSet" : "PodGroup";
    const std::string where = std::string(group) + "/" + pod.ns + "/" + name;
    Declared d{std::string(kind) + " " + group + " " + pod.ns + "/" + name,
               {name, std::string(group) + ":" + name, 0, !jobset, where}, ""};
    if (unwatched.count(group) > 0)
      d.why = "pod group " + name + " waits for its " + kind + " object (" + group + ") in namespace " + pod.ns +
              ", but gpuqd does not watch " + kind + "s: the API server did not serve " + group +
              " when gpuqd started; restart gpuqd once its CRD is installed";
    else if (auto it = podgroups.find(where); it == podgroups.end())
      d.why = "pod group " + name + " waits for its " + kind + " object (" + group + ") in namespace " + pod.ns;
    else if ((d.ref.size = it->second) < 1 || it->second > 10000)
      d.why = std::string(kind) + " " + pod.ns + "/" + name + ": " + (jobset ? "its pods' count " : "minMember ") +
              std::to_string(it->second) + " is not allowed; use 1 to 10000", d.ref.size = 0;
    found.push_back(std::move(d));
  };
  if (const std::string g = label(kGroupLabel); !g.empty()) counted(g, g, kGroupSizeAnnotation);
  if (const std::string g = label(kKueueGroupLabel); !g.empty()) counted(g, "kueue:" + g, kKueueGroupCountAnnotation);
  if (const std::string g = label(kLwsNameLabel), i = label(kLwsGroupIndexLabel); !g.empty() && !i.empty())
    counted(g + "-" + i, "lws:" + g + "-" + i, kLwsSizeAnnotation);
  if (const std::string g = label(kCoschedulingLabel); !g.empty()) object(g, kCoschedulingGroup);
  if (const std::string g = label(kJobSetNameLabel); !g.empty()) object(g, kJobSetGroup);
  for (const char* k : {kVolcanoGroupAnnotation, kVolcanoGroupAnnotation2})
    if (const auto g = annotation(k); g && !g->empty()) {
      object(*g, kVolcanoGroup);
      break;
    }
  if (found.empty()) return std::nullopt;
  for (const Declared& d : found)
    if (!d.why.empty()) {
      why = d.why;
      GroupRef r = d.ref;
      r.size = 0;
      return r;
    }
  for (const Declared& d : found)
    if (d.ref.size != found.front().ref.size) {
      why = "pod group declarations disagree: " + found.front().by + " says " + std::to_string(found.front().ref.size) +
            " pods, " + d.by + " says " + std::to_string(d.ref.size) + "; gpuq places the pod once they agree";
      GroupRef r = found.front().ref;
      r.size = 0;
      return r;
    }
  return found.front().ref;
}

ResourceVec pod_request(const PodInfo& pod, const TranslateOptions& options) {
  ResourceVec r = pod.request;
  if (options.pods != 0) r[options.pods] = 1;
  return r;
}

Submission submission_of(const std::vector<const PodInfo*>& pods, const std::string& id, const std::string& queue,
                         const TranslateOptions& options, std::vector<std::string>& order) {
  Submission sub;
  JobSpec& j = sub.job;
  j.id = JobId(id);
  j.queue = QueueName(queue);
  const PodInfo& first = *pods.front();
  j.owner = first.ns;
  j.name = first.name;
  std::string unused;
  if (auto group = group_of(first, {}, unused)) j.name = group->name;
  j.priority = 0;
  bool any_priority = false;
  std::vector<std::vector<std::string>> members;  // pod keys by pod set
  for (const PodInfo* p : pods) {
    if (p->priority && (!any_priority || *p->priority > j.priority)) {
      j.priority = *p->priority;
      any_priority = true;
    }
    j.grace_period = p == pods.front() ? p->grace_seconds : std::max<Time>(j.grace_period, p->grace_seconds);
    const ResourceVec req = pod_request(*p, options);
    std::size_t s = 0;
    while (s < j.pod_sets.size() && !(j.pod_sets[s].per_pod == req && j.pod_sets[s].where == p->where)) ++s;
    if (s == j.pod_sets.size()) {
      PodSet set;
      set.name = "pods-" + std::to_string(s);
      set.count = 0;
      set.per_pod = req;
      set.where = p->where;
      j.pod_sets.push_back(std::move(set));
      members.emplace_back();
    }
    ++j.pod_sets[s].count;
    members[s].push_back(p->key());
  }
  order.clear();
  for (auto& m : members) order.insert(order.end(), m.begin(), m.end());
  sub.priority = std::to_string(j.priority);
  return sub;
}

NodeSpec node_spec_of(const NodeInfo& node, const ResourceVec& foreign, const TranslateOptions& options) {
  NodeSpec n;
  n.name = node.name;
  n.labels = node.labels;
  n.taints = node.taints;
  if (auto it = node.labels.find(options.flavor_label); it != node.labels.end() && !it->second.empty())
    n.flavor = it->second;
  else if (auto gp = node.labels.find(kGpuProductLabel); gp != node.labels.end() && !gp->second.empty())
    n.flavor = gp->second;
  else
    n.flavor = "default";
  ResourceVec alloc = node.allocatable;
  if (options.pods != 0) alloc[options.pods] = node.max_pods;
  for (std::size_t r = 0; r < kMaxResources; ++r) n.capacity.v[r] = std::max<Quantity>(0, alloc.v[r] - foreign.v[r]);
  // Whole GPUs only: a foreign pod's share of a GPU (gpu-milli) takes its whole GPU from gpuq.
  n.capacity[kGpu] -= n.capacity[kGpu] % kMilliPerGpu;
  n.state = node.unschedulable || !node.ready ? NodeState::kCordoned : NodeState::kReady;
  return n;
}

}  // namespace gpuq::binder::k8s
