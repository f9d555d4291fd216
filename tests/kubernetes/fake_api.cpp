// The scenarios' cluster as the fake API server (tests/kubefake), in this process.
#include "tests/kubefake/server.hpp"
#include "tests/kubefake/test_client.hpp"
#include "tests/kubernetes/cluster_api.hpp"

namespace gpuq::test {

namespace {

class FakeApi final : public ClusterApi {
 public:
  std::string kind() const override { return "fake"; }
  void write_kubeconfig(const std::string& path) override { server_.write_kubeconfig(path); }
  void add_node(const std::string& name, int gpus, const std::string& cpu, const std::string& memory,
                boost::json::object labels) override {
    server_.add_node(name, gpus, cpu, memory, std::move(labels));
  }
  void wait_schedulable(const std::string&) override {}
  void wait_namespace(const std::string&) override {}
  void set_node_ready(const std::string& name, bool ready) override { server_.set_node_ready(name, ready); }
  boost::json::object create(const std::string& resource, const std::string& ns, boost::json::object object) override {
    try {
      return server_.create(resource, ns, std::move(object));
    } catch (const kubefake::StatusError& e) {
      throw ApiError(e.code, e.what());
    }
  }
  std::optional<boost::json::object> get(const std::string& resource, const std::string& ns,
                                         const std::string& name) override {
    return server_.get(resource, ns, name);
  }
  std::vector<boost::json::object> list(const std::string& resource, const std::string& ns) override {
    return server_.list(resource, ns);
  }
  ApiResponse request(const std::string& method, const std::string& target, const std::string& body,
                      const std::string& content_type) override {
    kubefake::testing::Client http(server_);
    const kubefake::testing::Response r = http.request(method, target, body, content_type);
    return {r.status, r.body};
  }
  void finish_pod(const std::string& ns, const std::string& name, int exit_code) override {
    server_.finish_pod(ns, name, exit_code);
  }
  std::vector<std::string> devices_of(const std::string& ns, const std::string& name) override {
    return server_.devices_of(ns, name);
  }
  std::vector<ApiRequest> requests() override {
    std::vector<ApiRequest> out;
    for (const kubefake::Request& r : server_.requests())
      out.push_back({r.method, r.path, r.query, r.user_agent, r.user, r.status, {}});
    return out;
  }
  std::string control(const std::string& method, const std::string& target, const std::string&) override {
    throw std::logic_error("the fake API server has no control endpoint (" + method + " " + target + ")");
  }
  kubefake::Server* fake() override { return &server_; }

 private:
  kubefake::Server server_;
};

}  // namespace

std::unique_ptr<ClusterApi> make_cluster_api(const std::filesystem::path&) { return std::make_unique<FakeApi>(); }

}  // namespace gpuq::test
