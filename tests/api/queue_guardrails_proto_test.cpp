// A queue's guardrails and roles through the API (api/to_proto.hpp, api/from_proto.hpp): every
// field survives the round trip, unset stays unset, and a bad value is refused at its path
// under "spec" in the YAML keys' spelling.
#include <doctest/doctest.h>

#include "api/from_proto.hpp"
#include "api/to_proto.hpp"

using namespace gpuq;

TEST_CASE("a queue's guardrails and roles survive to_proto and from_proto; unset ones stay unset") {
  ResourceNames names;
  QueueSpec q;
  q.name = QueueName("vision");
  q.max_gpus_per_job = 1500;
  q.max_pods_per_job = 4;
  q.max_runtime = 7200;
  q.default_max_runtime = 600;
  q.max_grace_period = 0;
  q.allowed_priority_classes = {"normal", "high"};
  q.non_preemptible_may_borrow = true;
  q.max_running_jobs_per_user = 2;
  q.max_pending_jobs_per_user = 9;
  q.max_submits_per_user_per_minute = 30;
  q.submitters = Members{{"alice"}, {"ml"}};
  q.viewers = Members{{"*"}, {}};
  const v1::QueueSpec p = api::to_proto(q, names);
  CHECK(p.max_gpus_per_job() == "1500m");
  auto back = api::from_proto(p, names);
  REQUIRE_MESSAGE(back.ok(), back.error());
  CHECK(back->max_gpus_per_job == q.max_gpus_per_job);
  CHECK(back->max_pods_per_job == 4);
  CHECK(back->max_runtime == q.max_runtime);
  CHECK(back->default_max_runtime == q.default_max_runtime);
  CHECK(back->max_grace_period == std::optional<Time>(0));
  CHECK(back->allowed_priority_classes == q.allowed_priority_classes);
  CHECK(back->non_preemptible_may_borrow);
  CHECK(back->max_running_jobs_per_user == 2);
  CHECK(back->max_pending_jobs_per_user == 9);
  CHECK(back->max_submits_per_user_per_minute == 30);
  CHECK(back->submitters == q.submitters);
  CHECK(back->viewers == q.viewers);

  QueueSpec plain;
  plain.name = QueueName("plain");
  auto again = api::from_proto(api::to_proto(plain, names), names);
  REQUIRE(again.ok());
  CHECK_FALSE(again->max_gpus_per_job);
  CHECK_FALSE(again->max_runtime);
  CHECK_FALSE(again->max_grace_period);
  CHECK_FALSE(again->submitters);
  CHECK(again->viewers.empty());
}

TEST_CASE("a bad guardrail in a queue request is refused at its path") {
  ResourceNames names;
  v1::QueueSpec p;
  p.set_name("vision");
  p.set_max_gpus_per_job("-2");
  auto r = api::from_proto(p, names);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == "spec.maxGpusPerJob: \"-2\" is negative; it must be >= 0 GPUs");
  p.clear_max_gpus_per_job();
  p.set_default_max_runtime_seconds(100);
  p.set_max_runtime_seconds(50);
  r = api::from_proto(p, names);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == "spec.defaultMaxRuntime: \"100\" is more than maxRuntime \"50\"; it must be <= maxRuntime");
  p.clear_default_max_runtime_seconds();
  p.mutable_submitters()->add_users("bad name");
  r = api::from_proto(p, names);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().find("spec.submitters.users[0]: \"bad name\" is not a user name") == 0);
}
