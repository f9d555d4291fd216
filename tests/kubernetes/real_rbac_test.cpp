// gpuqd runs with deploy/kubernetes's roles and nothing more, on a real API server whose RBAC
// decides (every scenario's invariants check that none of gpuqd's requests was refused 403):
// each permission taken away from them, gpuqd refuses to start and names it (the fake API server
// evaluates no RBAC; rbac_test.cpp checks against it that every permission is used).
#include "tests/kubernetes/harness.hpp"

using namespace gpuq::test;

namespace {

const char* kQueue = "  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]\n";

// The role as the API server has it, with `resource` taken out of the rules that name it (and
// `verb` out of those rules when it is given).
void take_away(KubeCluster& k, const std::string& kind, const std::string& ns, const std::string& name,
               const std::string& resource, const std::string& verb = "") {
  json::object role = *k.api.get(kind, ns, name);
  json::array rules;
  for (const json::value& v : role.at("rules").as_array()) {
    json::object rule = v.as_object();
    json::array resources = rule.at("resources").as_array();
    const bool names = std::any_of(resources.begin(), resources.end(), [&](const json::value& r) { return r.as_string() == resource; });
    if (names && verb.empty()) {
      json::array kept;
      for (const json::value& r : resources)
        if (r.as_string() != resource) kept.push_back(r);
      if (kept.empty()) continue;
      rule["resources"] = kept;
    } else if (names) {
      json::array verbs;
      for (const json::value& x : rule.at("verbs").as_array())
        if (x.as_string() != verb) verbs.push_back(x);
      if (verbs.empty()) continue;
      rule["verbs"] = verbs;
    }
    rules.push_back(rule);
  }
  role["rules"] = rules;
  const ApiResponse r = k.api.request("PUT", resource_path(kind, ns, name), json::serialize(role));
  REQUIRE_MESSAGE(r.status == 200, r.body);
}

}  // namespace

TEST_CASE("a permission taken from deploy/kubernetes's roles: gpuqd refuses to start and names it") {
  KubeCluster k(1, 8);
  SUBCASE("create pods/binding, of the ClusterRole") {
    take_away(k, "clusterroles", "", "gpuq-scheduler", "pods/binding");
    const auto [status, said] = k.start_refused(kQueue);
    CHECK(status == 2);
    CHECK_MESSAGE(said.find("gpuqd may not create pods/binding cluster-wide") != std::string::npos, said);
  }
  SUBCASE("watch nodes, of the ClusterRole") {
    take_away(k, "clusterroles", "", "gpuq-scheduler", "nodes", "watch");
    const auto [status, said] = k.start_refused(kQueue);
    CHECK(status == 2);
    CHECK_MESSAGE(said.find("gpuqd may not watch nodes cluster-wide") != std::string::npos, said);
  }
  SUBCASE("update its Lease, of the leader election Role") {
    take_away(k, "roles", "gpuq-system", "gpuq-leader-election", "leases", "update");
    const auto [status, said] = k.start_refused(kQueue, "  leaderElection: {enabled: true}\n");
    CHECK(status == 2);
    CHECK_MESSAGE(said.find("gpuqd may not update leases named gpuq in namespace gpuq-system") != std::string::npos, said);
  }
  SUBCASE("delete its reservation pods: a warning, and gpuqd runs (only fractional GPUs need it)") {
    take_away(k, "roles", "gpuq-system", "gpuq-reservation-pods", "pods", "delete");
    k.start(kQueue);
    CHECK(eventually([&] { return slurp(k.dir.path / "state.out").find("gpuqd may not delete pods in namespace gpuq-system") != std::string::npos; }));
    CHECK(slurp(k.dir.path / "state.out").find("fractional GPUs (their reservation pods) will fail") != std::string::npos);
  }
}
