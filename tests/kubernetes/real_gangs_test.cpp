// Gangs declared the ways the ecosystem declares them (docs/tasks/kubernetes.md, "Gangs"), on the real control
// plane with the objects those projects make: Kueue's pod-group labels, a LeaderWorkerSet's
// group labels, scheduler-plugins' PodGroup (its CRD from its module), Volcano's group
// annotation with its PodGroup, and a JobSet's pods (its CRD from its module). Each gang is
// placed all at once or not at all; a pod whose declarations disagree waits, saying which.
#include "tests/kubernetes/harness.hpp"

using namespace gpuq::test;

namespace {

const char* kGangQueues = "  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 16}}}]\n";

std::size_t gang_bound(KubeCluster& k, const std::vector<std::string>& names) {
  std::size_t n = 0;
  for (const std::string& p : names) n += k.bound(p) ? 1 : 0;
  return n;
}

void delete_gang_pods(KubeCluster& k, const std::vector<std::string>& names) {
  for (const std::string& p : names) k.api.request("DELETE", "/api/v1/namespaces/default/pods/" + p + "?gracePeriodSeconds=0");
  REQUIRE(eventually([&] {
    for (const std::string& p : names)
      if (k.exists(p)) return false;
    return true;
  }));
}

void make_gang_podgroup(KubeCluster& k, const std::string& api_version, const std::string& name, int min_member) {
  const ApiResponse r = k.api.request(
      "POST", "/apis/" + api_version + "/namespaces/default/podgroups",
      R"({"apiVersion":")" + api_version + R"(","kind":"PodGroup","metadata":{"name":")" + name +
          R"("},"spec":{"minMember":)" + std::to_string(min_member) + "}}");
  REQUIRE_MESSAGE(r.status == 201, r.body);
}

// The gang `names`, pod i made as `pod(i)`: all but the last made, none is placed (however long
// gpuqd has had); `before_last` may check more then; the last made, all are placed; then deleted.
void all_or_nothing(KubeCluster& k, const std::vector<std::string>& names, const std::function<PodOptions(std::size_t)>& pod,
                    const std::function<void()>& before_last = {}) {
  for (std::size_t i = 0; i + 1 < names.size(); ++i) k.create(names[i], pod(i));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // long enough for gpuqd to have placed what it would
  CHECK(gang_bound(k, names) == 0);
  if (before_last) before_last();
  k.create(names.back(), pod(names.size() - 1));
  CHECK(eventually([&] { return gang_bound(k, names) == names.size(); }));
  delete_gang_pods(k, names);
}

}  // namespace

TEST_CASE("gangs declared by Kueue's labels, a LeaderWorkerSet, scheduler-plugins' and Volcano's PodGroups, a JobSet: all or nothing") {
  KubeCluster k(2, 8);
  k.install_podgroup_crds();
  k.start(kGangQueues);

  // Kueue's pod group: 3 pods of 4 GPUs; none placed until the third exists.
  all_or_nothing(
      k, {"kg-0", "kg-1", "kg-2"},
      [](std::size_t) {
        return pod_of("team-a", 4).label("kueue.x-k8s.io/pod-group-name", "kg").annotate("kueue.x-k8s.io/pod-group-total-count", "3");
      },
      [&] { CHECK(k.unschedulable("kg-0").find("pod group") != std::string::npos); });

  // A LeaderWorkerSet's group 0 of size 2 (its leader and one worker, as its controller labels them).
  all_or_nothing(k, {"lws-0", "lws-0-1"}, [](std::size_t i) {
    return pod_of("team-a", 8)
        .label("leaderworkerset.sigs.k8s.io/name", "lws")
        .label("leaderworkerset.sigs.k8s.io/group-index", "0")
        .label("leaderworkerset.sigs.k8s.io/worker-index", std::to_string(i))
        .annotate("leaderworkerset.sigs.k8s.io/size", "2");
  });

  // scheduler-plugins' PodGroup: its pods wait for the object, then go as one of minMember 3; a
  // fourth member, beyond minMember, is placed on its own.
  const std::vector<std::string> cos{"pg-0", "pg-1", "pg-2"};
  for (const std::string& p : cos) k.create(p, pod_of("team-a", 4).label("scheduling.x-k8s.io/pod-group", "pg"));
  CHECK(eventually([&] { return k.unschedulable("pg-0").find("waits for its PodGroup object (scheduling.x-k8s.io)") != std::string::npos; }));
  CHECK(gang_bound(k, cos) == 0);
  make_gang_podgroup(k, "scheduling.x-k8s.io/v1alpha1", "pg", 3);
  CHECK(eventually([&] { return gang_bound(k, cos) == 3; }));
  k.create("pg-3", pod_of("team-a", 2).label("scheduling.x-k8s.io/pod-group", "pg"));
  CHECK(eventually([&] { return k.bound("pg-3"); }));
  delete_gang_pods(k, {"pg-0", "pg-1", "pg-2", "pg-3"});
  // Its pods gone (as after an eviction), new members form the group again: three of 8 GPUs
  // together need 24 of the 16 there are, so none is placed (one by one, two would be).
  const std::vector<std::string> again{"pg-4", "pg-5", "pg-6"};
  for (const std::string& p : again) k.create(p, pod_of("team-a", 8).label("scheduling.x-k8s.io/pod-group", "pg"));
  CHECK(eventually([&] { return k.unschedulable("pg-4").find("24") != std::string::npos; }));
  CHECK(gang_bound(k, again) == 0);
  delete_gang_pods(k, again);

  // Volcano's group annotation and PodGroup of minMember 2.
  make_gang_podgroup(k, "scheduling.volcano.sh/v1beta1", "vg", 2);
  all_or_nothing(k, {"vg-0", "vg-1"}, [](std::size_t) { return pod_of("team-a", 8).annotate("scheduling.k8s.io/group-name", "vg"); });

  // A JobSet (its CRD from sigs.k8s.io/jobset): a leader Job of 1 pod and a workers Job of 2
  // pods, as its controller would make them (labelled with the JobSet's name): one gang of 3.
  const ApiResponse js = k.api.request(
      "POST", "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets",
      R"({"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"js"},"spec":{"replicatedJobs":[)"
      R"({"name":"leader","replicas":1,"template":{"spec":{"parallelism":1,"completions":1,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}},)"
      R"({"name":"workers","replicas":1,"template":{"spec":{"parallelism":2,"completions":2,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}]}})");
  REQUIRE_MESSAGE(js.status == 201, js.body);
  all_or_nothing(k, {"js-leader-0-0", "js-workers-0-0", "js-workers-0-1"}, [](std::size_t i) {
    return pod_of("team-a", 4)
        .label("jobset.sigs.k8s.io/jobset-name", "js")
        .label("jobset.sigs.k8s.io/replicatedjob-name", i == 0 ? "leader" : "workers");
  });

  // Two declarations that disagree: the pod waits, saying which.
  k.create("both", pod_of("team-a", 1)
                       .label("gpuq.io/pod-group", "b")
                       .annotate("gpuq.io/pod-group-size", "2")
                       .label("kueue.x-k8s.io/pod-group-name", "b")
                       .annotate("kueue.x-k8s.io/pod-group-total-count", "3"));
  CHECK(eventually([&] {
    return k.unschedulable("both").find("pod group declarations disagree: gpuq.io/pod-group-size says 2 pods, "
                                        "kueue.x-k8s.io/pod-group-total-count says 3") != std::string::npos;
  }));
  CHECK_FALSE(k.bound("both"));
  k.check_invariants();
}
