// gpuqd's `kubernetes:` section (binder: kubernetes) and the binder's start: where the API is,
// a client to it, and the calls gpuqd must be allowed, checked before anything is served.
#include <charconv>

#include <spdlog/spdlog.h>

#include "binder/kubernetes/kube_binder.hpp"
#include "daemon/config.hpp"
#include "daemon/config_read.hpp"
#include "spec/duration.hpp"
#include "spec/validate.hpp"
#include "spec/yaml_read.hpp"

namespace gpuq::daemon {

namespace {

using spec::Path;
using spec::yaml::Node;

binder::k8s::LeaderConfig read_leader(Node node, Path& at) {
  binder::k8s::LeaderConfig l;
  spec::for_each_key(node, at,
                     {"enabled", "namespace", "name", "identity", "leaseDuration", "renewDeadline", "retryPeriod"},
                     [&](std::string_view key, Node v) {
                       auto ms = [&] { return std::chrono::milliseconds(millis_of(v, at, 100, 3'600'000)); };
                       if (key == "enabled") l.enabled = spec::bool_of(v, at);
                       else if (key == "namespace") l.ns = spec::string_of(v, at);
                       else if (key == "name") l.name = spec::string_of(v, at);
                       else if (key == "identity") l.identity = spec::string_of(v, at);
                       else if (key == "leaseDuration") l.lease_duration = ms();
                       else if (key == "renewDeadline") l.renew_deadline = ms();
                       else l.retry_period = ms();
                     });
  // client-go's rules: leaseDuration > renewDeadline > retryPeriod (x 1.2).
  if (!(l.lease_duration > l.renew_deadline && l.renew_deadline * 10 > l.retry_period * 12))
    spec::fail_at(node, at, "needs leaseDuration > renewDeadline > 1.2 x retryPeriod");
  return l;
}

std::vector<std::string> names_of(Node v, Path& at, std::size_t max, bool labels) {
  spec::expect_list(v, at);
  if (v.size() > max) spec::fail_at(v, at, "lists " + std::to_string(v.size()) + "; at most " + std::to_string(max) + " are allowed");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    Path::Index ix(at, i);
    out.push_back(spec::string_of(v.item(i), at));
    spec::located(v.item(i), at, [&] {
      if (labels) spec::check_label_key(out.back(), at);
      else spec::check_name(out.back(), at);
    });
  }
  return out;
}

}  // namespace

// A duration (spec/duration.hpp, and "500ms"), in milliseconds.
std::int64_t millis_of(Node v, const Path& at, std::int64_t min, std::int64_t max) {
  const std::string_view text = spec::text_of(v, at, "a duration such as 15s, 10m or 1h");
  const auto ms = spec::duration_ms(text, true);
  if (!ms)
    spec::fail_at(v, at, spec::quoted(text) + " is not a duration; use " + spec::kDurationForms + " (or 500ms)");
  if (*ms < min || *ms > max)
    spec::fail_at(v, at, spec::quoted(text) + " is not allowed; use " +
                             (min % 1000 == 0 ? std::to_string(min / 1000) + "s" : std::to_string(min) + "ms") +
                             " to " + std::to_string(max / 1000) + "s");
  return *ms;
}

std::int64_t seconds_of(Node v, const Path& at, std::int64_t min, std::int64_t max) {
  return millis_of(v, at, min * 1000, max * 1000) / 1000;
}

binder::k8s::KubernetesConfig read_kubernetes(Node node, Path& at) {
  binder::k8s::KubernetesConfig k;
  spec::for_each_key(
      node, at,
      {"kubeconfig", "context", "schedulerName", "namespaces", "qps", "burst", "flavorLabel", "topologyLabels",
       "bindConcurrency", "podGroupTimeout", "evictRetry", "watchTimeout", "statusInterval", "podStatusMinInterval", "finishedPodTTL", "queueObjects", "leaderElection", "reservationNamespace",
       "reservationImage", "reservationCommand", "reservationServiceAccount", "reservationDeviceAnnotation"},
      [&](std::string_view key, Node v) {
        if (key == "kubeconfig") {
          k.access.kubeconfig = spec::string_of(v, at);
        } else if (key == "context") {
          k.access.context = spec::string_of(v, at);
        } else if (key == "schedulerName") {
          k.scheduler_name = spec::string_of(v, at);
          spec::located(v, at, [&] { spec::check_name(k.scheduler_name, at); });
        } else if (key == "namespaces") {
          k.namespaces = names_of(v, at, 1000, false);
        } else if (key == "qps" || key == "burst") {
          const double n = spec::number_of(v, at);
          if (!(n >= 0 && n <= 100000))
            spec::fail_at(v, at, spec::quoted(spec::text_of(v, at)) + " is not allowed; use 0 (no client-side limit) to 100000");
          if (key == "qps") k.qps = n;
          else k.burst = static_cast<int>(n);
        } else if (key == "flavorLabel") {
          k.flavor_label = spec::string_of(v, at);
          spec::located(v, at, [&] { spec::check_label_key(k.flavor_label, at); });
        } else if (key == "topologyLabels") {
          k.topology_labels = names_of(v, at, 8, true);
        } else if (key == "bindConcurrency") {
          const auto n = spec::int_of(v, at);
          if (n < 1 || n > 256) spec::fail_at(v, at, std::to_string(n) + " is not allowed; use 1 to 256");
          k.bind_concurrency = static_cast<int>(n);
        } else if (key == "podGroupTimeout") {
          k.group_timeout = std::chrono::seconds(seconds_of(v, at, 1, 7 * 86400));
        } else if (key == "evictRetry") {
          k.evict_retry = std::chrono::milliseconds(1000 * seconds_of(v, at, 1, 3600));
        } else if (key == "reservationNamespace") {
          k.reservation_namespace = spec::string_of(v, at);
          spec::located(v, at, [&] { spec::check_name(k.reservation_namespace, at); });
        } else if (key == "reservationImage") {
          k.reservation_image = spec::string_of(v, at);
        } else if (key == "reservationCommand") {
          k.reservation_command = spec::string_of(v, at);
        } else if (key == "reservationServiceAccount") {
          k.reservation_service_account = spec::string_of(v, at);
          spec::located(v, at, [&] { spec::check_name(k.reservation_service_account, at); });
        } else if (key == "reservationDeviceAnnotation") {
          k.reservation_device_annotation = spec::string_of(v, at);
          spec::located(v, at, [&] { spec::check_label_key(k.reservation_device_annotation, at); });
        } else if (key == "leaderElection") {
          k.leader = read_leader(v, at);
        } else if (key == "statusInterval") {
          k.status_interval = seconds_of(v, at, 1, 3600);
        } else if (key == "podStatusMinInterval") {
          k.pod_status_min = std::chrono::seconds(seconds_of(v, at, 0, 3600));
        } else if (key == "queueObjects") {
          using QueueObjects = binder::k8s::KubernetesConfig::QueueObjects;
          const std::string v_text(spec::text_of(v, at));
          if (v_text == "auto") k.queue_objects = QueueObjects::kAuto;
          else k.queue_objects = spec::bool_of(v, at) ? QueueObjects::kOn : QueueObjects::kOff;
        } else if (key == "finishedPodTTL") {
          k.finished_pod_ttl = std::chrono::seconds(seconds_of(v, at, 0, 30 * 24 * 3600));
        } else {
          k.watch_timeout = std::chrono::seconds(seconds_of(v, at, 1, 3600));
        }
      });
  return k;
}

Result<void> prepare_kubernetes(Config& config) {
  auto access = binder::k8s::load_access(config.kubernetes.access);
  if (!access) return Error{"kubernetes: " + access.error(), access.code()};
  binder::k8s::ClientOptions opt;
  opt.qps = config.kubernetes.qps;
  opt.burst = config.kubernetes.burst;
  if (config.kubernetes.leader.identity.empty()) config.kubernetes.leader.identity = binder::k8s::default_identity();
  opt.user_agent = "gpuqd/" + config.kubernetes.leader.identity;  // who wrote what, in the server's log
  auto client = std::make_shared<binder::k8s::Client>(access.value(), opt);
  // Queue objects: served when the CRD is installed (deploy/kubernetes/crd-queue.yaml).
  using QueueObjects = binder::k8s::KubernetesConfig::QueueObjects;
  if (config.kubernetes.queue_objects != QueueObjects::kOff) {
    const binder::k8s::Response r = client->get("/apis/gpuq.io/v1alpha1");
    if (r.ok()) {
      config.kubernetes.queue_objects = QueueObjects::kOn;
    } else if (r.status == 404 && config.kubernetes.queue_objects == QueueObjects::kAuto) {
      config.kubernetes.queue_objects = QueueObjects::kOff;
      spdlog::info("event=queue_objects served=false message=\"the API server does not serve queues.gpuq.io: queues "
                   "come from this config and gpuq apply (kubectl apply -f deploy/kubernetes/crd-queue.yaml makes them "
                   "Kubernetes objects)\"");
    } else {
      return Error{"kubernetes.queueObjects: the API server does not serve queues.gpuq.io/v1alpha1 (" +
                       binder::k8s::describe(r) +
                       "): kubectl apply -f deploy/kubernetes/crd-queue.yaml, or set queueObjects: false",
                   ErrorCode::kFailedPrecondition};
    }
  }
  // PodGroup objects of other schedulers' gang declarations, where their CRDs are installed.
  config.kubernetes.coscheduling_podgroups = client->get("/apis/scheduling.x-k8s.io/v1alpha1").ok();
  config.kubernetes.volcano_podgroups = client->get("/apis/scheduling.volcano.sh/v1beta1").ok();
  config.kubernetes.jobsets = client->get("/apis/jobset.x-k8s.io/v1alpha2").ok();
  std::vector<std::string> warnings;
  if (auto r = binder::k8s::check_access(*client, binder::k8s::required_access(config.kubernetes), &warnings); !r)
    return Error{"kubernetes: " + r.error(), r.code()};
  for (const std::string& w : warnings) spdlog::warn("event=kubernetes_access_missing reason=\"{}\"", w);
  spdlog::info("event=kubernetes_binder server={} source=\"{}\" scheduler_name={} queue_objects={}", access.value().server,
               access.value().source, config.kubernetes.scheduler_name,
               config.kubernetes.queue_objects == QueueObjects::kOn);
  config.core.make_binder = [k = config.kubernetes, client](binder::Report report) -> std::unique_ptr<binder::Binder> {
    return std::make_unique<binder::k8s::KubernetesBinder>(k, client, std::move(report));
  };
  return Ok();
}

}  // namespace gpuq::daemon
