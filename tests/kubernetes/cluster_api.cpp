#include "tests/kubernetes/cluster_api.hpp"

#include <map>

namespace gpuq::test {

std::string resource_path(const std::string& resource, const std::string& ns, const std::string& name) {
  struct Where {
    const char* prefix;
    bool namespaced;
  };
  static const std::map<std::string, Where> where{
      {"pods", {"/api/v1", true}},
      {"events", {"/api/v1", true}},
      {"configmaps", {"/api/v1", true}},
      {"services", {"/api/v1", true}},
      {"serviceaccounts", {"/api/v1", true}},
      {"secrets", {"/api/v1", true}},
      {"nodes", {"/api/v1", false}},
      {"namespaces", {"/api/v1", false}},
      {"leases", {"/apis/coordination.k8s.io/v1", true}},
      {"poddisruptionbudgets", {"/apis/policy/v1", true}},
      {"jobs", {"/apis/batch/v1", true}},
      {"deployments", {"/apis/apps/v1", true}},
      {"replicasets", {"/apis/apps/v1", true}},
      {"priorityclasses", {"/apis/scheduling.k8s.io/v1", false}},
      {"flowschemas", {"/apis/flowcontrol.apiserver.k8s.io/v1", false}},
      {"prioritylevelconfigurations", {"/apis/flowcontrol.apiserver.k8s.io/v1", false}},
      {"clusterroles", {"/apis/rbac.authorization.k8s.io/v1", false}},
      {"clusterrolebindings", {"/apis/rbac.authorization.k8s.io/v1", false}},
      {"roles", {"/apis/rbac.authorization.k8s.io/v1", true}},
      {"rolebindings", {"/apis/rbac.authorization.k8s.io/v1", true}},
  };
  const auto it = where.find(resource);
  if (it == where.end()) throw std::invalid_argument("resource_path: no path known for " + resource);
  std::string path = it->second.prefix;
  if (it->second.namespaced && !ns.empty()) path += "/namespaces/" + ns;
  path += "/" + resource;
  if (!name.empty()) path += "/" + name;
  return path;
}

}  // namespace gpuq::test
