// The kubernetes binder's writes: binding admitted pods (pods/binding), evicting victims
// (policy/v1 Eviction, retried while a PodDisruptionBudget says no), the PodScheduled condition
// of a pod that cannot be queued, and Events. Each runs on the write pool, never holding the
// state's lock across a request.
#include <algorithm>
#include <chrono>
#include <ctime>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "binder/kubernetes/kube_state.hpp"

namespace gpuq::binder::k8s {

namespace json = boost::json;

namespace {

std::string pod_path(const std::string& key) {
  const auto slash = key.find('/');
  return "/api/v1/namespaces/" + key.substr(0, slash) + "/pods/" + key.substr(slash + 1);
}

std::string now_rfc3339() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

void KubernetesBinder::State::write(std::function<void()> f) {
  if (pool && !halted && leading) boost::asio::post(*pool, std::move(f));
}

void KubernetesBinder::State::bind_job(const Admission& admission) {
  auto b = std::make_shared<Binding>();
  b->job = admission.job.value;
  {
    std::lock_guard lock(mu);
    auto it = jobs.find(b->job);
    if (it == jobs.end() || it->second.done) return;  // withdrawn meanwhile: the Core cancels it
    it->second.bound = true;
    for (std::size_t i = 0; i < it->second.pods.size() && i < admission.pods.size(); ++i) {
      const PodPlacement& p = admission.pods[i];
      Binding::Pod pod{it->second.pods[i], p.node, -1};
      if (p.gpu_milli > 0 && p.gpu_milli < kMilliPerGpu && p.gpus.size() == 1) pod.slot = p.gpus.front();
      b->pods.push_back(std::move(pod));
    }
  }
  for (std::size_t i = 0; i < b->pods.size(); ++i) {
    if (b->pods[i].slot >= 0) {
      std::lock_guard lock(mu);
      share(b, i);  // a share of one GPU: held by a reservation pod first (kube_share.cpp)
    } else {
      write([this, b, i] { bind_pod(b, i); });
    }
  }
}

// Pool thread: one pods/binding; the last answer of the job settles it.
void KubernetesBinder::State::bind_pod(const std::shared_ptr<Binding>& b, std::size_t i) {
  const std::string& key = b->pods[i].key;
  const std::string& node = b->pods[i].node;
  const auto slash = key.find('/');
  json::object body{{"apiVersion", "v1"},
                    {"kind", "Binding"},
                    {"metadata", {{"name", key.substr(slash + 1)}, {"namespace", key.substr(0, slash)}}},
                    {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  Response r = client->request("POST", pod_path(key) + "/binding", json::serialize(body));
  bool ok = r.ok();
  if (!ok && r.status == 409) {  // bound already: by this binding (a retry), or by someone else
    Response got = client->get(pod_path(key));
    if (got.ok()) {
      auto v = json::parse(got.body);
      const auto* spec = v.as_object().if_contains("spec");
      const auto* bound_to = spec && spec->is_object() ? spec->get_object().if_contains("nodeName") : nullptr;
      ok = bound_to && bound_to->is_string() && bound_to->get_string() == node;
    }
  }
  settle(b, i, ok ? std::string() : "binding pod " + key + " to node " + node + ": " + describe(r));
}

void KubernetesBinder::State::settle(const std::shared_ptr<Binding>& b, std::size_t i, const std::string& failure) {
  std::lock_guard lock(b->mu);
  if (failure.empty()) b->bound.push_back(b->pods[i].key);
  else if (b->failure.empty()) b->failure = failure;
  if (++b->answered < b->pods.size()) return;
  std::lock_guard state_lock(mu);
  counts.binds += b->bound.size();
  if (b->failure.empty()) {
    for (const Binding::Pod& bp : b->pods)
      if (auto p = pods.find(bp.key); p != pods.end()) {
        said.erase(bp.key);
        post_event(p->second, "Normal", "Scheduled", "Successfully assigned " + bp.key + " to " + bp.node);
      }
    return;
  }
  ++counts.bind_failures;
  spdlog::warn("event=kubernetes_bind_failed job={} error=\"{}\"", b->job, b->failure);
  for (const Binding::Pod& bp : b->pods)  // shares never bound give their GPU back
    if (bp.slot >= 0 && std::find(b->bound.begin(), b->bound.end(), bp.key) == b->bound.end()) unshare(bp.key);
  auto it = jobs.find(b->job);
  if (it == jobs.end() || it->second.done) return;
  JobEntry& e = it->second;
  if (b->bound.empty()) {
    // Nothing bound: the job is placed again, after a backoff that grows with each failure (its
    // room stays held meanwhile), so a pod that cannot be bound does not spin.
    e.bound = false;
    const auto delay = std::min<std::chrono::milliseconds>(std::chrono::milliseconds(250L << std::min(e.bind_failures, 8)),
                                                           std::chrono::milliseconds(60'000));
    ++e.bind_failures;
    auto timer = std::make_shared<boost::asio::steady_timer>(*pool, delay);
    timer->async_wait([this, timer, id = b->job, why = b->failure](const boost::system::error_code& ec) {
      if (ec || halted) return;
      std::lock_guard again(mu);
      auto j = jobs.find(id);
      if (j != jobs.end() && !j->second.done && !j->second.bound) report(JobLost{JobId(id), why});
    });
    return;
  }
  // No partial gang: its bound pods are evicted, and the job ends once they are gone (its GPUs
  // are held until then). Its other pods wait for the group to be whole again (its controller
  // makes new pods for the evicted ones).
  e.failure = "pod group could not be bound whole (" + b->failure + "); its bound pods were evicted";
  std::vector<std::string> rest;
  for (const std::string& k : e.pods)
    if (std::find(b->bound.begin(), b->bound.end(), k) == b->bound.end()) rest.push_back(k);
  e.pods = b->bound;
  for (const std::string& k : e.pods) {
    evict_pod(k, e.grace, 0);
    if (auto p = pods.find(k); p != pods.end()) post_event(p->second, "Warning", "FailedScheduling", e.failure);
  }
  for (const std::string& k : rest) {
    job_of.erase(k);
    if (pods.count(k) > 0) offer(k);
  }
}

void KubernetesBinder::State::evict_job(const std::string& id, Time grace) {
  std::lock_guard lock(mu);
  auto it = jobs.find(id);
  if (it == jobs.end() || it->second.done) {
    report(JobStopped{JobId(id)});  // nothing of it runs (withdrawn before it was bound)
    return;
  }
  it->second.stopping = true;
  const std::string why = it->second.preempted_by.empty() ? std::string("stopped by gpuq")
                                                          : "preempted by gpuq job " + it->second.preempted_by;
  for (const std::string& k : it->second.pods)
    if (auto p = pods.find(k); p != pods.end() && !p->second.terminal()) {
      post_event(p->second, "Normal", "Preempted", why + "; evicted with a grace period of " + std::to_string(grace) + "s");
      evict_pod(k, grace, 0);
    }
  lifecycle(id);  // all of it may have ended already
}

// Under mu.
void KubernetesBinder::State::evict_pod(const std::string& key, Time grace, int attempt) {
  write([this, key, grace, attempt] {
    const auto slash = key.find('/');
    json::object body{{"apiVersion", "policy/v1"},
                      {"kind", "Eviction"},
                      {"metadata", {{"name", key.substr(slash + 1)}, {"namespace", key.substr(0, slash)}}},
                      {"deleteOptions", {{"gracePeriodSeconds", grace}}}};
    Response r = client->request("POST", pod_path(key) + "/eviction", json::serialize(body), "application/json",
                                 Retry::kUnsafe);
    std::lock_guard lock(mu);
    ++counts.evictions;
    if (r.ok() || r.status == 404) return;  // evicted, or gone already
    if (r.status == 429 && !halted) {
      // A PodDisruptionBudget allows no disruption now: said on the pod, and asked again later.
      ++counts.evictions_blocked;
      if (attempt == 0)
        if (auto p = pods.find(key); p != pods.end())
          post_event(p->second, "Warning", "EvictionBlocked", "gpuq could not evict it yet: " + describe(r));
      auto timer = std::make_shared<boost::asio::steady_timer>(*pool, config.evict_retry);
      timer->async_wait([this, timer, key, grace, attempt](const boost::system::error_code& ec) {
        if (ec || halted) return;
        std::lock_guard again(mu);
        if (pods.count(key) > 0) evict_pod(key, grace, attempt + 1);
      });
      return;
    }
    spdlog::warn("event=kubernetes_evict_failed pod={} error=\"{}\"", key, describe(r));
  });
}

// Under mu: PodScheduled=False with the message, when it is not what the pod says already.
void KubernetesBinder::State::say_unschedulable(const std::vector<std::string>& keys, const std::string& message,
                                                bool routine) {
  const auto now = std::chrono::steady_clock::now();
  for (const std::string& key : keys) {
    auto [it, fresh] = said.try_emplace(key);
    Said& last = it->second;
    if (last.message == message || (routine && !fresh && now - last.at < config.pod_status_min)) continue;
    last.message = message;
    last.at = now;
    ++counts.patches;
    if (auto p = pods.find(key); p != pods.end()) post_event(p->second, "Warning", "FailedScheduling", message);
    write([this, key, message] {
      json::object cond{{"type", "PodScheduled"},
                        {"status", "False"},
                        {"reason", "Unschedulable"},
                        {"message", message},
                        {"lastTransitionTime", now_rfc3339()}};
      json::object patch{{"status", {{"conditions", json::array{cond}}}}};
      Response r = client->request("PATCH", pod_path(key) + "/status", json::serialize(patch),
                                   "application/strategic-merge-patch+json");
      if (!r.ok() && r.status != 404)
        spdlog::warn("event=kubernetes_status_failed pod={} error=\"{}\"", key, describe(r));
    });
  }
}

// Under mu.
void KubernetesBinder::State::post_event(const PodInfo& pod, const std::string& type, const std::string& reason,
                                         const std::string& message) {
  ++counts.events;
  json::object ev{{"apiVersion", "v1"},
                  {"kind", "Event"},
                  {"metadata", {{"generateName", pod.name + "."}, {"namespace", pod.ns}}},
                  {"involvedObject", {{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", pod.ns}, {"name", pod.name}, {"uid", pod.uid}}},
                  {"type", type},
                  {"reason", reason},
                  {"message", message},
                  {"source", {{"component", config.scheduler_name}}},
                  {"reportingComponent", config.scheduler_name},
                  {"firstTimestamp", now_rfc3339()},
                  {"lastTimestamp", now_rfc3339()},
                  {"count", 1}};
  write([this, ns = pod.ns, body = json::serialize(ev)] {
    Response r = client->request("POST", "/api/v1/namespaces/" + ns + "/events", body, "application/json", Retry::kUnsafe);
    if (!r.ok()) spdlog::debug("event=kubernetes_event_failed error=\"{}\"", describe(r));
  });
}

// Engine thread: decisions wait until their turn is on disk (binder.hpp).
void KubernetesBinder::bind(const Admission& admission, const storage::JobRecord&) {
  s_->open.push_back([s = s_.get(), admission] { s->bind_job(admission); });
}

void KubernetesBinder::stop(const JobId& job, Time grace) {
  s_->open.push_back([s = s_.get(), id = job.value, grace] { s->evict_job(id, grace); });
}

void KubernetesBinder::turn_closed() {
  for (auto& f : s_->open) s_->closed.push_back(std::move(f));
  s_->open.clear();
}

void KubernetesBinder::turn_written(bool ok) {
  if (ok)
    for (auto& f : s_->closed) s_->write(std::move(f));
  s_->closed.clear();
}

void KubernetesBinder::preempting(const Preemption& p) {
  std::lock_guard lock(s_->mu);
  if (auto it = s_->jobs.find(p.job.value); it != s_->jobs.end())
    it->second.preempted_by = p.by.value + " (" + to_string(p.reason) + ")";
}

Time KubernetesBinder::status_interval() const { return s_->config.status_interval; }

void KubernetesBinder::waiting(std::vector<std::pair<JobId, std::string>> reasons) {
  std::lock_guard lock(s_->mu);
  for (const auto& [job, why] : reasons)
    if (auto it = s_->jobs.find(job.value); it != s_->jobs.end() && !it->second.bound)
      s_->say_unschedulable(it->second.pods, why, /*routine=*/true);
  s_->check_groups();
}

void KubernetesBinder::refused(const JobId& job, const std::string& why) {
  std::lock_guard lock(s_->mu);
  auto it = s_->jobs.find(job.value);
  if (it == s_->jobs.end()) return;
  std::vector<std::string> keys = it->second.pods;
  for (const std::string& k : keys) s_->job_of.erase(k);
  s_->jobs.erase(it);
  s_->say_unschedulable(keys, why);
}

}  // namespace gpuq::binder::k8s
