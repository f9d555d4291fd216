// The checks every spec passes whatever its front end (spec/validate.hpp): each limit of
// spec/limits.hpp, just under it (accepted) and just over it (refused, naming the limit and the
// field's path), and the character sets of names.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "spec/limits.hpp"
#include "spec/validate.hpp"

using namespace gpuq;
using namespace gpuq::spec;

namespace {

// The message of the SpecError f throws, or "(accepted)".
std::string error_of(const std::function<void(Path&)>& f) {
  Path at("spec");
  try {
    f(at);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(accepted)";
}

JobSpec job() {
  JobSpec j;
  j.id = JobId("j1");
  j.queue = QueueName("q");
  PodSet p;
  p.per_pod[kGpu] = 1000;
  j.pod_sets.push_back(p);
  return j;
}

std::string job_error(const JobSpec& j) {
  const ResourceNames names;
  return error_of([&](Path& at) { validate(j, at, names); });
}

std::string run_error(const RunSpec& r) {
  return error_of([&](Path& at) { validate(r, at); });
}

NodeSpec node() {
  NodeSpec n;
  n.name = "n1";
  n.flavor = "h100";
  n.capacity[kGpu] = 8000;
  return n;
}

std::string node_error(const NodeSpec& n) {
  const ResourceNames names;
  return error_of([&](Path& at) { validate(n, at, names); });
}

}  // namespace

TEST_CASE("names: 1 to 253 letters, digits, '-', '_', '.', beginning with a letter or a digit, no \"..\"") {
  auto name_error = [](const std::string& n) { return error_of([&](Path& at) { check_name(n, at); }); };
  for (const std::string& ok : std::vector<std::string>{"a", "team-a", "A100_80GB", "node-1.rack-2", "0e4a51", std::string(253, 'x')})
    CHECK(name_error(ok) == "(accepted)");
  CHECK(name_error("") == "spec: is empty");
  CHECK(name_error(std::string(254, 'x')).find("is 254 characters long; at most 253 are allowed") !=
        std::string::npos);
  CHECK(name_error("a/b") ==
        "spec: \"a/b\" is not a name: it holds '/'; use letters, digits, '-', '_' and '.', beginning with a "
        "letter or a digit");
  CHECK(name_error("..").find("begins with '.'") != std::string::npos);
  CHECK(name_error("a..b").find("holds \"..\"") != std::string::npos);
  CHECK(name_error("-a").find("begins with '-'") != std::string::npos);
  CHECK(name_error("a b").find("holds ' '") != std::string::npos);
  CHECK(name_error("a\nb") == "spec: \"a\\x0ab\" is not a name: it holds a control character; use letters, "
                              "digits, '-', '_' and '.', beginning with a letter or a digit");
}

TEST_CASE("job ids keep the name rule in at most 63 characters; owners may hold '@'") {
  JobSpec j = job();
  j.id = JobId(std::string(63, 'a'));
  CHECK(job_error(j) == "(accepted)");
  j.id = JobId(std::string(64, 'a'));
  CHECK(job_error(j).rfind("spec.id: \"aaaa", 0) == 0);
  CHECK(job_error(j).find("is 64 characters long; at most 63 are allowed") != std::string::npos);
  j.id = JobId("../x");
  CHECK(job_error(j).find("is not a job id") != std::string::npos);
  j = job();
  j.owner = "alice@example.com";
  CHECK(job_error(j) == "(accepted)");
  j.owner = "_svc";
  CHECK(job_error(j) == "(accepted)");
  j.owner = "bob/../root";
  CHECK(job_error(j).rfind("spec.owner: \"bob/../root\" is not a user name: it holds '/'", 0) == 0);
  j = job();
  j.name = std::string(253, 'n');
  CHECK(job_error(j) == "(accepted)");
  j.name = "train\x1b[31m";
  CHECK(job_error(j).find("spec.name: \"train\\x1b[31m\" holds a control character") == 0);
  j.name = std::string(254, 'n');
  CHECK(job_error(j).find("is 254 bytes long; at most 253 are allowed") != std::string::npos);
}

TEST_CASE("labels: at most 1024 per node, Kubernetes' key and value rules") {
  NodeSpec n = node();
  for (int i = 0; i < 1024; ++i) n.labels["k" + std::to_string(i)] = "v";
  CHECK(node_error(n) == "(accepted)");
  n.labels["one-more"] = "v";
  CHECK(node_error(n) == "spec.labels: has 1025 labels; at most 1024 are allowed");

  n = node();
  n.labels = {{"topology.kubernetes.io/zone", "us-east-1a"}, {"gpuq.io/rack", ""}, {"rack", "r1"}};
  CHECK(node_error(n) == "(accepted)");
  n.labels = {{std::string(63, 'k'), std::string(63, 'v')}};
  CHECK(node_error(n) == "(accepted)");
  n.labels = {{std::string(64, 'k'), "v"}};
  CHECK(node_error(n).find("is not a label key: it is 64 characters long; at most 63 are allowed") !=
        std::string::npos);
  n.labels = {{"k", std::string(64, 'v')}};
  CHECK(node_error(n).find("spec.labels.k: \"vvvv") == 0);
  CHECK(node_error(n).find("is not a label value: it is 64 characters long") != std::string::npos);
  n.labels = {{std::string(254, 'p') + "/name", "v"}};
  CHECK(node_error(n).find("has a prefix of 254 characters; at most 253 are allowed") != std::string::npos);
  n.labels = {{"Gpuq.IO/rack", "v"}};
  CHECK(node_error(n).find("has a prefix that is not a DNS name") != std::string::npos);
  n.labels = {{"zone", "a b"}};
  CHECK(node_error(n).find("spec.labels.zone: \"a b\" is not a label value: it holds ' '") == 0);
  n.labels = {{"-zone", "a"}};
  CHECK(node_error(n).find("must begin and end with a letter or a digit") != std::string::npos);
}

TEST_CASE("nodes: whole GPUs, at most 255; no negative capacity") {
  NodeSpec n = node();
  n.capacity[kGpu] = 255'000;
  CHECK(node_error(n) == "(accepted)");
  n.capacity[kGpu] = 256'000;
  CHECK(node_error(n) == "spec.capacity.gpu: \"256\" is too many; a node has at most 255 GPUs");
  n.capacity[kGpu] = 1500;
  CHECK(node_error(n) == "spec.capacity.gpu: \"1500m\" is not a whole number of GPUs; a node has whole GPUs");
  n = node();
  n.capacity[kCpu] = -1000;
  CHECK(node_error(n) == "spec.capacity.cpu: \"-1\" is negative; it must be >= 0");
  n = node();
  n.flavor = "";
  CHECK(node_error(n) == "spec.flavor: is empty");
}

TEST_CASE("jobs: at most 8 pod sets, 100000 pods in all, 16 flavors") {
  JobSpec j = job();
  j.pod_sets.assign(8, j.pod_sets[0]);
  CHECK(job_error(j) == "(accepted)");
  j.pod_sets.push_back(j.pod_sets[0]);
  CHECK(job_error(j) == "spec.pods: lists 9 pod sets; at most 8 are allowed");
  j = job();
  j.pod_sets[0].count = 100'000;
  CHECK(job_error(j) == "(accepted)");
  j.pod_sets.push_back(j.pod_sets[0]);
  j.pod_sets[1].count = 1;
  CHECK(job_error(j) == "spec.pods: ask for 100001 pods in all; a job has at most 100000");
  j = job();
  j.pod_sets[0].count = 0;
  CHECK(job_error(j) == "spec.pods[0].count: \"0\" must be 1..100000");
  j = job();
  j.flavors.assign(16, "h100");
  CHECK(job_error(j) == "(accepted)");
  j.flavors.push_back("a100");
  CHECK(job_error(j) == "spec.flavors: lists 17 flavors; at most 16 are allowed");
  j = job();
  j.pod_sets[0].name = "workers/0";
  CHECK(job_error(j).find("spec.pods[0].name: \"workers/0\" is not a pod set name") == 0);
  j = job();
  j.queue = QueueName();
  CHECK(job_error(j) == "spec.queue: is empty; name the queue to submit to");
  j = job();
  j.max_runtime = 0;
  CHECK(job_error(j) == "spec.maxRuntime: \"0\" must be > 0 seconds");
  j = job();
  j.expected_runtime = 0;
  CHECK(job_error(j) == "spec.expectedRuntime: \"0\" must be > 0 seconds");
  j = job();
  j.max_runtime = 60;
  j.expected_runtime = 120;
  CHECK(job_error(j) == "spec.expectedRuntime: \"120\" is more than maxRuntime \"60\"; it must be <= maxRuntime");
  j.expected_runtime = 60;
  CHECK(job_error(j) == "(accepted)");
}

TEST_CASE("what runs: at most 4096 arguments and 4096 variables of 256 KiB each in all, none over 128 KiB") {
  RunSpec r;
  r.command.assign(limits::kCommandArgs, "x");
  CHECK(run_error(r) == "(accepted)");
  r.command.push_back("x");
  CHECK(run_error(r) == "spec.command: has 4097 arguments; at most 4096 are allowed");
  r.command.assign(3, std::string(100 * 1024, 'a'));
  CHECK(run_error(r) == "spec.command: is 307203 bytes in all; at most 262144 are allowed");
  r.command = {"sh", std::string(limits::kArgBytes + 1, 'a')};
  CHECK(run_error(r) ==
        "spec.command[1]: the argument is 131072 bytes long; at most 131071 are allowed (Linux's limit for one "
        "argument)");
  r.command = {std::string("a\0b", 3)};
  CHECK(run_error(r) == "spec.command[0]: the argument holds a NUL character");

  r = RunSpec();
  for (std::size_t i = 0; i < limits::kEnvEntries; ++i) r.env["V" + std::to_string(i)] = "1";
  CHECK(run_error(r) == "(accepted)");
  r.env["ONE_MORE"] = "1";
  CHECK(run_error(r) == "spec.env: has 4097 variables; at most 4096 are allowed");
  r.env = {{"A", std::string(200 * 1024, 'a')}};
  CHECK(run_error(r).find("spec.env.A: the variable is 204802 bytes long") == 0);
  r.env = {{"A", std::string(100 * 1024, 'a')}, {"B", std::string(100 * 1024, 'b')},
           {"C", std::string(100 * 1024, 'c')}};
  CHECK(run_error(r) == "spec.env: is 307209 bytes in all; at most 262144 are allowed");
  r.env = {{"A=B", "c"}};
  CHECK(run_error(r) == "spec.env.A=B: \"A=B\" is not a variable name: it holds '='");

  r = RunSpec();
  r.working_dir = std::string(limits::kWorkingDir + 1, 'd');
  CHECK(run_error(r) == "spec.workingDir: is 4096 bytes long; at most 4095 are allowed");

  // The image (binder kubernetes): at most 512 bytes, no whitespace or control characters.
  r = RunSpec();
  r.image = std::string(limits::kImage, 'i');
  CHECK(run_error(r) == "(accepted)");
  r.image += 'i';
  CHECK(run_error(r).find("spec.image: \"iii") == 0);
  CHECK(run_error(r).find("is not an image: it is 513 bytes long; at most 512 are allowed") != std::string::npos);
  r.image = "nvcr.io/nvidia/pytorch:24.05-py3 --privileged";
  CHECK(run_error(r) == "spec.image: \"nvcr.io/nvidia/pytorch:24.05-py3 --privileged\" is not an image: it holds "
                        "whitespace; use a reference such as nvcr.io/nvidia/pytorch:24.05-py3 (at most 512 bytes, no "
                        "whitespace or control characters)");
  r.image = "img\x1b[2J";
  CHECK(run_error(r).find("spec.image: \"img\\x1b[2J\" is not an image: it holds a control character") == 0);
}

TEST_CASE("a queue's kubernetes block: a DNS-1123 namespace, required with any other key; images; the template's size") {
  const ResourceNames names;
  auto kube_error = [&](const QueueKubernetes& k) {
    QueueSpec q;
    q.name = QueueName("q");
    q.kubernetes = k;
    return error_of([&](Path& at) { validate(q, at, names); });
  };
  QueueKubernetes k;
  CHECK(kube_error(k) == "(accepted)");  // none at all
  k.ns = std::string(63, 'n');
  k.default_image = "nvcr.io/nvidia/pytorch:24.05-py3";
  k.allowed_images.assign(limits::kAllowedImages, "nvcr.io/");
  k.pod_template = "{\"spec\":{}}";
  CHECK(kube_error(k) == "(accepted)");

  QueueKubernetes bad = k;
  bad.ns = std::string(64, 'n');
  CHECK(kube_error(bad) == "spec.kubernetes.namespace: \"" + std::string(64, 'n') +
                               "\" is not a namespace: it is 64 characters long; at most 63 are allowed; use 1 to "
                               "63 lowercase letters, digits and '-', beginning and ending with a letter or a digit");
  bad.ns = "ML";
  CHECK(kube_error(bad).find("spec.kubernetes.namespace: \"ML\" is not a namespace: it holds 'M'; use 1 to 63") == 0);
  bad.ns = "ml-";
  CHECK(kube_error(bad).find("spec.kubernetes.namespace: \"ml-\" is not a namespace: it must begin and end with a "
                             "letter or a digit") == 0);
  bad.ns = "ml.team";
  CHECK(kube_error(bad).find("spec.kubernetes.namespace: \"ml.team\" is not a namespace: it holds '.'") == 0);

  for (const auto& [field, set] :
       std::vector<std::pair<std::string, std::function<void(QueueKubernetes&)>>>{
           {"defaultImage", [](QueueKubernetes& x) { x.default_image = "img"; }},
           {"allowedImages", [](QueueKubernetes& x) { x.allowed_images = {"img"}; }},
           {"podTemplate", [](QueueKubernetes& x) { x.pod_template = "{}"; }}}) {
    QueueKubernetes alone;
    set(alone);
    CHECK(kube_error(alone) == "spec.kubernetes.namespace: is required when kubernetes." + field +
                                   " is set; name the namespace the queue's pods are made in");
  }

  bad = k;
  bad.allowed_images.push_back("ghcr.io/");
  CHECK(kube_error(bad) == "spec.kubernetes.allowedImages: lists 65 images; at most 64 are allowed");
  bad.allowed_images = {"nvcr.io/", "ghcr.io/lab/", "quay.io/x y"};
  CHECK(kube_error(bad).find("spec.kubernetes.allowedImages[2]: \"quay.io/x y\" is not an image: it holds whitespace") == 0);
  bad.allowed_images = {"nvcr.io/", ""};
  CHECK(kube_error(bad) == "spec.kubernetes.allowedImages[1]: is empty; an empty prefix would allow every image "
                           "(leave allowedImages out for that)");
  bad.allowed_images = {std::string(limits::kImage + 1, 'a')};
  CHECK(kube_error(bad).find("spec.kubernetes.allowedImages[0]: \"aaa") == 0);
  CHECK(kube_error(bad).find("it is 513 bytes long; at most 512 are allowed") != std::string::npos);

  bad = k;
  bad.default_image = "nvcr.io/x\ty";
  CHECK(kube_error(bad).find("spec.kubernetes.defaultImage: \"nvcr.io/x\\x09y\" is not an image: it holds whitespace") == 0);
  bad.default_image = "nvcr.io/x\x7f";
  CHECK(kube_error(bad).find("it holds a control character") != std::string::npos);
  bad.default_image = "docker.io/library/ubuntu:24.04";
  bad.allowed_images = {"nvcr.io/", "ghcr.io/lab/"};
  CHECK(kube_error(bad) == "spec.kubernetes.defaultImage: \"docker.io/library/ubuntu:24.04\" is not within "
                           "allowedImages; it must begin with one of \"nvcr.io/\", \"ghcr.io/lab/\"");
  bad.allowed_images = {};
  CHECK(kube_error(bad) == "(accepted)");  // no allowedImages: any image

  bad = k;
  bad.pod_template = "{\"metadata\":{\"a\":\"" + std::string(limits::kPodTemplateBytes, 'x') + "\"}}";
  CHECK(kube_error(bad) == "spec.kubernetes.podTemplate: is 65557 bytes long as JSON; at most 65536 are allowed");
}

TEST_CASE("queues: flavors at most 16, limits need a cohort, weight > 0, names checked") {
  const ResourceNames names;
  auto queue_error = [&](const QueueSpec& q) { return error_of([&](Path& at) { validate(q, at, names); }); };
  QueueSpec q;
  q.name = QueueName("q");
  q.cohort = "c";
  for (int i = 0; i < 16; ++i) q.quotas.push_back({"f" + std::to_string(i), {{kGpu, {8000, {}, {}}}}});
  CHECK(queue_error(q) == "(accepted)");
  q.quotas.push_back({"f16", {}});
  CHECK(queue_error(q) == "spec.quotas: lists 17 flavors; at most 16 are allowed");
  q.quotas.assign(1, {"h100", {{kGpu, {8000, -2000, {}}}}});
  CHECK(queue_error(q) == "spec.quotas[0].resources.gpu.borrowingLimit: \"-2\" is negative; it must be >= 0");
  q.quotas.assign(1, {"h100", {{kGpu, {8000, {}, 4000}}}});
  q.cohort.clear();
  CHECK(queue_error(q) ==
        "spec.quotas[0].resources.gpu.lendingLimit: \"4\" needs the queue to be in a cohort; set its cohort or "
        "leave out lendingLimit");
  q = QueueSpec();
  q.name = QueueName("q");
  q.weight = 0;  // as in Kueue: an infinite share while the queue borrows
  CHECK(queue_error(q) == "(accepted)");
  q.weight = -1;
  CHECK(queue_error(q) == "spec.weight: \"-1\" must be 0 (borrowers last) or a number from 0.000000001 up");
  q.weight = 1e-10;
  CHECK(queue_error(q).find("must be 0 (borrowers last)") != std::string::npos);
  q.weight = 1;
  q.cohort = "bad cohort";
  CHECK(queue_error(q).find("spec.cohort: \"bad cohort\" is not a name") == 0);
}

TEST_CASE("cluster-wide settings: at most 8 topology levels, 1000 priority classes") {
  SchedulingPolicy p;
  for (int i = 0; i < 8; ++i) p.topology_levels.push_back("l" + std::to_string(i));
  CHECK(error_of([&](Path& at) { validate(p, at); }) == "(accepted)");
  p.topology_levels.push_back("l8");
  CHECK(error_of([&](Path& at) { validate(p, at); }) == "spec.topology.levels: lists 9 levels; at most 8 are allowed");
  PriorityClasses c;
  c.by_name.clear();
  for (int i = 0; i < 1000; ++i) c.by_name["c" + std::to_string(i)] = i;
  CHECK(error_of([&](Path& at) { validate(c, at); }) == "(accepted)");
  c.by_name["one-more"] = 1;
  CHECK(error_of([&](Path& at) { validate(c, at); }) == "spec: lists 1001 classes; at most 1000 are allowed");
}

TEST_CASE("did you mean: the nearest allowed word within a small edit distance") {
  CHECK(nearest("weigth", {"name", "weight"}) == std::string_view("weight"));
  CHECK(nearest("borowingLimit", {"nominal", "borrowingLimit", "lendingLimit"}) == std::string_view("borrowingLimit"));
  CHECK(nearest("Nominal", {"nominal", "borrowingLimit"}) == std::string_view("nominal"));
  CHECK_FALSE(nearest("colour", {"name", "weight", "cohort"}));
  CHECK_FALSE(nearest(std::string(1000, 'x'), {"name"}));
}
