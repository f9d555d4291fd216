#include "tests/kubefake/kubelet.hpp"

#include <algorithm>
#include <charconv>

#include "tests/kubefake/meta.hpp"
#include "tests/kubefake/quantity.hpp"
#include "tests/kubefake/registry.hpp"
#include "tests/kubefake/resources.hpp"
#include "tests/kubefake/status.hpp"

namespace gpuq::kubefake {

namespace {

constexpr const char* kGpu = "nvidia.com/gpu";

bool deleting(const json::object& o) {
  return value_at(o, {"metadata", "deletionTimestamp"}) != nullptr;
}

std::string hex_id() {
  std::string a = new_uid() + new_uid();
  a.erase(std::remove(a.begin(), a.end(), '-'), a.end());
  return a;  // 64 hex characters, the shape of a container id
}

Amounts allocatable(const json::object& node) {
  Amounts out;
  if (const json::object* a = object_at(node, {"status", "allocatable"})) {
    for (const auto& kv : *a) {
      if (auto v = parse_milli(kv.value())) out[std::string(kv.key())] = *v;
    }
  }
  return out;
}

// cpu is reported in millicores, everything else in whole units (as the kubelet's message).
std::int64_t shown(const std::string& resource, std::int64_t milli) {
  return resource == "cpu" ? milli : (milli + 999) / 1000;
}

std::string host_ip(const json::object& node) {
  const json::value* a = value_at(node, {"status", "addresses"});
  if (a != nullptr && a->is_array()) {
    for (const json::value& e : a->get_array()) {
      if (e.is_object() && string_at(e.get_object(), {"type"}) == "InternalIP") {
        return string_at(e.get_object(), {"address"});
      }
    }
  }
  return "10.0.0.1";
}

std::optional<int> run_seconds(const json::object& pod) {
  std::string s = string_at(pod, {"metadata", "annotations", kRunSecondsAnnotation});
  int n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || n < 0) return std::nullopt;
  return n;
}

// One status entry per container of `list`, made by `make(container)`.
template <class F>
json::array container_statuses(const json::object& pod, const char* list, F make) {
  json::array out;
  const json::value* cs = value_at(pod, {"spec", list});
  if (cs == nullptr || !cs->is_array()) return out;
  for (const json::value& c : cs->get_array()) {
    if (!c.is_object()) continue;
    std::string image = string_at(c.get_object(), {"image"});
    json::object s{{"name", string_at(c.get_object(), {"name"})},
                   {"lastState", json::object()},
                   {"restartCount", 0},
                   {"image", image},
                   {"imageID", ""}};
    make(s, image);
    out.push_back(std::move(s));
  }
  return out;
}

std::string container_names(const json::object& pod) {
  std::string names;
  const json::value* cs = value_at(pod, {"spec", "containers"});
  if (cs != nullptr && cs->is_array()) {
    for (const json::value& c : cs->get_array()) {
      if (!c.is_object()) continue;
      names += (names.empty() ? "" : " ") + string_at(c.get_object(), {"name"});
    }
  }
  return "[" + names + "]";
}

void post_event(Store::Txn& txn, const json::object& pod, const std::string& node,
                const std::string& reason, const std::string& message) {
  std::string ns = string_at(pod, {"metadata", "namespace"});
  std::string name = string_at(pod, {"metadata", "name"});
  std::string now = now_rfc3339();
  json::object ev{
      {"metadata", json::object{{"name", name + "." + hex_id().substr(0, 16)}}},
      {"involvedObject",
       json::object{{"kind", "Pod"},
                    {"namespace", ns},
                    {"name", name},
                    {"uid", string_at(pod, {"metadata", "uid"})},
                    {"apiVersion", "v1"},
                    {"resourceVersion", string_at(pod, {"metadata", "resourceVersion"})}}},
      {"reason", reason},
      {"message", message},
      {"source", json::object{{"component", "kubelet"}, {"host", node}}},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1},
      {"type", "Warning"},
      {"eventTime", nullptr},
      {"reportingComponent", "kubelet"},
      {"reportingInstance", node}};
  create_object(txn, resource("events"), ns, std::move(ev));
}

}  // namespace

json::object make_node(const std::string& name, int gpus, const std::string& cpu,
                       const std::string& memory, json::object labels) {
  labels["kubernetes.io/hostname"] = name;
  labels["kubernetes.io/os"] = "linux";
  labels["kubernetes.io/arch"] = "amd64";
  json::object resources{{"cpu", cpu},
                         {"memory", memory},
                         {"pods", "110"},
                         {"ephemeral-storage", "1Ti"},
                         {kGpu, std::to_string(gpus)}};
  json::object node{
      {"kind", "Node"},
      {"apiVersion", "v1"},
      {"metadata", json::object{{"name", name}, {"labels", std::move(labels)}}},
      {"spec", json::object()},
      {"status",
       json::object{
           {"capacity", resources},
           {"allocatable", resources},
           {"addresses", json::array{json::object{{"type", "InternalIP"}, {"address", "10.0.0.1"}},
                                     json::object{{"type", "Hostname"}, {"address", name}}}},
           {"daemonEndpoints", json::object{{"kubeletEndpoint", json::object{{"Port", 10250}}}}},
           {"nodeInfo", json::object{{"machineID", hex_id().substr(0, 32)},
                                     {"systemUUID", new_uid()},
                                     {"bootID", new_uid()},
                                     {"kernelVersion", "6.1.0-kubefake"},
                                     {"osImage", "Debian GNU/Linux 12 (bookworm)"},
                                     {"containerRuntimeVersion", "containerd://1.7.2"},
                                     {"kubeletVersion", "v1.28.0"},
                                     {"kubeProxyVersion", "v1.28.0"},
                                     {"operatingSystem", "linux"},
                                     {"architecture", "amd64"}}}}}};
  set_ready(node, true);
  return node;
}

void set_ready(json::object& node, bool ready) {
  json::object& status = child(node, "status");
  if (ready) {
    set_condition(status, "Ready", "True", "KubeletReady", "kubelet is posting ready status");
  } else {
    set_condition(status, "Ready", "False", "KubeletNotReady", "container runtime is down");
  }
  for (json::value& c : status["conditions"].get_array()) {
    json::object& o = c.get_object();
    o.erase("lastProbeTime");  // node conditions have a heartbeat instead
    o["lastHeartbeatTime"] = now_rfc3339();
  }
  // The node lifecycle controller's taints for a node that is not Ready.
  json::object& spec = child(node, "spec");
  json::array taints;
  if (const json::value* t = spec.if_contains("taints"); t != nullptr && t->is_array()) {
    for (const json::value& e : t->get_array()) {
      if (!e.is_object() || string_at(e.get_object(), {"key"}) != "node.kubernetes.io/not-ready")
        taints.push_back(e);
    }
  }
  if (!ready) {
    for (const char* effect : {"NoSchedule", "NoExecute"}) {
      taints.push_back(json::object{{"key", "node.kubernetes.io/not-ready"},
                                    {"effect", effect},
                                    {"timeAdded", now_rfc3339()}});
    }
  }
  if (taints.empty()) {
    spec.erase("taints");
  } else {
    spec["taints"] = std::move(taints);
  }
}

bool node_ready(const json::object& node) { return condition_true(node, "Ready"); }

Kubelet::Kubelet(Store& store, bool enabled, std::chrono::milliseconds start_delay)
    : store_(store), enabled_(enabled), start_delay_(start_delay) {
  if (!enabled_) return;
  observer_ = store_.observe([this](const Event& e) { notice(e); });
  thread_ = std::thread([this] { run(); });
}

Kubelet::~Kubelet() {
  if (observer_) store_.unobserve(*observer_);  // no notice() once this returns
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Kubelet::notice(const Event& e) {
  std::lock_guard lock(queue_mutex_);
  if (e.resource == "pods") {
    if (dirty_pod_set_.insert(e.key).second) dirty_pods_.push_back(e.key);
  } else if (e.resource == "nodes") {
    dirty_nodes_.insert(e.key.name);
  } else {
    return;
  }
  wake_.notify_one();
}

void Kubelet::schedule(const ObjectKey& key, Clock::time_point at) {
  std::lock_guard lock(queue_mutex_);
  timers_.emplace(at, key);
  wake_.notify_one();
}

void Kubelet::run() {
  for (;;) {
    std::vector<ObjectKey> pods;
    std::set<std::string> nodes;
    {
      std::unique_lock lock(queue_mutex_);
      auto due = [&] { return !timers_.empty() && timers_.begin()->first <= Clock::now(); };
      auto ready = [&] {
        return stopping_ || !dirty_pods_.empty() || !dirty_nodes_.empty() || due();
      };
      while (!ready()) {
        if (timers_.empty()) {
          wake_.wait(lock);
        } else {
          wake_.wait_until(lock, timers_.begin()->first);
        }
      }
      if (stopping_) return;
      pods.swap(dirty_pods_);
      dirty_pod_set_.clear();
      nodes.swap(dirty_nodes_);
      while (due()) {
        if (std::find(pods.begin(), pods.end(), timers_.begin()->second) == pods.end()) pods.push_back(timers_.begin()->second);
        timers_.erase(timers_.begin());
      }
    }
    store_.transact([&](Store::Txn& txn) {
      std::lock_guard state(state_mutex_);
      Clock::time_point now = Clock::now();
      // Nodes first (a node's change applies to the pods after it), then the pods in the order
      // they changed: what a pod that went or finished first frees may admit a later one, but
      // not one bound before it (as a real kubelet, which refuses that pod OutOf<resource>).
      for (const std::string& n : nodes) sync_node(txn, n, now);
      for (const ObjectKey& k : pods) sync(txn, k, now);
    });
  }
}

void Kubelet::sync_node(Store::Txn& txn, const std::string& node, Clock::time_point now) {
  for (const ObjectPtr& p : txn.list("pods", "")) {
    if (string_at(*p, {"spec", "nodeName"}) == node) {
      sync(txn, {string_at(*p, {"metadata", "namespace"}), string_at(*p, {"metadata", "name"})},
           now);
    }
  }
}

// Drives one pod a step towards what its kubelet would have made of it by `now`.
void Kubelet::sync(Store::Txn& txn, const ObjectKey& key, Clock::time_point now) {
  ObjectPtr pod = txn.get("pods", key);
  auto it = pods_.find(key);
  if (it != pods_.end() && (!pod || string_at(*pod, {"metadata", "uid"}) != it->second.uid)) {
    forget(key);  // gone (or replaced by a new pod of the same name): its devices are free
    it = pods_.end();
  }
  std::string node_name = pod ? string_at(*pod, {"spec", "nodeName"}) : "";
  if (node_name.empty()) return;
  if (pod_terminal(*pod)) {
    if (it != pods_.end()) forget(key);
    if (deleting(*pod)) delete_object(txn, resource("pods"), key, DeleteOptions{0, "", ""});
    return;
  }
  if (it == pods_.end()) {
    PodState fresh;
    fresh.uid = string_at(*pod, {"metadata", "uid"});
    fresh.node = node_name;
    by_node_[node_name].insert(key);
    it = pods_.emplace(key, std::move(fresh)).first;
  }
  PodState& st = it->second;
  ObjectPtr node = txn.get("nodes", {"", node_name});
  bool ready = node && node_ready(*node);
  if (deleting(*pod)) {
    if (sync_deleting(txn, key, st, *pod, node != nullptr, ready, now)) forget(key);
    return;
  }
  if (!st.admitted) {
    if (!ready) return;
    if (!admit(txn, pod, *node, st, now)) {
      forget(key);
      return;
    }
    pod = txn.get("pods", key);
  }
  if (!st.started_at) {
    if (!ready) return;  // a NotReady node starts nothing new
    if (now < st.start_at) return schedule(key, st.start_at);
    start(txn, pod, st, now);
    pod = txn.get("pods", key);
  }
  if (st.finish_at) {
    if (now < *st.finish_at) return schedule(key, *st.finish_at);
    st.finish_at.reset();
    exit_containers(txn, pod, 0);
  }
}

// Returns whether the pod is gone.
bool Kubelet::sync_deleting(Store::Txn& txn, const ObjectKey& key, PodState& st,
                            const json::object& pod, bool node_exists, bool ready,
                            Clock::time_point now) {
  // The kubelet of a NotReady node does nothing: its pods stay Terminating. A pod on a node that
  // does not exist is removed after its grace period (the pod garbage collector's job).
  if (node_exists && !ready) return false;
  auto grace = std::chrono::seconds(int_at(pod, {"metadata", "deletionGracePeriodSeconds"}, 0));
  Clock::time_point deadline = now + grace;
  if (!st.removal_at || deadline < *st.removal_at) st.removal_at = deadline;
  if (now < *st.removal_at) {
    schedule(key, *st.removal_at);
    return false;
  }
  delete_object(txn, resource("pods"), key, DeleteOptions{0, "", ""});
  return true;
}

namespace {

struct Shortfall {
  std::string resource;
  std::int64_t requested, used, capacity;
};

// The first resource (cpu, memory, pods, then the rest by name) the pod does not fit in.
std::optional<Shortfall> shortfall(const Amounts& want, const Amounts& have, const Amounts& used) {
  std::vector<std::string> order = {"cpu", "memory", "pods"};
  for (const auto& [r, v] : want) {
    if (std::find(order.begin(), order.end(), r) == order.end()) order.push_back(r);
  }
  auto at = [](const Amounts& a, const std::string& r) { return a.count(r) ? a.at(r) : 0; };
  for (const std::string& r : order) {
    std::int64_t need = at(want, r);
    if (need > 0 && at(used, r) + need > at(have, r))
      return Shortfall{r, need, at(used, r), at(have, r)};
  }
  return std::nullopt;
}

// Failed, as the kubelet's admission leaves a pod it rejects, with an event saying why.
void reject(Store::Txn& txn, const ObjectPtr& pod, const std::string& node, const Shortfall& s) {
  std::string message = "Pod was rejected: Node didn't have enough resource: " + s.resource +
                        ", requested: " + std::to_string(shown(s.resource, s.requested)) +
                        ", used: " + std::to_string(shown(s.resource, s.used)) +
                        ", capacity: " + std::to_string(shown(s.resource, s.capacity));
  json::object next = *pod;
  json::object status{{"phase", "Failed"},
                      {"reason", "OutOf" + s.resource},
                      {"message", message},
                      {"startTime", now_rfc3339()}};
  if (const json::value* q = value_at(*pod, {"status", "qosClass"})) status["qosClass"] = *q;
  next["status"] = std::move(status);
  write_object(txn, resource("pods"), pod, std::move(next));
  post_event(txn, *pod, node, "OutOf" + s.resource, message);
}

// Admitted, devices assigned, containers being created.
json::object admitted(const json::object& pod, const json::object& node,
                      const std::vector<int>& devices) {
  json::object next = pod;
  if (!devices.empty()) {
    std::string list;
    for (int d : devices) list += (list.empty() ? "GPU-" : ",GPU-") + std::to_string(d);
    child(child(next, "metadata"), "annotations")[kDevicesAnnotation] = list;
  }
  json::object& status = child(next, "status");
  std::string ip = host_ip(node);
  status["hostIP"] = ip;
  status["hostIPs"] = json::array{json::object{{"ip", ip}}};
  status["startTime"] = now_rfc3339();
  std::string why = "containers with unready status: " + container_names(pod);
  set_condition(status, "Initialized", "True");
  set_condition(status, "Ready", "False", "ContainersNotReady", why);
  set_condition(status, "ContainersReady", "False", "ContainersNotReady", why);
  set_condition(status, "PodScheduled", "True");
  status["containerStatuses"] =
      container_statuses(pod, "containers", [](json::object& s, const std::string&) {
        s["state"] = json::object{{"waiting", json::object{{"reason", "ContainerCreating"}}}};
        s["ready"] = false;
        s["started"] = false;
      });
  return next;
}

}  // namespace

bool Kubelet::admit(Store::Txn& txn, const ObjectPtr& pod, const json::object& node, PodState& st,
                    Clock::time_point now) {
  Amounts want = pod_requests(*pod);
  Amounts used;
  std::set<int> taken;
  for (const ObjectKey& k : by_node_[st.node]) {
    const PodState& other = pods_.at(k);
    if (!other.admitted) continue;
    for (const auto& [r, v] : other.requests) used[r] += v;
    taken.insert(other.devices.begin(), other.devices.end());
  }
  if (auto s = shortfall(want, allocatable(node), used)) {
    reject(txn, pod, st.node, *s);
    return false;
  }
  // Whole GPUs, the lowest free ones first; admission made sure there are enough.
  std::int64_t gpus = want.count(kGpu) ? (want.at(kGpu) + 999) / 1000 : 0;
  for (int d = 0; static_cast<std::int64_t>(st.devices.size()) < gpus; ++d) {
    if (!taken.count(d)) st.devices.push_back(d);
  }
  st.admitted = true;
  st.requests = std::move(want);
  st.start_at = now + start_delay_;
  write_object(txn, resource("pods"), pod, admitted(*pod, node, st.devices));
  return true;
}

void Kubelet::forget(const ObjectKey& key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return;
  auto on = by_node_.find(it->second.node);
  if (on != by_node_.end() && on->second.erase(key) > 0 && on->second.empty()) by_node_.erase(on);
  pods_.erase(it);
}

std::string Kubelet::pod_ip() {
  unsigned n = next_ip_++;
  return "10.244." + std::to_string(n / 250 % 250) + "." + std::to_string(n % 250 + 2);
}

void Kubelet::start(Store::Txn& txn, const ObjectPtr& pod, PodState& st, Clock::time_point now) {
  json::object next = *pod;
  json::object& status = child(next, "status");
  std::string ip = pod_ip();
  std::string since = now_rfc3339();
  status["phase"] = "Running";
  status["podIP"] = ip;
  status["podIPs"] = json::array{json::object{{"ip", ip}}};
  set_condition(status, "Initialized", "True");
  set_condition(status, "Ready", "True");
  set_condition(status, "ContainersReady", "True");
  set_condition(status, "PodScheduled", "True");
  status["containerStatuses"] =
      container_statuses(*pod, "containers", [&](json::object& s, const std::string& image) {
        s["state"] = json::object{{"running", json::object{{"startedAt", since}}}};
        s["ready"] = true;
        s["started"] = true;
        s["imageID"] = image + "@sha256:" + hex_id();
        s["containerID"] = "containerd://" + hex_id();
      });
  status["initContainerStatuses"] =
      container_statuses(*pod, "initContainers", [&](json::object& s, const std::string& image) {
        s["state"] = json::object{{"terminated", json::object{{"exitCode", 0},
                                                              {"reason", "Completed"},
                                                              {"startedAt", since},
                                                              {"finishedAt", since}}}};
        s["ready"] = true;
        s["imageID"] = image + "@sha256:" + hex_id();
      });
  if (status["initContainerStatuses"].get_array().empty()) status.erase("initContainerStatuses");
  write_object(txn, resource("pods"), pod, std::move(next));
  st.started_at = now;
  if (auto secs = run_seconds(*pod)) st.finish_at = now + std::chrono::seconds(*secs);
}

void Kubelet::exit_containers(Store::Txn& txn, const ObjectPtr& pod, int exit_code) {
  std::string policy = string_at(*pod, {"spec", "restartPolicy"});
  bool restart = policy == "Always" || policy.empty() || (policy == "OnFailure" && exit_code != 0);
  std::string now = now_rfc3339();
  json::object next = *pod;
  json::object& status = child(next, "status");
  json::value& cs = status["containerStatuses"];
  if (!cs.is_array() || cs.get_array().empty()) {
    cs = container_statuses(*pod, "containers", [](json::object&, const std::string&) {});
  }
  for (json::value& v : cs.get_array()) {
    json::object& s = v.get_object();
    std::string started = string_at(s, {"state", "running", "startedAt"});
    json::object term{{"exitCode", exit_code},
                      {"reason", exit_code == 0 ? "Completed" : "Error"},
                      {"startedAt", started.empty() ? now : started},
                      {"finishedAt", now}};
    if (std::string id = string_at(s, {"containerID"}); !id.empty()) term["containerID"] = id;
    if (restart) {
      s["lastState"] = json::object{{"terminated", std::move(term)}};
      s["restartCount"] = int_at(s, {"restartCount"}, 0) + 1;
      s["state"] = json::object{{"running", json::object{{"startedAt", now}}}};
    } else {
      s["state"] = json::object{{"terminated", std::move(term)}};
      s["ready"] = false;
      s["started"] = false;
    }
  }
  if (!restart) {
    bool ok = exit_code == 0;
    status["phase"] = ok ? "Succeeded" : "Failed";
    set_condition(status, "Ready", "False", ok ? "PodCompleted" : "PodFailed");
    set_condition(status, "ContainersReady", "False", ok ? "PodCompleted" : "PodFailed");
  }
  write_object(txn, resource("pods"), pod, std::move(next));
  ObjectKey key{string_at(*pod, {"metadata", "namespace"}), string_at(*pod, {"metadata", "name"})};
  auto it = pods_.find(key);
  if (!restart && it != pods_.end()) {
    forget(key);  // the kubelet knows at once: its devices and resources are free
  } else if (restart && it != pods_.end()) {
    if (auto secs = run_seconds(*pod)) {
      it->second.finish_at = Clock::now() + std::chrono::seconds(*secs);
      schedule(key, *it->second.finish_at);
    }
  }
}

void Kubelet::finish(const ObjectKey& key, int exit_code) {
  store_.transact([&](Store::Txn& txn) {
    std::lock_guard state(state_mutex_);
    ObjectPtr pod = txn.get("pods", key);
    if (!pod) throw not_found({"", "pods"}, key.name);
    exit_containers(txn, pod, exit_code);
  });
}

std::vector<std::string> Kubelet::devices_of(const ObjectKey& key) const {
  std::lock_guard state(state_mutex_);
  std::vector<std::string> out;
  auto it = pods_.find(key);
  if (it == pods_.end()) return out;
  for (int d : it->second.devices) out.push_back("GPU-" + std::to_string(d));
  return out;
}

}  // namespace gpuq::kubefake
