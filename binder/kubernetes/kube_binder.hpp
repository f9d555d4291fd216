#pragma once
// The kubernetes binder (config `binder: kubernetes`): gpuqd as a secondary scheduler. It is
// also the source of jobs and nodes (binder.hpp, SourceFact): it lists and watches nodes,
// namespaces and pods; pods with spec.schedulerName = gpuq (in the configured namespaces) and
// no node become jobs (one pod, or a whole pod group), every other pod bound to a node takes
// that node's capacity from gpuq. Admissions are bound with pods/binding, preemption victims
// evicted with policy/v1 Eviction; pod phases become JobStarted / JobFinished / JobStopped.
// README.md in this folder has the whole story.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "binder/binder.hpp"
#include "binder/kubernetes/access.hpp"
#include "binder/kubernetes/client.hpp"
#include "binder/kubernetes/leader.hpp"

namespace gpuq::binder::k8s {

struct KubernetesConfig {
  AccessOptions access;
  std::string scheduler_name = "gpuq";
  std::vector<std::string> namespaces;  // whose pods gpuq places; empty: all
  // No client-side rate limit by default: the API server's priority and fairness is the
  // throttle (a 429 is waited out as its Retry-After says), as kubectl and controller-runtime do
  // against servers that have it. bindConcurrency bounds the writes in flight.
  double qps = 0;
  int burst = 0;
  std::string flavor_label = "gpuq.io/flavor";
  std::vector<std::string> topology_labels;  // documented for topologyLevels; nodes keep all labels
  int bind_concurrency = 32;                 // writes in flight at once
  std::chrono::seconds group_timeout{600};   // a pod group still incomplete after this gets an Event
  std::chrono::milliseconds evict_retry{5000};  // after a PodDisruptionBudget said no (429)
  std::chrono::seconds watch_timeout{300};
  std::int64_t status_interval = 5;          // seconds between the Core's reasons for waiting pods
  std::chrono::seconds pod_status_min{30};   // a pod's PodScheduled message changes at most this often
  std::chrono::seconds finished_pod_ttl{0};  // a submitted job's pods deleted this long after it ended; 0: kept
  // Only the leader reports jobs and nodes to its Core and writes; a standby keeps its watches
  // warm. A leader that loses the Lease stops writing at once and ends gpuqd (SIGTERM).
  LeaderConfig leader;
  // Fractional GPUs (kube_share.cpp): where reservation pods go, what they run, and the
  // annotation their container writes with the GPU it was given.
  std::string reservation_namespace = "gpuq-system";
  std::string reservation_image = "gpuq:latest";  // the image of deploy/kubernetes, which has:
  std::string reservation_command = "/usr/lib/gpuq/gpuq-reserve";  // annotates its pod with its GPU
  std::string reservation_service_account = "gpuq-reservation";    // may patch its own pod
  std::string reservation_device_annotation = "gpuq.io/gpu-device";
  // Queues as Kubernetes objects (queues.gpuq.io, deploy/kubernetes/crd-queue.yaml): kAuto uses
  // them when the API server serves them, kOn requires them, kOff takes queues from the config
  // and Queues.Apply as before.
  enum class QueueObjects { kAuto, kOn, kOff };
  QueueObjects queue_objects = QueueObjects::kAuto;
  // PodGroup objects watched (set at start when the API server serves their CRDs).
  bool coscheduling_podgroups = false;  // scheduling.x-k8s.io/v1alpha1 (scheduler-plugins)
  bool volcano_podgroups = false;       // scheduling.volcano.sh/v1beta1
  bool jobsets = false;                 // jobset.x-k8s.io/v1alpha2     // each watch asks the server to end it after this
};

class KubernetesBinder final : public Binder {
 public:
  KubernetesBinder(KubernetesConfig config, std::shared_ptr<Client> client, Report report);
  ~KubernetesBinder() override;

  void bind(const Admission& admission, const storage::JobRecord& job) override;
  void stop(const JobId& job, Time grace) override;
  void turn_closed() override;
  void turn_written(bool ok) override;
  void start() override;
  void halt() override;
  bool confirms_stops() const override { return true; }
  Result<void> prepare(Submission& sub, const QueueSpec& queue) const override;
  void queue_applied(const QueueSpec& queue) override;
  std::optional<BinderFact> adopt(const storage::JobRecord& job) override;
  bool adopts(const storage::JobRecord& job) const override { return !job.run.image.empty(); }
  void stop_strays() override;
  std::vector<std::string> pod_names(const JobId& job) const override;
  bool streams_logs() const override { return true; }
  bool has_terminals() const override { return true; }
  bool queue_objects() const override;
  void queue_result(const std::string& name, const std::string& refusal) override;
  void queue_report(std::vector<QueueReport> queues) override;
  Result<void> write_input(const JobId& job, int pod, std::string_view data) const override;
  std::unique_ptr<LogStop> log_stop() const override;
  Result<void> stream_log(const storage::JobRecord& job, int pod, std::int64_t offset, bool follow,
                          const std::function<bool(std::string_view)>& sink, LogStop* stop) const override;
  bool is_source() const override { return true; }
  void set_source(SourceReport report, ResourceNames& names) override;
  void refused(const JobId& job, const std::string& why) override;
  Time status_interval() const override;
  void preempting(const Preemption& p) override;
  void must_stop(const JobId& job) override;
  void queues_changed() override;
  void share_history(const std::vector<storage::HistoryRecord>& records) override;
  void waiting(std::vector<std::pair<JobId, std::string>> reasons) override;

  // Requests made so far (for benchmarks): binds, evictions, status patches, events.
  struct Counts {
    std::uint64_t binds = 0, bind_failures = 0, evictions = 0, evictions_blocked = 0, patches = 0, events = 0;
  };
  Counts counts() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The API calls gpuqd makes with this configuration, which it must be allowed (checked at start
// with check_access: lists by trying them, the rest with SelfSubjectAccessReviews).
std::vector<AccessCheck> required_access(const KubernetesConfig& config);

}  // namespace gpuq::binder::k8s
