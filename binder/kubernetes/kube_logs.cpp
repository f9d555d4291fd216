// A job's output on the kubernetes binder (gpuq logs): its pod's log through the API server
// (pods/log, as kubectl logs reads it), from the binder's own record of a live job's pods, else
// from the API (the job's latest run, by its labels). And its input (gpuq run): pods/attach.
#include <cstdlib>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "binder/kubernetes/kube_state.hpp"

namespace gpuq::binder::k8s {

namespace json = boost::json;

namespace {

class KubeLogStop final : public Binder::LogStop {
 public:
  void stop() override { s.stop(); }
  StreamStop s;
};

std::string query_escape(const std::string& v) {
  std::string out;
  for (unsigned char c : v) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789ABCDEF";
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> KubernetesBinder::pod_names(const JobId& job) const {
  std::lock_guard lock(s_->mu);
  auto it = s_->jobs.find(job.value);
  if (it == s_->jobs.end() || it->second.adopting) return {};
  return it->second.pods;
}

std::unique_ptr<Binder::LogStop> KubernetesBinder::log_stop() const { return std::make_unique<KubeLogStop>(); }

Result<void> KubernetesBinder::stream_log(const storage::JobRecord& job, int pod, std::int64_t offset, bool follow,
                                          const std::function<bool(std::string_view)>& sink, LogStop* stop_base) const {
  auto* stop = static_cast<KubeLogStop*>(stop_base);
  const std::string& id = job.spec.id.value;
  std::string key;  // namespace/name of the pod
  std::string ns;
  {
    std::lock_guard lock(s_->mu);
    if (auto it = s_->jobs.find(id); it != s_->jobs.end() && !it->second.adopting &&
                                     pod < static_cast<int>(it->second.pods.size()) &&
                                     it->second.unseen.count(it->second.pods[static_cast<std::size_t>(pod)]) == 0)
      key = it->second.pods[static_cast<std::size_t>(pod)];
    if (auto q = s_->queue_kube.find(job.spec.queue.value); q != s_->queue_kube.end()) ns = q->second.ns;
  }
  if (key.empty() && job.run.image.empty())
    return Error{"job \"" + id + "\" is made of pods created in Kubernetes, and it is not running: read its pods' "
                 "logs with kubectl logs",
                 ErrorCode::kFailedPrecondition};
  if (key.empty() && !ns.empty()) {  // a job that ended (or gpuqd does not follow now): its latest run's pod
    Response r = s_->client->get("/api/v1/namespaces/" + ns + "/pods?labelSelector=" +
                                 query_escape(std::string(kJobLabel) + "=" + label_value_of(id)));
    if (!r.ok()) return Error{"listing job \"" + id + "\"'s pods: " + describe(r), ErrorCode::kUnavailable};
    std::string newest;
    boost::system::error_code ec;
    const json::value v = json::parse(r.body, ec);
    const json::object* list = ec ? nullptr : v.if_object();
    if (const json::array* items = list && list->if_contains("items") ? list->at("items").if_array() : nullptr)
      for (const json::value& item : *items) {
        if (!item.is_object()) continue;
        auto p = read_pod(item.as_object());
        auto at = [](const std::map<std::string, std::string>& m, const char* k) {
          auto it = m.find(k);
          return it == m.end() ? std::string() : it->second;
        };
        if (!p || at(p->annotations, kJobIdAnnotation) != id || at(p->labels, kRankLabel) != std::to_string(pod)) continue;
        if (p->created >= newest) newest = p->created, key = p->key();
      }
  }
  if (key.empty())
    return Error{"job \"" + id + "\" has no pod " + std::to_string(pod) + " in the cluster (it has not started, or its "
                 "pods were deleted)",
                 ErrorCode::kNotFound};
  const std::string target = pod_path(key) + "/log" + (follow ? "?follow=true" : "");
  std::int64_t skip = offset;
  Response r = s_->client->stream_bytes(
      target,
      [&](std::string_view data) {
        if (skip >= static_cast<std::int64_t>(data.size())) {
          skip -= static_cast<std::int64_t>(data.size());
          return true;
        }
        data.remove_prefix(static_cast<std::size_t>(skip));
        skip = 0;
        return sink(data);
      },
      follow ? std::chrono::hours(24) : std::chrono::seconds(60), &stop->s);
  if (r.ok() || stop->s.stopped()) return Ok();
  // Its container has not started (ContainerCreating, or the pod is still Pending): a follow
  // asks again.
  // A pod just bound that its node has not taken up yet: the node answers 404 for its log.
  bool starting = false;
  if (r.status == 404) {
    std::lock_guard lock(s_->mu);
    auto p = s_->pods.find(key);
    starting = p != s_->pods.end() && (p->second.phase.empty() || p->second.phase == "Pending");
  }
  if (starting || (r.status == 400 && (r.body.find("waiting to start") != std::string::npos ||
                                       r.body.find("ContainerCreating") != std::string::npos ||
                                       r.body.find("PodInitializing") != std::string::npos)))
    return Error{"pod " + key + " of job \"" + id + "\" has not started its container yet", ErrorCode::kNotFound};
  return Error{"reading the log of pod " + key + " of job \"" + id + "\": " + describe(r), ErrorCode::kUnavailable};
}

}  // namespace gpuq::binder::k8s

namespace gpuq::binder::k8s {

// gpuq run: what is typed goes to the job's pod's terminal through pods/attach (stdin on a
// WebSocket, as `kubectl attach -i` sends it), attached at the first input once the pod runs,
// with the terminal's size, and kept until the job ends. An error says to try again
// (FAILED_PRECONDITION) while the pod is not running or cannot be attached yet.
Result<void> KubernetesBinder::write_input(const JobId& job, int pod, std::string_view data) const {
  std::shared_ptr<ChannelStream> terminal;
  std::string key, size;
  {
    std::lock_guard lock(s_->mu);
    auto it = s_->jobs.find(job.value);
    if (it == s_->jobs.end() || it->second.adopting || it->second.done || !it->second.tty || pod != 0 ||
        it->second.pods.empty())
      return Error{"job \"" + job.value + "\" is not running: its terminal takes no input", ErrorCode::kFailedPrecondition};
    key = it->second.pods.front();
    auto p = s_->pods.find(key);
    if (it->second.unseen.count(key) > 0 || p == s_->pods.end() || p->second.phase != "Running")
      return Error{"job \"" + job.value + "\": pod " + key + " is not running yet; its terminal takes no input",
                   ErrorCode::kFailedPrecondition};
    terminal = it->second.terminal;
    size = it->second.tty_size;
  }
  if (!terminal) {
    std::string why;
    std::shared_ptr<ChannelStream> opened = s_->client->open_channels(pod_path(key) + "/attach?stdin=true&tty=true", why);
    if (!opened) {
      spdlog::warn("event=kubernetes_attach_failed job={} pod={} error=\"{}\"", job.value, key, why);
      return Error{"job \"" + job.value + "\": its terminal (pod " + key + ") could not be attached: " + why,
                   ErrorCode::kFailedPrecondition};
    }
    int rows = 24, cols = 80;
    if (const auto x = size.find('x'); x != std::string::npos) {
      rows = std::atoi(size.c_str());
      cols = std::atoi(size.c_str() + x + 1);
    }
    if (rows > 0 && cols > 0)
      opened->send(4, json::serialize(json::object{{"Width", cols}, {"Height", rows}}), std::chrono::seconds(5));
    std::lock_guard lock(s_->mu);
    auto it = s_->jobs.find(job.value);
    if (it == s_->jobs.end() || it->second.done)
      return Error{"job \"" + job.value + "\" ended: its terminal takes no input", ErrorCode::kFailedPrecondition};
    if (!it->second.terminal) it->second.terminal = opened;  // else another input attached it first
    terminal = it->second.terminal;
  }
  if (!terminal->send(0, data, std::chrono::seconds(5))) {
    const std::string why = terminal->ended();
    std::lock_guard lock(s_->mu);
    if (auto it = s_->jobs.find(job.value); it != s_->jobs.end() && it->second.terminal == terminal)
      it->second.terminal.reset();  // attached again at the next input, if it still runs
    return Error{"job \"" + job.value + "\": its terminal took no input (" + why + ")", ErrorCode::kFailedPrecondition};
  }
  return Ok();
}

}  // namespace gpuq::binder::k8s
