#include "binder/kubernetes/kube_binder.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "binder/kubernetes/history_note.hpp"
#include "binder/kubernetes/kube_state.hpp"

namespace gpuq::binder::k8s {

namespace json = boost::json;

KubernetesBinder::KubernetesBinder(KubernetesConfig config, std::shared_ptr<Client> client, Report report)
    : s_(std::make_unique<State>()) {
  s_->config = std::move(config);
  s_->client = std::move(client);
  s_->report = std::move(report);
  s_->errors = errors_;
  s_->translate.flavor_label = s_->config.flavor_label;
}

KubernetesBinder::~KubernetesBinder() { halt(); }

void KubernetesBinder::set_source(SourceReport report, ResourceNames& names) {
  s_->source = std::move(report);
  s_->names = &names;
  s_->translate.pods = names.intern("pods").value_or(0);  // 0: no slot left, pods not counted
}


KubernetesBinder::Counts KubernetesBinder::counts() const {
  std::lock_guard lock(s_->mu);
  return s_->counts;
}

std::vector<AccessCheck> required_access(const KubernetesConfig& config) {
  std::vector<AccessCheck> out{{"list", "nodes", "/api/v1/nodes?limit=1"},
                               {"list", "namespaces", "/api/v1/namespaces?limit=1"},
                               {"list", "pods", "/api/v1/pods?limit=1"}};
  auto ask = [&out](const char* verb, const char* resource, const std::string& group, const std::string& ns,
                    const std::string& name = "", const char* needed_for = "") {
    AccessCheck c = AccessCheck::review(verb, resource, group, ns, name);
    if (*needed_for != 0) c.required = false, c.needed_for = needed_for;
    out.push_back(std::move(c));
  };
  for (const char* kind : {"nodes", "namespaces", "pods"}) ask("watch", kind, "", "");
  // Where gpuqd writes to pods: every namespace, or the ones it places pods of.
  const std::vector<std::string> where = config.namespaces.empty() ? std::vector<std::string>{""} : config.namespaces;
  for (const std::string& ns : where) {
    ask("create", "pods/binding", "", ns);
    ask("create", "pods/eviction", "", ns);
    ask("patch", "pods/status", "", ns);
    ask("create", "events", "", ns);
    ask("get", "pods", "", ns);
    ask("patch", "pods", "", ns, "", "fractional GPUs (gpuq.io/gpu-milli: annotating a sharer with its GPU)");
  }
  ask("create", "pods", "", config.reservation_namespace, "", "fractional GPUs (their reservation pods)");
  ask("delete", "pods", "", config.reservation_namespace, "", "fractional GPUs (their reservation pods)");
  if (config.coscheduling_podgroups) ask("watch", "podgroups", "scheduling.x-k8s.io", "");
  if (config.volcano_podgroups) ask("watch", "podgroups", "scheduling.volcano.sh", "");
  if (config.jobsets) ask("watch", "jobsets", "jobset.x-k8s.io", "");
  if (config.queue_objects == KubernetesConfig::QueueObjects::kOn) {
    out.emplace_back("list", "queues.gpuq.io", "/apis/gpuq.io/v1alpha1/queues?limit=1");
    ask("watch", "queues", "gpuq.io", "");
    ask("patch", "queues/status", "gpuq.io", "", "", "Queue objects' status (deploy/kubernetes/clusterrole.yaml)");
  }
  if (config.leader.enabled) {
    const LeaderConfig& l = config.leader;
    ask("create", "leases", "coordination.k8s.io", l.ns);
    ask("get", "leases", "coordination.k8s.io", l.ns, l.name);
    ask("update", "leases", "coordination.k8s.io", l.ns, l.name);
  }
  return out;
}

// Nodes first (a pod found bound at start needs its node), then namespaces (their default
// queues), then pods; each watched on a thread of its own from its first list on.
void KubernetesBinder::start() {
  State* s = s_.get();
  s->pool = std::make_unique<boost::asio::thread_pool>(static_cast<std::size_t>(std::max(1, s->config.bind_concurrency)));
  s->write_limit = std::make_unique<InFlightLimit>(s->config.bind_concurrency);
  s->event_pool = std::make_unique<boost::asio::thread_pool>(kEventWriters);
  struct Kind {
    const char* path;
    void (State::*handle)(EventType, const json::object&);
    bool State::*synced;
  };
  // Queue objects before the pods: a pod's queue is known when the pod is reported.
  s->objects_on = s->config.queue_objects == KubernetesConfig::QueueObjects::kOn;
  std::vector<Kind> kinds{{"/api/v1/nodes", &State::on_node, &State::nodes_synced},
                          {"/api/v1/namespaces", &State::on_namespace, &State::namespaces_synced}};
  if (s->objects_on) kinds.push_back({"/apis/gpuq.io/v1alpha1/queues", &State::on_queue, &State::queues_synced});
  // PodGroup objects, where their CRDs are installed: a pod naming one is a gang of minMember.
  if (s->config.coscheduling_podgroups)
    kinds.push_back({"/apis/scheduling.x-k8s.io/v1alpha1/podgroups", &State::on_coscheduling_podgroup,
                     &State::coscheduling_synced});
  if (s->config.volcano_podgroups)
    kinds.push_back({"/apis/scheduling.volcano.sh/v1beta1/podgroups", &State::on_volcano_podgroup, &State::volcano_synced});
  if (s->config.jobsets) kinds.push_back({"/apis/jobset.x-k8s.io/v1alpha2/jobsets", &State::on_jobset, &State::jobsets_synced});
  for (const auto& [watched, group] : {std::pair{s->config.coscheduling_podgroups, kCoschedulingGroup},
                                       std::pair{s->config.volcano_podgroups, kVolcanoGroup}, std::pair{s->config.jobsets, kJobSetGroup}})
    if (!watched) s->unwatched_groups.insert(group);
  kinds.push_back({"/api/v1/pods", &State::on_pod, &State::pods_synced});
  for (const Kind& k : kinds) {
    ReflectorOptions opt;
    opt.path = k.path;
    opt.watch_timeout = s->config.watch_timeout;
    Reflector::Handlers h;
    h.on_events = [s, handle = k.handle](std::vector<WatchEvent>& events) {
      std::lock_guard lock(s->mu);
      for (WatchEvent& e : events) (s->*handle)(e.type, e.object);
      s->flush_nodes();  // each node changed by the batch, once
    };
    h.on_synced = [s, synced = k.synced, path = std::string(k.path)] {
      std::lock_guard lock(s->mu);
      const bool first = !(s->*synced);
      s->*synced = true;
      s->synced_cv.notify_all();
      if (first) spdlog::info("event=kubernetes_synced what={}", path);
      if (first && synced == &State::queues_synced) s->queues_listed();
      if (first && synced == &State::pods_synced && s->source && s->leading) {
        s->adopt_found();
        s->source(SourceSynced{});
        s->sweep_reservations();
      }
    };
    h.on_error = [path = std::string(k.path), errors = s->errors](const std::string& why) {
      (*errors)("watch_error");
      spdlog::warn("event=kubernetes_watch_error what={} error=\"{}\"", path, why);
    };
    s->reflectors.push_back(std::make_unique<Reflector>(*s->client, opt, std::move(h)));
  }
  if (s->config.leader.enabled) {
    s->leading = false;
    s->elector = std::make_unique<LeaderElector>(*s->client, s->config.leader, [s](bool leading) {
      if (leading) {
        s->take_over();
        return;
      }
      s->leading = false;  // no write from here on
      ::kill(::getpid(), SIGTERM);
    });
    s->elector_thread = std::thread([s] { s->elector->run(); });
  }
  std::vector<bool State::*> order;
  for (const Kind& k : kinds) order.push_back(k.synced);
  s->starter = std::thread([s, order] {
    for (std::size_t i = 0; i < s->reflectors.size(); ++i) {
      Reflector* r = s->reflectors[i].get();
      std::unique_lock lock(s->mu);
      if (s->halted) return;
      s->watchers.emplace_back([r] { r->run(); });
      s->synced_cv.wait(lock, [&] { return s->*order[i] || s->halted.load(); });
    }
  });
}

void KubernetesBinder::halt() {
  State* s = s_.get();
  if (s->halted.exchange(true)) return;
  {
    std::lock_guard lock(s->mu);
    s->synced_cv.notify_all();
  }
  if (s->elector) s->elector->stop();
  if (s->elector_thread.joinable()) s->elector_thread.join();
  for (auto& r : s->reflectors) r->stop();
  if (s->starter.joinable()) s->starter.join();
  for (auto& t : s->watchers) t.join();
  if (s->pool) {
    s->pool->stop();  // writes not started are dropped (a restart recovers them); timers too
    s->pool->join();
  }
  if (s->event_pool) {
    s->event_pool->stop();
    s->event_pool->join();
  }
}

bool KubernetesBinder::State::managed_namespace(const std::string& ns) const {
  return config.namespaces.empty() || std::find(config.namespaces.begin(), config.namespaces.end(), ns) != config.namespaces.end();
}

void KubernetesBinder::State::on_node(EventType type, const json::object& obj) {
  auto node = read_node(obj);
  if (!node) {
    spdlog::warn("event=kubernetes_node_unread error=\"{}\"", node.error());
    return;
  }
  NodeInfo n = std::move(node.value());
  const std::string name = n.name;
  // A deleted node takes no new pods; its pods go as the API says.
  if (type == EventType::kDeleted) n.unschedulable = true;
  nodes[name] = std::move(n);
  node_changed(name);
}

// Pod groups still short of their size: each member says so on its PodScheduled condition from
// the first statusInterval on (as the coscheduling plugin and Volcano say it at once), and once
// podGroupTimeout (or the group's own gpuq.io/pod-group-timeout, in seconds) has passed, a
// PodGroupIncomplete Event on each member says how long it has waited.
void KubernetesBinder::State::check_groups() {
  const auto now = std::chrono::steady_clock::now();
  for (auto& [gkey, g] : groups) {
    if (g.warned || g.pods.empty()) continue;
    const std::string& name = g.name;
    auto timeout = config.group_timeout;
    if (auto t = podgroup_timeouts.find(g.podgroup); t != podgroup_timeouts.end() && t->second > 0)
      timeout = std::chrono::seconds(t->second);  // its PodGroup's scheduleTimeoutSeconds
    const PodInfo& first = pods.at(*g.pods.begin());
    if (auto t = first.annotations.find(kGroupTimeoutAnnotation); t != first.annotations.end()) {
      long seconds = 0;
      if (std::from_chars(t->second.data(), t->second.data() + t->second.size(), seconds).ec == std::errc() && seconds > 0)
        timeout = std::chrono::seconds(seconds);
    }
    if (now - g.first_seen < timeout) {
      std::vector<std::string> members(g.pods.begin(), g.pods.end());
      say_unschedulable(members,
                        "pod group " + name + " has " + std::to_string(g.pods.size()) + " of its " +
                            std::to_string(g.size) + " pods; none is placed until all exist",
                        /*routine=*/true);
      continue;
    }
    // Past its timeout: only the message that says so, so that no routine write of the same
    // condition, on the write pool beside it, can land after it and hide it.
    g.warned = true;
    const std::string message = "pod group " + name + " has " + std::to_string(g.pods.size()) + " of its " +
                                std::to_string(g.size) + " pods after " + std::to_string(timeout.count()) +
                                "s; none is placed until all exist";
    for (const std::string& k : g.pods) post_event(pods.at(k), "Warning", "PodGroupIncomplete", message);
    std::vector<std::string> keys(g.pods.begin(), g.pods.end());
    say_unschedulable(keys, message);
  }
}

// A standby reports everything its watches hold, once it leads, then the fair-share history the
// last leader left on the Lease.
void KubernetesBinder::State::take_over() {
  std::lock_guard lock(mu);
  leading = true;
  for (const auto& [name, node] : nodes) node_changed(name);
  flush_nodes();
  offer_waiting([](const PodInfo&) { return true; });
  // After the running pods: the history is brought from its checkpoint to now with their use.
  if (const std::string note = elector ? elector->taken_note() : std::string(); !note.empty() && source) {
    if (auto records = decode_history_note(note))
      source(HistorySeen{std::move(records.value()), "the Lease " + config.leader.ns + "/" + config.leader.name});
    else
      spdlog::warn("event=usage_history_note_unread lease={}/{} annotation={} error=\"{}\"", config.leader.ns,
                   config.leader.name, kLeaseNoteAnnotation, records.error());
  }
  if (pods_synced && source) {
    adopt_found();
    source(SourceSynced{});
    sweep_reservations();
  }
}

void KubernetesBinder::State::on_coscheduling_podgroup(EventType type, const json::object& obj) {
  on_podgroup(kCoschedulingGroup, type, obj);
}
void KubernetesBinder::State::on_volcano_podgroup(EventType type, const json::object& obj) {
  on_podgroup(kVolcanoGroup, type, obj);
}

// Under mu: a PodGroup object; the pods of its namespace that wait for it are offered again.
void KubernetesBinder::State::on_podgroup(const char* group, EventType type, const json::object& obj) {
  const std::string key = object_key(obj);  // namespace/name
  const std::string where = std::string(group) + "/" + key;
  const auto slash = key.find('/');
  const std::string ns = key.substr(0, slash);
  if (type == EventType::kDeleted) {
    podgroups.erase(where);
    podgroup_timeouts.erase(where);
    return;
  }
  int min_member = 0, timeout = 0;
  if (const json::value* spec = obj.if_contains("spec"); spec != nullptr && spec->is_object()) {
    if (const json::value* m = spec->get_object().if_contains("minMember"); m != nullptr && m->is_int64())
      min_member = static_cast<int>(std::clamp<std::int64_t>(m->get_int64(), -1, 1000000));
    if (const json::value* t = spec->get_object().if_contains("scheduleTimeoutSeconds"); t != nullptr && t->is_int64())
      timeout = static_cast<int>(std::clamp<std::int64_t>(t->get_int64(), 0, 7 * 86400));
  }
  const bool changed = podgroups.count(where) == 0 || podgroups[where] != min_member;
  podgroups[where] = min_member;
  podgroup_timeouts[where] = timeout;
  if (changed) offer_waiting([&](const PodInfo& p) { return p.ns == ns; });
}

// Under mu: a JobSet; its pods are one gang of all of them (each replicated Job's replicas
// times its parallelism, 1 when unset, summed), offered again when the count changes.
void KubernetesBinder::State::on_jobset(EventType type, const json::object& obj) {
  const std::string key = object_key(obj);
  const std::string where = std::string(kJobSetGroup) + "/" + key;
  if (type == EventType::kDeleted) {
    podgroups.erase(where);
    return;
  }
  std::int64_t count = 0;
  const json::value* spec = obj.if_contains("spec");
  const json::value* jobs = spec != nullptr && spec->is_object() ? spec->get_object().if_contains("replicatedJobs") : nullptr;
  if (jobs != nullptr && jobs->is_array())
    for (const json::value& j : jobs->get_array()) {
      if (!j.is_object()) continue;
      std::int64_t replicas = 1, parallelism = 1;
      if (const json::value* r = j.get_object().if_contains("replicas"); r != nullptr && r->is_int64()) replicas = r->get_int64();
      if (const json::value* t = j.get_object().if_contains("template"); t != nullptr && t->is_object())
        if (const json::value* ts = t->get_object().if_contains("spec"); ts != nullptr && ts->is_object())
          if (const json::value* p = ts->get_object().if_contains("parallelism"); p != nullptr && p->is_int64())
            parallelism = p->get_int64();
      count += std::clamp<std::int64_t>(replicas, 0, 100000) * std::clamp<std::int64_t>(parallelism, 0, 100000);
    }
  const int size = static_cast<int>(std::min<std::int64_t>(count, 1000000));
  const bool changed = podgroups.count(where) == 0 || podgroups[where] != size;
  podgroups[where] = size;
  const std::string ns = key.substr(0, key.find('/'));
  if (changed) offer_waiting([&](const PodInfo& p) { return p.ns == ns; });
}

// A node, or the room other schedulers' pods take on it, changed: reported once per watch batch
// (a list page of 500 pods of other schedulers changes a node many times), and before any job
// is, so a job never reaches the Core ahead of the room it was counted against.
void KubernetesBinder::State::node_changed(const std::string& name) {
  if (source && leading) dirty_nodes.insert(name);
}

void KubernetesBinder::State::flush_nodes() {
  for (const std::string& name : dirty_nodes) {
    auto it = nodes.find(name);
    if (it == nodes.end()) continue;  // a pod bound to a node not (yet) seen
    auto f = foreign_on.find(name);
    source(NodeSeen{node_spec_of(it->second, f == foreign_on.end() ? ResourceVec{} : f->second, translate)});
  }
  dirty_nodes.clear();
}

void KubernetesBinder::State::on_namespace(EventType type, const json::object& obj) {
  const std::string name = object_key(obj);
  if (type == EventType::kDeleted) namespaces.erase(name);
  else namespaces.insert(name);
  const std::string queue = type == EventType::kDeleted ? std::string() : annotation_of(obj, kDefaultQueueAnnotation);
  auto& slot = ns_default[name];
  if (slot == queue) return;
  slot = queue;
  if (queue.empty()) return;
  // Pods of that namespace that waited for a queue may go now.
  offer_waiting([&](const PodInfo& pod) { return pod.ns == name; });
}

// Under mu: offers again, in key order, each pod of gpuq's in no job yet that `which` picks
// (offer() may change the maps, so the keys are taken first).
void KubernetesBinder::State::offer_waiting(const std::function<bool(const PodInfo&)>& which) {
  std::vector<std::string> waiting;
  for (const auto& [key, pod] : pods)
    if (job_of.count(key) == 0 && which(pod)) waiting.push_back(key);
  std::sort(waiting.begin(), waiting.end());
  for (const std::string& key : waiting)
    if (pods.count(key) > 0 && job_of.count(key) == 0) offer(key);
}

namespace {

std::string scheduler_of(const json::object& pod) {
  const json::value* spec = pod.if_contains("spec");
  const json::value* name = spec && spec->is_object() ? spec->get_object().if_contains("schedulerName") : nullptr;
  return name && name->is_string() ? std::string(name->get_string()) : std::string();
}

}  // namespace

void KubernetesBinder::State::on_pod(EventType type, const json::object& obj) {
  if (on_reservation(type, obj)) return;  // a GPU held for sharers: gpuq's own, not a tenant's
  const std::string key = object_key(obj);
  auto pod = read_pod(obj);
  const bool ours = pod && pod->scheduler == config.scheduler_name && managed_namespace(pod->ns);
  // What a pod gpuq does not place takes from the node it is bound to.
  std::optional<ForeignPod> now;
  if (pod && !ours && type != EventType::kDeleted && !pod->terminal() && !pod->node.empty())
    now = ForeignPod{pod->node, pod_request(*pod, translate)};
  auto old = foreign.find(key);
  const bool same = old != foreign.end() && now && old->second.node == now->node && old->second.request == now->request;
  if (!same) {
    if (old != foreign.end()) {
      const std::string node = old->second.node;
      foreign_on[node] -= old->second.request;
      foreign.erase(old);
      if (!now || now->node != node) node_changed(node);
    }
    if (now) {
      foreign_on[now->node] += now->request;
      foreign[key] = *now;
      node_changed(now->node);
    }
  }
  if (!pod) {
    if (type == EventType::kDeleted) {
      pod_gone(key);
    } else if (pods.count(key) == 0 && scheduler_of(obj) == config.scheduler_name) {
      // A pod of gpuq's that cannot be read is told why (never one of another scheduler).
      spdlog::warn("event=kubernetes_pod_unread pod={} error=\"{}\"", key, pod.error());
      if (managed_namespace(key.substr(0, key.find('/')))) say_unschedulable({key}, pod.error());
    }
    return;
  }
  if (!ours) return;
  if (type == EventType::kDeleted) {
    pod_gone(key);
    return;
  }
  pod_of_ours(std::move(pod.value()));
}

namespace {

// Whether what decides a pod's job (its queue, group, request, priority, constraints) changed:
// a pod waiting without a job is offered again only then, not on every status update (its own
// PodScheduled patches included).
bool offer_changed(const PodInfo& a, const PodInfo& b) {
  return a.labels != b.labels || a.annotations != b.annotations || a.request != b.request ||
         a.priority != b.priority || !(a.where == b.where) || a.grace_seconds != b.grace_seconds;
}

}  // namespace

void KubernetesBinder::State::pod_of_ours(PodInfo pod) {
  const std::string key = pod.key();
  auto old = pods.find(key);
  const bool known = old != pods.end();
  const bool changed = !known || offer_changed(old->second, pod);
  pods.insert_or_assign(key, std::move(pod));
  if (submitted_pod(pods.at(key))) return;  // gpuqd made it for a job submitted through its API
  if (auto j = job_of.find(key); j != job_of.end()) {
    lifecycle(j->second);
    return;
  }
  const PodInfo& p = pods.at(key);
  if (p.terminal() || p.terminating) {  // ends before it was ever a job
    pod_gone(key);
    return;
  }
  if (!known || (p.node.empty() && changed)) offer(key);
}

// Engine thread: the checkpoint goes on the Lease with the next renewals (leader election only).
void KubernetesBinder::share_history(const std::vector<storage::HistoryRecord>& records) {
  if (!s_->elector) return;
  std::string note = encode_history_note(s_->elector->identity(), records);
  if (note.empty() && !records.empty() && !s_->note_too_large) {
    s_->note_too_large = true;
    spdlog::warn("event=usage_history_not_shared queues={} reason=\"larger than {} bytes on the Lease; a replica "
                 "that takes over starts from its own state file\"", records.size(), kMaxNoteBytes);
  }
  s_->elector->set_note(std::move(note));
}

// Pods that could not be queued (no such queue, refused by the Core) may be now.
void KubernetesBinder::queues_changed() {
  std::lock_guard lock(s_->mu);
  s_->offer_waiting([](const PodInfo& pod) { return pod.node.empty() && !pod.terminal() && !pod.terminating; });
}

namespace {

// A short hash of the pods' uids, for a pod group's job id.
std::string uid_digest(const std::vector<const PodInfo*>& pods) {
  std::vector<std::string> uids;
  for (const PodInfo* p : pods) uids.push_back(p->uid);
  std::sort(uids.begin(), uids.end());
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (const std::string& u : uids)
    for (char c : u + ",") h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i, h >>= 4) out += hex[h & 15];
  return out;
}

}  // namespace

// A pod of gpuq's that is in no job yet: a job of its own, or the member that completes its group.
void KubernetesBinder::State::offer(const std::string& key) {
  if (!leading) return;  // a standby offers its pods when it takes over
  const PodInfo& p = pods.at(key);
  std::string why;
  auto group = group_of(p, podgroups, why, unwatched_groups);
  if (!group) {
    arrive({&p}, p.ns, p.name, p.uid);
    return;
  }
  if (group->size == 0) {
    say_unschedulable({key}, why);  // offered again when its PodGroup object comes or changes
    return;
  }
  const std::string gkey = p.ns + "/" + group->key;
  if (group->at_least && formed.count(gkey) > 0) {  // beyond a PodGroup's minMember, once it formed
    join_formed(gkey, key);
    arrive({&p}, p.ns, p.name, p.uid);
    return;
  }
  Group& g = groups[gkey];
  if (g.pods.empty()) g.first_seen = std::chrono::steady_clock::now();
  g.size = group->size;
  g.name = p.ns + "/" + group->name;
  g.podgroup = group->podgroup;
  g.pods.insert(key);
  if (static_cast<int>(g.pods.size()) < g.size) return;
  std::vector<const PodInfo*> members;
  for (const std::string& k : g.pods) members.push_back(&pods.at(k));
  const std::string seed = uid_digest(members);
  const std::string ns = p.ns, name = group->name;
  groups.erase(gkey);
  if (group->at_least)
    for (const PodInfo* m : members) join_formed(gkey, m->key());
  arrive(members, ns, name, seed);
}

void KubernetesBinder::State::arrive(const std::vector<const PodInfo*>& members, const std::string& ns,
                                     const std::string& name, const std::string& id_seed) {
  std::vector<std::string> keys;
  for (const PodInfo* m : members) keys.push_back(m->key());
  std::string why;
  auto queue = queue_of(*members.front(), ns_default[ns], why);
  if (!queue) {
    say_unschedulable(keys, why);  // offered again when its namespace gets a default queue
    return;
  }
  const std::string id = job_id_of(ns, name, id_seed);
  JobArrived fact;
  JobEntry e;
  fact.sub = submission_of(members, id, *queue, translate, e.pods);
  e.ns = ns;
  e.grace = fact.sub.job.grace_period;
  std::size_t bound = 0;
  for (const std::string& k : e.pods) {
    const PodInfo& m = pods.at(k);
    if (!m.node.empty()) ++bound;
    fact.nodes.push_back(m.node);
    // A share of a GPU goes back on the same share (the index it was annotated with).
    fact.gpus.emplace_back();
    auto slot = m.annotations.find(kShareSlotAnnotation);
    if (!m.node.empty() && slot != m.annotations.end() && m.request[kGpu] > 0 && m.request[kGpu] < kMilliPerGpu) {
      int index = -1;
      std::from_chars(slot->second.data(), slot->second.data() + slot->second.size(), index);
      if (index >= 0) {
        fact.gpus.back().push_back(index);
        const std::string rkey = m.node + "/" + std::to_string(index);
        reservations[rkey].sharers.insert(k);
        share_of[k] = rkey;
      }
    }
  }
  if (bound == 0) {
    fact.nodes.clear();
    fact.gpus.clear();
  } else if (bound < e.pods.size()) {
    // Part of a group bound (gpuqd stopped while binding it): no partial gang runs; its bound
    // pods are evicted, and the group is placed again once whole.
    for (const std::string& k : e.pods)
      if (!pods.at(k).node.empty()) evict_pod(k, e.grace, 0);
    return;
  } else {
    e.bound = true;
    e.started = true;  // the Core takes it as running
  }
  for (const std::string& k : e.pods) job_of[k] = id;
  jobs[id] = std::move(e);
  flush_nodes();
  if (source) source(std::move(fact));
}

void KubernetesBinder::State::join_formed(const std::string& gkey, const std::string& pod) {
  formed[gkey].insert(pod);
  formed_of[pod] = gkey;
}

void KubernetesBinder::State::pod_gone(const std::string& key) {
  for (auto it = groups.begin(); it != groups.end();) {
    it->second.pods.erase(key);
    it = it->second.pods.empty() ? groups.erase(it) : std::next(it);
  }
  if (auto f = formed_of.find(key); f != formed_of.end()) {
    auto g = formed.find(f->second);
    if (g != formed.end() && (g->second.erase(key), g->second.empty())) formed.erase(g);
    formed_of.erase(f);
  }
  said.erase(key);
  auto j = job_of.find(key);
  if (j == job_of.end()) {
    pods.erase(key);
    return;
  }
  const std::string id = j->second;
  job_of.erase(j);
  pods.erase(key);
  lifecycle(id);
}

// What a job's pods say now, as facts: started, finished, stopped, or withdrawn while pending.
void KubernetesBinder::State::lifecycle(const std::string& id) {
  auto it = jobs.find(id);
  if (it == jobs.end() || it->second.done) return;
  if (it->second.submitted) {
    submitted_lifecycle(id);
    return;
  }
  JobEntry& e = it->second;
  std::size_t gone = 0, ended = 0, failed = 0, running = 0;
  for (const std::string& k : e.pods) {
    auto p = pods.find(k);
    if (p == pods.end() || job_of.count(k) == 0) ++gone;
    else if (p->second.terminal()) ++ended, failed += p->second.phase == "Failed" ? 1 : 0;
    else if (p->second.phase == "Running") ++running;
  }
  if (!e.bound) {
    if (gone + ended == 0) return;
    // A pending job lost a pod: it leaves its queue; the rest of a group waits for it again.
    std::vector<std::string> rest;
    for (const std::string& k : e.pods)
      if (job_of.erase(k) > 0 && pods.count(k) > 0 && !pods.at(k).terminal()) rest.push_back(k);
    jobs.erase(it);
    if (source) source(JobWithdrawn{JobId(id), "its pod was deleted before it was placed"});
    for (const std::string& k : rest) offer(k);
    return;
  }
  if (!e.started && running > 0) {
    e.started = true;
    report(JobStarted{JobId(id)});
  }
  if (gone + ended < e.pods.size()) return;
  if (e.stopping) {
    report(JobStopped{JobId(id)});
    // Its pods were evicted: the engine puts a preempted job back in its queue, but these pods
    // will not come back (a controller that owns them makes new ones, each a new job), so the
    // job ends here; left queued, it would be admitted later to hold room for no pod.
    if (source)
      source(JobWithdrawn{JobId(id), (e.preempted_by.empty() ? std::string("stopped by gpuq")
                                                              : "preempted by " + e.preempted_by) +
                                         "; its pods were evicted"});
  } else if (!e.failure.empty()) {
    report(JobFinished{JobId(id), 1, e.failure});
  } else if (gone == 0 && failed == 0) {
    report(JobFinished{JobId(id), 0, ""});
  } else {
    report(JobFinished{JobId(id), 1, gone > 0 ? "its pod was deleted" : "its pod failed"});
  }
  for (const std::string& k : e.pods) {
    unshare(k);
    job_of.erase(k);
    pods.erase(k);
  }
  jobs.erase(it);
}

// Reservation pods left holding a GPU for nobody (their sharers ended while gpuqd was down).
void KubernetesBinder::State::sweep_reservations() {
  for (auto it = reservations.begin(); it != reservations.end();) {
    if (!it->second.sharers.empty() || it->second.pod.empty()) {
      ++it;
      continue;
    }
    delete_reservation(it->second.pod, it->first);
    it = reservations.erase(it);
  }
}

}  // namespace gpuq::binder::k8s
