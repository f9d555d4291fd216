// A queue's guardrails and roles through the API (api/to_proto.hpp, api/from_proto.hpp): every
// field survives the round trip, unset stays unset, and a bad value is refused at its path
// under "spec" in the YAML keys' spelling.
#include <doctest/doctest.h>

#include <functional>
#include <string>

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

TEST_CASE("a queue's kubernetes block survives to_proto and from_proto; none stays none") {
  ResourceNames names;
  QueueSpec q;
  q.name = QueueName("vision");
  q.kubernetes.ns = "ml-vision";
  q.kubernetes.default_image = "nvcr.io/nvidia/pytorch:24.05-py3";
  q.kubernetes.allowed_images = {"nvcr.io/", "ghcr.io/lab/"};
  q.kubernetes.pod_template = R"({"metadata":{"labels":{"team":"vision"}},"spec":{"serviceAccountName":"t",)"
                              R"("containers":[{"name":"main","env":[{"name":"A","value":"a\"b\\c\u0001"}]}]}})";
  const v1::QueueSpec p = api::to_proto(q, names);
  REQUIRE(p.has_kubernetes());
  CHECK(p.kubernetes().namespace_() == "ml-vision");
  CHECK(p.kubernetes().default_image() == "nvcr.io/nvidia/pytorch:24.05-py3");
  CHECK(p.kubernetes().allowed_images_size() == 2);
  CHECK(p.kubernetes().pod_template_json() == q.kubernetes.pod_template);
  auto back = api::from_proto(p, names);
  REQUIRE_MESSAGE(back.ok(), back.error());
  CHECK(back->kubernetes == q.kubernetes);  // canonical JSON comes back byte for byte

  // JSON as a client writes it is kept canonical.
  v1::QueueSpec spaced = p;
  spaced.mutable_kubernetes()->set_pod_template_json("{ \"spec\" : { \"a\" : [ 1 , true ] } }");
  auto canon = api::from_proto(spaced, names);
  REQUIRE_MESSAGE(canon.ok(), canon.error());
  CHECK(canon->kubernetes.pod_template == R"({"spec":{"a":[1,true]}})");

  QueueSpec plain;
  plain.name = QueueName("plain");
  const v1::QueueSpec pp = api::to_proto(plain, names);
  CHECK_FALSE(pp.has_kubernetes());
  auto again = api::from_proto(pp, names);
  REQUIRE(again.ok());
  CHECK(again->kubernetes.empty());
}

TEST_CASE("a bad kubernetes block in a queue request is refused at its path under spec") {
  ResourceNames names;
  auto error = [&](const std::function<void(v1::QueueKubernetes&)>& set) {
    v1::QueueSpec p;
    p.set_name("vision");
    p.mutable_kubernetes()->set_namespace_("ml");
    set(*p.mutable_kubernetes());
    auto r = api::from_proto(p, names);
    return r.ok() ? std::string("(accepted)") : r.error();
  };
  CHECK(error([](v1::QueueKubernetes&) {}) == "(accepted)");
  CHECK(error([](v1::QueueKubernetes& k) { k.set_namespace_("ML"); })
            .find("spec.kubernetes.namespace: \"ML\" is not a namespace: it holds 'M'") == 0);
  CHECK(error([](v1::QueueKubernetes& k) {
          k.clear_namespace_();
          k.set_default_image("nvcr.io/x");
        }) == "spec.kubernetes.namespace: is required when kubernetes.defaultImage is set; name the namespace the "
              "queue's pods are made in");
  CHECK(error([](v1::QueueKubernetes& k) { k.add_allowed_images("a b"); })
            .find("spec.kubernetes.allowedImages[0]: \"a b\" is not an image: it holds whitespace") == 0);
  CHECK(error([](v1::QueueKubernetes& k) {
          for (int i = 0; i < 100; ++i) k.add_allowed_images("r/");
        }) == "spec.kubernetes.allowedImages: lists 100 images; at most 64 are allowed");
  CHECK(error([](v1::QueueKubernetes& k) {
          k.set_default_image("docker.io/x");
          k.add_allowed_images("nvcr.io/");
        }) == "spec.kubernetes.defaultImage: \"docker.io/x\" is not within allowedImages; it must begin with one of "
              "\"nvcr.io/\"");
  CHECK(error([](v1::QueueKubernetes& k) { k.set_pod_template_json(R"({"spec":{"nodeName":"gpu-1"}})"); }) ==
        "spec.kubernetes.podTemplate.spec.nodeName: is set by gpuq (the node the job is placed on); remove it");
  CHECK(error([](v1::QueueKubernetes& k) { k.set_pod_template_json(R"({"spec":{"schedulerName":"x"}})"); })
            .find("spec.kubernetes.podTemplate.spec.schedulerName: is set by gpuq") == 0);
  CHECK(error([](v1::QueueKubernetes& k) { k.set_pod_template_json(R"({"spec":{"containers":[{},{},{}]}})"); }) ==
        "spec.kubernetes.podTemplate.spec.containers: lists 3 containers; at most 1 is allowed (the job's container "
        "is merged onto it)");
  CHECK(error([](v1::QueueKubernetes& k) { k.set_pod_template_json("{\"spec\": [}"); })
            .find("spec.kubernetes.podTemplate: is not JSON: ") == 0);
  CHECK(error([](v1::QueueKubernetes& k) { k.set_pod_template_json(std::string(70000, ' ')); }) ==
        "spec.kubernetes.podTemplate: is 70000 bytes long; at most 65536 are allowed");
}
