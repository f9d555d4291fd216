#pragma once
// gpuqd (a real child process, binder: kubernetes) against a cluster (cluster_api.hpp: the real
// control plane of tests/kubecluster, or the fake API server of tests/kubefake, whichever the
// test binary links), and the invariants every scenario checks over the cluster's whole state
// and its request log (the real API server's audit log): no pod bound twice, no node
// overcommitted (nvidia.com/gpu, cpu, memory, pods), no pod of another scheduler written to,
// no partial pod group, and victims only evicted (never deleted).
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <boost/json.hpp>

#include "tests/kubernetes/cluster_api.hpp"
#include "tests/support/files.hpp"
#include "tests/support/gpuqd_child.hpp"

namespace gpuq::test {

namespace json = boost::json;

struct PodOptions {
  std::string ns = "default";
  std::string queue;  // the gpuq.io/queue label; empty: none
  int gpus = 1;
  std::string scheduler = "gpuq";
  std::string node;  // spec.nodeName: bound already (by someone else)
  json::object labels;
  json::object annotations;
  json::object spec;  // more of spec: nodeSelector, affinity, tolerations
  PodOptions& with(const std::string& k, json::value v) { return spec[k] = std::move(v), *this; }
  PodOptions& in_ns(std::string n) { return ns = std::move(n), *this; }
  PodOptions& by(std::string s) { return scheduler = std::move(s), *this; }
  PodOptions& on(std::string n) { return node = std::move(n), *this; }
  PodOptions& label(const std::string& k, const std::string& v) { return labels[k] = v, *this; }
  PodOptions& annotate(const std::string& k, const std::string& v) { return annotations[k] = v, *this; }
};

// A pod of `queue` (empty: no queue label) asking for `gpus` whole GPUs.
inline PodOptions pod_of(const std::string& queue, int gpus) {
  PodOptions o;
  o.queue = queue;
  o.gpus = gpus;
  return o;
}

inline json::object make_pod(const std::string& name, const PodOptions& o) {
  json::object labels = o.labels;
  if (!o.queue.empty()) labels["gpuq.io/queue"] = o.queue;
  const std::string gpus = std::to_string(o.gpus);
  json::object spec{{"schedulerName", o.scheduler},
                    {"restartPolicy", "Never"},
                    {"terminationGracePeriodSeconds", 1},
                    {"containers", json::array{json::object{
                                       {"name", "main"},
                                       {"image", "busybox"},
                                       {"resources", json::object{{"requests", json::object{{"cpu", "1"}, {"nvidia.com/gpu", gpus}}},
                                                                  {"limits", json::object{{"nvidia.com/gpu", gpus}}}}}}}}};
  if (!o.node.empty()) spec["nodeName"] = o.node;
  for (const auto& kv : o.spec) spec[kv.key()] = kv.value();
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", json::object{{"name", name}, {"namespace", o.ns}, {"labels", labels}, {"annotations", o.annotations}}},
                      {"spec", spec}};
}

inline std::string str_at(const json::object& o, std::initializer_list<const char*> path) {
  const json::value* v = nullptr;
  const json::object* cur = &o;
  for (const char* k : path) {
    if (cur == nullptr || (v = cur->if_contains(k)) == nullptr) return {};
    cur = v->if_object();
  }
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

// Waits up to `limit` for `pred` (no test asserts a duration: the limit only ends a hung wait).
// A shell command's exit status and output (stdout and stderr together).
inline std::pair<int, std::string> run_command(const std::string& command) {
  std::string out;
  FILE* f = ::popen((command + " 2>&1").c_str(), "r");
  if (f == nullptr) return {-1, out};
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  const int status = ::pclose(f);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline bool eventually(const std::function<bool()>& pred, std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// Keeps the ends of the *.out and *.err files in `dir` (a gpuqd's logs) until the current test
// case ends, and prints them to stderr if it failed (a doctest listener in harness.cpp).
// `also`: more files of `dir` to keep (the real control plane's controller manager log).
void keep_logs_for_failure(const std::filesystem::path& dir, const std::vector<std::string>& also = {});

class KubeCluster {
 public:
  explicit KubeCluster(int nodes = 2, int gpus = 8) : api_(make_cluster_api(dir.path)), api(*api_) {
    for (int i = 0; i < nodes; ++i) api.add_node("node-" + std::to_string(i), gpus);
    for (int i = 0; i < nodes; ++i) api.wait_schedulable("node-" + std::to_string(i));
    api.write_kubeconfig((dir.path / "kubeconfig").string());
  }
  // A node more, once a scheduler may use it.
  void add_node(const std::string& name, int gpus, json::object labels) {
    api.add_node(name, gpus, "128", "1Ti", std::move(labels));
    api.wait_schedulable(name);
  }
  // gpuqd's logs (every replica's) are kept until the test case ends and printed if it failed:
  // the temporary directory that holds them goes with the cluster.
  ~KubeCluster() {
    // What gpuqd made of it all, for a failed test's report.
    if (gpuqd.pid > 0) std::ofstream(dir.path / "gpuq-at-the-end.out") << gpuq("nodes") << gpuq("ls -a -o wide");
    gpuqd.stop(SIGTERM);
    keep_logs_for_failure(dir.path);
    if (!api.log_dir().empty()) keep_logs_for_failure(api.log_dir(), {"kube-controller-manager.log"});
  }

  // Starts gpuqd with `queues` (YAML, the config's queues: list) and `extra` keys of its
  // kubernetes: section (indented by two spaces).
  void start(const std::string& queues, const std::string& extra = "", const std::string& state = "state.db") {
    gpuqd = launch(queues, extra, state);
  }
  // gpuqd expected to refuse to start: its exit status and what it said on stderr.
  std::pair<int, std::string> start_refused(const std::string& queues, const std::string& extra = "") {
    GpuqdChild c = launch(queues, extra, "refused.db", /*must_start=*/false);
    c.stop(SIGTERM);  // it listens after all: the test fails on the status below
    return {c.exit_status, slurp(dir.path / "refused.err")};
  }
  // Another gpuqd on the same API server (its own state file), for leader election.
  using Replica = GpuqdChild;
  Replica start_replica(const std::string& queues, const std::string& extra, const std::string& state) {
    return launch(queues, extra, state);
  }
  void kill_gpuqd() { gpuqd.stop(SIGKILL); }

  void create(const std::string& name, const PodOptions& o) {
    user_pods_.insert("/api/v1/namespaces/" + o.ns + "/pods/" + name);
    api.create("pods", o.ns, make_pod(name, o));
  }
  std::string node_of(const std::string& name, const std::string& ns = "default") {
    auto p = api.get("pods", ns, name);
    return p ? str_at(*p, {"spec", "nodeName"}) : std::string();
  }
  bool bound(const std::string& name, const std::string& ns = "default") { return !node_of(name, ns).empty(); }
  bool exists(const std::string& name, const std::string& ns = "default") { return api.get("pods", ns, name).has_value(); }
  // The pod's PodScheduled=False message, "" when it has none.
  std::string unschedulable(const std::string& name, const std::string& ns = "default") {
    auto p = api.get("pods", ns, name);
    if (!p) return {};
    const json::value* conds = p->at("status").as_object().if_contains("conditions");
    if (conds == nullptr || !conds->is_array()) return {};
    for (const json::value& c : conds->as_array())
      if (str_at(c.as_object(), {"type"}) == "PodScheduled" && str_at(c.as_object(), {"status"}) == "False")
        return str_at(c.as_object(), {"message"});
    return {};
  }
  std::size_t bound_count() {
    std::size_t n = 0;
    for (const auto& p : api.list("pods"))
      if (!str_at(p, {"spec", "nodeName"}).empty()) ++n;
    return n;
  }

  // The gpuq command line against this gpuqd: its exit status and output (stdout and stderr).
  std::pair<int, std::string> gpuq_status(const std::string& args) {
    return run_command(std::string(GPUQ_CLI_PATH) + " --server " + gpuqd.address + " " + args);
  }
  // Its output only.
  std::string gpuq(const std::string& args) { return gpuq_status(args).second; }
  // Whether gpuqd shows node `name` in `state` (gpuq nodes).
  bool node_state(const std::string& name, const std::string& state) {
    std::istringstream lines(gpuq("nodes"));
    for (std::string line; std::getline(lines, line);)
      if (line.rfind(name + " ", 0) == 0 && line.find(" " + state + " ") != std::string::npos) return true;
    return false;
  }

  void check_invariants();
  // Creates a namespace unless it exists (the real cluster has gpuq-system from deploy/).
  void ensure_namespace(const std::string& name, json::object annotations = {});
  // deploy/kubernetes/crd-queue.yaml applied as it is (the real cluster); returns once Queues
  // are served. gpuqd started from then on takes its queues from them (queueObjects: true;
  // before, false, whatever the API serves: the fake serves Queues always).
  void install_queue_crd();
  // scheduler-plugins' and Volcano's PodGroup CRDs and JobSet's (the real cluster), before
  // gpuqd starts.
  void install_podgroup_crds();
  // A file of CustomResourceDefinitions, created as it is; returns once GET `served` answers.
  void install_crd(const std::string& file, const std::string& served);
  // The fake, for a scenario that injects its faults.
  kubefake::Server& fake() {
    REQUIRE_MESSAGE(api.fake() != nullptr, "this scenario needs the fake API server's faults");
    return *api.fake();
  }

  TempDir dir;
 private:
  std::unique_ptr<ClusterApi> api_;
  std::set<std::string> user_pods_;  // the paths of the pods the test made (create)
  // Fractional GPUs' reservation pods: on the real cluster their container is
  // deploy/kubernetes/gpuq-reserve, run by the simulated kubelet with the pod's service account
  // token, and it annotates its pod with the GPU (gpuq.io/gpu-device) under deploy/'s RBAC; the
  // fake's kubelet annotates every GPU pod itself.
  std::string reservation_config() const {
    if (api.kind() == "real") return "  reservationCommand: " + std::string(GPUQ_DEPLOY_DIR) + "/gpuq-reserve\n";
    return "  reservationDeviceAnnotation: sim.gpuq.io/devices\n";
  }

  bool queue_objects_ = false;
  GpuqdChild launch(const std::string& queues, const std::string& extra, const std::string& state, bool must_start = true) {
    const std::string name = std::filesystem::path(state).stem().string();
    const auto config = dir.path / (name + ".yaml");
    std::ofstream(config) << "grpc: 127.0.0.1:0\nhttp: 127.0.0.1:0\nbinder: kubernetes\n"
                          << "kubernetes:\n  kubeconfig: " << (dir.path / "kubeconfig").string()
                          << "\n  evictRetry: 1s\n  statusInterval: 1s\n  podStatusMinInterval: 0s\n"
                          << "  queueObjects: " << (queue_objects_ ? "true" : "false") << "\n"
                          << reservation_config()
                          << extra << "queues:\n"
                          << queues;
    GpuqdChild c = start_gpuqd(GPUQD_PATH, {"--config", config.string(), "--state-file", (dir.path / state).string()},
                               dir.path / (name + ".out"), dir.path / (name + ".err"));
    if (must_start) REQUIRE_MESSAGE(!c.address.empty(), slurp(dir.path / (name + ".err")));
    return c;
  }

 public:
  ClusterApi& api;
  GpuqdChild gpuqd;
};

}  // namespace gpuq::test
