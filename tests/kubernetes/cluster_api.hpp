#pragma once
// What a binder scenario does to the cluster under gpuqd, the same calls for the two clusters
// it runs against: the real control plane of tests/kubecluster (kube-apiserver, etcd, the
// controllers, kube-scheduler, simulated GPU nodes; real_api.cpp) and the fake API server of
// tests/kubefake (fake_api.cpp), which stays for the faults the real one cannot make on demand.
// A test binary links one of the two; the scenarios are the same source.
#include <boost/json.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpuq::kubefake {
class Server;
}

namespace gpuq::test {

// One request to the API server as its log recorded it (the fake's request log; the real API
// server's audit log).
struct ApiRequest {
  std::string method;  // GET, POST, PUT, PATCH, DELETE
  std::string path;    // without the query
  std::string query;
  std::string user_agent;
  std::string user;
  int status = 0;
  std::string message;  // a refusal's message (the real API server's audit log); empty on the fake
};

struct ApiResponse {
  int status = 0;
  std::string body;
  boost::json::object json() const { return boost::json::parse(body).as_object(); }
};

// The API refused what a scenario asked (create): its status and message.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message) : std::runtime_error(message), status(status) {}
  int status;
};

class ClusterApi {
 public:
  virtual ~ClusterApi() = default;
  // "fake" or "real".
  virtual std::string kind() const = 0;

  // A kubeconfig at `path` for gpuqd: on the real cluster it authenticates as the service account
  // gpuq-system/gpuq, bound to exactly deploy/kubernetes's roles.
  virtual void write_kubeconfig(const std::string& path) = 0;

  // A Ready node with allocatable cpu, memory, pods 110 and nvidia.com/gpu `gpus`.
  virtual void add_node(const std::string& name, int gpus = 8, const std::string& cpu = "128",
                        const std::string& memory = "1Ti", boost::json::object labels = {}) = 0;
  // Returns once a scheduler may use the node (on the real cluster: once the node lifecycle
  // controller has taken off the not-ready taint a new node is registered with).
  virtual void wait_schedulable(const std::string& node) = 0;
  // Returns once pods may be created in the namespace (on the real cluster: once the service
  // account controller has made its default service account, which admission requires).
  virtual void wait_namespace(const std::string& name) = 0;
  // The node's kubelet reports Ready or NotReady (it keeps its heartbeats).
  virtual void set_node_ready(const std::string& name, bool ready) = 0;

  // With the cluster admin's rights. `resource` is the plural URL name ("pods", "nodes",
  // "namespaces", "events", "leases", "poddisruptionbudgets", ...); `ns` is ignored for
  // cluster-scoped ones. create throws ApiError when the API refuses.
  virtual boost::json::object create(const std::string& resource, const std::string& ns, boost::json::object object) = 0;
  virtual std::optional<boost::json::object> get(const std::string& resource, const std::string& ns,
                                                 const std::string& name) = 0;
  // `ns` empty: all namespaces.
  virtual std::vector<boost::json::object> list(const std::string& resource, const std::string& ns = "") = 0;
  // Any request (target: path and query).
  virtual ApiResponse request(const std::string& method, const std::string& target, const std::string& body = "",
                              const std::string& content_type = "application/json") = 0;

  // The pod's containers exit with `exit_code` (Succeeded for 0; restartPolicy honoured).
  virtual void finish_pod(const std::string& ns, const std::string& name, int exit_code = 0) = 0;
  // The GPUs the device plugin (simulated) gave the pod; empty when none.
  virtual std::vector<std::string> devices_of(const std::string& ns, const std::string& name) = 0;

  // Every request made so far, in order (a watch may be missing until it ends).
  virtual std::vector<ApiRequest> requests() = 0;

  // A request to kube-cluster's control endpoint (tests/kubecluster/control): its body; throws
  // when it fails, and on the fake.
  virtual std::string control(const std::string& method, const std::string& target, const std::string& body = "") = 0;

  // The fake, for its faults; nullptr on the real cluster.
  virtual kubefake::Server* fake() { return nullptr; }
  // The cluster admin's kubeconfig, for kubectl (the real cluster's; "" on the fake).
  virtual std::string admin_kubeconfig() const { return {}; }
  // Where the cluster keeps its files (the real one's logs), for a failed test's report.
  virtual std::filesystem::path log_dir() const { return {}; }
};

// The API path of a resource: "/api/v1/namespaces/NS/pods", "/apis/policy/v1/...".
std::string resource_path(const std::string& resource, const std::string& ns, const std::string& name = "");

// The cluster this test binary runs against (fake_api.cpp or real_api.cpp), its files in `dir`.
std::unique_ptr<ClusterApi> make_cluster_api(const std::filesystem::path& dir);

}  // namespace gpuq::test
