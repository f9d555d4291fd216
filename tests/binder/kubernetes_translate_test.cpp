// Pods and nodes into specs (binder/kubernetes/translate.hpp): job ids, queues, pod groups,
// pod sets of equal pods, and what gpuq may use of a node.
#include <doctest/doctest.h>

#include "binder/kubernetes/translate.hpp"

using namespace gpuq;
using namespace gpuq::binder::k8s;

namespace {

PodInfo pod(const std::string& name, Quantity gpu_milli, std::map<std::string, std::string> labels = {}) {
  PodInfo p;
  p.ns = "ml";
  p.name = name;
  p.uid = "3F2A19c0-0000-4000-8000-000000000000";
  p.labels = std::move(labels);
  p.request[kGpu] = gpu_milli;
  p.request[kCpu] = 1000;
  return p;
}

}  // namespace

TEST_CASE("job ids: namespace, name and the uid's first hex digits, at most 63 characters") {
  CHECK(job_id_of("ml", "train-0", "3F2A19c0-0000") == "ml.train-0-3f2a1");
  const std::string id = job_id_of("team", std::string(80, 'x'), "abcdef");
  CHECK(id.size() <= 63);
  CHECK(id.rfind("team.xxx", 0) == 0);
  CHECK(id.substr(id.size() - 6) == "-abcde");
  CHECK(job_id_of("ml", "a", "") == "ml.a-00000");
  // A name cut at a '-' or '.' does not leave one before the suffix.
  const std::string cut = job_id_of("n", std::string(55, 'a') + "-b", "12345");
  CHECK(cut.find("--") == std::string::npos);
}

TEST_CASE("a pod's queue: its label, Kueue's label, its namespace's default, else why not") {
  std::string why;
  CHECK(queue_of(pod("a", 0, {{"gpuq.io/queue", "vision"}, {"kueue.x-k8s.io/queue-name", "k"}}), "d", why) == "vision");
  CHECK(queue_of(pod("a", 0, {{"kueue.x-k8s.io/queue-name", "k"}}), "d", why) == "k");
  CHECK(queue_of(pod("a", 0), "d", why) == "d");
  CHECK_FALSE(queue_of(pod("a", 0), "", why).has_value());
  CHECK(why.find("label the pod gpuq.io/queue=QUEUE") != std::string::npos);
  CHECK(why.find("annotate namespace ml with gpuq.io/default-queue=QUEUE") != std::string::npos);
}

TEST_CASE("pod groups: the name and size, and a clear word for a bad size") {
  std::string why;
  const PodGroupSizes none;
  CHECK_FALSE(group_of(pod("a", 0), none, why).has_value());
  PodInfo p = pod("a", 0, {{"gpuq.io/pod-group", "g"}});
  auto g = group_of(p, none, why);
  REQUIRE(g.has_value());
  CHECK(g->size == 0);
  CHECK(why.find("gpuq.io/pod-group-size is missing") != std::string::npos);
  p.annotations["gpuq.io/pod-group-size"] = "4";
  CHECK(group_of(p, none, why)->size == 4);
  CHECK(group_of(p, none, why)->key == "g");
  for (const char* bad : {"0", "-1", "four", "10001", "4x"}) {
    p.annotations["gpuq.io/pod-group-size"] = bad;
    CHECK(group_of(p, none, why)->size == 0);
    CHECK(why.find("use a number of pods from 1 to 10000") != std::string::npos);
  }
}

TEST_CASE("pod groups as the ecosystem declares them: Kueue, LeaderWorkerSet, PodGroup objects; disagreements") {
  std::string why;
  PodGroupSizes podgroups;
  // Kueue's pod group: its label and total count.
  PodInfo k = pod("k-0", 0, {{"kueue.x-k8s.io/pod-group-name", "train"}});
  k.annotations["kueue.x-k8s.io/pod-group-total-count"] = "3";
  auto g = group_of(k, podgroups, why);
  REQUIRE(g.has_value());
  CHECK(g->name == "train");
  CHECK(g->key == "kueue:train");
  CHECK(g->size == 3);
  CHECK_FALSE(g->at_least);
  // A LeaderWorkerSet's group: its name and group index, its size annotation.
  PodInfo l = pod("lws-1-2", 0, {{"leaderworkerset.sigs.k8s.io/name", "lws"}, {"leaderworkerset.sigs.k8s.io/group-index", "1"}});
  l.annotations["leaderworkerset.sigs.k8s.io/size"] = "4";
  g = group_of(l, podgroups, why);
  CHECK(g->name == "lws-1");
  CHECK(g->size == 4);
  // scheduler-plugins' PodGroup: waits for its object, then minMember (at least).
  PodInfo c = pod("c-0", 0, {{"scheduling.x-k8s.io/pod-group", "pg"}});
  g = group_of(c, podgroups, why);
  CHECK(g->size == 0);
  CHECK(why.find("pod group pg waits for its PodGroup object (scheduling.x-k8s.io) in namespace ml") != std::string::npos);
  podgroups["scheduling.x-k8s.io/ml/pg"] = 2;
  g = group_of(c, podgroups, why);
  CHECK(g->size == 2);
  CHECK(g->at_least);
  CHECK(g->podgroup == "scheduling.x-k8s.io/ml/pg");
  // Volcano's group annotation and PodGroup.
  PodInfo v = pod("v-0", 0);
  v.annotations["scheduling.k8s.io/group-name"] = "vj";
  podgroups["scheduling.volcano.sh/ml/vj"] = 5;
  g = group_of(v, podgroups, why);
  CHECK(g->key == "scheduling.volcano.sh:vj");
  CHECK(g->size == 5);
  podgroups["scheduling.volcano.sh/ml/vj"] = 0;
  CHECK(group_of(v, podgroups, why)->size == 0);
  CHECK(why.find("minMember 0 is not allowed") != std::string::npos);
  // A JobSet's pods: all of them, once the JobSet is seen.
  PodInfo j = pod("js-workers-0-1", 0, {{"jobset.sigs.k8s.io/jobset-name", "js"}});
  CHECK(group_of(j, podgroups, why)->size == 0);
  CHECK(why.find("pod group js waits for its JobSet object (jobset.x-k8s.io) in namespace ml") != std::string::npos);
  podgroups["jobset.x-k8s.io/ml/js"] = 3;
  g = group_of(j, podgroups, why);
  CHECK(g->size == 3);
  CHECK_FALSE(g->at_least);
  // JobSets not watched (their CRD not served when gpuqd started): the pod waits, saying why.
  CHECK(group_of(j, podgroups, why, {"jobset.x-k8s.io"})->size == 0);
  CHECK(why == "pod group js waits for its JobSet object (jobset.x-k8s.io) in namespace ml, but gpuqd does not "
               "watch JobSets: the API server did not serve jobset.x-k8s.io when gpuqd started; restart gpuqd once "
               "its CRD is installed");
  CHECK(group_of(j, podgroups, why, {"scheduling.volcano.sh"})->size == 3);
  // Two declarations that agree make one group; that disagree, none, saying which.
  c.labels["gpuq.io/pod-group"] = "pg";
  c.annotations["gpuq.io/pod-group-size"] = "2";
  g = group_of(c, podgroups, why);
  CHECK(g->size == 2);
  c.annotations["gpuq.io/pod-group-size"] = "3";
  g = group_of(c, podgroups, why);
  CHECK(g->size == 0);
  CHECK(why == "pod group declarations disagree: gpuq.io/pod-group-size says 3 pods, PodGroup scheduling.x-k8s.io "
               "ml/pg says 2; gpuq places the pod once they agree");
}

TEST_CASE("a job of pods: equal pods share a pod set, in a stable order; the highest priority") {
  PodInfo a = pod("w-0", 1000), b = pod("w-1", 1000), c = pod("ps", 0);
  b.priority = 5;
  c.priority = 2;
  c.where.node_selector = {{"zone", "a"}};
  PodInfo d = pod("w-2", 1000);
  d.where.node_selector = {{"zone", "a"}};  // equal resources, other constraints: a set of its own
  TranslateOptions opt;
  opt.pods = 3;
  std::vector<std::string> order;
  Submission s = submission_of({&a, &c, &b, &d}, "ml.g-1", "vision", opt, order);
  CHECK(s.job.id.value == "ml.g-1");
  CHECK(s.job.queue.value == "vision");
  CHECK(s.job.owner == "ml");
  CHECK(s.job.priority == 5);
  REQUIRE(s.job.pod_sets.size() == 3);
  CHECK(s.job.pod_sets[0].count == 2);
  CHECK(s.job.pod_sets[0].per_pod[kGpu] == 1000);
  CHECK(s.job.pod_sets[0].per_pod[3] == 1);  // one "pods"
  CHECK(s.job.pod_sets[1].count == 1);
  CHECK(s.job.pod_sets[1].where->node_selector.at("zone") == "a");
  CHECK(s.job.pod_sets[2].count == 1);
  CHECK(order == std::vector<std::string>{"ml/w-0", "ml/w-1", "ml/ps", "ml/w-2"});
}

TEST_CASE("a node: allocatable less foreign pods, flavor by label, cordoned when unschedulable or not Ready") {
  NodeInfo n;
  n.name = "gpu-1";
  n.ready = true;
  n.allocatable[kGpu] = 8000;
  n.allocatable[kCpu] = 64000;
  n.max_pods = 110;
  n.labels = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}};
  TranslateOptions opt;
  opt.pods = 3;
  ResourceVec foreign;
  foreign[kGpu] = 1500;  // a foreign pod's share takes its whole GPU from gpuq
  foreign[kCpu] = 4000;
  foreign[3] = 2;
  NodeSpec s = node_spec_of(n, foreign, opt);
  CHECK(s.flavor == "NVIDIA-H100-80GB-HBM3");
  CHECK(s.capacity[kGpu] == 6000);
  CHECK(s.capacity[kCpu] == 60000);
  CHECK(s.capacity[3] == 108);
  CHECK(s.state == NodeState::kReady);
  n.labels["gpuq.io/flavor"] = "h100";
  CHECK(node_spec_of(n, {}, opt).flavor == "h100");
  n.labels.clear();
  CHECK(node_spec_of(n, {}, opt).flavor == "default");
  n.unschedulable = true;
  CHECK(node_spec_of(n, {}, opt).state == NodeState::kCordoned);
  n.unschedulable = false;
  n.ready = false;
  CHECK(node_spec_of(n, {}, opt).state == NodeState::kCordoned);
  foreign[kGpu] = 9000;  // more than it has: nothing left, never negative
  CHECK(node_spec_of(n, foreign, opt).capacity[kGpu] == 0);
}
