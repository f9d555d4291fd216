// Reaching the API server (binder/kubernetes/access.hpp): kubeconfigs as kubectl writes them,
// the in-cluster service account, and clear refusals with file, line and column.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "binder/kubernetes/access.hpp"
#include "binder/kubernetes/reflector.hpp"
#include "tests/support/files.hpp"

using namespace gpuq;
using namespace gpuq::binder::k8s;
using gpuq::test::TempDir;
namespace fs = std::filesystem;

namespace {

const char* kKubeconfig = R"(apiVersion: v1
kind: Config
current-context: kind-gpu
preferences: {}
clusters:
- name: kind-gpu
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCnRlc3QKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
- name: other
  cluster:
    server: https://10.0.0.1
    insecure-skip-tls-verify: true
users:
- name: gpuq
  user:
    token: abc.def
- name: cert-user
  user:
    client-certificate: client.crt
    client-key: client.key
contexts:
- name: kind-gpu
  context: {cluster: kind-gpu, user: gpuq, namespace: gpuq-system}
- name: other
  context: {cluster: other, user: cert-user}
)";

}  // namespace

TEST_CASE("a kubeconfig's current context: server, CA data, token, namespace") {
  auto a = parse_kubeconfig(kKubeconfig, "kc.yaml", "/nowhere", "");
  REQUIRE_MESSAGE(a.ok(), a.error());
  CHECK(a->server == "https://127.0.0.1:6443");
  CHECK(a->ca_pem == "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n");
  CHECK(a->token == "abc.def");
  CHECK(a->namespace_ == "gpuq-system");
  CHECK_FALSE(a->insecure);
  CHECK(a->source == "kubeconfig kc.yaml, context \"kind-gpu\"");
}

TEST_CASE("another context: insecure-skip-tls-verify and a client certificate read from files") {
  TempDir dir;
  std::ofstream(dir.path / "client.crt") << "CERT";
  std::ofstream(dir.path / "client.key") << "KEY";
  auto a = parse_kubeconfig(kKubeconfig, "kc.yaml", dir.path.string(), "other");
  REQUIRE_MESSAGE(a.ok(), a.error());
  CHECK(a->insecure);
  CHECK(a->cert_pem == "CERT");
  CHECK(a->key_pem == "KEY");
  CHECK(a->token.empty());
}

TEST_CASE("a bad kubeconfig is refused with file, line, column and what to do") {
  auto err = [](const std::string& text, const std::string& context = "") {
    auto a = parse_kubeconfig(text, "kc.yaml", "/nowhere", context);
    return a.ok() ? std::string("(accepted)") : a.error();
  };
  CHECK(err(kKubeconfig, "nosuch").find("kc.yaml:") == 0);
  CHECK(err(kKubeconfig, "nosuch").find("contexts: has no context named \"nosuch\"") != std::string::npos);
  CHECK(err("clusters: []\ncontexts: []\n").find("current-context: is not set") != std::string::npos);
  CHECK(err("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\nclusters: []\n")
            .find("clusters: has no cluster named \"c\" (context x)") != std::string::npos);
  const std::string exec_user =
      "current-context: x\ncontexts:\n- {name: x, context: {cluster: c, user: u}}\n"
      "clusters:\n- {name: c, cluster: {server: \"https://h\"}}\n"
      "users:\n- name: u\n  user:\n    exec: {command: gke-gcloud-auth-plugin}\n";
  CHECK(err(exec_user).find("kc.yaml:9:5: users.u: authenticates with an exec or auth-provider plugin") == 0);
  CHECK(err("current-context: x\ncurrent-context: y\n").find("kc.yaml:2:1: current-context: is listed twice") == 0);
}

TEST_CASE("in a pod: the service account's token, CA and namespace; nothing at all is a clear error") {
  TempDir dir;
  std::ofstream(dir.path / "token") << "sa-token\n";
  std::ofstream(dir.path / "ca.crt") << "CA";
  std::ofstream(dir.path / "namespace") << "gpuq-system";
  AccessOptions o;
  o.kubeconfig.clear();
  o.service_account_dir = dir.path.string();
  o.in_cluster_host = "10.96.0.1:443";
  ::setenv("HOME", dir.path.c_str(), 1);  // no ~/.kube/config
  ::unsetenv("KUBECONFIG");
  auto a = load_access(o);
  REQUIRE_MESSAGE(a.ok(), a.error());
  CHECK(a->server == "https://10.96.0.1:443");
  CHECK(a->token == "sa-token");
  CHECK(a->token_file == (dir.path / "token").string());
  CHECK(a->ca_pem == "CA");
  CHECK(a->namespace_ == "gpuq-system");
  o.service_account_dir = (dir.path / "none").string();
  auto none = load_access(o);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().find("no kubeconfig") == 0);
  o.kubeconfig = (dir.path / "missing.yaml").string();
  CHECK(load_access(o).error() == "kubeconfig " + o.kubeconfig + ": cannot be read");
}

TEST_CASE("objects are known by namespace/name; query values are escaped") {
  boost::json::object pod{{"metadata", boost::json::object{{"namespace", "ml"}, {"name", "p1"}, {"resourceVersion", "42"}}}};
  CHECK(object_key(pod) == "ml/p1");
  CHECK(resource_version_of(pod) == "42");
  boost::json::object node{{"metadata", boost::json::object{{"name", "n1"}}}};
  CHECK(object_key(node) == "n1");
  CHECK(url_escape("spec.schedulerName=gpuq,spec.nodeName=") == "spec.schedulerName%3Dgpuq%2Cspec.nodeName%3D");
}
