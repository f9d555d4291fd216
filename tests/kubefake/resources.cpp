#include "tests/kubefake/resources.hpp"

#include <stdexcept>

namespace gpuq::kubefake {

namespace json = boost::json;

namespace {

const std::vector<ResourceType>& table() {
  static const std::vector<ResourceType> t = {
      {"namespaces", "namespace", "Namespace", "", "v1", false, true, {"ns"}},
      {"nodes", "node", "Node", "", "v1", false, true, {"no"}},
      {"pods", "pod", "Pod", "", "v1", true, true, {"po"}},
      {"events", "event", "Event", "", "v1", true, false, {"ev"}},
      {"configmaps", "configmap", "ConfigMap", "", "v1", true, false, {"cm"}},
      {"bindings", "binding", "Binding", "", "v1", true, false, {}},
      {"leases", "lease", "Lease", "coordination.k8s.io", "v1", true, false, {}},
      {"priorityclasses", "priorityclass", "PriorityClass", "scheduling.k8s.io", "v1", false, false, {"pc"}},
      {"poddisruptionbudgets",
       "poddisruptionbudget",
       "PodDisruptionBudget",
       "policy",
       "v1",
       true,
       true,
       {"pdb"}},
      // gpuq's own Queue objects (deploy/kubernetes/crd-queue.yaml), as if the CRD were installed;
      // the fake checks none of its schema.
      {"queues", "queue", "Queue", "gpuq.io", "v1alpha1", false, true, {"gq"}},
      // Other schedulers' PodGroups (gangs declared their ways), as if their CRDs were installed.
      {"podgroups", "podgroup", "PodGroup", "scheduling.x-k8s.io", "v1alpha1", true, true, {}},
      {"podgroups", "podgroup", "PodGroup", "scheduling.volcano.sh", "v1beta1", true, true, {}},
      {"jobsets", "jobset", "JobSet", "jobset.x-k8s.io", "v1alpha2", true, true, {}},
  };
  return t;
}

json::array strings(std::initializer_list<const char*> items) {
  json::array a;
  for (const char* s : items) a.emplace_back(s);
  return a;
}

json::object entry(const ResourceType& r) {
  json::object e;
  e["name"] = r.name;
  e["singularName"] = r.singular;
  e["namespaced"] = r.namespaced;
  e["kind"] = r.kind;
  if (r.name == "bindings") {
    e["verbs"] = strings({"create"});
  } else {
    e["verbs"] = strings(
        {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"});
  }
  if (!r.short_names.empty()) {
    json::array sn;
    for (const auto& s : r.short_names) sn.emplace_back(s);
    e["shortNames"] = std::move(sn);
  }
  if (r.name == "pods") e["categories"] = strings({"all"});
  return e;
}

json::object subresource(std::string name, const ResourceType& of, std::string kind,
                         std::initializer_list<const char*> verbs) {
  json::object e;
  e["name"] = std::move(name);
  e["singularName"] = "";
  e["namespaced"] = of.namespaced;
  e["kind"] = std::move(kind);
  e["verbs"] = strings(verbs);
  return e;
}

json::object group_version(std::string_view group, std::string_view version) {
  std::string gv = std::string(group) + "/" + std::string(version);
  return json::object{{"groupVersion", gv}, {"version", version}};
}

}  // namespace

std::span<const ResourceType> all_resources() { return table(); }

const ResourceType* find_resource(std::string_view group, std::string_view version,
                                  std::string_view name) {
  for (const auto& r : table()) {
    if (r.group == group && r.version == version && r.name == name) return &r;
  }
  return nullptr;
}

const ResourceType* find_resource(std::string_view name) {
  for (const auto& r : table()) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

const ResourceType& resource(std::string_view name) {
  const ResourceType* r = find_resource(name);
  if (r == nullptr) throw std::invalid_argument("kubefake: no resource " + std::string(name));
  return *r;
}

json::object version_info() {
  return json::object{{"major", "1"},
                      {"minor", "28"},
                      {"gitVersion", "v1.28.0-kubefake"},
                      {"gitCommit", "0000000000000000000000000000000000000000"},
                      {"gitTreeState", "clean"},
                      {"buildDate", "2023-08-15T00:00:00Z"},
                      {"goVersion", "go1.20.7"},
                      {"compiler", "gc"},
                      {"platform", "linux/amd64"}};
}

json::object api_versions() {
  return json::object{{"kind", "APIVersions"},
                      {"versions", strings({"v1"})},
                      {"serverAddressByClientCIDRs",
                       json::array{json::object{{"clientCIDR", "0.0.0.0/0"},
                                                {"serverAddress", "127.0.0.1:6443"}}}}};
}

json::object api_group_list() {
  json::array groups;
  for (const auto& [g, v] : {std::pair{"coordination.k8s.io", "v1"}, std::pair{"policy", "v1"}, std::pair{"gpuq.io", "v1alpha1"}, std::pair{"scheduling.x-k8s.io", "v1alpha1"},
                             std::pair{"scheduling.volcano.sh", "v1beta1"}, std::pair{"jobset.x-k8s.io", "v1alpha2"}}) {
    json::object gv = group_version(g, v);
    groups.push_back(
        json::object{{"name", g}, {"versions", json::array{gv}}, {"preferredVersion", gv}});
  }
  return json::object{
      {"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", std::move(groups)}};
}

std::optional<json::object> api_resource_list(std::string_view group, std::string_view version) {
  json::array resources;
  for (const auto& r : table()) {
    if (r.group != group || r.version != version) continue;
    resources.push_back(entry(r));
    if (r.has_status)
      resources.push_back(subresource(r.name + "/status", r, r.kind, {"get", "patch", "update"}));
    if (r.name == "pods") {
      resources.push_back(subresource("pods/binding", r, "Binding", {"create"}));
      json::object eviction = subresource("pods/eviction", r, "Eviction", {"create"});
      eviction["group"] = "policy";
      eviction["version"] = "v1";
      resources.push_back(std::move(eviction));
    }
  }
  if (resources.empty()) return std::nullopt;
  std::string gv = group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
  return json::object{{"kind", "APIResourceList"},
                      {"apiVersion", "v1"},
                      {"groupVersion", gv},
                      {"resources", std::move(resources)}};
}

}  // namespace gpuq::kubefake
