#pragma once
// The kubernetes binder's state (kube_binder.cpp: what the watches say; kube_writes.cpp: binds,
// evictions, status). One mutex guards it; watch threads and write threads take it briefly,
// never across a request.
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include <boost/asio/thread_pool.hpp>

#include "binder/kubernetes/kube_binder.hpp"
#include "binder/kubernetes/objects.hpp"
#include "binder/kubernetes/reflector.hpp"
#include "binder/kubernetes/translate.hpp"

namespace gpuq::binder::k8s {

// A pod gpuq does not place, bound to a node: what it takes there.
struct ForeignPod {
  std::string node;
  ResourceVec request;
};

struct JobEntry {
  std::vector<std::string> pods;  // pod keys, in pod-set order (an Admission's order)
  std::string ns;
  bool bound = false;     // bound by gpuq (or found bound at start)
  bool started = false;   // JobStarted reported (or it was running when found)
  bool stopping = false;  // evictions asked
  bool done = false;      // its last fact was reported
  std::string failure;    // a pod group that could not be bound whole: it ends so once its bound pods are gone
  Time grace = 30;
};

struct Group {
  std::set<std::string> pods;  // keys of its pods not yet in a job
  int size = 0;
  std::chrono::steady_clock::time_point first_seen;
  bool warned = false;
};

struct KubernetesBinder::State {
  KubernetesConfig config;
  std::shared_ptr<Client> client;
  Report report;
  SourceReport source;
  TranslateOptions translate;

  mutable std::mutex mu;
  std::unordered_map<std::string, PodInfo> pods;        // gpuq's pods, by namespace/name
  std::unordered_map<std::string, std::string> job_of;  // pod key -> job id
  std::unordered_map<std::string, JobEntry> jobs;
  std::map<std::string, Group> groups;                  // namespace/group -> pods waiting for the rest
  std::unordered_map<std::string, ForeignPod> foreign;  // by pod key
  std::unordered_map<std::string, ResourceVec> foreign_on;  // by node
  std::unordered_map<std::string, NodeInfo> nodes;
  std::unordered_map<std::string, std::string> ns_default;  // namespace -> its default queue
  struct Said {
    std::string message;
    std::chrono::steady_clock::time_point at;
  };
  std::unordered_map<std::string, Said> said;  // pod key -> the last PodScheduled message
  bool nodes_synced = false, namespaces_synced = false, pods_synced = false;
  std::condition_variable synced_cv;

  // Decisions of the open turn and of the turn being written (binder.hpp: turn_closed).
  std::vector<std::function<void()>> open, closed;

  std::vector<std::unique_ptr<Reflector>> reflectors;
  std::thread starter;                 // starts the watchers one after the other
  std::vector<std::thread> watchers;  // one per reflector
  std::unique_ptr<boost::asio::thread_pool> pool;
  std::atomic<bool> halted{false};
  std::atomic<bool> leading{true};  // false while a standby (leader election)
  std::unique_ptr<LeaderElector> elector;
  std::thread elector_thread;

  Counts counts;  // under mu

  // kube_binder.cpp
  void on_node(EventType type, const boost::json::object& obj);
  void on_namespace(EventType type, const boost::json::object& obj);
  void on_pod(EventType type, const boost::json::object& obj);
  void node_changed(const std::string& node);
  void pod_of_ours(PodInfo pod);
  void pod_gone(const std::string& key);
  void offer(const std::string& key);
  void arrive(const std::vector<const PodInfo*>& pods, const std::string& ns, const std::string& name,
              const std::string& id_seed);
  void lifecycle(const std::string& id);
  bool managed_namespace(const std::string& ns) const;
  void take_over();

  // kube_writes.cpp
  void bind_job(const Admission& admission);
  void evict_job(const std::string& id, Time grace);
  void evict_pod(const std::string& key, Time grace, int attempt);
  // `routine`: a waiting reason, said at most every pod_status_min; otherwise (a refusal) at once.
  void say_unschedulable(const std::vector<std::string>& keys, const std::string& message, bool routine = false);
  void post_event(const PodInfo& pod, const std::string& type, const std::string& reason, const std::string& message);
  void write(std::function<void()> f);
};

}  // namespace gpuq::binder::k8s
