// The scenarios' cluster as a real control plane: tests/kubecluster's kube-cluster program
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and simulated GPU nodes) as a
// child process. Its objects are read and written with the admin's kubeconfig over HTTPS (a
// client certificate in system:masters); its simulated nodes through its control endpoint.
// gpuqd gets a kubeconfig of the service account gpuq-system/gpuq, bound to the roles of
// deploy/kubernetes and nothing else.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "binder/kubernetes/access.hpp"
#include "binder/kubernetes/client.hpp"
#include "tests/kubernetes/cluster_api.hpp"
#include "tests/support/files.hpp"

namespace gpuq::test {

namespace {

namespace k8s = gpuq::binder::k8s;
namespace json = boost::json;

std::string field(const std::string& line, const std::string& key) {
  const auto at = line.find(" " + key + "=");
  if (at == std::string::npos) return {};
  const auto start = at + key.size() + 2;
  return line.substr(start, line.find(' ', start) - start);
}

std::unique_ptr<k8s::Client> make_client(k8s::Access access, const std::string& agent) {
  k8s::ClientOptions o;
  o.qps = 0;  // no client-side limit: the tests' requests are few
  o.user_agent = agent;
  o.max_attempts = 3;
  return std::make_unique<k8s::Client>(std::move(access), o);
}

class RealApi final : public ClusterApi {
 public:
  explicit RealApi(const std::filesystem::path& dir) : dir_(dir / "kube-cluster") {
    std::filesystem::create_directories(dir_);
    start();
    k8s::AccessOptions ao;
    ao.kubeconfig = admin_kubeconfig_;
    auto access = k8s::load_access(ao);
    if (!access) throw std::runtime_error("kube-cluster's admin kubeconfig: " + access.error());
    admin_ = make_client(*access, "gpuq-tests");
    k8s::Access ctl;
    ctl.server = control_;
    ctl.source = "kube-cluster's control endpoint";
    control_client_ = make_client(ctl, "gpuq-tests");
  }
  ~RealApi() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      for (int i = 0; i < 300; ++i) {
        if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  std::string kind() const override { return "real"; }
  std::filesystem::path log_dir() const override { return dir_; }
  std::string admin_kubeconfig() const override { return admin_kubeconfig_; }

  void write_kubeconfig(const std::string& path) override {
    std::filesystem::copy_file(gpuqd_kubeconfig_, path, std::filesystem::copy_options::overwrite_existing);
  }

  void add_node(const std::string& name, int gpus, const std::string& cpu, const std::string& memory,
                json::object labels) override {
    json::object spec{{"name", name}, {"gpus", gpus}, {"cpu", cpu}, {"memory", memory}, {"labels", std::move(labels)}};
    control("POST", "/v1/nodes", json::serialize(spec));
  }
  void wait_schedulable(const std::string& name) override {
    // A node is registered with the not-ready taint (the TaintNodesByCondition admission
    // plugin); the node lifecycle controller takes it off once it sees the node Ready.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
      if (auto n = get("nodes", "", name); n && schedulable(*n)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw std::runtime_error("node " + name + " was not schedulable after 60 s");
  }
  void wait_namespace(const std::string& name) override {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
      if (get("serviceaccounts", name, "default")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw std::runtime_error("namespace " + name + " has no default service account after 60 s");
  }
  void set_node_ready(const std::string& name, bool ready) override {
    control("POST", "/v1/nodes/" + name + "/ready", ready ? R"({"ready":true})" : R"({"ready":false})");
  }

  json::object create(const std::string& resource, const std::string& ns, json::object object) override {
    const ApiResponse r = request("POST", resource_path(resource, ns), json::serialize(object), "application/json");
    if (r.status < 200 || r.status >= 300) throw ApiError(r.status, r.body);
    return r.json();
  }
  std::optional<json::object> get(const std::string& resource, const std::string& ns, const std::string& name) override {
    const ApiResponse r = request("GET", resource_path(resource, ns, name), "", "");
    if (r.status == 404) return std::nullopt;
    if (r.status != 200) throw ApiError(r.status, r.body);
    return r.json();
  }
  std::vector<json::object> list(const std::string& resource, const std::string& ns) override {
    const ApiResponse r = request("GET", resource_path(resource, ns), "", "");
    if (r.status != 200) throw ApiError(r.status, r.body);
    std::vector<json::object> out;
    json::object body = r.json();
    const json::value* items = body.if_contains("items");
    if (items != nullptr && items->is_array())
      for (const json::value& item : items->as_array()) out.push_back(item.as_object());
    return out;
  }
  ApiResponse request(const std::string& method, const std::string& target, const std::string& body,
                      const std::string& content_type) override {
    // Retried after a dropped connection whatever the verb: a test's create that turns out to
    // have been done once already is answered 409 and the test says so.
    const k8s::Response r = admin_->request(method, target, body, content_type, k8s::Retry::kSafe);
    if (r.status == 0) throw std::runtime_error(method + " " + target + ": " + r.body);
    return {r.status, r.body};
  }

  void finish_pod(const std::string& ns, const std::string& name, int exit_code) override {
    // A pod bound a moment ago reaches its simulated kubelet through the kubelet's own watch,
    // as on a real node: until it has, kube-cluster answers 404. The fake's kubelet is the API
    // server itself and has no such moment.
    const std::string target = "/v1/pods/" + ns + "/" + name + "/finish";
    const std::string body = "{\"code\":" + std::to_string(exit_code) + "}";
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      const k8s::Response r = control_request("POST", target, body);
      if (r.status == 200) return;
      if (r.status != 404 || std::chrono::steady_clock::now() > give_up) throw control_error("POST", target, r);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  std::vector<std::string> devices_of(const std::string& ns, const std::string& name) override {
    std::vector<std::string> out;
    const json::value devices = json::parse(control("GET", "/v1/pods/" + ns + "/" + name + "/devices", ""));
    for (const json::value& d : devices.as_array()) out.emplace_back(d.as_string());
    return out;
  }
  std::vector<ApiRequest> requests() override {
    std::vector<ApiRequest> out;
    const json::value log = json::parse(control("GET", "/v1/audit", ""));
    for (const json::value& v : log.as_array()) {
      const json::object& o = v.as_object();
      auto s = [&](const char* k) { return std::string(o.at(k).as_string()); };
      out.push_back({s("method"), s("path"), s("query"), s("userAgent"), s("user"), static_cast<int>(o.at("code").as_int64()),
                     s("message")});
    }
    return out;
  }

  // A request to kube-cluster's control endpoint; its body, or an exception naming the error.
  std::string control(const std::string& method, const std::string& target, const std::string& body) override {
    const k8s::Response r = control_request(method, target, body);
    if (r.status != 200) throw control_error(method, target, r);
    return r.body;
  }

 private:
  k8s::Response control_request(const std::string& method, const std::string& target, const std::string& body) {
    return control_client_->request(method, target, body, "application/json", k8s::Retry::kUnsafe);
  }
  static std::runtime_error control_error(const std::string& method, const std::string& target,
                                          const k8s::Response& r) {
    return std::runtime_error("kube-cluster " + method + " " + target + ": " + std::to_string(r.status) + " " + r.body);
  }
  static bool schedulable(const json::object& node) {
    const json::value* taints = node.at("spec").as_object().if_contains("taints");
    if (taints != nullptr && taints->is_array())
      for (const json::value& t : taints->as_array())
        if (t.as_object().at("key").as_string() == "node.kubernetes.io/not-ready") return false;
    return true;
  }

  void start() {
    const std::string deploy = GPUQ_DEPLOY_DIR;
        // Containers run as root: they read scripts from the clone (gpuq-reserve), wherever it is.
    std::vector<std::string> args{KUBE_CLUSTER_PATH, "up", "--dir", dir_.string(), "--nodes", "0", "--quiet", "--exec-user", "root"};
    for (const char* f : {"namespace.yaml", "serviceaccount.yaml", "clusterrole.yaml", "clusterrolebinding.yaml"})
      args.insert(args.end(), {"--apply", deploy + "/" + f});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::filesystem::path out = dir_ / "up.out", err = dir_ / "up.err";
    const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0 || err_fd < 0) throw std::runtime_error("kube-cluster: cannot open its output files in " + dir_.string());
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      // The cluster goes with this test, however it ends.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      ::dup2(out_fd, STDOUT_FILENO);
      ::dup2(err_fd, STDERR_FILENO);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out_fd);
    ::close(err_fd);
    if (pid_ < 0) throw std::runtime_error("kube-cluster: fork failed");
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(3);
    while (std::chrono::steady_clock::now() < until) {
      std::ifstream in(out);
      for (std::string line; std::getline(in, line);) {
        if (line.rfind("kube-cluster ready ", 0) != 0) continue;
        control_ = field(line, "control");
        admin_kubeconfig_ = field(line, "admin-kubeconfig");
        gpuqd_kubeconfig_ = field(line, "gpuqd-kubeconfig");
        return;
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("kube-cluster ended before it was ready: " + slurp(err));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("kube-cluster was not ready after 3 minutes: " + slurp(err));
  }

  std::filesystem::path dir_;
  pid_t pid_ = -1;
  std::string control_, admin_kubeconfig_, gpuqd_kubeconfig_;
  std::unique_ptr<k8s::Client> admin_, control_client_;
};

}  // namespace

std::unique_ptr<ClusterApi> make_cluster_api(const std::filesystem::path& dir) { return std::make_unique<RealApi>(dir); }

}  // namespace gpuq::test
