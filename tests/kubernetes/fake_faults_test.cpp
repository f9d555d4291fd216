// Faults only the fake API server makes on demand (tests/kubefake): 5xx, 403 and 409 on a
// binding, watches dropped without a word, and a compaction that makes every resourceVersion
// handed out too old. The same invariants as every scenario (harness.hpp).
#include "tests/kubefake/server.hpp"
#include "tests/kubernetes/harness.hpp"

using namespace gpuq::test;

TEST_CASE("binding errors, dropped watches and 410 Gone lose nothing and bind nothing twice") {
  KubeCluster k(2, 8);
  k.start("  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 16}}}]\n");
  k.fake().fail_next("POST", "/binding", 500, 2);  // retried by the client
  k.create("a-0", pod_of("team-a", 1));
  REQUIRE(eventually([&] { return k.bound("a-0"); }));
  k.fake().drop_watches();
  k.create("a-1", pod_of("team-a", 1));
  REQUIRE(eventually([&] { return k.bound("a-1"); }));
  k.fake().compact();
  k.fake().drop_watches();
  k.create("a-2", pod_of("team-a", 1));
  k.api.finish_pod("default", "a-0", 0);
  REQUIRE(eventually([&] { return k.bound("a-2"); }));
  // A binding refused outright (403 is not retried) leaves the pod pending, and it is bound on
  // a later attempt.
  k.fake().fail_next("POST", "a-3/binding", 403, 1);
  k.create("a-3", pod_of("team-a", 1));
  REQUIRE(eventually([&] { return k.bound("a-3"); }));
  k.check_invariants();
}

TEST_CASE("a pod group whose member cannot be bound is not left partly bound") {
  KubeCluster k(2, 8);
  k.start("  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 16}}}]\n");
  k.fake().fail_next("POST", "g-1/binding", 403, 1);
  for (int i = 0; i < 3; ++i)
    k.create("g-" + std::to_string(i), pod_of("team-a", 2).label("gpuq.io/pod-group", "g").annotate("gpuq.io/pod-group-size", "3"));
  // Its bound members are evicted (the group's controller would make new pods); what is left is
  // never bound alone.
  REQUIRE(eventually([&] { return !k.exists("g-0") || !k.exists("g-2"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(k.exists("g-1"));
  CHECK_FALSE(k.bound("g-1"));
  k.check_invariants();
}

