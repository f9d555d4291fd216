// Jobs submitted through gpuqd's API on the kubernetes binder (README.md in this folder, "Jobs
// from the command line"): at an admission gpuqd makes the job's pods, bound to the nodes the
// engine chose (one write per pod: the pod is created with spec.nodeName), and for a gang a
// headless Service owned by its pods; the pods' phases and exit codes become the job's facts;
// a cancel deletes them with the grace period, a preemption evicts them (budgets honoured, as
// for any pod), the max runtime deletes them; a pod lost with its node follows onNodeLoss.
#include <algorithm>
#include <random>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "binder/kubernetes/kube_state.hpp"

namespace gpuq::binder::k8s {

namespace json = boost::json;

// The pods of one admission being made: the last answer settles it.
struct Creation {
  std::string job;
  std::shared_ptr<PodsToMake> make;
  std::mutex mu;
  std::size_t answered = 0;
  std::vector<std::string> uids;  // of the pods made, by rank ("" : not made)
  std::string failure;            // the first refusal
};

Result<void> KubernetesBinder::prepare(Submission& sub, const QueueSpec& queue) const {
  if (auto r = prepare_submission(sub, queue, s_->translate.pods); !r) return r;
  std::unique_lock lock(s_->mu);
  const std::string& ns = queue.kubernetes.ns;
  if (!s_->managed_namespace(ns))
    return Error{"spec.queue: queue \"" + queue.name.value + "\"'s kubernetes.namespace \"" + ns +
                     "\" is not one of the namespaces gpuqd places pods in (kubernetes.namespaces in its config)",
                 ErrorCode::kFailedPrecondition};
  if (s_->namespaces_synced && s_->namespaces.count(ns) == 0)
    return Error{"spec.queue: queue \"" + queue.name.value + "\"'s kubernetes.namespace \"" + ns +
                     "\" does not exist in the cluster (kubectl create namespace " + ns + ")",
                 ErrorCode::kFailedPrecondition};
  // The first submission of each version of the queue's template: its pod, as gpuqd would make
  // it, sent to the API server with dryRun=All (admission and validation without a write), so a
  // template the server refuses (a missing service account, a bad volume) is refused here, at
  // submit, rather than at each admission. Once per version: not at every submission.
  const std::string version = ns + "\n" + queue.kubernetes.pod_template;
  if (auto ok = s_->templates_checked.find(queue.name.value); ok != s_->templates_checked.end() && ok->second == version)
    return Ok();
  storage::JobRecord sample;
  sample.spec = sub.job;
  sample.spec.id = JobId(sub.job.id.value.empty() ? "dry-run" : sub.job.id.value);
  sample.run = sub.run;
  PodPlacement where;
  const auto made = make_pods(PodInput{&sample, &queue.kubernetes, {where}, s_->config.scheduler_name, "dryrn"});
  if (!made) return Error{made.error(), made.code()};
  json::object pod = made->pods.front();
  pod["spec"].as_object().erase("nodeName");  // placed nowhere: only its admission is asked
  lock.unlock();  // no request under the lock
  Response r = s_->client->request("POST", "/api/v1/namespaces/" + ns + "/pods?dryRun=All", json::serialize(pod),
                                   "application/json", Retry::kSafe);
  if (r.ok()) {
    lock.lock();
    s_->templates_checked[queue.name.value] = version;
    return Ok();
  }
  if (r.status == 0 || r.status >= 500 || r.status == 429 || r.status == 409)
    return Ok();  // the server could not say (or a pod of that name exists): the admission will
  return Error{"spec.queue: queue \"" + queue.name.value + "\"'s pods are refused by the API server (its " +
                   "kubernetes.podTemplate, or what gpuqd may do in namespace " + ns + "): " + describe(r),
               ErrorCode::kFailedPrecondition};
}

void KubernetesBinder::queue_applied(const QueueSpec& queue) {
  std::lock_guard lock(s_->mu);
  s_->queue_kube[queue.name.value] = queue.kubernetes;
}

// A submitted job the state file says holds a placement: its pods are found by the watch
// (adopt_found, once pods are listed); until then it is taken as running where it was.
std::optional<BinderFact> KubernetesBinder::adopt(const storage::JobRecord& job) {
  if (job.run.image.empty()) return std::nullopt;
  std::lock_guard lock(s_->mu);
  JobEntry e;
  e.submitted = true;
  e.adopting = true;
  e.bound = true;
  e.started = job.state == JobState::kRunning;
  e.grace = job.spec.grace_period;
  e.max_runtime = job.spec.max_runtime.value_or(0);
  e.tty = job.run.tty;
  e.tty_size = job.run.tty_size;
  if (auto q = s_->queue_kube.find(job.spec.queue.value); q != s_->queue_kube.end()) e.ns = q->second.ns;
  s_->jobs[job.spec.id.value] = std::move(e);
  if (s_->pods_synced) s_->attach(job.spec.id.value);  // restored after the pods were listed
  return std::nullopt;
}

namespace {

std::string pods_path(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/pods"; }

// The body as JSON; null when it is not (a proxy's error page): never throws.
json::value parsed(const std::string& body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  return ec ? json::value() : v;
}

std::string string_in(const json::value& v, std::initializer_list<std::string_view> path) {
  const json::value* at = &v;
  for (std::string_view k : path) {
    const json::object* o = at->if_object();
    at = o ? o->if_contains(k) : nullptr;
    if (at == nullptr) return {};
  }
  return at->is_string() ? std::string(at->get_string()) : std::string();
}

}  // namespace

// Pool thread: the job's entry first (so the watch finds its pods), then every pod at once (a
// share of a GPU once its reservation pod runs; whole GPUs once no reservation pod being deleted
// holds them).
void KubernetesBinder::State::create_job(const std::string& id, std::shared_ptr<PodsToMake> make, Time grace,
                                         Time max_runtime) {
  auto c = std::make_shared<Creation>();
  c->job = id;
  c->make = std::move(make);
  c->uids.resize(c->make->pods.size());
  std::lock_guard lock(mu);
  if (auto old = jobs.find(id); old != jobs.end() && !old->second.done) return;  // made already
  JobEntry e;
  e.submitted = true;
  e.bound = true;
  e.ns = c->make->ns;
  e.grace = grace;
  e.max_runtime = max_runtime;
  e.tty = c->make->tty;
  e.tty_size = c->make->tty_size;
  for (const std::string& name : c->make->names) {
    const std::string key = c->make->ns + "/" + name;
    e.pods.push_back(key);
    e.unseen.insert(key);
    job_of[key] = id;
  }
  jobs[id] = std::move(e);
  for (std::size_t i = 0; i < c->make->pods.size(); ++i) {
    auto post = [this, c, i] {
      write([this, c, i] { create_pod(c, i); });
    };
    const PodPlacement& where = c->make->where[i];
    if (const int slot = c->make->slot[i]; slot >= 0) {
      // A share of one GPU: made once the reservation pod holding that GPU says which it is.
      reserve(where.node, slot, c->make->ns + "/" + c->make->names[i], [this, c, i, post](const std::string& device) {
        if (device.empty()) {
          write([this, c, i] { settle_pod(c, i, "", "the reservation pod holding its share of a GPU on " +
                                                        c->make->where[i].node + " did not run"); });
          return;
        }
        c->make->pods[i]["metadata"].as_object()["annotations"].as_object()[kShareDeviceAnnotation] = device;
        post();
      });
    } else {
      // Whole GPUs: once no reservation pod being deleted holds one of them (the kubelet would
      // refuse the pod otherwise).
      after_release(where.node, std::vector<int>(where.gpus.begin(), where.gpus.end()), post);
    }
  }
}

// Pool thread: one pod, made bound to its node.
void KubernetesBinder::State::create_pod(const std::shared_ptr<Creation>& c, std::size_t i) {
  const std::string& ns = c->make->ns;
  const std::string& name = c->make->names[i];
  Response r = client->request("POST", pods_path(ns), json::serialize(c->make->pods[i]), "application/json", Retry::kUnsafe);
  std::string uid, failure;
  if (r.ok()) {
    uid = string_in(parsed(r.body), {"metadata", "uid"});
    if (uid.empty()) failure = "pod " + ns + "/" + name + ": the API server's answer has no uid";
  } else if (r.status == 409) {  // made by this request's first attempt, or someone else's pod
    Response got = client->get(pod_path(ns + "/" + name));
    if (got.ok()) {
      const json::value v = parsed(got.body);
      if (string_in(v, {"metadata", "annotations", kJobIdAnnotation}) == c->job) uid = string_in(v, {"metadata", "uid"});
    }
    if (uid.empty()) failure = "pod " + ns + "/" + name + " exists already and is not this job's";
  } else {
    failure = "the API server refused pod " + ns + "/" + name + ": " + describe(r);
  }
  settle_pod(c, i, uid, failure);
}

// Pool thread: pod i of a creation answered (made, with its uid, or refused).
void KubernetesBinder::State::settle_pod(const std::shared_ptr<Creation>& c, std::size_t i, const std::string& uid,
                                         const std::string& failure) {
  std::lock_guard lock(c->mu);
  if (failure.empty()) c->uids[i] = uid;
  else if (c->failure.empty()) c->failure = failure;
  if (++c->answered == c->make->pods.size()) created(c);
}

// Pool thread, every pod answered: a gang gets its headless Service, owned by its pods (it goes
// when they go); a refusal ends the job, and the pods made of it are deleted.
void KubernetesBinder::State::created(const std::shared_ptr<Creation>& c) {
  {
    std::lock_guard lock(mu);
    counts.binds += static_cast<std::uint64_t>(std::count_if(c->uids.begin(), c->uids.end(), [](const std::string& u) { return !u.empty(); }));
    auto it = jobs.find(c->job);
    if (it == jobs.end() || it->second.done) return;
    JobEntry& e = it->second;
    if (!c->failure.empty()) {
      ++counts.bind_failures;
      (*errors)("bind_failed");
      spdlog::warn("event=kubernetes_pods_refused job={} error=\"{}\"", c->job, c->failure);
      for (std::size_t i = 0; i < c->uids.size(); ++i)
        if (c->uids[i].empty()) e.unseen.erase(e.pods[i]);  // never made: gone
      e.end_reason = c->failure;
      e.end_code = 1;
      delete_pods(c->job, 0);
      return;
    }
    // Cancelled (or past its max runtime) while its pods were being made: a DELETE that came
    // before a pod's POST found nothing, so the pods are deleted again now that all exist.
    if (e.stopping || !e.end_reason.empty()) delete_pods(c->job, e.grace);
  }
  if (c->make->service.empty()) return;
  json::object svc = c->make->service_object;
  json::array owners;
  for (std::size_t i = 0; i < c->uids.size(); ++i)
    owners.push_back(json::object{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", c->make->names[i]}, {"uid", c->uids[i]}});
  svc["metadata"].as_object()["ownerReferences"] = std::move(owners);
  Response r = client->request("POST", "/api/v1/namespaces/" + c->make->ns + "/services", json::serialize(svc),
                               "application/json", Retry::kUnsafe);
  if (!r.ok() && r.status != 409) {
    (*errors)("service_failed");
    spdlog::warn("event=kubernetes_service_failed job={} service={}/{} error=\"{}\"", c->job, c->make->ns,
                 c->make->service, describe(r));
  }
}

// Under mu: every pod of the job deleted with `grace` (a cancel, the max runtime, a refusal).
void KubernetesBinder::State::delete_pods(const std::string& id, Time grace) {
  auto it = jobs.find(id);
  if (it == jobs.end()) return;
  for (const std::string& key : it->second.pods) {
    if (auto p = pods.find(key); p != pods.end() && p->second.terminal()) continue;
    delete_pod(key, grace, Retry::kUnsafe);
  }
  lifecycle(id);  // all of it may have ended already
}

// Under mu: a pod gpuqd made for a submitted job (its annotation names the job). One of a job
// being adopted joins it; one of no job gpuqd holds is left alone here (delete_strays).
bool KubernetesBinder::State::submitted_pod(const PodInfo& pod) {
  auto note = pod.annotations.find(kJobIdAnnotation);
  if (note == pod.annotations.end()) return false;
  const std::string key = pod.key();
  if (auto j = job_of.find(key); j != job_of.end()) {
    if (auto e = jobs.find(j->second); e != jobs.end()) e->second.unseen.erase(key);
    lifecycle(j->second);
  }
  return true;
}

// Under mu, pods listed: an adopted job takes its pods (those of its latest run: the one with a
// pod still alive, else the newest); with none left it is lost (onNodeLoss decides).
void KubernetesBinder::State::attach(const std::string& id) {
  auto it = jobs.find(id);
  if (it == jobs.end()) return;
  JobEntry& e = it->second;
  e.adopting = false;
  std::map<std::string, std::vector<const PodInfo*>> runs;  // run -> its pods
  for (const auto& [key, pod] : pods)
    if (auto note = pod.annotations.find(kJobIdAnnotation);
        note != pod.annotations.end() && note->second == id && job_of.count(key) == 0) {
      auto run = pod.labels.find(kRunLabel);
      runs[run == pod.labels.end() ? std::string() : run->second].push_back(&pod);
    }
  auto alive = [](const std::vector<const PodInfo*>& ps) {
    return std::any_of(ps.begin(), ps.end(), [](const PodInfo* p) { return !p->terminal(); });
  };
  const std::vector<const PodInfo*>* best = nullptr;
  for (const auto& [run, members] : runs)
    if (!best || (alive(members) && !alive(*best)) ||
        (alive(members) == alive(*best) && members.front()->created > best->front()->created))
      best = &members;
  if (best == nullptr) {
    jobs.erase(it);
    report(JobLost{JobId(id), "its pods were gone when gpuqd started again"});
    return;
  }
  std::vector<const PodInfo*> members = *best;
  auto rank = [](const PodInfo* p) {
    auto r = p->labels.find(kRankLabel);
    return r == p->labels.end() ? 0 : std::atoi(r->second.c_str());
  };
  std::sort(members.begin(), members.end(), [&](const PodInfo* a, const PodInfo* b) { return rank(a) < rank(b); });
  e.ns = members.front()->ns;
  for (const PodInfo* p : members) {
    e.pods.push_back(p->key());
    job_of[p->key()] = id;
    // A share of a GPU: its reservation pod is kept while it runs.
    if (auto slot = p->annotations.find(kShareSlotAnnotation);
        slot != p->annotations.end() && !p->node.empty() && !p->terminal() && p->annotations.count(kGpuMilliAnnotation) > 0) {
      const std::string rkey = p->node + "/" + slot->second;
      reservations[rkey].sharers.insert(p->key());
      share_of[p->key()] = rkey;
    }
  }
  lifecycle(id);
}

// Under mu, once pods are listed: the jobs adopted before that take their pods.
void KubernetesBinder::State::adopt_found() {
  std::vector<std::string> adopting;
  for (const auto& [id, e] : jobs)
    if (e.adopting) adopting.push_back(id);
  for (const std::string& id : adopting) attach(id);
}

void KubernetesBinder::stop_strays() {
  std::lock_guard lock(s_->mu);
  if (s_->pods_synced && s_->leading) s_->delete_strays();
}

// Under mu: pods gpuqd made for a job that holds no placement now (it was requeued, cancelled or
// ended while gpuqd was not watching) are deleted, so that nothing runs that gpuq does not count.
// Those that ended (a job that ended before gpuqd started again) go at finishedPodTTL from now.
void KubernetesBinder::State::delete_strays() {
  std::vector<std::string> ended;
  for (const auto& [key, pod] : pods) {
    if (pod.terminating || job_of.count(key) > 0 || pod.annotations.count(kJobIdAnnotation) == 0) continue;
    if (pod.terminal()) {
      ended.push_back(key);
      continue;
    }
    spdlog::info("event=kubernetes_stray_pod pod={} job={}", key, pod.annotations.at(kJobIdAnnotation));
    delete_pod(key, std::nullopt, Retry::kUnsafe);
  }
  expire(ended);
}

// Under mu: what a submitted job's pods say now. Running once one runs; when all have ended:
// stopped (a cancel or a preemption gpuq asked), Failed for gpuq's own reason (max runtime,
// refused), Succeeded when all succeeded, the exit code of the first that failed, or lost (a pod
// gone or failed without running its container to an end: its node was lost, or someone
// deleted it) for onNodeLoss to decide.
void KubernetesBinder::State::submitted_lifecycle(const std::string& id) {
  auto it = jobs.find(id);
  if (it == jobs.end() || it->second.done || it->second.adopting) return;
  JobEntry& e = it->second;
  std::size_t gone = 0, ended = 0, running = 0, succeeded = 0;
  const PodInfo* failed = nullptr;
  for (const std::string& k : e.pods) {
    if (e.unseen.count(k) > 0) continue;  // made, not yet seen: still coming
    auto p = pods.find(k);
    if (p == pods.end()) {
      ++gone;
    } else if (p->second.terminal()) {
      ++ended;
      if (p->second.phase == "Succeeded") ++succeeded;
      else if (!failed) failed = &p->second;
    } else if (p->second.phase == "Running") {
      ++running;
    }
  }
  if (!e.started && running > 0) {
    e.started = true;
    report(JobStarted{JobId(id)});
    if (e.max_runtime > 0)
      after(std::chrono::seconds(e.max_runtime), [this, id, limit = e.max_runtime] {
        auto j = jobs.find(id);
        if (j == jobs.end() || j->second.done || j->second.stopping || !j->second.end_reason.empty()) return;
        j->second.end_reason = "max runtime of " + std::to_string(limit) + " s exceeded; its pods were deleted";
        j->second.end_code = 1;
        spdlog::info("event=max_runtime_exceeded job={} limit_s={}", id, limit);
        delete_pods(id, j->second.grace);
      });
  }
  if (gone + ended < e.pods.size()) return;
  if (e.stopping) {
    report(JobStopped{JobId(id)});
  } else if (!e.end_reason.empty()) {
    report(JobFinished{JobId(id), e.end_code, e.end_reason});
  } else if (succeeded == e.pods.size()) {
    report(JobFinished{JobId(id), 0, ""});
  } else if (failed && failed->exit_code) {
    const int code = *failed->exit_code != 0 ? *failed->exit_code : 1;
    report(JobFinished{JobId(id), code,
                       "pod " + failed->key() + " failed: exit code " + std::to_string(*failed->exit_code) +
                           (failed->exit_reason.empty() ? "" : " (" + failed->exit_reason + ")")});
  } else {
    std::string why = gone > 0 ? "its pod was deleted by someone other than gpuq"
                               : "pod " + failed->key() + " failed before its container ran" +
                                     (failed->status_reason.empty() ? "" : " (" + failed->status_reason + ")");
    report(JobLost{JobId(id), why});
  }
  for (const std::string& k : e.pods) {
    unshare(k);  // a share's reservation pod goes with its last sharer
    job_of.erase(k);
    pods.erase(k);
  }
  expire(e.pods);
  jobs.erase(it);
}

// Under mu: an ended job's pods stay for their logs, as a batch/v1 Job's do, until
// finishedPodTTL (if set) from now.
void KubernetesBinder::State::expire(const std::vector<std::string>& keys) {
  if (config.finished_pod_ttl.count() <= 0) return;
  std::vector<std::string> fresh;
  for (const std::string& key : keys)
    if (expiring.insert(key).second) fresh.push_back(key);
  if (fresh.empty()) return;
  after(config.finished_pod_ttl, [this, keys = std::move(fresh)] {
    for (const std::string& key : keys) {
      expiring.erase(key);
      delete_pod(key, std::nullopt, Retry::kSafe);
    }
  });
}

}  // namespace gpuq::binder::k8s
