// Requests read into specs (api/from_proto.hpp): the same values and the same refusals as the
// YAML front end, with paths under "spec", and maps or lists over their limit refused by size.
#include <doctest/doctest.h>

#include <string>

#include "api/from_proto.hpp"
#include "spec/limits.hpp"

using namespace gpuq;

namespace {

v1::JobSpec job() {
  v1::JobSpec j;
  j.set_queue("q");
  (*j.add_pod_sets()->mutable_resources())["gpu"] = "1";
  return j;
}

template <class T>
std::string error_of(const Result<T>& r) {
  return r ? "(accepted)" : r.error();
}

std::string job_error(const v1::JobSpec& j) {
  ResourceNames names;
  return error_of(api::from_proto(j, names, PriorityClasses{}));
}

}  // namespace

TEST_CASE("a job request becomes a submission: the spec, what runs, the priority as written") {
  v1::JobSpec j = job();
  j.set_id("train-1");
  j.set_priority("high");
  j.mutable_pod_sets(0)->set_count(4);
  (*j.mutable_pod_sets(0)->mutable_resources())["memory"] = "64Gi";
  j.set_max_runtime_seconds(3600);
  j.set_grace_period_seconds(5);
  j.set_on_node_loss("Fail");
  j.add_command("python");
  (*j.mutable_env())["EPOCHS"] = "3";
  j.set_working_dir("/data");
  j.set_working_dir_implicit(true);
  j.set_image("nvcr.io/nvidia/pytorch:24.05-py3");
  ResourceNames names;
  auto s = api::from_proto(j, names, PriorityClasses{});
  REQUIRE(s);
  CHECK(s->job.id.value == "train-1");
  CHECK(s->job.priority == 100);
  CHECK(s->priority == "high");
  CHECK(s->job.pod_sets[0].count == 4);
  CHECK(s->job.pod_sets[0].per_pod[kMemory] == Quantity{64} << 30);
  CHECK(*s->job.max_runtime == 3600);
  CHECK(s->job.grace_period == 5);
  CHECK(s->job.on_node_loss == NodeLossPolicy::kFail);
  CHECK(s->run.command == std::vector<std::string>{"python"});
  CHECK(s->run.env.at("EPOCHS") == "3");
  CHECK(s->run.working_dir == "/data");
  CHECK(s->run.working_dir_implicit);
  CHECK(s->run.image == "nvcr.io/nvidia/pytorch:24.05-py3");
  // Unset: none (the queue's defaultImage), and a working directory asked for.
  auto plain = api::from_proto(job(), names, PriorityClasses{});
  REQUIRE(plain);
  CHECK(plain->run.image.empty());
  CHECK_FALSE(plain->run.working_dir_implicit);
}

TEST_CASE("a bad job request is refused with the field's path under spec, in the YAML keys' words") {
  v1::JobSpec j = job();
  (*j.mutable_pod_sets(0)->mutable_resources())["gpu"] = "banana";
  CHECK(job_error(j) ==
        "spec.pods[0].resources.gpu: quantity \"banana\": not a number; use a number with an optional suffix, "
        "e.g. 2, 500m, 1.5, 16Gi");
  j = job();
  j.set_priority("urgent");
  CHECK(job_error(j).rfind("spec.priority: \"urgent\" is neither an integer nor a priority class", 0) == 0);
  j = job();
  j.set_id("../../etc");
  CHECK(job_error(j).rfind("spec.id: \"../../etc\" is not a job id: it holds '/'", 0) == 0);
  j = job();
  j.set_on_node_loss("Maybe");
  CHECK(job_error(j) == "spec.onNodeLoss: \"Maybe\" is not allowed; use one of Requeue, Fail");
  j = job();
  j.clear_pod_sets();
  CHECK(job_error(j) == "spec.pods: is required; a job needs at least one pod set");
  j = job();
  j.set_grace_period_seconds(-1);
  CHECK(job_error(j) == "spec.gracePeriod: \"-1\" must be >= 0 seconds");
  j = job();
  j.set_queue("");
  CHECK(job_error(j) == "spec.queue: is empty; name the queue to submit to");
  j = job();
  j.set_image("nvcr.io/x:1\n--privileged");
  CHECK(job_error(j) == "spec.image: \"nvcr.io/x:1\\x0a--privileged\" is not an image: it holds whitespace; use a "
                        "reference such as nvcr.io/nvidia/pytorch:24.05-py3 (at most 512 bytes, no whitespace or "
                        "control characters)");
  j.set_image(std::string(spec::limits::kImage + 1, 'i'));
  CHECK(job_error(j).find("spec.image: \"iii") == 0);
  CHECK(job_error(j).find("it is 513 bytes long; at most 512 are allowed") != std::string::npos);
}

TEST_CASE("a job asks only for resources that a queue or node brought; a refused one leaves no name") {
  ResourceNames names;
  v1::JobSpec j = job();
  (*j.mutable_pod_sets(0)->mutable_resources())["junk/1"] = "1";
  CHECK(error_of(api::from_proto(j, names, PriorityClasses{})) ==
        "spec.pods[0].resources.junk/1: \"junk/1\" is not a resource of any queue or node; the "
        "resources are gpu, cpu, memory");
  CHECK(names.size() == 3);  // nothing interned: junk names cannot fill the table's slots
  const ResourceId rdma = *names.intern("rdma/hca");  // a queue or node brought it
  j = job();
  (*j.mutable_pod_sets(0)->mutable_resources())["rdma/hca"] = "2";
  auto s = api::from_proto(j, names, PriorityClasses{});
  REQUIRE(s);
  CHECK(s->job.pod_sets[0].per_pod[rdma] == 2);
}

TEST_CASE("a job request over a limit is refused by its size, naming the limit") {
  v1::JobSpec j = job();
  for (int i = 0; i < 100'000; ++i) (*j.mutable_env())["V" + std::to_string(i)] = "x";
  CHECK(job_error(j) == "spec.env: has 100000 variables; at most 4096 are allowed");
  j = job();
  for (int i = 0; i < 5000; ++i) j.add_command("a");
  CHECK(job_error(j) == "spec.command: has 5000 arguments; at most 4096 are allowed");
  j = job();
  for (int i = 0; i < 9; ++i) *j.add_pod_sets() = j.pod_sets(0);
  CHECK(job_error(j) == "spec.pods: lists 10 pod sets; at most 8 are allowed");  // as from YAML
  j = job();
  for (int i = 0; i < 17; ++i) j.add_flavors("h100");
  CHECK(job_error(j) == "spec.flavors: lists 17 flavors; at most 16 are allowed");
}

TEST_CASE("queue and node requests: the same checks as YAML; 200000 labels refused by size") {
  ResourceNames names;
  v1::QueueSpec q;
  q.set_name("team-a");
  auto& gpu = (*q.add_quotas()->mutable_resources())["gpu"];
  q.mutable_quotas(0)->set_flavor("h100");
  gpu.set_nominal("8");
  gpu.set_borrowing_limit("-2");
  q.set_cohort("c");
  CHECK(error_of(api::from_proto(q, names)) ==
        "spec.quotas[0].resources.gpu.borrowingLimit: \"-2\" is negative; it must be >= 0");
  gpu.set_borrowing_limit("4");
  q.mutable_preemption()->set_within_queue("Sometimes");
  CHECK(error_of(api::from_proto(q, names)) ==
        "spec.preemption.withinQueue: \"Sometimes\" is not allowed; use one of Never, LowerPriority, "
        "LowerOrNewerEqualPriority");
  q.mutable_preemption()->set_within_queue("LowerPriority");
  auto ok = api::from_proto(q, names);
  REQUIRE(ok);
  CHECK(*ok->quotas[0].resources[0].second.borrowing_limit == 4000);
  CHECK(ok->preemption.within_queue == WithinQueuePolicy::kLowerPriority);

  v1::NodeSpec n;
  n.set_name("n1");
  n.set_flavor("h100");
  (*n.mutable_capacity())["gpu"] = "8";
  for (int i = 0; i < 200'000; ++i) (*n.mutable_labels())["l" + std::to_string(i)] = "v";
  CHECK(error_of(api::from_proto(n, names)) == "spec.labels: has 200000 labels; at most 1024 are allowed");
  n.clear_labels();
  (*n.mutable_labels())["zone"] = "a";
  n.set_state("Asleep");
  CHECK(error_of(api::from_proto(n, names)) ==
        "spec.state: \"Asleep\" is not allowed; use one of Ready, Cordoned, Draining, Down");
}
