#pragma once
// A fake Kubernetes API server (v1.28-ish) for gpuqd's Kubernetes binder tests and benchmarks:
// the real URL paths, JSON shapes, status codes, Status bodies, resourceVersion and watch
// semantics for the resources a secondary scheduler uses (namespaces, nodes, pods with their
// binding/eviction/status subresources, events, configmaps, leases, poddisruptionbudgets),
// a simulated kubelet and NVIDIA device plugin, and controls for faults and a request log.
// README.md in this folder says what it leaves out.
//
// Every member is thread-safe. The server serves from the constructor until the destructor.
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpuq::kubefake {

struct Options {
  bool tls = true;  // false: plain HTTP (for speed tests; real clusters always use TLS)
  std::string token = "gpuq-test-token";
  // Authenticates, but every request with it is refused 403 as if RBAC granted nothing.
  std::string forbidden_token = "forbidden-token";
  // Who both tokens authenticate as (a client certificate authenticates as its CN).
  std::string user = "system:serviceaccount:gpuq-system:gpuq";
  std::size_t history = 10000;  // watch events kept; older ones are compacted
  std::chrono::milliseconds bookmark_interval{1000};
  std::chrono::milliseconds start_delay{0};  // from a bound pod's admission to Running
  bool kubelet = true;                       // simulate kubelets and the NVIDIA device plugin
  int threads = 2;                           // I/O threads
  std::string host = "127.0.0.1";
  unsigned short port = 0;  // 0: any free port
};

// One HTTP request as the server saw it.
struct Request {
  std::string method;
  std::string path;   // without the query
  std::string query;  // raw, without '?'
  std::string content_type;
  std::string user_agent;
  std::string user;  // authenticated user; empty when authentication failed
  int status = 0;    // for a watch: the status of its response head (200)
  std::chrono::steady_clock::time_point at;
};

struct ClientCert {
  std::string cert_pem;
  std::string key_pem;
};

// What the API would have answered: thrown by the C++ state calls (create) when the API would
// have refused the same object.
class StatusError : public std::runtime_error {
 public:
  StatusError(int code, std::string reason, const std::string& message)
      : std::runtime_error(message), code(code), reason(std::move(reason)) {}
  int code;
  std::string reason;  // "AlreadyExists", "NotFound", ...
};

class Server {
 public:
  explicit Server(Options options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::string url() const;  // "https://127.0.0.1:PORT"
  unsigned short port() const;
  const std::string& ca_pem() const;  // the CA that signed the serving and client certificates
  const std::string& token() const;
  const Options& options() const;
  // A client certificate (EC P-256, clientAuth) signed by the fake's CA; it authenticates as `cn`.
  ClientCert issue_client_cert(const std::string& common_name) const;
  // A kubeconfig for kubectl and client libraries: server URL, CA data, bearer token
  // (empty: options().token).
  void write_kubeconfig(const std::string& path, const std::string& token = "") const;

  // State, in the API's own JSON shapes (returned objects carry kind and apiVersion). These go
  // through the same rules as the HTTP API (defaults, uid, resourceVersion, watch events) but
  // do not appear in the request log. `resource` is the plural URL name: "pods", "nodes",
  // "leases", "poddisruptionbudgets", ... `ns` is ignored for cluster-scoped resources.
  boost::json::object create(const std::string& resource, const std::string& ns,
                             boost::json::object object);
  std::optional<boost::json::object> get(const std::string& resource, const std::string& ns,
                                         const std::string& name) const;
  // Sorted by namespace, then name; `ns` empty: all namespaces.
  std::vector<boost::json::object> list(const std::string& resource,
                                        const std::string& ns = "") const;
  // A Ready node with allocatable cpu, memory, pods 110 and nvidia.com/gpu `gpus`.
  void add_node(const std::string& name, int gpus = 8, const std::string& cpu = "128",
                const std::string& memory = "1Ti", boost::json::object labels = {});
  // Flips the node's Ready condition (False when `ready` is false); the kubelet starts nothing
  // new on a node that is not Ready.
  void set_node_ready(const std::string& name, bool ready);
  // The pod's containers exit with `exit_code`: Succeeded for 0, Failed otherwise (with
  // restartPolicy Never; OnFailure and Always restart the containers as a kubelet would).
  void finish_pod(const std::string& ns, const std::string& name, int exit_code = 0);
  // The GPUs ("GPU-0", ...) the device plugin gave the pod; empty when none (or it is gone).
  std::vector<std::string> devices_of(const std::string& ns, const std::string& name) const;
  std::uint64_t resource_version() const;

  // Faults. The next `count` requests whose method matches (empty: any) and whose path contains
  // `path_substring` get a Status with `http_code` (and Retry-After when retry_after_seconds > 0)
  // instead of being served.
  void fail_next(const std::string& method, const std::string& path_substring, int http_code,
                 int count = 1, int retry_after_seconds = 0);
  void drop_watches();  // ends every open watch stream abruptly (no ERROR event, no last chunk)
  // Closes every connection, kept-alive idle ones too, as an API server that restarts (the next
  // request on one finds it closed).
  void drop_connections();
  // Forgets the whole history, as etcd's compaction after more writes: a watch or continue from
  // any resourceVersion handed out before gets 410 (the resourceVersion moves on by one).
  void compact();
  void set_pause(std::chrono::milliseconds pause);       // every request waits this long first
  void set_bind_delay(std::chrono::milliseconds delay);  // every binding request waits this long

  std::vector<Request> requests() const;
  void clear_requests();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuq::kubefake
