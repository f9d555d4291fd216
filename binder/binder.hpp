#pragma once
// The Binder (DESIGN.md, Binders): what puts admitted jobs where they run and stops them. gpuqd's
// Core calls it on the engine thread with the engine's decisions: bind() for an admission (with
// what the job runs), stop() for a job that must stop (a preemption victim, given its grace
// period). What the binder then observes (started, finished with an exit code, stopped, node
// lost) comes back as BinderFacts through the Report it was given, which feeds them to the
// engine (the none binder reports at once, inside the call; a binder with real processes or pods
// reports later, from its own thread, and the Core posts the facts to the engine thread). The
// local executor (binder/local) and, later, the Kubernetes binder implement the same interface.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <variant>

#include "scheduler/model.hpp"
#include "storage/store.hpp"

namespace gpuq::binder {

using Report = std::function<void(const BinderFact&)>;

// Counts a binder's own failures by kind (bind_failed, evict_failed, pod_lost, ...) for
// /metrics (gpuq_binder_errors_total{kind}). Set once before start(); then called from any
// thread (the function it calls must be thread-safe).
class ErrorCounter {
 public:
  void set(std::function<void(std::string_view)> count) { count_ = std::move(count); }
  void operator()(std::string_view kind) const {
    if (count_) count_(kind);
  }

 private:
  std::function<void(std::string_view)> count_;
};

// What one pod of a job used, as its binder measured it (the local executor: from the pod's
// cgroup at its end), for /metrics. Set once before start(); then called from any thread.
struct PodUsage {
  std::string job;
  std::string queue;
  std::int64_t cpu_usec = -1;        // CPU time, microseconds; -1: not measured
  std::int64_t memory_peak_bytes = -1;
};
class UsageCounter {
 public:
  void set(std::function<void(const PodUsage&)> count) { count_ = std::move(count); }
  void operator()(const PodUsage& u) const {
    if (count_) count_(u);
  }

 private:
  std::function<void(const PodUsage&)> count_;
};

// A binder that is also where jobs and nodes come from (the kubernetes binder: pods and nodes
// are the API's) reports these besides its BinderFacts; the Core applies each in a turn.
struct NodeSeen {  // a node appeared or changed (its capacity is what gpuq may use)
  NodeSpec spec;
};
struct JobArrived {  // a job to queue; with `nodes` (one per pod), one already running there
  Submission sub;
  std::vector<std::string> nodes;
  std::vector<std::vector<int>> gpus;  // per pod, the GPU indices it holds (a share's); may be empty
};
struct JobWithdrawn {  // gone before it ran (its pod was deleted while pending), or evicted when preempted
  JobId job;
  std::string reason;
};
struct SourceSynced {};  // everything the source holds has been reported once: placing may begin
// The fair-share history checkpoint the last leader left (Kubernetes: on the Lease), reported
// when this replica takes over, before SourceSynced.
struct HistorySeen {
  std::vector<storage::HistoryRecord> records;
  std::string from;  // who wrote it
};
// One sample of a node's GPUs (the local executor's nvidia-smi sampling, binder/local/README.md:
// GPU use). The Core maps each GPU to the jobs placed on it and keeps each job's GPU use.
struct GpuReading {
  int index = 0;                     // the GPU index jobs are placed on
  int utilization = 0;               // percent, 0..100
  std::int64_t memory_used_mib = 0;  // 0 when the board does not say
};
struct GpuSample {
  std::string node;
  std::vector<GpuReading> gpus;  // the GPUs read in this sample (one that could not be read is left out)
};
using GpuReport = std::function<void(GpuSample)>;

// Queue objects (the kubernetes binder, queues.gpuq.io; docs/tasks/kubernetes.md, "Queues as Kubernetes
// objects"): one made or changed that reads as a valid spec, one deleted, and, once, every
// object there is (valid or not) after the first list, before SourceSynced.
struct QueueSeen {
  QueueSpec spec;
};
struct QueueGone {
  std::string name;
};
struct QueuesListed {
  std::vector<std::string> names;
};

// A queue's use, for its object's status (Binder::queue_report).
struct QueueReport {
  struct Row {
    std::string flavor;
    ResourceId resource = 0;
    Quantity nominal = 0, used = 0, borrowed = 0, lent = 0;
  };
  std::string name;
  std::vector<Row> rows;
  std::int64_t pending = 0, running = 0;
  double share = 0;  // the weighted dominant share; infinity: nothing to share
};

using SourceFact = std::variant<NodeSeen, JobArrived, JobWithdrawn, SourceSynced, HistorySeen, QueueSeen, QueueGone,
                                QueuesListed>;
using SourceReport = std::function<void(SourceFact)>;

class Binder {
 public:
  virtual ~Binder() = default;
  // Where it counts its own failures (the Core sets it before start()).
  ErrorCounter& errors() { return *errors_; }
  // Where it reports what each pod used (the Core sets it before start()).
  UsageCounter& usage() { return *usage_; }
  // Starts an admitted job's pods where the engine placed them (nodes, GPU indices), running
  // what its record says (command, environment, working directory, max runtime, grace period).
  virtual void bind(const Admission& admission, const storage::JobRecord& job) = 0;
  // Stops a job, giving it `grace` seconds before it is killed; JobStopped once every process
  // of it is gone.
  virtual void stop(const JobId& job, Time grace) = 0;
  // Stops a job now, without its grace period (`gpuq cancel --force`), also one already
  // stopping; JobStopped as for stop(). By default stop() with no grace (the Kubernetes binder:
  // eviction with gracePeriodSeconds 0).
  virtual void stop_now(const JobId& job) { stop(job, 0); }

  // A binder with real processes acts only on decisions that are on disk: bind() and stop()
  // calls made before turn_closed() take effect at turn_written(true), and are dropped at
  // turn_written(false) (the write failed; the Core rebuilds from the file and adopts again).
  virtual void turn_closed() {}
  virtual void turn_written(bool ok) { (void)ok; }
  // Start-up (and a rebuild after a failed write), for a job the state file says holds a
  // placement: nullopt when its processes run on (adopted, or started now when they never
  // were); otherwise what became of them while gpuqd was not watching.
  virtual std::optional<BinderFact> adopt(const storage::JobRecord& job) {
    (void)job;
    return std::nullopt;
  }
  // After adopt() for every such job: stops at once whatever still runs for any other job (a
  // cancelled job that was stopping, a preemption victim, a job started by a turn that never
  // reached the disk) and waits for it, so that no GPU is handed out twice.
  virtual void stop_strays() {}
  // The turn that recorded its last fact about `job` is on disk: what it kept for it can go.
  virtual void forget(const JobId& job) { (void)job; }
  // Begins reporting facts (from a thread of its own; the Core posts them to the engine thread),
  // and stops (its thread ends before the engine thread's loop goes; what runs, runs on).
  virtual void start() {}
  virtual void halt() {}
  // Where a binder that samples its GPUs reports each sample (set before start(); called from
  // the binder's own threads; the Core posts each to the engine thread). Others never call it.
  virtual void set_gpu_report(GpuReport report) { (void)report; }
  // Whether a cancelled job keeps its GPUs until the binder says it stopped
  // (EngineConfig::stops_confirmed); the none binder stops jobs at once.
  virtual bool confirms_stops() const { return false; }
  // Where a pod's output is kept (any thread); nullopt: this binder keeps none.
  virtual std::optional<std::filesystem::path> log_path(const JobId& job, int pod) const {
    (void)job;
    (void)pod;
    return std::nullopt;
  }
  // A binder whose pods' output is not in a file (the Kubernetes binder: pods/log through the API
  // server) streams it: `log` says whether, and stream_log sends pod `pod`'s output from `offset`
  // to `sink` (false: the caller is gone), on the caller's thread, until it ends, or with `follow`
  // until the pod has ended (waiting for it to start); `stop` ends it from another thread. An
  // error is said for the job's owner.
  class LogStop {
   public:
    virtual ~LogStop() = default;
    virtual void stop() = 0;
  };
  // The names of a running job's pods, in placement order, where the binder names them (the
  // Kubernetes binder: namespace/name); empty otherwise. Engine thread.
  virtual std::vector<std::string> pod_names(const JobId& job) const {
    (void)job;
    return {};
  }
  virtual bool streams_logs() const { return false; }
  virtual std::unique_ptr<LogStop> log_stop() const { return nullptr; }
  virtual Result<void> stream_log(const storage::JobRecord& job, int pod, std::int64_t offset, bool follow,
                                  const std::function<bool(std::string_view)>& sink, LogStop* stop) const {
    (void)job, (void)pod, (void)offset, (void)follow, (void)sink, (void)stop;
    return Error{"this binder keeps no logs", ErrorCode::kFailedPrecondition};
  }
  // Whether a job may run on a terminal here (RunSpec::tty, gpuq run), and what is typed into a
  // running pod's terminal (any thread; at most 64 KiB at once): written as it is, or an error
  // for the caller (kFailedPrecondition: nothing reads it, the pod is not running;
  // kResourceExhausted: it is not reading now, try again; kUnavailable: part of it went).
  virtual bool has_terminals() const { return false; }
  virtual Result<void> write_input(const JobId& job, int pod, std::string_view data) const {
    (void)pod, (void)data;
    return Error{"job \"" + job.value + "\": this binder runs no terminals", ErrorCode::kFailedPrecondition};
  }
  // What a job must give to run here; an error names the field (checked at submit).
  // `owner` is the job's owner (the local executor runs the job as that account).
  virtual Result<void> check_run(const RunSpec& run, const std::string& owner) const {
    (void)run;
    (void)owner;
    return Ok();
  }

  // A submission's checks and defaults that need its queue (after check_run; the Kubernetes
  // binder: the queue's namespace and pod template, the image), on the engine thread. An error
  // names the field; nothing is kept of a refused submission.
  virtual Result<void> prepare(Submission& sub, const QueueSpec& queue) const {
    (void)sub;
    (void)queue;
    return Ok();
  }
  // A queue was made or changed, or read at start (engine thread): its spec as it is now.
  virtual void queue_applied(const QueueSpec& queue) { (void)queue; }
  // A source that also runs jobs submitted through gpuqd's API: whether this job of the state
  // file is one of those (restored from the file and adopted) rather than one the source
  // reports again (its pods).
  virtual bool adopts(const storage::JobRecord& job) const {
    (void)job;
    return false;
  }

  // A source (see SourceFact): the Core gives it where to report and its resource names
  // (any thread may intern) before start(). Until SourceSynced the Core places nothing.
  virtual bool is_source() const { return false; }
  virtual void set_source(SourceReport report, ResourceNames& names) {
    (void)report;
    (void)names;
  }
  // The Core could not queue a job the source reported (engine thread): `why` is for its owner.
  virtual void refused(const JobId& job, const std::string& why) {
    (void)job;
    (void)why;
  }
  // Before stop() for a preemption victim (engine thread): who preempts it and why, for the
  // victim's owner.
  virtual void preempting(const Preemption& p) { (void)p; }
  // A checkpoint of the fair-share history was taken (engine thread), for a source to keep where
  // the replica that takes over from this one finds it.
  virtual void share_history(const std::vector<storage::HistoryRecord>& records) { (void)records; }
  // A queue was made or changed (engine thread): a source offers again what it could not queue.
  virtual void queues_changed() {}
  // The engine could not take back a victim this binder reported StopRefused for (the room it
  // held went to other jobs meanwhile): it must stop after all (engine thread; acted on once the
  // turn is on disk, as stop() is).
  virtual void must_stop(const JobId& job) { (void)job; }
  // Every status_interval() seconds (0: never) the Core tells a source why each pending job
  // waits (engine thread), for it to show its owner.
  virtual Time status_interval() const { return 0; }
  virtual void waiting(std::vector<std::pair<JobId, std::string>> reasons) { (void)reasons; }
  // Whether queues are objects of the source (QueueSeen, QueueGone): then they are not made or
  // deleted through the API. Known once start() has returned.
  virtual bool queue_objects() const { return false; }
  // A QueueSeen applied ("") or refused by the Core (engine thread), for the object's status.
  virtual void queue_result(const std::string& name, const std::string& refusal) {
    (void)name;
    (void)refusal;
  }
  // Every status_interval(), with waiting(): each queue's use, for the objects' status.
  virtual void queue_report(std::vector<QueueReport> queues) { (void)queues; }

 protected:
  // Shared with the binder's inner state, which its threads reach after the binder is gone.
  std::shared_ptr<ErrorCounter> errors_ = std::make_shared<ErrorCounter>();
  std::shared_ptr<UsageCounter> usage_ = std::make_shared<UsageCounter>();
};

// No processes: an admitted job is running at once and a stopped job has stopped at once. The
// default until the local executor, and what the tests of the daemon's API use.
class NoneBinder final : public Binder {
 public:
  explicit NoneBinder(Report report) : report_(std::move(report)) {}
  void bind(const Admission& admission, const storage::JobRecord&) override { report_(JobStarted{admission.job}); }
  void stop(const JobId& job, Time) override { report_(JobStopped{job}); }

 private:
  Report report_;
};

}  // namespace gpuq::binder
