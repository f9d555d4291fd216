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

std::optional<GroupRef> group_of(const PodInfo& pod, std::string& why) {
  auto it = pod.labels.find(kGroupLabel);
  if (it == pod.labels.end() || it->second.empty()) return std::nullopt;
  GroupRef g{it->second, 0};
  auto size = pod.annotations.find(kGroupSizeAnnotation);
  if (size == pod.annotations.end()) {
    why = std::string("pod group ") + g.name + ": annotation " + kGroupSizeAnnotation + " is missing; set it to the number of pods";
    return g;
  }
  const std::string& s = size->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), g.size);
  if (ec != std::errc() || p != s.data() + s.size() || g.size < 1 || g.size > 10000) {
    why = std::string("pod group ") + g.name + ": annotation " + kGroupSizeAnnotation + "=\"" + s +
          "\" is not allowed; use a number of pods from 1 to 10000";
    g.size = 0;
  }
  return g;
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
  auto group = first.labels.find(kGroupLabel);
  j.name = group != first.labels.end() ? group->second : first.name;
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
