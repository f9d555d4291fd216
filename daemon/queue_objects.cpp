// Queues as the source's objects (the kubernetes binder's Queue objects, queues.gpuq.io; README:
// "Queues as Kubernetes objects"): the objects are the truth. One made or changed is applied as
// Queues.Apply would (a refusal goes to its status); one deleted goes, or, while it holds jobs,
// takes no new ones and goes once they have ended. At the first list, the queues no object
// names (the config's, the state file's) go the same way, unless there is no object at all:
// then the config's queues stay, for a first start, and the log says how to move them.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "daemon/core.hpp"

namespace gpuq::daemon {

void Core::queue_object_seen(const QueueSpec& spec) {
  const std::string& name = spec.name.value;
  auto r = put_queue(spec);
  if (r) {
    queues_going_.erase(name);
    config_queues_.erase(name);  // the object's now
    spdlog::info("event=queue_object_applied queue={}", name);
  } else {
    spdlog::warn("event=queue_object_refused queue={} error=\"{}\"", name, r.error());
  }
  binder_->queue_result(name, r ? std::string() : r.error());
}

void Core::queue_object_gone(const std::string& name) {
  config_queues_.erase(name);
  if (queue_specs_.count(name) == 0) return;
  if (auto r = remove_queue(name); !r) {
    queues_going_.insert(name);
    spdlog::info("event=queue_object_deleted queue={} removed=false why=\"{}\"", name, r.error());
    return;
  }
  queues_going_.erase(name);
  spdlog::info("event=queue_object_deleted queue={} removed=true", name);
}

void Core::queue_objects_listed(const std::vector<std::string>& names) {
  if (names.empty()) {
    if (!config_queues_.empty())
      spdlog::warn("event=queue_objects_none queues={} message=\"no Queue object exists yet: the config's queues are "
                   "used until one does; move them with: gpuq queues export --format objects | kubectl apply -f -\"",
                   config_queues_.size());
    return;
  }
  std::vector<std::string> others;
  for (const auto& [name, spec] : queue_specs_)
    if (std::find(names.begin(), names.end(), name) == names.end()) others.push_back(name);
  for (const std::string& name : others) {
    if (config_queues_.count(name) > 0)
      spdlog::warn("event=config_queue_ignored queue={} message=\"Queue objects are the truth: queue {} of the config "
                   "is not one; remove it from queues: or make its object\"",
                   name, name);
    queue_object_gone(name);
  }
}

// Every status interval: the queues' use, for their objects' status; and another try at removing
// the queues whose objects are gone.
void Core::report_queues() {
  if (!binder_->queue_objects()) return;
  for (auto it = queues_going_.begin(); it != queues_going_.end();) {
    if (queue_specs_.count(*it) == 0 || remove_queue(*it)) {
      spdlog::info("event=queue_object_deleted queue={} removed=true", *it);
      it = queues_going_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<binder::QueueReport> reports;
  for (const QueueStatus& s : queues()) {
    binder::QueueReport r;
    r.name = s.spec.name.value;
    for (const QueueStatus::Usage& u : s.usage)
      r.rows.push_back({u.flavor, u.resource, u.nominal, u.used, u.borrowed, u.lent});
    r.pending = static_cast<std::int64_t>(s.counts.pending);
    r.running = static_cast<std::int64_t>(s.counts.admitted + s.counts.running + s.counts.preempting);
    r.share = s.share;
    reports.push_back(std::move(r));
  }
  binder_->queue_report(std::move(reports));
}

}  // namespace gpuq::daemon
