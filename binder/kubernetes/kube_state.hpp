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
#include "binder/kubernetes/pod_build.hpp"
#include "binder/kubernetes/reflector.hpp"
#include "binder/kubernetes/translate.hpp"

namespace gpuq::binder::k8s {

inline constexpr int kEventWriters = 2;
inline constexpr int kMaxQueuedEvents = 1000;

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
  std::string preempted_by;  // as a victim: the job that preempts it, and why (for its Events)
  std::string preemptor;     // as a victim: that job's id
  bool must_stop = false;    // a refused victim the engine could not take back: evicted whole
  int bind_failures = 0;  // bindings that failed with nothing bound: the backoff before the next
  std::string failure;    // a pod group that could not be bound whole: it ends so once its bound pods are gone
  Time grace = 30;
  // A job submitted through gpuqd's API (kube_submitted.cpp): gpuqd made its pods.
  bool submitted = false;
  std::set<std::string> unseen;  // its pods made (or being made) that no watch event showed yet
  bool adopting = false;         // found in the state file at start: its pods are found by the watch
  std::string end_reason;        // why gpuq ended it (max runtime, pods refused): it finishes Failed so
  int end_code = 1;
  Time max_runtime = 0;          // 0: none; enforced by deleting its pods
  bool tty = false;              // gpuq run: its pod's terminal takes input through pods/attach
  std::string tty_size;          // "ROWSxCOLS", sent when the terminal is attached
  std::shared_ptr<ChannelStream> terminal;  // attached at the first input (kube_logs.cpp)
};

struct Group {
  std::set<std::string> pods;  // keys of its pods not yet in a job
  std::string name;            // as declared (messages)
  std::string podgroup;        // the PodGroup object that declares it, if one does (its timeout)
  int size = 0;
  std::chrono::steady_clock::time_point first_seen;
  bool warned = false;
};

// The pods of one job being bound: the last binding to answer settles the job.
struct Binding {
  struct Pod {
    std::string key;
    std::string node;
    int slot = -1;  // a GPU share: the engine's GPU index on the node; -1: whole GPUs or none
    std::vector<int> gpus;  // whole GPUs: the engine's indices of them on the node
  };
  std::string job;
  std::vector<Pod> pods;
  std::mutex mu;
  std::size_t answered = 0;
  std::vector<std::string> bound;  // keys bound
  std::string failure;             // the first failure
};

// A GPU shared by pods with gpuq.io/gpu-milli, held by a reservation pod that asks the device
// plugin for it (binder/kubernetes/README.md: Fractional GPUs).
struct Reservation {
  std::string pod;     // its name, in the reservation namespace
  std::string device;  // the GPU it was given, once it runs (its device annotation)
  bool failed = false;
  std::set<std::string> sharers;  // pod keys placed on it
  std::vector<std::function<void(const std::string& device)>> waiters;  // "" : it failed
};

// Now as Kubernetes writes times (kube_writes.cpp).
std::string now_rfc3339();
// The API path of pod `key` ("namespace/name"; kube_writes.cpp).
std::string pod_path(const std::string& key);

// A Queue object as the binder knows it (kube_queues.cpp).
struct QueueObject {
  std::int64_t generation = 0;  // of the spec last read
  std::string unread;           // why that spec was refused as read ("" : it read)
  std::string refused;          // why the Core refused it ("" : applied, or not yet answered)
  std::string last_written;     // the status last written (JSON), to write only changes
  // Its conditions' last transitions (RFC 3339), kept while their status stays.
  std::map<std::string, std::pair<std::string, std::string>> transitions;  // type -> (status, time)
};

struct KubernetesBinder::State {
  KubernetesConfig config;
  std::shared_ptr<ErrorCounter> errors;  // the binder's (/metrics)
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
  std::set<std::string> dirty_nodes;  // changed since they were last reported (node_changed)
  std::unordered_map<std::string, std::string> ns_default;  // namespace -> its default queue
  std::set<std::string> namespaces;                          // those that exist
  std::unordered_map<std::string, QueueKubernetes> queue_kube;  // by queue: where its submitted jobs' pods go
  std::uint64_t runs = 0;  // admissions of submitted jobs, for their runs' names
  std::map<std::string, std::string> templates_checked;  // queue -> the template version a dry run accepted
  std::set<std::string> expiring;  // ended submitted jobs' pods to delete at finishedPodTTL
  std::map<std::string, Reservation> reservations;             // "node/slot"
  std::unordered_map<std::string, std::string> share_of;       // sharer pod key -> "node/slot"
  // "node/slot" of a GPU whose reservation pod is being deleted -> what waits for the DELETE to
  // be answered: a pod bound to that GPU before would reach the kubelet while the reservation
  // pod still holds it, and be refused (OutOfnvidia.com/gpu).
  std::map<std::string, std::vector<std::function<void()>>> releasing;
  std::uint64_t reservation_seq = 0;
  struct Said {
    std::string message;
    std::chrono::steady_clock::time_point at;
  };
  std::unordered_map<std::string, Said> said;  // pod key -> the last PodScheduled message
  bool nodes_synced = false, namespaces_synced = false, pods_synced = false, queues_synced = false;
  bool coscheduling_synced = false, volcano_synced = false, jobsets_synced = false;
  // Queue objects (kube_queues.cpp), by name: what was read of each and what its status says.
  std::map<std::string, QueueObject> queue_objects;
  std::string status_cursor;  // the Queue whose status was looked at last (kube_queues.cpp)
  ResourceNames* names = nullptr;  // the Core's (set_source; thread-safe)
  // PodGroup objects (scheduler-plugins', Volcano's), when served: minMember and
  // scheduleTimeoutSeconds by "API group/namespace/name". The groups they declare that were
  // admitted ("namespace/key") with their pods that still exist: while any does, a new member
  // is a job of its own (beyond minMember); once all are gone (evicted, ended, deleted), the
  // group forms again.
  PodGroupSizes podgroups;
  std::set<std::string> unwatched_groups;  // PodGroup and JobSet API groups not served at start
  std::map<std::string, int> podgroup_timeouts;
  std::map<std::string, std::set<std::string>> formed;
  std::unordered_map<std::string, std::string> formed_of;  // pod key -> its group in `formed`
  void join_formed(const std::string& gkey, const std::string& pod);
  std::atomic<bool> objects_on{false};  // queues are Queue objects (decided in start())
  std::condition_variable synced_cv;

  // Decisions of the open turn and of the turn being written (binder.hpp: turn_closed).
  std::vector<std::function<void()>> open, closed;

  std::vector<std::unique_ptr<Reflector>> reflectors;
  std::thread starter;                 // starts the watchers one after the other
  std::vector<std::thread> watchers;  // one per reflector
  std::unique_ptr<boost::asio::thread_pool> pool;
  std::unique_ptr<InFlightLimit> write_limit;  // the pool's writes in flight, as the server lets them
  // Events go on a lane of their own (kEventWriters threads), so that under a busy API server
  // they do not take bindings' places; at most kMaxQueuedEvents wait, more are dropped (and
  // counted, /metrics: gpuq_binder_errors_total{kind="event_dropped"}), as client-go's event
  // broadcaster drops them when its queue is full.
  std::unique_ptr<boost::asio::thread_pool> event_pool;
  std::atomic<int> events_queued{0};
  std::atomic<bool> halted{false};
  std::atomic<bool> leading{true};  // false while a standby (leader election)
  std::unique_ptr<LeaderElector> elector;
  bool note_too_large = false;  // said once (engine thread)
  std::thread elector_thread;

  Counts counts;  // under mu

  // kube_binder.cpp
  void on_node(EventType type, const boost::json::object& obj);
  void on_namespace(EventType type, const boost::json::object& obj);
  void on_pod(EventType type, const boost::json::object& obj);
  void on_queue(EventType type, const boost::json::object& obj);  // kube_queues.cpp
  void on_podgroup(const char* group, EventType type, const boost::json::object& obj);
  void on_coscheduling_podgroup(EventType type, const boost::json::object& obj);
  void on_volcano_podgroup(EventType type, const boost::json::object& obj);
  void on_jobset(EventType type, const boost::json::object& obj);
  void queues_listed();
  void node_changed(const std::string& node);
  void flush_nodes();
  void pod_of_ours(PodInfo pod);
  void pod_gone(const std::string& key);
  void offer(const std::string& key);
  void offer_waiting(const std::function<bool(const PodInfo&)>& which);
  void arrive(const std::vector<const PodInfo*>& pods, const std::string& ns, const std::string& name,
              const std::string& id_seed);
  void lifecycle(const std::string& id);
  bool managed_namespace(const std::string& ns) const;
  void take_over();
  void sweep_reservations();

  // kube_writes.cpp
  void bind_job(const Admission& admission);
  void bind_pod(const std::shared_ptr<Binding>& b, std::size_t i);
  void settle(const std::shared_ptr<Binding>& b, std::size_t i, const std::string& failure);
  void evict_job(const std::string& id, Time grace);
  void evict_all(const std::string& id, const std::vector<std::string>& keys, Time grace);
  void say_preempted(const std::string& id, const std::string& key, Time grace);
  void evict_first(const std::string& id, std::vector<std::string> keys, Time grace);
  void refuse_stop(const std::string& id, const std::string& key, const std::string& cause);
  void evict_pod(const std::string& key, Time grace, int attempt);
  void after(std::chrono::milliseconds delay, std::function<void()> f);
  // `routine`: a waiting reason, said at most every pod_status_min; otherwise (a refusal) at once.
  void say_unschedulable(const std::vector<std::string>& keys, const std::string& message, bool routine = false);
  void check_groups();  // Events for pod groups still incomplete after their timeout
  void post_event(const PodInfo& pod, const std::string& type, const std::string& reason, const std::string& message);
  void write(std::function<void()> f);
  // A write deleting pod `key` (with DeleteOptions' gracePeriodSeconds when given).
  void delete_pod(const std::string& key, std::optional<Time> grace, Retry retry);

  // kube_submitted.cpp: jobs submitted through gpuqd's API.
  void create_job(const std::string& id, std::shared_ptr<PodsToMake> make, Time grace, Time max_runtime);
  void create_pod(const std::shared_ptr<struct Creation>& c, std::size_t i);
  void settle_pod(const std::shared_ptr<struct Creation>& c, std::size_t i, const std::string& uid,
                  const std::string& failure);
  void created(const std::shared_ptr<struct Creation>& c);
  void delete_pods(const std::string& id, Time grace);  // under mu
  void submitted_lifecycle(const std::string& id);      // under mu
  bool submitted_pod(const PodInfo& pod);               // under mu: false when it is not one
  void attach(const std::string& id);                   // under mu: an adopted job's pods, found
  void adopt_found();                                   // under mu, once pods are listed
  void delete_strays();                                 // under mu, once pods are listed
  void expire(const std::vector<std::string>& keys);  // under mu: deleted finishedPodTTL from now

  // kube_share.cpp (under mu)
  void share(const std::shared_ptr<Binding>& b, std::size_t i);
  void reserve(const std::string& node, int slot, const std::string& sharer,
               std::function<void(const std::string& device)> go);
  void after_release(const std::string& node, const std::vector<int>& gpus, std::function<void()> go);
  void unshare(const std::string& sharer);
  void delete_reservation(const std::string& name, const std::string& rkey);
  void bind_after_release(const std::shared_ptr<Binding>& b, std::size_t i);
  bool on_reservation(EventType type, const boost::json::object& obj);  // false: not one
};

}  // namespace gpuq::binder::k8s
