// Queues as Kubernetes objects (deploy/kubernetes/crd-queue.yaml; docs/tasks/kubernetes.md, "Queues as Kubernetes
// objects") on the real control plane: the CRD applied as it is, gpuqd with deploy/'s roles.
// An object made, changed and deleted takes effect; the API server refuses what the schema
// checks, naming the field; gpuqd says what it refuses in the object's Invalid condition and
// keeps the last valid spec; the status shows the queue's use (kubectl get queues); a restart
// finds the queues in the objects; gpuq apply points at kubectl.
#include <iterator>
#include <sstream>

#include "spec/yaml.hpp"
#include "spec/yaml_json.hpp"
#include "tests/kubernetes/harness.hpp"

using namespace gpuq::test;

namespace {

const std::string kQueues = "/apis/gpuq.io/v1alpha1/queues";

ApiResponse make_queue(KubeCluster& k, const std::string& name, const std::string& spec_json) {
  return k.api.request("POST", kQueues,
                       R"({"apiVersion":"gpuq.io/v1alpha1","kind":"Queue","metadata":{"name":")" + name +
                           R"("},"spec":)" + spec_json + "}");
}

ApiResponse patch_spec(KubeCluster& k, const std::string& name, const std::string& spec_json) {
  return k.api.request("PATCH", kQueues + "/" + name, R"({"spec":)" + spec_json + "}", "application/merge-patch+json");
}

json::object queue_object(KubeCluster& k, const std::string& name) {
  const ApiResponse r = k.api.request("GET", kQueues + "/" + name);
  return r.status == 200 ? r.json() : json::object{};
}

std::string condition(const json::object& q, const std::string& type, const char* field = "status") {
  const json::value* st = q.if_contains("status");
  if (st == nullptr || !st->is_object()) return {};
  const json::value* cs = st->as_object().if_contains("conditions");
  if (cs == nullptr || !cs->is_array()) return {};
  for (const json::value& c : cs->as_array())
    if (str_at(c.as_object(), {"type"}) == type) return str_at(c.as_object(), {field});
  return {};
}

// Whether the API server allows `user` `verb` on `resource` of `group` (a SubjectAccessReview).
bool allowed(KubeCluster& k, const std::string& user, const std::string& verb, const std::string& group,
             const std::string& resource) {
  const json::object review{{"apiVersion", "authorization.k8s.io/v1"},
                            {"kind", "SubjectAccessReview"},
                            {"spec", {{"user", user}, {"resourceAttributes", {{"group", group}, {"resource", resource}, {"verb", verb}}}}}};
  const ApiResponse r = k.api.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", json::serialize(review));
  REQUIRE_MESSAGE(r.status == 201, r.body);
  return r.json().at("status").as_object().at("allowed").as_bool();
}

// deploy/kubernetes/roles/NAME.yaml's ClusterRole, as it is, bound to `user`.
void bind_example_role(KubeCluster& k, const std::string& name, const std::string& user) {
  for (const gpuq::spec::yaml::Document& doc :
       gpuq::spec::yaml::parse_stream(slurp(std::string(GPUQ_DEPLOY_DIR) + "/roles/" + name + ".yaml"))) {
    const ApiResponse r =
        k.api.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", gpuq::spec::to_json(doc.root()));
    REQUIRE_MESSAGE(r.status == 201, r.body);
    const std::string role = str_at(r.json(), {"metadata", "name"});
    const json::object binding{{"apiVersion", "rbac.authorization.k8s.io/v1"},
                               {"kind", "ClusterRoleBinding"},
                               {"metadata", {{"name", role + "-" + user}}},
                               {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", role}}},
                               {"subjects", json::array{json::object{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", user}}}}};
    const ApiResponse b = k.api.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json::serialize(binding));
    REQUIRE_MESSAGE(b.status == 201, b.body);
  }
}

const char* kConfigQueues =
    "  - name: legacy\n"
    "    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]\n"
    "  - name: stale\n"
    "    quotas: [{flavor: default, resources: {gpu: {nominal: 1}}}]\n";

}  // namespace

TEST_CASE("Queue objects: made, changed, refused and deleted with the API; their status shows the queue's use") {
  KubeCluster k(2, 8);
  if (k.api.kind() != "real") return;  // the fake checks no schema
  k.install_queue_crd();
  k.start(kConfigQueues, "priorityClasses: {high: 100}\n");
  REQUIRE(eventually([&] { return slurp(k.dir.path / "state.out").find("event=source_synced") != std::string::npos; }));
  // No object yet: the config's queue is used, and the log says how to move it.
  CHECK(k.gpuq("queues").find("legacy") != std::string::npos);
  CHECK(slurp(k.dir.path / "state.out").find("event=queue_objects_none") != std::string::npos);
  // Moved as the log says: gpuq queues export --format objects | kubectl apply -f - (legacy only).
  auto [code, out] = k.gpuq_status("queues export --format objects");
  REQUIRE_MESSAGE(code == 0, out);
  bool moved = false;
  for (const gpuq::spec::yaml::Document& doc : gpuq::spec::yaml::parse_stream(out)) {
    const std::string object = gpuq::spec::to_json(doc.root());
    if (object.find("\"legacy\"") == std::string::npos) continue;
    const ApiResponse made = k.api.request("POST", kQueues, object);
    REQUIRE_MESSAGE(made.status == 201, made.body);
    moved = true;
  }
  CHECK(moved);
  CHECK(eventually([&] { return condition(queue_object(k, "legacy"), "Active") == "True"; }));

  // Made: the queue exists in gpuq within a moment, and jobs run in it.
  const auto made_at = std::chrono::steady_clock::now();
  ApiResponse r = make_queue(k, "team-a", R"({"cohort":"research","quotas":[{"flavor":"default","resources":{"gpu":{"nominal":8}}}]})");
  REQUIRE_MESSAGE(r.status == 201, r.body);
  REQUIRE(eventually([&] { return k.gpuq("queues team-a").find("team-a") != std::string::npos; }, std::chrono::seconds(5)));
  // How long from the object's creation to gpuq having the queue (printed, not asserted).
  MESSAGE("Queue object to gpuq queue: "
          << std::chrono::duration<double>(std::chrono::steady_clock::now() - made_at).count() << " s");
  k.create("a1", pod_of("team-a", 2));
  REQUIRE(eventually([&] { return k.bound("a1"); }));
  // Its status: the use, the jobs, Active.
  CHECK(eventually([&] {
    const json::object q = queue_object(k, "team-a");
    return str_at(q, {"status", "gpus", "used"}) == "2" && str_at(q, {"status", "gpus", "nominal"}) == "8" &&
           condition(q, "Active") == "True" && condition(q, "Invalid") == "False";
  }));
  json::object q = queue_object(k, "team-a");
  CHECK(q.at("status").at("runningJobs").as_int64() == 1);
  CHECK(q.at("status").at("observedGeneration").as_int64() == q.at("metadata").at("generation").as_int64());

  // Changed: the new nominal quota is gpuq's within a moment.
  r = patch_spec(k, "team-a", R"({"quotas":[{"flavor":"default","resources":{"gpu":{"nominal":4}}}]})");
  REQUIRE_MESSAGE(r.status == 200, r.body);
  CHECK(eventually([&] { return str_at(queue_object(k, "team-a"), {"status", "gpus", "nominal"}) == "4"; }));

  // Refused by the API server, naming the field: nothing reaches gpuqd.
  r = make_queue(k, "bad", R"({"weight":-1})");
  CHECK(r.status == 422);
  CHECK_MESSAGE(r.body.find("spec.weight") != std::string::npos, r.body);
  r = make_queue(k, "bad", R"({"queueingStrategy":"StrictFifo"})");
  CHECK(r.status == 422);
  CHECK_MESSAGE(std::string(r.json().at("message").as_string()).find("spec.queueingStrategy: Unsupported value: \"StrictFifo\"") !=
                    std::string::npos,
                r.body);
  r = patch_spec(k, "team-a", R"({"quotas":[{"flavor":"default","resources":{"gpu":{"nominal":-2}}}]})");
  CHECK(r.status == 422);
  CHECK_MESSAGE(r.body.find("nominal") != std::string::npos, r.body);

  // Refused by gpuqd (the schema cannot know gpuqd's priority classes): said in the Invalid
  // condition in gpuq apply's words, the queue running on its last valid spec.
  r = patch_spec(k, "team-a", R"({"allowedPriorityClasses":["no-such-class"]})");
  REQUIRE_MESSAGE(r.status == 200, r.body);
  CHECK(eventually([&] {
    const json::object o = queue_object(k, "team-a");
    return condition(o, "Invalid") == "True" && condition(o, "Active") == "True";
  }));
  q = queue_object(k, "team-a");
  CHECK_MESSAGE(condition(q, "Invalid", "message").find("allowedPriorityClasses[0]: \"no-such-class\" is not a priority class") !=
                    std::string::npos,
                condition(q, "Invalid", "message"));
  CHECK(condition(q, "Active", "reason") == "LastValidSpec");
  CHECK(str_at(q, {"status", "gpus", "nominal"}) == "4");
  r = patch_spec(k, "team-a", R"({"allowedPriorityClasses":["high"]})");
  CHECK(eventually([&] { return condition(queue_object(k, "team-a"), "Invalid") == "False"; }));

  // gpuq apply and gpuq queues delete point at kubectl.
  const std::string file = (k.dir.path / "q.yaml").string();
  std::ofstream(file) << "queues:\n  - {name: other, quotas: [{flavor: default, resources: {gpu: {nominal: 1}}}]}\n";
  std::tie(code, out) = k.gpuq_status("apply -f " + file);
  CHECK(code != 0);
  CHECK_MESSAGE(out.find("queues on this gpuqd are Kubernetes objects (queues.gpuq.io): kubectl apply") != std::string::npos, out);
  std::tie(code, out) = k.gpuq_status("queues delete team-a");
  CHECK(code != 0);
  CHECK_MESSAGE(out.find("kubectl delete queue team-a") != std::string::npos, out);

  // kubectl get queues shows the use (the CRD's printer columns), where kubectl is.
  if (std::system("command -v kubectl >/dev/null 2>&1") == 0) {
    const std::string shown = run_command("kubectl --kubeconfig " + k.api.admin_kubeconfig() + " get queues.gpuq.io team-a").second;
    CHECK_MESSAGE(shown.find("COHORT") != std::string::npos, shown);
    CHECK_MESSAGE(shown.find("USED") != std::string::npos, shown);
    // team-a's row: its cohort, 4 GPUs nominal, 2 used by its running pod.
    std::istringstream rows(shown);
    std::string header, row;
    std::getline(rows, header);
    std::getline(rows, row);
    std::istringstream cells(row);
    std::vector<std::string> cell{std::istream_iterator<std::string>(cells), std::istream_iterator<std::string>()};
    REQUIRE_MESSAGE(cell.size() >= 5, shown);
    CHECK(cell[0] == "team-a");
    CHECK(cell[1] == "research");
    CHECK_MESSAGE(cell[2] == "4", shown);
    CHECK_MESSAGE(cell[3] == "2", shown);
  }

  // The example roles: a viewer reads queues and nothing else; an admin also changes them.
  bind_example_role(k, "queue-viewer", "vera");
  bind_example_role(k, "queue-admin", "ada");
  CHECK(allowed(k, "vera", "list", "gpuq.io", "queues"));
  CHECK(allowed(k, "vera", "watch", "gpuq.io", "queues"));
  CHECK_FALSE(allowed(k, "vera", "update", "gpuq.io", "queues"));
  CHECK_FALSE(allowed(k, "vera", "list", "", "pods"));
  CHECK_FALSE(allowed(k, "vera", "list", "", "secrets"));
  CHECK(allowed(k, "ada", "create", "gpuq.io", "queues"));
  CHECK(allowed(k, "ada", "delete", "gpuq.io", "queues"));
  CHECK_FALSE(allowed(k, "ada", "patch", "gpuq.io", "queues/status"));  // the status is gpuqd's
  CHECK_FALSE(allowed(k, "ada", "list", "", "pods"));
  // gpuqd's own account reads Queues and writes only their status.
  const std::string gpuqd = "system:serviceaccount:gpuq-system:gpuq";
  CHECK(allowed(k, gpuqd, "watch", "gpuq.io", "queues"));
  CHECK(allowed(k, gpuqd, "patch", "gpuq.io", "queues/status"));
  CHECK_FALSE(allowed(k, gpuqd, "update", "gpuq.io", "queues"));
  CHECK_FALSE(allowed(k, gpuqd, "create", "gpuq.io", "queues"));

  // A restart: the queues are the objects' (the config's stale is no object: it goes; legacy,
  // moved, stays).
  k.kill_gpuqd();
  k.start(kConfigQueues, "priorityClasses: {high: 100}\n");
  CHECK(eventually([&] { return k.gpuq("queues team-a").find("team-a") != std::string::npos; }));
  CHECK(eventually([&] { return k.gpuq("queues").find("stale") == std::string::npos; }));
  CHECK(k.gpuq("queues").find("legacy") != std::string::npos);
  CHECK(slurp(k.dir.path / "state.out").find("event=config_queue_ignored queue=stale") != std::string::npos);

  // Deleted while a job runs in it: it takes no new job, and goes once its jobs have ended.
  r = k.api.request("DELETE", kQueues + "/team-a");
  REQUIRE_MESSAGE(r.status == 200, r.body);
  k.create("a2", pod_of("team-a", 1));
  CHECK(eventually([&] { return k.unschedulable("a2").find("is being deleted") != std::string::npos; }));
  CHECK(k.gpuq("queues team-a").find("team-a") != std::string::npos);
  k.api.request("DELETE", "/api/v1/namespaces/default/pods/a1?gracePeriodSeconds=0");
  k.api.request("DELETE", "/api/v1/namespaces/default/pods/a2?gracePeriodSeconds=0");
  CHECK(eventually([&] { return k.gpuq_status("queues team-a").first != 0; }));
  k.check_invariants();
}

TEST_CASE("Queue objects: a standby that takes over has every queue, made while it stood by") {
  KubeCluster k(2, 8);
  k.install_queue_crd();
  auto lease = [](const std::string& id) {
    return "  leaderElection: {enabled: true, namespace: gpuq-system, name: gpuq, identity: " + id +
           ", leaseDuration: 2s, renewDeadline: 1500ms, retryPeriod: 200ms}\n";
  };
  k.ensure_namespace("gpuq-system");
  k.start("  []\n", lease("first"));
  REQUIRE(eventually([&] { return k.api.get("leases", "gpuq-system", "gpuq").has_value(); }));
  KubeCluster::Replica second = k.start_replica("  []\n", lease("second"), "second.db");
  const ApiResponse r = make_queue(k, "team-a", R"({"quotas":[{"flavor":"default","resources":{"gpu":{"nominal":8}}}]})");
  REQUIRE_MESSAGE(r.status == 201, r.body);
  k.create("a-0", pod_of("team-a", 4));
  REQUIRE(eventually([&] { return k.bound("a-0"); }));
  // The standby has the queue too (it watches the objects), before it leads.
  const auto on_second = [&](const std::string& args) {
    return run_command(std::string(GPUQ_CLI_PATH) + " --server " + second.address + " " + args).second;
  };
  CHECK(eventually([&] { return on_second("queues team-a").find("team-a") != std::string::npos; }));
  k.kill_gpuqd();
  k.create("a-1", pod_of("team-a", 4));
  REQUIRE(eventually([&] { return k.bound("a-1"); }));
  CHECK(str_at(*k.api.get("leases", "gpuq-system", "gpuq"), {"spec", "holderIdentity"}) == "second");
  // The new leader writes the status: both pods' GPUs.
  CHECK(eventually([&] { return str_at(queue_object(k, "team-a"), {"status", "gpus", "used"}) == "8"; }));
  second.stop(SIGTERM);
  k.check_invariants();
}
