#pragma once
// gpuqd's configuration: one YAML file (`gpuqd --config FILE`), every key optional.
//
//   grpc: 127.0.0.1:7433          # gRPC listen address
//   http: 127.0.0.1:7434          # /metrics, /healthz, /readyz, the web dashboard at /
//   stateFile: gpuqd.db           # SQLite state; relative to the working directory
//   binder: none                  # none (admitted jobs are marked running) | local (processes
//                                 # here) | kubernetes (pods: binder/kubernetes/README.md)
//   local:                        # the local executor (binder: local); every key optional
//     node: gpu-box               # the node's name (default: the host name)
//     flavor: default             # the node's flavor, as the queues' quotas name it
//     labels: {zone: a}
//     nvidiaSmi: nvidia-smi       # GPUs from it when it runs; "" to skip
//     gpus: 8                     # else this many virtual GPUs
//     model: virtual              # their model name
//     reserve: {cpu: 1, memory: 2Gi}  # kept for the machine itself
//     logDir: var/logs            # <logDir>/<job>/pod-<i>.log
//     runDir: var/run             # pid and status files of the running pods
//     shim: /usr/lib/gpuq/gpuq-shim   # default: next to gpuqd
//   kubernetes:                   # binder: kubernetes; every key optional
//     kubeconfig: ~/.kube/config  # default: $KUBECONFIG, ~/.kube/config, then in-cluster
//     context: ""                 # default: the kubeconfig's current context
//     schedulerName: gpuq         # pods with this spec.schedulerName are gpuq's
//     namespaces: []              # whose pods gpuq places; empty: all
//     qps: 0                      # client-side rate limit, with a burst; 0: none (the API
//     burst: 0                    #   server's priority and fairness throttles; 429s are waited out)
//     flavorLabel: gpuq.io/flavor # else nvidia.com/gpu.product, else "default"
//     topologyLabels: []          # node labels; use them in topology.levels
//     bindConcurrency: 32         # API writes in flight at once
//     podGroupTimeout: 10m        # an incomplete pod group gets an Event after this
//     evictRetry: 5s              # asks again after a PodDisruptionBudget said no
//     watchTimeout: 5m            # each watch asks the server to end it after this
//     statusInterval: 5s          # how often waiting pods' reasons are computed
//     podStatusMinInterval: 30s   # a pod's PodScheduled message changes at most this often
//     finishedPodTTL: 0           # a submitted job's pods are deleted this long after it ended; 0: kept
//     reservationNamespace: gpuq-system     # fractional GPUs: where reservation pods go,
//     reservationImage: gpuq:latest         # what they run (deploy/kubernetes: gpuq-reserve
//     reservationCommand: /usr/lib/gpuq/gpuq-reserve   # annotates its own pod with its GPU,
//     reservationServiceAccount: gpuq-reservation      # which this account may patch)
//     reservationDeviceAnnotation: gpuq.io/gpu-device  # the annotation it writes
//     leaderElection: {enabled: false, namespace: gpuq-system, name: gpuq, identity: HOST_PID,
//                      leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s}
//   placement: pack               # pack | spread | frag-aware (FGD: docs/tasks/simulator.md)
//   nodeReservation: true         # a queue owed its quota keeps nodes for a job that finds no room
//   topology: {levels: [zone, rack]}  # node label keys, widest first
//   fairSharing: {enabled: false, preemptionStrategies: [...], usageHalfLife: 0}
//   usageCheckpointInterval: 60s  # with usageHalfLife: how often each queue's usage history is
//                                 # written to the state file (also at a clean stop); 1s to 24h;
//                                 # a restart approximates the use since the last checkpoint
//                                 # (docs/tasks/queues-and-fair-sharing.md, Usage history)
//   auditRetention: 90d           # audit records older than this are deleted (1h to 3650d)
//   notifications:                # docs/tasks/batch.md, Notifications; job and queue `notify` URLs must
//     allowedUrls: [http://hooks.example/]  # start with one of these (none: refused)
//     retries: 3                  # attempts after the first (0 to 10), retryDelay doubling
//     retryDelay: 5s              # 1s to 1h
//     timeout: 10s                # per attempt, 1s to 10m
//     queueLimit: 10000           # waiting notifications; beyond it the oldest are dropped
//   estimateInterval: 30s         # how often pending jobs' start times are estimated (a what-if
//                                 # run of the engine off its thread); 0: never; 1s to 24h
//   prices: {h100: 2.5, a100: 1.2}  # per flavor, the price of one GPU-hour (gpuq usage's cost);
//                                 # finite numbers >= 0; a flavor without one has no cost
//   currency: USD                 # what prices are in, shown with costs (1 to 16 bytes)
//   priorityClasses: {low: -100, normal: 0, high: 100, critical: 1000}
//   maxRequestBytes: 4194304      # larger requests are refused (RESOURCE_EXHAUSTED)
//   socket: var/gpuqd.sock        # default: the state file's path with .sock; "" for none
//   admins: {users: [alice], groups: [wheel]}   # besides root and gpuqd's own account
//   insecure: false               # true: TCP callers are trusted with everything (docs/tasks/tenants-and-security.md)
//   tls:                          # TLS on the gRPC TCP listener (docs/tasks/tenants-and-security.md)
//     cert: /etc/gpuq/server.pem  # PEM certificate (chain); required with tls
//     key: /etc/gpuq/server.key   # its PEM private key; required with tls
//     clientCA: /etc/gpuq/ca.pem  # verify client certificates against these CAs (CN = user);
//                                 # asked for, not required; leave out for server TLS only
//   queues: [...]                 # applied at start (scenario-format keys)
//   nodes: [...]
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "binder/kubernetes/kube_binder.hpp"
#include "binder/local/local_binder.hpp"
#include "daemon/core.hpp"
#include "daemon/tls.hpp"
#include "spec/yaml.hpp"

namespace gpuq::daemon {

struct Config {
  // gpuqd's Unix socket (docs/tasks/tenants-and-security.md): calls through it are their callers', checked
  // against the roles. Default: beside the state file, named after it (var/gpuqd.db:
  // var/gpuqd.sock); "" for none.
  std::optional<std::string> socket;
  std::vector<std::string> admin_users, admin_groups;  // besides root and gpuqd's own account
  // Trusts every TCP caller with everything (as gpuqd did before it knew its callers), and lets
  // gRPC listen on an address other than loopback without TLS. Off: TCP callers are anonymous.
  bool insecure = false;
  // TLS on the gRPC TCP listener; with it gRPC may listen beyond loopback without `insecure`.
  std::optional<TlsFiles> tls;
  std::string grpc_address = "127.0.0.1:7433";
  std::string http_address = "127.0.0.1:7434";
  std::string binder = "none";
  binder::LocalConfig local;
  binder::k8s::KubernetesConfig kubernetes;
  int max_request_bytes = 4 << 20;
  // How often the start-time estimates are computed (daemon/estimates.hpp); 0: never.
  Time estimate_interval = 30;
  CoreConfig core;
  // Applied at start; read (and checked) at load, read again into the Core's resource names by
  // specs_at_start(). The nodes point into `document`.
  std::shared_ptr<const spec::yaml::Document> document;
  std::string label;  // the file's name, for errors
  spec::yaml::Node queues;
  spec::yaml::Node nodes;
};

struct StartSpecs {
  std::vector<QueueSpec> queues;
  std::vector<NodeSpec> nodes;
};
StartSpecs specs_at_start(const Config& c, ResourceNames& names);
// What gpuqd's start refuses of the config's queues and nodes beyond reading them: a queue's
// allowedPriorityClasses that are not priorityClasses, and what the engine refuses when they are
// applied (as Core::open applies them). For gpuqd --check-config; opens nothing.
Result<void> check_start_specs(const Config& c);

// binder: local: finds the machine's GPUs, CPUs and memory, makes the log and run directories
// (absolute from here on), and sets config.core.make_binder. Returns the machine's node.
Result<NodeSpec> prepare_local(Config& config);

// binder: kubernetes (daemon/kube_config.cpp): reaches the API server, checks that gpuqd may
// do what it must (an error names the verb and resource), and sets config.core.make_binder.
Result<void> prepare_kubernetes(Config& config);
binder::k8s::KubernetesConfig read_kubernetes(spec::yaml::Node node, spec::Path& at);

// Throws spec::SpecError naming the file, the line and column, the field and what is allowed
// (std::runtime_error when the file cannot be read).
Config load_config(const std::string& path);
Config parse_config(const std::string& yaml_text, const std::string& label);

}  // namespace gpuq::daemon
