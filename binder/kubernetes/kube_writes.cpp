// The kubernetes binder's writes: binding admitted pods (pods/binding), evicting victims
// (policy/v1 Eviction, retried while a PodDisruptionBudget says no), the PodScheduled condition
// of a pod that cannot be queued, and Events. Each runs on the write pool, never holding the
// state's lock across a request.
#include <algorithm>
#include <chrono>
#include <ctime>

#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "binder/kubernetes/kube_state.hpp"

namespace gpuq::binder::k8s {

namespace json = boost::json;

namespace {

}  // namespace

std::string pod_path(const std::string& key) {
  const auto slash = key.find('/');
  return "/api/v1/namespaces/" + key.substr(0, slash) + "/pods/" + key.substr(slash + 1);
}

// Deletes pod `key` (a write): a 404 is done already; any other failure is counted and logged.
void KubernetesBinder::State::delete_pod(const std::string& key, std::optional<Time> grace, Retry retry) {
  write([this, key, grace, retry] {
    std::string body;
    if (grace) body = json::serialize(json::object{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"gracePeriodSeconds", *grace}});
    Response r = client->request("DELETE", pod_path(key), body, "application/json", retry);
    if (!r.ok() && r.status != 404) {
      (*errors)("delete_failed");
      spdlog::warn("event=kubernetes_delete_failed pod={} error=\"{}\"", key, describe(r));
    }
  });
}

std::string now_rfc3339() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Each request of a write takes a place of write_limit: fewer are in flight while the API server
// throttles gpuqd (client.hpp: InFlightLimit).
void KubernetesBinder::State::write(std::function<void()> f) {
  if (!pool || halted || !leading) return;
  boost::asio::post(*pool, [this, f = std::move(f)] {
    InFlightLimit::Scope scope(*write_limit);
    f();
  });
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
      Binding::Pod pod{it->second.pods[i], p.node, -1, {}};
      if (p.gpu_milli > 0 && p.gpu_milli < kMilliPerGpu && p.gpus.size() == 1) pod.slot = p.gpus.front();
      else pod.gpus.assign(p.gpus.begin(), p.gpus.end());
      b->pods.push_back(std::move(pod));
    }
  }
  for (std::size_t i = 0; i < b->pods.size(); ++i) {
    std::lock_guard lock(mu);
    if (b->pods[i].slot >= 0) share(b, i);  // a share of one GPU: held by a reservation pod first (kube_share.cpp)
    else bind_after_release(b, i);
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
  (*errors)("bind_failed");
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
    after(delay, [this, id = b->job, why = b->failure] {
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

// Under mu: runs f on the write pool after `delay`, unless gpuqd halts first.
void KubernetesBinder::State::after(std::chrono::milliseconds delay, std::function<void()> f) {
  if (!pool || halted) return;
  auto timer = std::make_shared<boost::asio::steady_timer>(*pool, delay);
  timer->async_wait([this, timer, f = std::move(f)](const boost::system::error_code& ec) {
    if (ec || halted) return;
    std::lock_guard again(mu);
    f();
  });
}

// A victim's first pod asks its PodDisruptionBudgets: only once that eviction went are the others
// evicted, so a budget's refusal disrupts nothing and the victim runs on (StopRefused). A
// cancelled job, or a victim the engine could not take back (must_stop), is evicted whole.
void KubernetesBinder::State::evict_job(const std::string& id, Time grace) {
  std::lock_guard lock(mu);
  auto it = jobs.find(id);
  if (it == jobs.end() || it->second.done) {
    report(JobStopped{JobId(id)});  // nothing of it runs (withdrawn before it was bound)
    return;
  }
  JobEntry& e = it->second;
  e.stopping = true;
  if (e.submitted && e.preemptor.empty()) {  // a cancel: gpuqd's own pods, deleted with the grace period
    delete_pods(id, grace);
    return;
  }
  std::vector<std::string> live;
  for (const std::string& k : e.pods)
    if (auto p = pods.find(k); p != pods.end() && !p->second.terminal()) live.push_back(k);
  if (!live.empty() && !e.preemptor.empty() && !e.must_stop) {
    evict_first(id, std::move(live), grace);
    return;
  }
  evict_all(id, live, grace);
  lifecycle(id);  // all of it may have ended already
}

// Under mu: the Preempted Event of one of a job's pods.
void KubernetesBinder::State::say_preempted(const std::string& id, const std::string& key, Time grace) {
  const JobEntry& e = jobs.at(id);
  const std::string why =
      e.preempted_by.empty() ? std::string("stopped by gpuq") : "preempted by gpuq job " + e.preempted_by;
  if (auto p = pods.find(key); p != pods.end())
    post_event(p->second, "Normal", "Preempted", why + "; evicted with a grace period of " + std::to_string(grace) + "s");
}

// Under mu.
void KubernetesBinder::State::evict_all(const std::string& id, const std::vector<std::string>& keys, Time grace) {
  for (const std::string& k : keys) {
    say_preempted(id, k, grace);
    evict_pod(k, grace, 0);
  }
}

namespace {

Response post_eviction(Client& client, const std::string& key, Time grace) {
  const auto slash = key.find('/');
  json::object body{{"apiVersion", "policy/v1"},
                    {"kind", "Eviction"},
                    {"metadata", {{"name", key.substr(slash + 1)}, {"namespace", key.substr(0, slash)}}},
                    {"deleteOptions", {{"gracePeriodSeconds", grace}}}};
  return client.request("POST", pod_path(key) + "/eviction", json::serialize(body), "application/json", Retry::kUnsafe);
}

}  // namespace

// Under mu.
void KubernetesBinder::State::evict_first(const std::string& id, std::vector<std::string> keys, Time grace) {
  write([this, id, keys = std::move(keys), grace] {
    Response r = post_eviction(*client, keys.front(), grace);
    std::lock_guard lock(mu);
    ++counts.evictions;
    auto it = jobs.find(id);
    if (it == jobs.end() || it->second.done || !it->second.stopping) return;
    if (const std::string cause = disruption_budget_cause(r); !cause.empty()) {
      ++counts.evictions_blocked;
      refuse_stop(id, keys.front(), cause);
      return;
    }
    if (!r.ok() && r.status != 404) {  // not evicted, for no budget's reason: asked again later
      (*errors)("evict_failed");
      spdlog::warn("event=kubernetes_evict_failed pod={} error=\"{}\"", keys.front(), describe(r));
      after(config.evict_retry, [this, id, keys, grace] {
        if (auto j = jobs.find(id); j != jobs.end() && !j->second.done && j->second.stopping) evict_first(id, keys, grace);
      });
      return;
    }
    say_preempted(id, keys.front(), grace);  // evicted already
    evict_all(id, std::vector<std::string>(keys.begin() + 1, keys.end()), grace);
  });
}

// Under mu: a PodDisruptionBudget refused a victim's first eviction. The victim runs on (the
// engine gives it back its room and takes it for no victim for evictRetry), the preemptor looks
// again; both are told which budget it was.
void KubernetesBinder::State::refuse_stop(const std::string& id, const std::string& key, const std::string& cause) {
  JobEntry& e = jobs.at(id);
  e.stopping = false;
  const std::string by = e.preemptor;
  const auto retry = std::chrono::duration_cast<std::chrono::seconds>(config.evict_retry).count();
  const std::string why = "the eviction of pod " + key + " was refused: " + cause;
  if (auto p = pods.find(key); p != pods.end())
    post_event(p->second, "Warning", "EvictionBlocked",
               "gpuq job " + by + " would preempt it, but " + why + "; it runs on, and is no candidate for "
               "preemption for " + std::to_string(retry) + "s");
  if (auto p = jobs.find(by); p != jobs.end())
    for (const std::string& k : p->second.pods)
      if (auto pod = pods.find(k); pod != pods.end())
        post_event(pod->second, "Warning", "PreemptionBlocked",
                   "preempting gpuq job " + id + ": " + why + "; gpuq looks for other jobs to preempt, or waits");
  e.preemptor.clear();
  e.preempted_by.clear();
  report(StopRefused{JobId(id), why, std::max<Time>(1, retry)});
}

// Under mu.
void KubernetesBinder::State::evict_pod(const std::string& key, Time grace, int attempt) {
  write([this, key, grace, attempt] {
    Response r = post_eviction(*client, key, grace);
    std::lock_guard lock(mu);
    ++counts.evictions;
    if (r.ok() || r.status == 404) return;  // evicted, or gone already
    if (r.status == 429) {
      // A PodDisruptionBudget allows no disruption now: said on the pod, and asked again later.
      ++counts.evictions_blocked;
      if (attempt == 0)
        if (auto p = pods.find(key); p != pods.end())
          post_event(p->second, "Warning", "EvictionBlocked", "gpuq could not evict it yet: " + describe(r));
    } else {
      (*errors)("evict_failed");
      spdlog::warn("event=kubernetes_evict_failed pod={} error=\"{}\"", key, describe(r));
    }
    after(config.evict_retry, [this, key, grace, attempt] {
      if (pods.count(key) > 0) evict_pod(key, grace, attempt + 1);
    });
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
      if (!r.ok() && r.status != 404) {
        (*errors)("status_failed");
        spdlog::warn("event=kubernetes_status_failed pod={} error=\"{}\"", key, describe(r));
      }
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
  if (!event_pool || halted || !leading) return;
  if (events_queued.fetch_add(1) >= kMaxQueuedEvents) {
    events_queued.fetch_sub(1);
    (*errors)("event_dropped");
    return;
  }
  boost::asio::post(*event_pool, [this, ns = pod.ns, body = json::serialize(ev)] {
    Response r = client->request("POST", "/api/v1/namespaces/" + ns + "/events", body, "application/json", Retry::kUnsafe);
    events_queued.fetch_sub(1);
    if (!r.ok()) spdlog::debug("event=kubernetes_event_failed error=\"{}\"", describe(r));
  });
}

// Engine thread: decisions wait until their turn is on disk (binder.hpp).
void KubernetesBinder::bind(const Admission& admission, const storage::JobRecord& job) {
  if (job.run.image.empty()) {  // a job of pods users made: they are bound
    s_->open.push_back([s = s_.get(), admission] { s->bind_job(admission); });
    return;
  }
  // A job submitted through gpuqd's API: its pods are made (kube_submitted.cpp), bound to the
  // engine's nodes, once the turn is on disk.
  std::string run;
  QueueKubernetes queue;
  {
    std::lock_guard lock(s_->mu);
    if (auto q = s_->queue_kube.find(job.spec.queue.value); q != s_->queue_kube.end()) queue = q->second;
    // A run's name: unique to this admission (a retried or requeued job makes new pods beside
    // its old ones), 5 characters.
    std::uint64_t h = (++s_->runs) * 0x9E3779B97F4A7C15ULL ^ static_cast<std::uint64_t>(::getpid()) << 32 ^
                      static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    static const char* digits = "bcdfghjklmnpqrstvwxz2456789";
    for (int i = 0; i < 5; ++i, h /= 27) run += digits[h % 27];
  }
  Result<PodsToMake> made = queue.ns.empty()
      ? Result<PodsToMake>(Error{"queue \"" + job.spec.queue.value + "\" has no kubernetes.namespace now: its pods cannot be made",
                                 ErrorCode::kFailedPrecondition})
      : make_pods(PodInput{&job, &queue, admission.pods, s_->config.scheduler_name, run});
  if (!made) {
    s_->report(JobFinished{admission.job, 1, made.error()});
    return;
  }
  s_->open.push_back([s = s_.get(), id = admission.job.value, make = std::make_shared<PodsToMake>(std::move(made.value())),
                      grace = job.spec.grace_period, max = job.spec.max_runtime.value_or(0)] {
    s->create_job(id, make, grace, max);
  });
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
  if (auto it = s_->jobs.find(p.job.value); it != s_->jobs.end()) {
    it->second.preemptor = p.by.value;
    it->second.preempted_by = p.by.value + " (" + to_string(p.reason) + ")";
  }
}

// The engine could not take a refused victim back: it is evicted whole after all, budgets or not.
void KubernetesBinder::must_stop(const JobId& job) {
  s_->open.push_back([s = s_.get(), id = job.value] {
    Time grace = 30;
    {
      std::lock_guard lock(s->mu);
      auto it = s->jobs.find(id);
      if (it == s->jobs.end()) return;
      it->second.must_stop = true;
      grace = it->second.grace;
    }
    s->evict_job(id, grace);
  });
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
