// Jobs submitted with the real `gpuq` command line to a gpuqd with binder: kubernetes become pods
// on the real control plane (binder/kubernetes/README.md, "Jobs from the command line"): in the
// queue's namespace, from its pod template, bound where the engine placed them, one write each;
// the job follows its pods (exit code, --wait); a gang's pods learn their rank and the first
// pod's address, with a headless Service their pods own; a cancel deletes the pods; bad input is
// refused at submit naming the field, leaving nothing behind. gpuqd runs with deploy/'s roles
// plus deploy/kubernetes/queue-namespace.yaml applied in the queue's namespace only, and uses
// every verb that grants.
#include "spec/yaml.hpp"
#include "spec/yaml_json.hpp"
#include "tests/kubernetes/harness.hpp"
#include "tests/support/http_receiver.hpp"

using namespace gpuq::test;

namespace {

const char* kQueues =
    "  - name: team-a\n"
    "    quotas: [{flavor: default, resources: {gpu: {nominal: 16}}}]\n"
    "    kubernetes:\n"
    "      namespace: team-a\n"
    "      defaultImage: registry.local/train:1\n"
    "      allowedImages: [registry.local/, busybox]\n"
    "      podTemplate:\n"
    "        metadata: {labels: {team: a}}\n"
    "        spec:\n"
    "          serviceAccountName: trainer\n"
    "          nodeSelector: {kubernetes.io/hostname: node-1}\n"
    "          containers: [{name: main, env: [{name: FROM_TEMPLATE, value: 'yes'}]}]\n"
    "  - name: bare\n"
    "    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]\n"
    "  - name: ghost\n"
    "    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]\n"
    "    kubernetes: {namespace: team-a, defaultImage: busybox, podTemplate: {spec: {serviceAccountName: nobody-here}}}\n"
    "  - name: elsewhere\n"
    "    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]\n"
    "    kubernetes: {namespace: no-such-namespace, defaultImage: busybox}\n";

// deploy/kubernetes/queue-namespace.yaml, applied as it is in `ns` (kubectl apply -n NS -f ...),
// after the service account the queues' templates name.
void grant_queue_namespace(KubeCluster& k, const std::string& ns) {
  k.ensure_namespace(ns);
  k.api.create("serviceaccounts", ns, json::object{{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "trainer"}}}});
  for (const gpuq::spec::yaml::Document& doc :
       gpuq::spec::yaml::parse_stream(slurp(std::string(GPUQ_DEPLOY_DIR) + "/queue-namespace.yaml"))) {
    json::object o = json::parse(gpuq::spec::to_json(doc.root())).as_object();
    o["metadata"].as_object()["namespace"] = ns;
    const std::string kind = str_at(o, {"kind"});
    const std::string plural = kind == "Role" ? "roles" : kind == "RoleBinding" ? "rolebindings" : "";
    REQUIRE_MESSAGE(!plural.empty(), "queue-namespace.yaml: a " << kind);
    k.api.request("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/" + plural, json::serialize(o),
                  "application/json");
  }
}

// Each verb queue-namespace.yaml grants on each of its resources, as a request gpuqd made in
// `ns` ("create pods" is a POST to .../namespaces/ns/pods, "get pods/log" a GET of
// .../pods/NAME/log, "create pods/attach" a connection to .../pods/NAME/attach): what the grant
// gives, gpuqd needed.
void check_grant_used(KubeCluster& k, const std::string& ns) {
  const std::vector<ApiRequest> requests = k.api.requests();
  const auto used = [&](const std::string& verb, const std::string& resource) {
    const std::string base = "/api/v1/namespaces/" + ns + "/";
    const std::string::size_type slash = resource.find('/');
    const std::string kind = resource.substr(0, slash), sub = slash == std::string::npos ? "" : resource.substr(slash + 1);
    for (const ApiRequest& r : requests) {
      if (r.user != "system:serviceaccount:gpuq-system:gpuq" || r.path.rfind(base + kind, 0) != 0) continue;
      const std::string rest = r.path.substr(base.size() + kind.size());  // "", "/NAME" or "/NAME/SUB"
      const bool named = !rest.empty() && rest.find('/', 1) == std::string::npos;
      const bool of_sub = !sub.empty() && rest.size() > sub.size() + 1 &&
                          rest.compare(rest.size() - sub.size() - 1, std::string::npos, "/" + sub) == 0;
      if (verb == "create" && sub.empty() && r.method == "POST" && rest.empty()) return true;
      if (verb == "create" && of_sub) return true;  // a connection (attach): a POST, or a GET upgraded
      if (verb == "delete" && sub.empty() && r.method == "DELETE" && named) return true;
      if (verb == "get" && r.method == "GET" && (sub.empty() ? named : of_sub)) return true;
    }
    return false;
  };
  const auto docs = gpuq::spec::yaml::parse_stream(slurp(std::string(GPUQ_DEPLOY_DIR) + "/queue-namespace.yaml"));
  std::size_t checked = 0;
  for (const gpuq::spec::yaml::Document& doc : docs) {
    const json::object o = json::parse(gpuq::spec::to_json(doc.root())).as_object();
    if (str_at(o, {"kind"}) != "Role") continue;
    for (const json::value& rule : o.at("rules").as_array())
      for (const json::value& resource : rule.at("resources").as_array())
        for (const json::value& verb : rule.at("verbs").as_array()) {
          const std::string v(verb.as_string()), res(resource.as_string());
          CHECK_MESSAGE(used(v, res), "queue-namespace.yaml grants " << v << " " << res << ", which gpuqd never used");
          ++checked;
        }
  }
  CHECK(checked == 6);
}

std::vector<json::object> pods_of(KubeCluster& k, const std::string& job) {
  std::vector<json::object> out;
  for (json::object& p : k.api.list("pods", "team-a"))
    if (str_at(p, {"metadata", "annotations", "gpuq.io/job-id"}) == job) out.push_back(std::move(p));
  return out;
}

std::string env_of(const json::object& pod, const std::string& name) {
  for (const json::value& e : pod.at("spec").at("containers").at(0).at("env").as_array())
    if (str_at(e.as_object(), {"name"}) == name) return str_at(e.as_object(), {"value"});
  return "<unset>";
}

// Two 8-GPU nodes, namespace team-a granted as the README says, gpuqd with `queues`.
struct SubmitCluster : KubeCluster {
  explicit SubmitCluster(const char* queues, const std::string& extra = "") : KubeCluster(2, 8) {
    grant_queue_namespace(*this, "team-a");
    start(queues, extra);
    synced();
  }
  // Until gpuqd has listed the nodes and pods a submission is refused UNAVAILABLE, saying so;
  // its log says when it has.
  void synced() {
    REQUIRE(eventually([&] {
      return slurp(dir.path / "state.out").find("event=source_synced") != std::string::npos;
    }));
  }
};

// The job's state as `gpuq show` prints it ("State: Running").
bool in_state(KubeCluster& k, const std::string& job, const std::string& state) {
  return k.gpuq("show " + job).find(state) != std::string::npos;
}

}  // namespace

TEST_CASE("gpuq submit on Kubernetes: a job's pod, its exit code, a gang's ranks, a cancel, refusals") {
  SubmitCluster k(kQueues);

  // One pod: the template's, bound where gpuq placed it (the template's node selector), the
  // submitter's command; --wait returns its exit code.
  auto [code, out] = k.gpuq_status("submit --id one --queue team-a --gpus 1 --image busybox --wait -- "
                                    "sh -c 'echo hello from $GPUQ_JOB_ID; exit 3'");
  CHECK_MESSAGE(code == 3, out);
  auto pods = pods_of(k, "one");
  REQUIRE_MESSAGE(pods.size() == 1, k.gpuq("show one"));
  const json::object& pod = pods.front();
  CHECK(str_at(pod, {"spec", "nodeName"}) == "node-1");
  CHECK(str_at(pod, {"spec", "serviceAccountName"}) == "trainer");
  CHECK(str_at(pod, {"metadata", "labels", "team"}) == "a");
  CHECK(str_at(pod, {"metadata", "labels", "gpuq.io/job"}) == "one");
  CHECK(env_of(pod, "FROM_TEMPLATE") == "yes");
  CHECK(env_of(pod, "GPUQ_POD_COUNT") == "1");
  CHECK(pod.at("spec").at("containers").at(0).at("resources").at("limits").at("nvidia.com/gpu") == "1");
  CHECK(str_at(pod, {"status", "phase"}) == "Failed");
  const std::string shown = k.gpuq("show one");
  CHECK_MESSAGE(shown.find("Failed") != std::string::npos, shown);
  CHECK_MESSAGE(shown.find("exit code 3") != std::string::npos, shown);

  // A gang of 4: ranks, the count and the first pod's address; a headless Service its pods own.
  std::tie(code, out) = k.gpuq_status("submit --id gang --queue team-a --gpus 2 --replicas 4 --wait -- "
                                       "sh -c 'echo rank $RANK of $WORLD_SIZE'");
  CHECK_MESSAGE(code == 0, out);
  pods = pods_of(k, "gang");
  REQUIRE(pods.size() == 4);
  std::set<std::string> ranks;
  for (const json::object& p : pods) {
    ranks.insert(env_of(p, "RANK"));
    CHECK(env_of(p, "WORLD_SIZE") == "4");
    CHECK(env_of(p, "MASTER_ADDR").find("-0.") != std::string::npos);
    CHECK(p.at("spec").at("containers").at(0).at("image") == "registry.local/train:1");  // the queue's default
  }
  CHECK(ranks == std::set<std::string>{"0", "1", "2", "3"});
  const std::string service = str_at(pods.front(), {"spec", "subdomain"});
  auto svc = k.api.get("services", "team-a", service);
  REQUIRE_MESSAGE(svc.has_value(), service);
  CHECK(svc->at("spec").at("clusterIP") == "None");
  CHECK(svc->at("metadata").at("ownerReferences").as_array().size() == 4);
  // Each pod's output through the API server (pods/log).
  std::tie(code, out) = k.gpuq_status("logs gang --pod 2");
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(out == "rank 2 of 4\n", out);
  std::tie(code, out) = k.gpuq_status("logs gang --all");
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(out == "[0] rank 0 of 4\n[1] rank 1 of 4\n[2] rank 2 of 4\n[3] rank 3 of 4\n", out);

  // logs -f while the pod writes: it ends with the pod, with every line.
  std::tie(code, out) = k.gpuq_status("submit --id talk --queue team-a --gpus 1 -- "
                                       "sh -c 'for i in 1 2 3 4 5; do echo line $i; sleep 0.4; done'");
  REQUIRE_MESSAGE(code == 0, out);
  std::tie(code, out) = k.gpuq_status("logs -f talk");
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(out == "line 1\nline 2\nline 3\nline 4\nline 5\n", out);
  CHECK(eventually([&] { return in_state(k, "talk", "Succeeded"); }));

  // Half a GPU: held by a reservation pod, the pod told which GPU (NVIDIA_VISIBLE_DEVICES from
  // its gpuq.io/gpu-device annotation), no nvidia.com/gpu asked; the reservation pod goes with it.
  std::tie(code, out) = k.gpuq_status("submit --id half --queue team-a --gpus 0.5 --wait -- "
                                       "sh -c 'echo gpu $NVIDIA_VISIBLE_DEVICES'");
  CHECK_MESSAGE(code == 0, out);
  pods = pods_of(k, "half");
  REQUIRE(pods.size() == 1);
  const std::string device = str_at(pods.front(), {"metadata", "annotations", "gpuq.io/gpu-device"});
  CHECK_MESSAGE(device.rfind("GPU-", 0) == 0, device);
  CHECK(str_at(pods.front(), {"metadata", "annotations", "gpuq.io/gpu-milli"}) == "500");
  CHECK(str_at(pods.front().at("spec").at("containers").at(0).as_object(), {"resources", "limits", "nvidia.com/gpu"}).empty());
  std::tie(code, out) = k.gpuq_status("logs half");
  CHECK_MESSAGE(out == "gpu " + device + "\n", out);
  CHECK(eventually([&] {
    for (const json::object& p : k.api.list("pods", "gpuq-system"))
      if (!str_at(p, {"metadata", "labels", "gpuq.io/reservation"}).empty()) return false;
    return true;
  }));

  // A cancel while it runs deletes its pod; the job ends Cancelled.
  std::tie(code, out) = k.gpuq_status("submit --id long --queue team-a --gpus 1 -- sleep 600");
  REQUIRE_MESSAGE(code == 0, out);
  REQUIRE(eventually([&] { return k.gpuq("show long").find("Running") != std::string::npos; }));
  // gpuq show names its pod and the node.
  const std::string long_pod = str_at(pods_of(k, "long").at(0), {"metadata", "name"});
  CHECK_MESSAGE(k.gpuq("show long").find("on node-1 gpus [") != std::string::npos, k.gpuq("show long"));
  CHECK_MESSAGE(k.gpuq("show long").find("pod team-a/" + long_pod) != std::string::npos, k.gpuq("show long"));
  std::tie(code, out) = k.gpuq_status("cancel long");
  CHECK_MESSAGE(code == 0, out);
  CHECK(eventually([&] { return k.gpuq("show long").find("Cancelled") != std::string::npos; }));
  CHECK(eventually([&] { return pods_of(k, "long").empty(); }));

  // Refused at submit, naming the field; nothing made.
  std::tie(code, out) = k.gpuq_status("submit --queue team-a --gpus 1 --image evil.example/miner -- true");
  CHECK(code != 0);
  CHECK_MESSAGE(out.find("spec.image: \"evil.example/miner\" is not allowed in queue \"team-a\"") != std::string::npos, out);
  std::tie(code, out) = k.gpuq_status("submit --queue bare --gpus 1 --image busybox -- true");
  CHECK(code != 0);
  CHECK_MESSAGE(out.find("has no kubernetes.namespace") != std::string::npos, out);
  std::tie(code, out) = k.gpuq_status("submit --queue ghost --gpus 1 -- true");  // its pods' account is missing
  CHECK(code != 0);
  CHECK_MESSAGE(out.find("queue \"ghost\"'s pods are refused by the API server") != std::string::npos, out);
  CHECK_MESSAGE(out.find("nobody-here") != std::string::npos, out);
  std::tie(code, out) = k.gpuq_status("submit --queue elsewhere --gpus 1 -- true");
  CHECK(code != 0);
  CHECK_MESSAGE(out.find("\"no-such-namespace\" does not exist in the cluster") != std::string::npos, out);
  std::tie(code, out) = k.gpuq_status("submit --queue team-a --gpus 1.5 -- true");
  CHECK(code != 0);
  CHECK_MESSAGE(out.find("a share of one GPU (below 1) or whole GPUs") != std::string::npos, out);
  CHECK(k.gpuq("ls -a").find("ghost") == std::string::npos);  // nothing kept of a refusal
  CHECK(k.api.list("pods", "team-a").size() == 7);  // one, the gang's four, talk, half; long's is gone

  // One write per pod to start it: gpuqd created each pod once (and the gang's Service).
  std::size_t creates = 0;
  for (const auto& r : k.api.requests())
    if (r.method == "POST" && r.path == "/api/v1/namespaces/team-a/pods" && r.query.find("dryRun") == std::string::npos &&
        r.user == "system:serviceaccount:gpuq-system:gpuq")
      ++creates;
  CHECK(creates == 8);
  // gpuq run with its input from a file (ending in ^D): the pod's terminal is attached.
  std::ofstream(k.dir.path / "typed") << "a\nb\n";
  std::tie(code, out) = k.gpuq_status("run --id piped -q team-a --gpus 1 --image busybox -- sh -c 'cat; echo done' < " +
                                       (k.dir.path / "typed").string());
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(out.find("done") != std::string::npos, out);
  CHECK_MESSAGE(out.find("a\r\nb\r\n") != std::string::npos, out);  // through the pod's terminal
  check_grant_used(k, "team-a");
  k.check_invariants();
}

namespace {

const char* kBatchQueues =
    "  - name: batch\n"
    "    quotas: [{flavor: default, resources: {gpu: {nominal: 16}}}]\n"
    "    preemption: {withinQueue: LowerPriority}\n"
    "    kubernetes: {namespace: team-a, defaultImage: busybox}\n";

std::size_t live_pods(KubeCluster& k, const std::string& label_value) {
  std::size_t n = 0;
  for (const json::object& p : k.api.list("pods", "team-a")) {
    const std::string phase = str_at(p, {"status", "phase"});
    if (str_at(p, {"metadata", "labels", "gpuq.io/job"}).rfind(label_value, 0) == 0 && phase != "Succeeded" &&
        phase != "Failed")
      ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("gpuq submit on Kubernetes: an array with a throttle, a dependency, a retry, the max runtime, preemption, "
          "notifications, a restart") {
  HttpReceiver hook;  // the jobs' notification hook
  const std::string hook_url = "http://127.0.0.1:" + std::to_string(hook.port()) + "/";
  SubmitCluster k(kBatchQueues, "notifications: {allowedUrls: [\"" + hook_url + "\"]}\n");

  // An array of 20, at most 4 at once: one job's pod per index, each told its index.
  auto [code, out] = k.gpuq_status("submit --id sweep --array 0-19%4 --queue batch --gpus 1 -- "
                                    "sh -c 'sleep 0.3; echo index $GPUQ_ARRAY_INDEX'");
  REQUIRE_MESSAGE(code == 0, out);
  std::size_t most = 0;
  REQUIRE(eventually(
      [&] {
        most = std::max(most, live_pods(k, "sweep"));
        std::size_t done = 0;
        for (const json::object& p : k.api.list("pods", "team-a"))
          if (str_at(p, {"metadata", "labels", "gpuq.io/job"}).rfind("sweep", 0) == 0 &&
              str_at(p, {"status", "phase"}) == "Succeeded")
            ++done;
        return done == 20;
      },
      std::chrono::seconds(90)));
  CHECK(most <= 4);
  CHECK(most >= 1);
  CHECK(env_of(pods_of(k, "sweep_7").at(0), "GPUQ_ARRAY_INDEX") == "7");

  // A dependency: b starts once a succeeded.
  std::tie(code, out) = k.gpuq_status("submit --id a --queue batch --gpus 1 -- sleep 1");
  REQUIRE(code == 0);
  std::tie(code, out) = k.gpuq_status("submit --id b --after-ok a --queue batch --gpus 1 --wait -- true");
  CHECK_MESSAGE(code == 0, out);
  REQUIRE(pods_of(k, "a").size() == 1);
  REQUIRE(pods_of(k, "b").size() == 1);
  CHECK(str_at(pods_of(k, "a").front(), {"status", "phase"}) == "Succeeded");

  // A hold: no pod while it is held; released, it runs.
  std::tie(code, out) = k.gpuq_status("submit --id held --hold --queue batch --gpus 1 -- true");
  REQUIRE_MESSAGE(code == 0, out);
  CHECK_MESSAGE(out.find("Held") != std::string::npos, out);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(pods_of(k, "held").empty());
  // update: a held job's priority.
  std::tie(code, out) = k.gpuq_status("update held --priority 7");
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(k.gpuq("show held").find("Priority:    7") != std::string::npos, k.gpuq("show held"));
  std::tie(code, out) = k.gpuq_status("release held");
  CHECK_MESSAGE(code == 0, out);
  CHECK(eventually([&] { return in_state(k, "held", "Succeeded"); }));
  CHECK(pods_of(k, "held").size() == 1);

  // A retry after a failing exit code: new pods (a new run), and the second run succeeds.
  const std::string mark = (k.dir.path / "tried").string();
  std::filesystem::permissions(k.dir.path, std::filesystem::perms::all);  // the simulated kubelet runs containers as nobody
  std::tie(code, out) = k.gpuq_status("submit --id flaky --retries 1 --queue batch --gpus 1 --wait -- sh -c "
                                       "'if [ -e " + mark + " ]; then exit 0; fi; touch " + mark + "; exit 5'");
  CHECK_MESSAGE(code == 0, out);
  auto flaky = pods_of(k, "flaky");
  REQUIRE(flaky.size() == 2);
  CHECK(str_at(flaky[0], {"metadata", "labels", "gpuq.io/run"}) != str_at(flaky[1], {"metadata", "labels", "gpuq.io/run"}));

  // The max runtime: its pod is deleted at the limit and the job fails saying so.
  // Its hook is told when its pod runs and when it fails.
  std::tie(code, out) = k.gpuq_status("submit --id slow --max-runtime 2 --grace-period 1 --queue batch --gpus 1 --wait "
                                       "--notify " + hook_url + "slow --notify-on started,failed -- sleep 600");
  CHECK(code != 0);
  CHECK_MESSAGE(k.gpuq("show slow").find("max runtime of 2 s exceeded") != std::string::npos, k.gpuq("show slow"));
  CHECK(eventually([&] { return pods_of(k, "slow").empty(); }));
  auto told = hook.got(2);
  REQUIRE(told.size() == 2);
  CHECK(told[0].first == "/slow");
  CHECK(json::parse(told[0].second).at("event").as_string() == "started");
  CHECK(json::parse(told[0].second).at("state").as_string() == "Running");
  CHECK(json::parse(told[1].second).at("event").as_string() == "failed");
  CHECK_MESSAGE(std::string(json::parse(told[1].second).at("reason").as_string()).find("max runtime") != std::string::npos,
                told[1].second);

  // Preemption: a high-priority job takes the GPUs of a low one, whose pods are evicted; the low
  // one is queued again and runs later on new pods.
  std::tie(code, out) = k.gpuq_status("submit --id low --queue batch --gpus 8 --replicas 2 --grace-period 1 --notify " +
                                       hook_url + "low --notify-on preempted -- sleep 600");
  REQUIRE(code == 0);
  REQUIRE(eventually([&] { return in_state(k, "low", "Running"); }));
  const std::string first_run = str_at(pods_of(k, "low").at(0), {"metadata", "labels", "gpuq.io/run"});
  std::tie(code, out) = k.gpuq_status("submit --id high --priority 100 --queue batch --gpus 8 --replicas 2 -- sleep 3");
  REQUIRE(code == 0);
  CHECK(eventually([&] { return in_state(k, "high", "Running"); }, std::chrono::seconds(60)));
  CHECK(eventually([&] { return in_state(k, "high", "Succeeded"); }, std::chrono::seconds(60)));
  CHECK(eventually([&] { return in_state(k, "low", "Running"); }, std::chrono::seconds(60)));
  // Its evicted pods are gone (an eviction deletes them); its pods now are a new run's.
  std::set<std::string> runs;
  for (const json::object& p : pods_of(k, "low")) runs.insert(str_at(p, {"metadata", "labels", "gpuq.io/run"}));
  CHECK(runs.size() == 1);
  CHECK(runs.count(first_run) == 0);
  bool evicted = false;
  for (const auto& r : k.api.requests())
    if (r.method == "POST" && r.path.find("/pods/low-") != std::string::npos && r.path.ends_with("/eviction")) evicted = true;
  CHECK(evicted);
  told = hook.got(3);  // its hook was told of the preemption
  REQUIRE(told.size() == 3);
  CHECK(told[2].first == "/low");
  CHECK(json::parse(told[2].second).at("event").as_string() == "preempted");

  // A restart (SIGKILL) with the same state file: the running job is found again by its pods,
  // and a cancel still reaches them.
  k.kill_gpuqd();
  k.start(kBatchQueues);
  std::tie(code, out) = k.gpuq_status("submit --queue batch --gpus 1 -- true");  // it may be listing still
  CHECK_MESSAGE((code == 0 || out.find("is still listing the cluster's nodes and pods") != std::string::npos), out);
  // Until gpuqd has listed the pods it says the job is being restored; then the cancel goes.
  REQUIRE(eventually([&] { return (out = k.gpuq_status("cancel low").second).find("is being restored") == std::string::npos; }));
  CHECK_MESSAGE(out.find("cancel") != std::string::npos, out);
  CHECK(eventually([&] { return in_state(k, "low", "Cancelled"); }));
  CHECK(eventually([&] { return live_pods(k, "low") == 0; }));
  k.check_invariants();
}

TEST_CASE("gpuq submit on Kubernetes: a finished job's pods are deleted after finishedPodTTL") {
  SubmitCluster k(kBatchQueues, "  finishedPodTTL: 2s\n");
  auto [code, out] = k.gpuq_status("submit --id brief --queue batch --gpus 1 --wait -- echo done");
  REQUIRE_MESSAGE(code == 0, out);
  CHECK(pods_of(k, "brief").size() == 1);  // kept for its log a while
  std::tie(code, out) = k.gpuq_status("logs brief");
  CHECK_MESSAGE(out == "done\n", out);
  CHECK(eventually([&] { return pods_of(k, "brief").empty(); }));

  // A job that ended just before gpuqd stopped: its pods go finishedPodTTL after it is back.
  std::tie(code, out) = k.gpuq_status("submit --id before --queue batch --gpus 1 --wait -- true");
  REQUIRE_MESSAGE(code == 0, out);
  k.kill_gpuqd();
  CHECK(pods_of(k, "before").size() == 1);
  k.start(kBatchQueues, "  finishedPodTTL: 2s\n");
  k.synced();
  CHECK(eventually([&] { return pods_of(k, "before").empty(); }));
  k.check_invariants();
}

TEST_CASE("gpuq run on Kubernetes: the pod's terminal attached through the API server, its input, Ctrl-C, its exit code") {
  SubmitCluster k(kBatchQueues);
  // script(1) gives gpuq a terminal; what is piped into script is typed into it, and reaches the
  // pod's terminal through pods/attach; its output comes back through pods/log.
  const std::string gpuq = std::string(GPUQ_CLI_PATH) + " --server " + k.gpuqd.address;
  auto [code, out] = run_command("printf 'hello\\n' | script -qec \"" + gpuq +
                           " run --id term -q batch --gpus 1 -- sh -c 'tty; read x; echo got:\\$x; exit 7'\" /dev/null");
  CHECK_MESSAGE(code == 7, out);
  CHECK_MESSAGE(out.find("got:hello") != std::string::npos, out);
  CHECK_MESSAGE(out.find("/dev/pts/") != std::string::npos, out);  // the pod's own terminal
  CHECK_MESSAGE(out.find("Failed: pod team-a/") != std::string::npos, out);
  const std::vector<json::object> term = pods_of(k, "term");
  REQUIRE(term.size() == 1);
  const json::object& container = term.front().at("spec").at("containers").at(0).as_object();
  CHECK(container.at("stdin").as_bool());
  CHECK(container.at("tty").as_bool());
  // Ctrl-C, typed once the job runs, interrupts it on its terminal.
  std::tie(code, out) = run_command("(sleep 3; printf '\\003') | script -qec \"" + gpuq +
                              " run -q batch --gpus 1 -- sh -c 'echo started; sleep 60'\" /dev/null");
  CHECK_MESSAGE(out.find("started") != std::string::npos, out);
  CHECK_MESSAGE(code == 130, out);  // 128 + SIGINT, as the container's exit code says it
  // Refused: a terminal is one pod.
  std::tie(code, out) = k.gpuq_status("run -q batch --gpus 1 --replicas 2 -- true");
  CHECK(code != 0);
  CHECK_MESSAGE(out.find("spec.tty: a job on a terminal is one pod, not 2 pods") != std::string::npos, out);
  k.check_invariants();
}
