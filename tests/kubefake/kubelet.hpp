#pragma once
// The simulated kubelets of every node, with the NVIDIA device plugin. When a pod gets a node it
// is admitted against the node's allocatable minus what the node's other admitted, unfinished
// pods request (rejected pods go Failed with reason OutOf<resource>), given whole GPUs
// (GPU-0..GPU-N-1, never two pods the same one), started after a delay, finished when a test
// says or after its sim.gpuq.io/run-seconds annotation, and removed after its grace period when
// deleted. A NotReady node starts nothing new.
//
// Runs on its own thread, fed by the store's events; its writes go through the store like the
// API's (new resourceVersions, watch events) but not through HTTP.
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/kubefake/pods.hpp"
#include "tests/kubefake/store.hpp"

namespace gpuq::kubefake {

// The annotation where the device plugin's choice is written ("GPU-0,GPU-3").
inline constexpr const char* kDevicesAnnotation = "sim.gpuq.io/devices";
// A pod with this annotation ("N") finishes with exit code 0 after N seconds of Running.
inline constexpr const char* kRunSecondsAnnotation = "sim.gpuq.io/run-seconds";

// A Ready node as a kubelet registers it.
json::object make_node(const std::string& name, int gpus, const std::string& cpu,
                       const std::string& memory, json::object labels);
// Ready condition True, or False with the node lifecycle controller's not-ready taints.
void set_ready(json::object& node, bool ready);
bool node_ready(const json::object& node);

class Kubelet {
 public:
  using Clock = std::chrono::steady_clock;
  // enabled false: no admission, starting or removal (finish() still works).
  Kubelet(Store& store, bool enabled, std::chrono::milliseconds start_delay);
  ~Kubelet();
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;

  // The containers exit: see Server::finish_pod. Throws ApiError 404 when the pod is absent.
  void finish(const ObjectKey& pod, int exit_code);
  std::vector<std::string> devices_of(const ObjectKey& pod) const;

 private:
  struct PodState {
    std::string uid;
    std::string node;
    bool admitted = false;
    Amounts requests;
    std::vector<int> devices;
    Clock::time_point start_at{};
    std::optional<Clock::time_point> started_at;
    std::optional<Clock::time_point> finish_at;
    std::optional<Clock::time_point> removal_at;
  };

  void notice(const Event& e);  // the store's observer: queues work
  void run();
  void sync(Store::Txn& txn, const ObjectKey& key, Clock::time_point now);
  void sync_node(Store::Txn& txn, const std::string& node, Clock::time_point now);
  bool sync_deleting(Store::Txn& txn, const ObjectKey& key, PodState& st, const json::object& pod,
                     bool node_exists, bool ready, Clock::time_point now);
  bool admit(Store::Txn& txn, const ObjectPtr& pod, const json::object& node, PodState& st,
             Clock::time_point now);
  void start(Store::Txn& txn, const ObjectPtr& pod, PodState& st, Clock::time_point now);
  void exit_containers(Store::Txn& txn, const ObjectPtr& pod, int exit_code);
  void schedule(const ObjectKey& key, Clock::time_point at);
  std::string pod_ip();
  void forget(const ObjectKey& key);  // pods_.erase(key), and from by_node_

  Store& store_;
  bool enabled_;
  std::chrono::milliseconds start_delay_;

  mutable std::mutex state_mutex_;  // taken inside store transactions only (lock order)
  std::map<ObjectKey, PodState> pods_;
  std::map<std::string, std::set<ObjectKey>> by_node_;  // the keys of pods_ on each node
  unsigned next_ip_ = 0;

  std::mutex queue_mutex_;
  std::condition_variable wake_;
  // Pods changed since the last pass, in the order of their first change (a kubelet takes its
  // pods' changes in order: a pod bound before another was deleted does not see its room).
  std::vector<ObjectKey> dirty_pods_;
  std::set<ObjectKey> dirty_pod_set_;
  std::set<std::string> dirty_nodes_;
  std::multimap<Clock::time_point, ObjectKey> timers_;
  bool stopping_ = false;
  std::optional<std::uint64_t> observer_;
  std::thread thread_;
};

}  // namespace gpuq::kubefake
