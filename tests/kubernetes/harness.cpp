#include "tests/kubernetes/harness.hpp"

#include "spec/yaml.hpp"
#include "spec/yaml_json.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>

namespace gpuq::test {

namespace {

std::mutex logs_mu;
std::string kept_logs;  // the current test case's gpuqd logs

// Prints the kept logs at the end of a test case that failed (a CHECK, a REQUIRE or an exception).
struct LogsOnFailure : doctest::IReporter {
  explicit LogsOnFailure(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& st) override {
    std::lock_guard lock(logs_mu);
    if ((st.failure_flags != 0 || st.numAssertsFailedCurrentTest > 0) && !kept_logs.empty()) {
      std::fputs(kept_logs.c_str(), stderr);
      std::fflush(stderr);
    }
    kept_logs.clear();
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

std::int64_t gpus_of(const json::object& pod) {
  std::int64_t n = 0;
  const json::value* cs = pod.at("spec").as_object().if_contains("containers");
  if (cs == nullptr) return 0;
  for (const json::value& c : cs->as_array()) {
    const std::string g = str_at(c.as_object(), {"resources", "limits", "nvidia.com/gpu"});
    if (!g.empty()) n += std::stoll(g);
  }
  return n;
}

}  // namespace

void keep_logs_for_failure(const std::filesystem::path& dir, const std::vector<std::string>& also) {
  constexpr std::size_t kTail = 64 * 1024;  // of each file
  std::error_code ec;
  std::string text;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string ext = entry.path().extension().string();
    const std::string name = entry.path().filename().string();
    if (ext != ".out" && ext != ".err" && std::find(also.begin(), also.end(), name) == also.end()) continue;
    std::string body = slurp(entry.path());
    if (body.empty()) continue;
    if (body.size() > kTail) body = "[...]" + body.substr(body.size() - kTail);
    text += "---- " + entry.path().filename().string() + " ----\n" + body;
    if (!body.ends_with('\n')) text += '\n';
  }
  std::lock_guard lock(logs_mu);
  kept_logs += text;
}

void KubeCluster::install_crd(const std::string& file, const std::string& served) {
  if (api.kind() != "real") return;  // the fake serves these kinds without CRDs (tests/kubefake)
  for (const spec::yaml::Document& doc : spec::yaml::parse_stream(slurp(file))) {
    if (!doc.root().is_map()) continue;
    const ApiResponse r = api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", spec::to_json(doc.root()));
    REQUIRE_MESSAGE(r.status == 201, r.body);
  }
  // Served, and listed in its group-version's discovery document, which gpuqd reads at start to
  // know which kinds to watch: the API server updates that document a moment after it serves
  // the kind.
  const std::size_t slash = served.rfind('/');
  const std::string listed = "\"name\":\"" + served.substr(slash + 1) + "\"";
  REQUIRE(eventually(
      [&] {
        if (api.request("GET", served).status != 200) return false;
        const ApiResponse d = api.request("GET", served.substr(0, slash));
        return d.status == 200 && d.body.find(listed) != std::string::npos;
      },
      std::chrono::seconds(60)));
}

void KubeCluster::install_queue_crd() {
  queue_objects_ = true;
  install_crd(std::string(GPUQ_DEPLOY_DIR) + "/crd-queue.yaml", "/apis/gpuq.io/v1alpha1/queues");
}

void KubeCluster::install_podgroup_crds() {
#ifdef GPUQ_ECOSYSTEM_CRDS
  install_crd(std::string(GPUQ_ECOSYSTEM_CRDS) + "/scheduler-plugins.yaml", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups");
  install_crd(std::string(GPUQ_TESTS_DIR) + "/kubernetes/crds/volcano-podgroup.yaml",
              "/apis/scheduling.volcano.sh/v1beta1/podgroups");
  install_crd(std::string(GPUQ_ECOSYSTEM_CRDS) + "/jobset.yaml", "/apis/jobset.x-k8s.io/v1alpha2/jobsets");
#else
  REQUIRE_MESSAGE(api.kind() != "real", "this test binary has no GPUQ_ECOSYSTEM_CRDS");
#endif
}

void KubeCluster::ensure_namespace(const std::string& name, json::object annotations) {
  if (!api.get("namespaces", "", name))
    api.create("namespaces", "",
               json::object{{"apiVersion", "v1"}, {"kind", "Namespace"},
                            {"metadata", {{"name", name}, {"annotations", std::move(annotations)}}}});
  api.wait_namespace(name);
}

void KubeCluster::check_invariants() {
  // No node holds more GPUs or pods than it has, counting every pod bound there that runs.
  std::map<std::string, std::int64_t> gpus, pods, gpu_alloc, pod_alloc;
  for (const auto& n : api.list("nodes")) {
    const std::string name = str_at(n, {"metadata", "name"});
    gpu_alloc[name] = std::stoll(str_at(n, {"status", "allocatable", "nvidia.com/gpu"}));
    pod_alloc[name] = std::stoll(str_at(n, {"status", "allocatable", "pods"}));
  }
  std::map<std::string, std::string> scheduler_of;  // namespace/name
  std::map<std::string, std::pair<std::size_t, std::size_t>> groups;  // bound, all
  for (const auto& p : api.list("pods")) {
    const std::string key = str_at(p, {"metadata", "namespace"}) + "/" + str_at(p, {"metadata", "name"});
    scheduler_of[key] = str_at(p, {"spec", "schedulerName"});
    const std::string node = str_at(p, {"spec", "nodeName"});
    const std::string phase = str_at(p, {"status", "phase"});
    const std::string group = str_at(p, {"metadata", "labels", "gpuq.io/pod-group"});
    if (!group.empty() && phase != "Succeeded" && phase != "Failed") {
      auto& g = groups[str_at(p, {"metadata", "namespace"}) + "/" + group];
      ++g.second;
      if (!node.empty()) ++g.first;
    }
    if (node.empty() || phase == "Succeeded" || phase == "Failed") continue;
    gpus[node] += gpus_of(p);
    ++pods[node];
  }
  for (const auto& [node, used] : gpus) {
    CHECK_MESSAGE(used <= gpu_alloc[node], node << " holds " << used << " GPUs of " << gpu_alloc[node]);
    CHECK(pods[node] <= pod_alloc[node]);
  }
  for (const auto& [group, g] : groups)
    CHECK_MESSAGE((g.first == 0 || g.first == g.second), "pod group " << group << ": " << g.first << " of " << g.second << " bound");
  // The request log: each pod bound once, victims evicted (no DELETE), and nothing written to a
  // pod of another scheduler.
  std::map<std::string, int> bindings;
  const std::vector<ApiRequest> log = api.requests();
  // With deploy/kubernetes's roles gpuqd is refused nothing for good (on the real cluster RBAC
  // decides; the fake refuses only where a scenario makes it). A kube-apiserver that has just
  // started refuses requests 403 until its authorizer has read the roles (seen when a scenario
  // restarts it): such a refusal is a failure only when the same call never went through later.
  // Nor is a write into a namespace being deleted (NamespaceLifecycle answers 403 there; gpuqd
  // cannot know before it tries, e.g. an Event for a pod of that namespace).
  if (api.kind() == "real") {
    std::map<std::string, std::size_t> last_ok;  // "METHOD path" -> its last 2xx
    for (std::size_t i = 0; i < log.size(); ++i)
      if (log[i].status >= 200 && log[i].status < 300) last_ok[log[i].method + " " + log[i].path] = i;
    for (std::size_t i = 0; i < log.size(); ++i) {
      const ApiRequest& r = log[i];
      if (r.user_agent.rfind("gpuqd", 0) != 0 || r.status != 403) continue;
      if (r.message.find("because it is being terminated") != std::string::npos) continue;
      // A dry run asks whether a pod would be admitted (a submitted job's template, checked at
      // submit): a 403 from admission (its service account is missing) is the answer asked for.
      if (r.query.find("dryRun=All") != std::string::npos) continue;
      const auto ok = last_ok.find(r.method + " " + r.path);
      CHECK_MESSAGE((ok != last_ok.end() && ok->second > i),
                    "gpuqd was forbidden " << r.method << " " << r.path << "?" << r.query);
    }
  }
  // Namespaces where gpuqd made pods of its own (jobs submitted through its API).
  std::set<std::string> made_in;
  for (const ApiRequest& r : log)
    if (r.user_agent.rfind("gpuqd", 0) == 0 && r.method == "POST" && r.path.ends_with("/pods") && r.status / 100 == 2)
      made_in.insert(r.path);
  for (const ApiRequest& r : log) {
    if (r.user_agent.rfind("gpuqd", 0) != 0) continue;
    if (r.method == "GET") continue;
    // What gpuqd deletes: its own reservation pods (fractional GPUs), when unused, and pods it
    // made for submitted jobs (a cancel, the max runtime); never a pod a user made.
    if (r.method == "DELETE") {
      const bool reservation = r.path.rfind("/api/v1/namespaces/gpuq-system/pods/gpuq-share-", 0) == 0;
      const bool made = made_in.count(r.path.substr(0, r.path.rfind('/'))) > 0 &&
                        user_pods_.count(r.path) == 0;
      CHECK_MESSAGE((reservation || made), "gpuqd deleted " << r.path);
    }
    const auto pods_at = r.path.find("/pods/");
    if (pods_at == std::string::npos) continue;
    const std::string ns = r.path.substr(std::string("/api/v1/namespaces/").size(),
                                         r.path.find('/', std::string("/api/v1/namespaces/").size()) -
                                             std::string("/api/v1/namespaces/").size());
    std::string rest = r.path.substr(pods_at + 6);
    const std::string name = rest.substr(0, rest.find('/'));
    const std::string key = ns + "/" + name;
    if (scheduler_of.count(key) > 0) CHECK_MESSAGE(scheduler_of[key] == "gpuq", "gpuqd wrote to " << key);
    if (rest.find("/binding") != std::string::npos && r.status >= 200 && r.status < 300) ++bindings[key];
  }
  for (const auto& [pod, n] : bindings) CHECK_MESSAGE(n == 1, pod << " bound " << n << " times");
}

}  // namespace gpuq::test

DOCTEST_REGISTER_LISTENER("gpuqd_logs_on_failure", 1, gpuq::test::LogsOnFailure);
