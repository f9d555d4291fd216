// Jobs submitted through gpuqd's API on the kubernetes binder (binder/kubernetes/pod_build.hpp):
// the checks and defaults at submission, and the pods made of an admission, as pure functions.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "binder/kubernetes/pod_build.hpp"
#include "storage/store.hpp"

using namespace gpuq;
using namespace gpuq::binder::k8s;
namespace json = boost::json;

namespace {

QueueSpec queue_with(QueueKubernetes k) {
  QueueSpec q;
  q.name = QueueName("team-a");
  q.kubernetes = std::move(k);
  return q;
}

Submission job_of(Quantity gpu_milli, int pods = 1) {
  Submission s;
  s.job.id = JobId("J_7");
  s.job.queue = QueueName("team-a");
  s.job.owner = "ana";
  PodSet set;
  set.name = "main";
  set.count = pods;
  set.per_pod[kGpu] = gpu_milli;
  set.per_pod[kCpu] = 2000;
  s.job.pod_sets.push_back(set);
  s.run.command = {"python", "train.py"};
  return s;
}

std::string env_of(const json::object& pod, const std::string& name) {
  for (const json::value& e : pod.at("spec").at("containers").at(0).at("env").as_array())
    if (e.at("name").as_string() == name) return e.as_object().contains("value") ? std::string(e.at("value").as_string()) : "<from>";
  return "<unset>";
}

}  // namespace

TEST_CASE("prepare_submission: the queue's namespace, the image within allowedImages, whole GPUs or a share") {
  Submission s = job_of(1000);
  auto r = prepare_submission(s, queue_with({}), 0);
  REQUIRE(!r);
  CHECK(r.code() == ErrorCode::kFailedPrecondition);
  CHECK(r.error().find("queue \"team-a\" takes no jobs from the command line on Kubernetes") != std::string::npos);

  QueueKubernetes k{"ml", "", {"nvcr.io/nvidia/"}, ""};
  r = prepare_submission(s, queue_with(k), 0);
  REQUIRE(!r);
  CHECK(r.error().find("spec.image: no image given") != std::string::npos);
  s.run.image = "docker.io/miner";
  r = prepare_submission(s, queue_with(k), 0);
  REQUIRE(!r);
  CHECK(r.error() == "spec.image: \"docker.io/miner\" is not allowed in queue \"team-a\": an image must start with \"nvcr.io/nvidia/\"");

  k.default_image = "nvcr.io/nvidia/pytorch:24.05";
  s = job_of(1000);
  CHECK(prepare_submission(s, queue_with(k), 0));
  CHECK(s.run.image == "nvcr.io/nvidia/pytorch:24.05");  // the default

  s = job_of(1500);
  r = prepare_submission(s, queue_with(k), 0);
  REQUIRE(!r);
  CHECK(r.error().find("1500 milli-GPU") != std::string::npos);
  s = job_of(500);
  CHECK(prepare_submission(s, queue_with(k), 0));  // a share of one GPU
}

TEST_CASE("prepare_submission: the template's node selector and tolerations join every pod set's; each pod takes a pods slot") {
  QueueKubernetes k{"ml", "img", {}, R"({"spec":{"nodeSelector":{"pool":"a100"},"tolerations":[{"key":"gpu","operator":"Exists"}]}})"};
  Submission s = job_of(1000);
  s.job.pod_sets[0].where.mut().node_selector["zone"] = "b";
  const ResourceId pods = 5;
  REQUIRE(prepare_submission(s, queue_with(k), pods));
  const NodeConstraints& w = s.job.pod_sets[0].where;
  CHECK(w.node_selector == std::map<std::string, std::string>{{"pool", "a100"}, {"zone", "b"}});
  REQUIRE(w.tolerations.size() == 1);
  CHECK(w.tolerations[0].key == "gpu");
  CHECK(s.job.pod_sets[0].per_pod[pods] == 1);
}

TEST_CASE("make_pods: the template, gpuq's names and labels, the node, the submitter's container; a gang's ranks and Service") {
  storage::JobRecord rec;
  Submission s = job_of(2000, 2);
  rec.spec = s.job;
  rec.run = s.run;
  rec.run.image = "img:1";
  rec.run.env = {{"LR", "0.1"}, {"GPUQ_JOB_ID", "forged"}};
  rec.run.working_dir = "/home/ana";
  rec.run.working_dir_implicit = true;
  QueueKubernetes k{"ml", "", {}, R"({"metadata":{"labels":{"team":"a"}},"spec":{"serviceAccountName":"trainer",)"
                                  R"("containers":[{"name":"c","volumeMounts":[{"name":"d","mountPath":"/d"}]}]}})"};
  PodInput in{&rec, &k, {PodPlacement{0, "node-3", {0, 1}, 1000}, PodPlacement{0, "node-4", {6, 7}, 1000}}, "gpuq", "abcde"};
  auto made = make_pods(in);
  REQUIRE(made);
  REQUIRE(made->pods.size() == 2);
  const json::object& p0 = made->pods[0];
  CHECK(made->names[0] == name_of_job("J_7") + "-abcde-0");
  CHECK(made->names[0].rfind("j-7-", 0) == 0);  // lowercase, '_' made '-'
  CHECK(p0.at("metadata").at("namespace") == "ml");
  CHECK(p0.at("metadata").at("labels").at("team") == "a");
  CHECK(p0.at("metadata").at("labels").at("gpuq.io/job") == "J_7");
  CHECK(p0.at("metadata").at("annotations").at("gpuq.io/job-id") == "J_7");
  CHECK(p0.at("metadata").at("annotations").at("gpuq.io/owner") == "ana");
  CHECK(p0.at("spec").at("nodeName") == "node-3");
  CHECK(made->pods[1].at("spec").at("nodeName") == "node-4");
  CHECK(p0.at("spec").at("serviceAccountName") == "trainer");
  CHECK(p0.at("spec").at("restartPolicy") == "Never");
  const json::object& c = p0.at("spec").at("containers").at(0).as_object();
  CHECK(c.at("name") == "c");
  CHECK(c.at("image") == "img:1");
  CHECK(c.at("command") == json::array{"python", "train.py"});
  CHECK(c.at("volumeMounts").as_array().size() == 1);
  CHECK(!c.contains("workingDir"));  // only where gpuq submit ran: the image's own applies
  CHECK(c.at("resources").at("limits").at("nvidia.com/gpu") == "2");
  CHECK(c.at("resources").at("requests").at("cpu") == "2000m");
  CHECK(env_of(p0, "GPUQ_JOB_ID") == "J_7");  // the submitter's GPUQ_ names are not passed
  CHECK(env_of(p0, "LR") == "0.1");
  CHECK(env_of(made->pods[1], "RANK") == "1");
  CHECK(env_of(p0, "WORLD_SIZE") == "2");
  CHECK(env_of(p0, "MASTER_ADDR") == made->names[0] + "." + made->service);
  CHECK(p0.at("spec").at("subdomain").as_string() == made->service);
  CHECK(made->service_object.at("spec").at("clusterIP") == "None");
  CHECK(made->slot == std::vector<int>{-1, -1});
}

TEST_CASE("make_pods: a share of one GPU asks no nvidia.com/gpu and reads its GPU from its annotation") {
  storage::JobRecord rec;
  rec.spec = job_of(250).job;
  rec.run.image = "img";
  QueueKubernetes k{"ml", "img", {}, ""};
  auto made = make_pods(PodInput{&rec, &k, {PodPlacement{0, "node-1", {3}, 250}}, "gpuq", "bcdfg"});
  REQUIRE(made);
  const json::object& p = made->pods[0];
  CHECK(p.at("metadata").at("annotations").at("gpuq.io/gpu-milli") == "250");
  CHECK(p.at("metadata").at("annotations").at("gpuq.io/gpu-slot") == "3");
  CHECK(env_of(p, "NVIDIA_VISIBLE_DEVICES") == "<from>");
  CHECK(!p.at("spec").at("containers").at(0).at("resources").as_object().contains("limits"));
  CHECK(made->slot == std::vector<int>{3});
  CHECK(made->service.empty());  // one pod: no Service
}

TEST_CASE("name_of_job: a DNS label that begins with a letter, apart for ids that read alike") {
  CHECK(name_of_job("123").rfind("j123-", 0) == 0);
  CHECK(name_of_job("a.b") != name_of_job("a_b"));
  CHECK(name_of_job(std::string(100, 'x')).size() <= 40);
  CHECK(label_value_of("sweep_7") == "sweep_7");
  CHECK(label_value_of("-bad-") == name_of_job("-bad-", 57));
}
