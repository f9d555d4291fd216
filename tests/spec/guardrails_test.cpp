// A queue's guardrails and roles: read from YAML (each key, and each bad value refused naming the
// field, the value and what is allowed), and a submission checked against them
// (spec/guardrails.hpp: refused with the field, the value and the limit, or given the queue's
// defaults).
#include <doctest/doctest.h>

#include <string>

#include "spec/guardrails.hpp"
#include "spec/limits.hpp"
#include "spec/yaml_read.hpp"

using namespace gpuq;
using namespace gpuq::spec;

namespace {

QueueSpec queue_from(const std::string& text) {
  ResourceNames names;
  const yaml::Document doc = parse_document(text, "q.yaml");
  QueueSpec q;
  read_document(doc, "q.yaml", [&] {
    Path at;
    q = read_queue(doc.root(), at, names);
  });
  return q;
}

std::string queue_error(const std::string& text) {
  try {
    (void)queue_from(text);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(accepted)";
}

Submission submission(std::int32_t pods, Quantity milli_per_pod) {
  Submission s;
  s.job.id = JobId("j1");
  s.job.queue = QueueName("vision");
  s.job.owner = "alice";
  PodSet p;
  p.count = pods;
  p.per_pod[kGpu] = milli_per_pod;
  s.job.pod_sets.push_back(p);
  return s;
}

QueueSpec vision() {
  QueueSpec q;
  q.name = QueueName("vision");
  return q;
}

}  // namespace

TEST_CASE("every guardrail and role key is read from a queue's YAML") {
  const QueueSpec q = queue_from(R"(
name: vision
cohort: lab
maxGpusPerJob: 1.5
maxPodsPerJob: 4
maxRuntime: 7200
defaultMaxRuntime: 3600
runtimeEstimate: 1800
notify: {url: "http://hooks.example/q", on: [started, failed]}
maxGracePeriod: 60
allowedPriorityClasses: [normal, high]
nonPreemptibleMayBorrow: true
maxRunningJobsPerUser: 3
maxPendingJobsPerUser: 10
maxSubmitsPerUserPerMinute: 30
submitters: {users: [alice, "*"], groups: [ml]}
viewers: {groups: [ml-leads]}
)");
  CHECK(*q.max_gpus_per_job == 1500);
  CHECK(q.max_pods_per_job == 4);
  CHECK(*q.max_runtime == 7200);
  CHECK(*q.default_max_runtime == 3600);
  CHECK(*q.runtime_estimate == 1800);
  CHECK(q.notify == NotifySpec{"http://hooks.example/q", {"started", "failed"}});
  CHECK(*q.max_grace_period == 60);
  CHECK(q.allowed_priority_classes == std::vector<std::string>{"normal", "high"});
  CHECK(q.non_preemptible_may_borrow);
  CHECK(q.max_running_jobs_per_user == 3);
  CHECK(q.max_pending_jobs_per_user == 10);
  CHECK(q.max_submits_per_user_per_minute == 30);
  REQUIRE(q.submitters);
  CHECK(q.submitters->users == std::vector<std::string>{"alice", "*"});
  CHECK(q.submitters->groups == std::vector<std::string>{"ml"});
  CHECK(q.viewers.users.empty());
  CHECK(q.viewers.groups == std::vector<std::string>{"ml-leads"});

  // Left out: no limits, and no submitters list (everyone may submit), which differs from an
  // empty one (only admins).
  const QueueSpec plain = queue_from("name: q\n");
  CHECK_FALSE(plain.max_gpus_per_job);
  CHECK_FALSE(plain.max_runtime);
  CHECK_FALSE(plain.max_grace_period);
  CHECK_FALSE(plain.non_preemptible_may_borrow);
  CHECK_FALSE(plain.submitters);
  CHECK(queue_from("name: q\nsubmitters: {}\n").submitters.has_value());
}

TEST_CASE("a queue's idle policy: durations with units, either or both") {
  QueueSpec q = queue_from("name: q\nidle: {warnAfter: 2h, cancelAfter: 1d}\n");
  CHECK(q.idle.warn_after == 7200);
  CHECK(q.idle.cancel_after == 86400);
  q = queue_from("name: q\nidle: {cancelAfter: 90}\n");
  CHECK_FALSE(q.idle.warn_after);
  CHECK(q.idle.cancel_after == 90);
  CHECK(queue_from("name: q\n").idle.empty());
}

TEST_CASE("a bad guardrail or role is refused naming the field, the value and what is allowed") {
  struct Case {
    const char* yaml;
    const char* error;
  };
  const Case cases[] = {
      {"name: q\nmaxGpusPerJob: -1\n", "q.yaml:2:16: maxGpusPerJob: \"-1\" is negative; it must be >= 0 GPUs"},
      {"name: q\nmaxGpusPerJob: lots\n", "q.yaml:2:16: maxGpusPerJob: quantity \"lots\""},
      {"name: q\nmaxPodsPerJob: -2\n", "maxPodsPerJob: \"-2\" must be >= 0 (0: no limit)"},
      {"name: q\nmaxRuntime: 0\n", "maxRuntime: \"0\" must be > 0 seconds"},
      {"name: q\ndefaultMaxRuntime: -5\n", "defaultMaxRuntime: \"-5\" must be > 0 seconds"},
      {"name: q\nruntimeEstimate: 0\n", "runtimeEstimate: \"0\" must be > 0 seconds"},
      {"name: q\nnotify: {url: \"https://h/x\"}\n",
       "notify.url: \"https://h/x\" is not an http:// URL (https:// is not supported yet)"},
      {"name: q\nnotify: {url: \"http://h/x\", on: [started, started]}\n", "notify.on[1]: \"started\" is listed twice"},
      {"name: q\nnotify: {url: \"http://h/x\", on: [done]}\n",
       "notify.on[0]: \"done\" is not an event; use started, finished, failed, preempted or cancelled"},
      {"name: q\nnotify: {on: [started]}\n", "notify.url: is empty; give the http:// URL to POST to"},
      {"name: q\nnotify: http://h/x\n", "notify: expected a map such as {url: http://hooks.example/gpuq, on: [finished, failed]}"},
      {"name: q\nmaxRuntime: 60\ndefaultMaxRuntime: 120\n",
       "defaultMaxRuntime: \"120\" is more than maxRuntime \"60\"; it must be <= maxRuntime"},
      {"name: q\nmaxGracePeriod: -1\n", "maxGracePeriod: \"-1\" must be >= 0 seconds"},
      {"name: q\nallowedPriorityClasses: high\n", "allowedPriorityClasses: expected a list, got"},
      {"name: q\nallowedPriorityClasses: [high, high]\n", "allowedPriorityClasses[1]: \"high\" is listed twice"},
      {"name: q\nallowedPriorityClasses: [\"a/b\"]\n", "allowedPriorityClasses[0]: \"a/b\" is not a name"},
      {"name: q\nnonPreemptibleMayBorrow: maybe\n", "nonPreemptibleMayBorrow: \"maybe\""},
      {"name: q\nmaxRunningJobsPerUser: -1\n", "maxRunningJobsPerUser: \"-1\" must be >= 0 (0: no limit)"},
      {"name: q\nmaxPendingJobsPerUser: -1\n", "maxPendingJobsPerUser: \"-1\" must be >= 0 (0: no limit)"},
      {"name: q\nmaxSubmitsPerUserPerMinute: -3\n", "maxSubmitsPerUserPerMinute: \"-3\" must be >= 0 (0: no limit)"},
      {"name: q\nsubmitters: [alice]\n", "submitters: expected a map such as {users: [alice], groups: [ml]}"},
      {"name: q\nsubmitters: {user: [alice]}\n", "submitters.user: unknown key; did you mean users?"},
      {"name: q\nviewers: {users: [\"bob smith\"]}\n", "viewers.users[0]: \"bob smith\" is not a user name: it holds ' '"},
      {"name: q\nviewers: {groups: [\"\"]}\n", "viewers.groups[0]: is empty; name a group or \"*\" for everyone"},
      {"name: q\nmaxGpusPerjob: 8\n", "maxGpusPerjob: unknown key; did you mean maxGpusPerJob?"},
      {"name: q\nidle: {warnAfter: 0s}\n", "idle.warnAfter: \"0s\" is not allowed; it must be a duration > 0, e.g. 2h"},
      {"name: q\nidle: {cancelAfter: -1h}\n", "idle.cancelAfter: \"-3600s\" is not allowed; it must be a duration > 0"},
      {"name: q\nidle: {warnAfter: 2m, cancelAfter: 60}\n",
       "idle.cancelAfter: \"60s\" is less than warnAfter \"120s\"; it must be >= warnAfter"},
      {"name: q\nidle: {warnAfter: soon}\n", "idle.warnAfter: \"soon\" is not a duration; use 90 (seconds), 90s, 15m, 2h, 1d, 1h30m, 1:30:00 or "
       "1-12:00:00"},
      {"name: q\nidle: {warn: 1h}\n", "idle.warn: unknown key"},
      {"name: q\nidle: 2h\n", "idle: expected a map such as {warnAfter: 2h, cancelAfter: 6h}"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    const std::string e = queue_error(c.yaml);
    CHECK_MESSAGE(e.find(c.error) != std::string::npos, e);
  }
}

TEST_CASE("a queue's kubernetes block: namespace, images, and the pod template kept as canonical JSON") {
  const QueueSpec q = queue_from(R"(
name: vision
kubernetes:
  namespace: ml-vision
  defaultImage: nvcr.io/nvidia/pytorch:24.05-py3
  allowedImages: [nvcr.io/nvidia/, "ghcr.io/lab/"]
  podTemplate:
    metadata: {labels: {team: vision}, annotations: {note: "say \"hi\"\n"}}
    spec:
      serviceAccountName: trainer
      securityContext: {runAsNonRoot: true, runAsUser: 1000, fsGroup: '1000'}
      volumes:
        - {name: data, persistentVolumeClaim: {claimName: datasets, readOnly: true}}
        - {name: cfg, configMap: {name: c, defaultMode: 0644}}
      containers:
        - name: main
          volumeMounts: [{name: data, mountPath: /data}]
          resources: {limits: {memory: 64Gi, cpu: 8}}
)");
  CHECK(q.kubernetes.ns == "ml-vision");
  CHECK(q.kubernetes.default_image == "nvcr.io/nvidia/pytorch:24.05-py3");
  CHECK(q.kubernetes.allowed_images == std::vector<std::string>{"nvcr.io/nvidia/", "ghcr.io/lab/"});
  CHECK(q.kubernetes.pod_template ==
        R"({"metadata":{"labels":{"team":"vision"},"annotations":{"note":"say \"hi\"\n"}},)"
        R"("spec":{"serviceAccountName":"trainer","securityContext":{"runAsNonRoot":true,"runAsUser":1000,)"
        R"("fsGroup":"1000"},"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"datasets",)"
        R"("readOnly":true}},{"name":"cfg","configMap":{"name":"c","defaultMode":420}}],)"
        R"("containers":[{"name":"main","volumeMounts":[{"name":"data","mountPath":"/data"}],)"
        R"("resources":{"limits":{"memory":"64Gi","cpu":8}}}]}})");
  // The namespace alone is enough; none at all is an empty block.
  const QueueSpec ns_only = queue_from("name: q\nkubernetes: {namespace: ml}\n");
  CHECK(ns_only.kubernetes == QueueKubernetes{"ml", "", {}, ""});
  CHECK(queue_from("name: q\n").kubernetes.empty());
  CHECK(queue_from("name: q\nkubernetes: {namespace: ml, podTemplate: {}}\n").kubernetes.pod_template == "{}");
}

TEST_CASE("a bad kubernetes block is refused naming the field, where it is, the value and what is allowed") {
  struct Case {
    const char* yaml;
    const char* error;
  };
  const Case cases[] = {
      {"name: q\nkubernetes: ml\n",
       "q.yaml:2:13: kubernetes: expected a map such as {namespace: ml, defaultImage: nvcr.io/nvidia/pytorch:24.05-py3}, "
       "got \"ml\""},
      {"name: q\nkubernetes: {namespce: ml}\n", "q.yaml:2:14: kubernetes.namespce: unknown key; did you mean namespace? "
                                                "allowed here: namespace, defaultImage, allowedImages, podTemplate"},
      {"name: q\nkubernetes: {namespace: \"\"}\n", "q.yaml:2:25: kubernetes.namespace: is empty; give one or leave the key out"},
      {"name: q\nkubernetes: {namespace: ML_team}\n",
       "q.yaml:2:25: kubernetes.namespace: \"ML_team\" is not a namespace: it holds 'M'; use 1 to 63 lowercase letters, "
       "digits and '-', beginning and ending with a letter or a digit"},
      {"name: q\nkubernetes:\n  defaultImage: nvcr.io/x\n",
       "q.yaml:3:3: kubernetes.namespace: is required when kubernetes.defaultImage is set; name the namespace the "
       "queue's pods are made in"},
      {"name: q\nkubernetes: {allowedImages: [nvcr.io/]}\n",
       "kubernetes.namespace: is required when kubernetes.allowedImages is set"},
      {"name: q\nkubernetes: {podTemplate: {spec: {}}}\n", "kubernetes.namespace: is required when kubernetes.podTemplate is set"},
      {"name: q\nkubernetes:\n  namespace: ml\n  allowedImages: [a/, b/, \"c d\"]\n",
       "q.yaml:4:27: kubernetes.allowedImages[2]: \"c d\" is not an image: it holds whitespace; use a reference such as "
       "nvcr.io/nvidia/pytorch:24.05-py3 (at most 512 bytes, no whitespace or control characters)"},
      {"name: q\nkubernetes: {namespace: ml, allowedImages: nvcr.io/}\n", "kubernetes.allowedImages: expected a list, got"},
      {"name: q\nkubernetes: {namespace: ml, defaultImage: \"a\\x01b\"}\n",
       "kubernetes.defaultImage: \"a\\x01b\" is not an image: it holds a control character"},
      {"name: q\nkubernetes: {namespace: ml, defaultImage: docker.io/x:1, allowedImages: [nvcr.io/, ghcr.io/lab/]}\n",
       "kubernetes.defaultImage: \"docker.io/x:1\" is not within allowedImages; it must begin with one of \"nvcr.io/\", "
       "\"ghcr.io/lab/\""},
      {"name: q\nkubernetes: {namespace: ml, podTemplate: \"{}\"}\n",
       "q.yaml:2:42: kubernetes.podTemplate: expected a map with the keys metadata and spec (a Kubernetes "
       "PodTemplateSpec), got \"{}\""},
      {"name: q\nkubernetes: {namespace: ml, podTemplate: {kind: Pod}}\n",
       "kubernetes.podTemplate.kind: unknown key; allowed here: metadata, spec"},
      {"name: q\nkubernetes: {namespace: ml, podTemplate: {spec: []}}\n",
       "kubernetes.podTemplate.spec: expected a map (a PodSpec: serviceAccountName, volumes, containers, ...), got a list"},
      {"name: q\nkubernetes:\n  namespace: ml\n  podTemplate:\n    spec:\n      serviceAccountName: x\n      nodeName: gpu-1\n",
       "q.yaml:7:7: kubernetes.podTemplate.spec.nodeName: is set by gpuq (the node the job is placed on); remove it"},
      {"name: q\nkubernetes:\n  namespace: ml\n  podTemplate:\n    spec: {schedulerName: default-scheduler}\n",
       "q.yaml:5:12: kubernetes.podTemplate.spec.schedulerName: is set by gpuq (its pods are placed by gpuq, "
       "schedulerName gpuq); remove it"},
      {"name: q\nkubernetes:\n  namespace: ml\n  podTemplate:\n    spec:\n      containers: [{name: a}, {name: b}]\n",
       "q.yaml:6:19: kubernetes.podTemplate.spec.containers: lists 2 containers; at most 1 is allowed (the job's "
       "container is merged onto it)"},
      {"name: q\nkubernetes: {namespace: ml, podTemplate: {spec: {containers: {name: a}}}}\n",
       "kubernetes.podTemplate.spec.containers: expected a list of one container, got a map"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    const std::string e = queue_error(c.yaml);
    CHECK_MESSAGE(e.find(c.error) != std::string::npos, e);
  }
  // Too big as JSON: refused at the template, naming the size and the limit.
  const std::string big = queue_error("name: q\nkubernetes:\n  namespace: ml\n  podTemplate:\n    metadata: {annotations: {a: " +
                                      std::string(70000, 'x') + "}}\n");
  CHECK(big == "q.yaml:5:5: kubernetes.podTemplate: is 70037 bytes long as JSON; at most 65536 are allowed");
  // 64 allowed images are allowed, 65 are not.
  std::string images;
  for (int i = 0; i < 65; ++i) images += (i ? ", " : "") + std::string("r") + std::to_string(i) + "/";
  CHECK(queue_error("name: q\nkubernetes: {namespace: ml, allowedImages: [" + images + "]}\n") ==
        "q.yaml:2:44: kubernetes.allowedImages: lists 65 images; at most 64 are allowed");
  images.resize(images.rfind(','));
  CHECK(queue_error("name: q\nkubernetes: {namespace: ml, allowedImages: [" + images + "]}\n") == "(accepted)");
}

TEST_CASE("a pod template sent as JSON (the API's) is checked as the YAML key and kept canonical") {
  Path at("kubernetes");
  Path::Key k(at, "podTemplate");
  CHECK(pod_template_from_json("", at).empty());
  CHECK(pod_template_from_json(R"( { "metadata" : {"labels": {"a": "1"}}, "spec": {"x": [1, 2.50, true, null]} } )", at) ==
        R"({"metadata":{"labels":{"a":"1"}},"spec":{"x":[1,2.50,true,null]}})");
  // A character beyond U+FFFF as JSON escapes it (a surrogate pair), which YAML would refuse; an
  // escaped backslash before "u" is no escape.
  CHECK(pod_template_from_json(R"({"metadata":{"annotations":{"e":"\ud83d\ude00 \u00e9 \t","f":"\\ud83d\\ude00"}}})", at) ==
        "{\"metadata\":{\"annotations\":{\"e\":\"\xf0\x9f\x98\x80 \xc3\xa9 \\t\",\"f\":\"\\\\ud83d\\\\ude00\"}}}");
  auto error = [&](const std::string& json) {
    try {
      (void)pod_template_from_json(json, at);
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  // No line and column: they would be the JSON text's.
  CHECK(error(R"({"spec": {"nodeName": "gpu-1"}})") ==
        "kubernetes.podTemplate.spec.nodeName: is set by gpuq (the node the job is placed on); remove it");
  CHECK(error(R"({"spec": {"containers": [{}, {}]}})") ==
        "kubernetes.podTemplate.spec.containers: lists 2 containers; at most 1 is allowed (the job's container is "
        "merged onto it)");
  CHECK(error(R"({"status": {}})").find("kubernetes.podTemplate.status: unknown key") == 0);
  CHECK(error(R"([1, 2])").find("kubernetes.podTemplate: expected a map with the keys metadata and spec") == 0);
  CHECK(error(R"({"spec": )").find("kubernetes.podTemplate: is not JSON: ") == 0);
  CHECK(error(R"({"spec": {}, "spec": {}})").find("kubernetes.podTemplate: is not JSON: ") == 0);  // a key twice
  CHECK(error(std::string(limits::kPodTemplateBytes + 1, ' ')) ==
        "kubernetes.podTemplate: is 65537 bytes long; at most 65536 are allowed");
}

TEST_CASE("a submission over a per-job guardrail is refused naming the field, the value and the limit") {
  const PriorityClasses classes;
  QueueSpec q = vision();
  q.max_gpus_per_job = 8000;
  q.max_pods_per_job = 4;
  q.max_runtime = 3600;
  q.max_grace_period = 60;

  Submission big = submission(2, 8000);  // 16 GPUs over two pods
  auto r = apply_guardrails(q, classes, big);
  REQUIRE_FALSE(r);
  CHECK(r.code() == ErrorCode::kInvalidArgument);
  CHECK(r.error() == "spec.pods: the job asks 16 GPUs; queue \"vision\" allows at most 8 per job (maxGpusPerJob)");

  // Fractions count as their fraction: 3 pods of 2.5 GPUs is 7.5, within 8.
  Submission frac = submission(3, 2500);
  CHECK(apply_guardrails(q, classes, frac));
  q.max_gpus_per_job = 7000;
  Submission frac2 = submission(3, 2500);
  r = apply_guardrails(q, classes, frac2);
  REQUIRE_FALSE(r);
  CHECK(r.error() == "spec.pods: the job asks 7.5 GPUs; queue \"vision\" allows at most 7 per job (maxGpusPerJob)");
  q.max_gpus_per_job = 8000;

  Submission many = submission(5, 0);
  r = apply_guardrails(q, classes, many);
  REQUIRE_FALSE(r);
  CHECK(r.error() == "spec.pods: the job asks 5 pods; queue \"vision\" allows at most 4 per job (maxPodsPerJob)");

  Submission slow = submission(1, 1000);
  slow.job.max_runtime = 7200;
  r = apply_guardrails(q, classes, slow);
  REQUIRE_FALSE(r);
  CHECK(r.error() == "spec.maxRuntime: the job asks 7200 s; queue \"vision\" allows at most 3600 s (maxRuntime)");
  CHECK(*slow.job.max_runtime == 7200);  // a refused submission is not changed

  Submission patient = submission(1, 1000);
  patient.job.grace_period = 600;
  r = apply_guardrails(q, classes, patient);
  REQUIRE_FALSE(r);
  CHECK(r.error() ==
        "spec.gracePeriod: the job asks 600 s; queue \"vision\" allows at most 60 s (maxGracePeriod)");

  Submission ok = submission(4, 2000);
  ok.job.grace_period = 60;
  ok.job.max_runtime = 3600;
  CHECK(apply_guardrails(q, classes, ok));
}

TEST_CASE("a job asking no maxRuntime gets the queue's default, else its ceiling") {
  const PriorityClasses classes;
  QueueSpec q = vision();
  Submission none = submission(1, 1000);
  CHECK(apply_guardrails(q, classes, none));
  CHECK_FALSE(none.job.max_runtime);  // no limits: nothing given

  q.max_runtime = 7200;
  Submission ceiling = submission(1, 1000);
  CHECK(apply_guardrails(q, classes, ceiling));
  CHECK(*ceiling.job.max_runtime == 7200);

  q.default_max_runtime = 600;
  Submission dflt = submission(1, 1000);
  CHECK(apply_guardrails(q, classes, dflt));
  CHECK(*dflt.job.max_runtime == 600);

  Submission asked = submission(1, 1000);
  asked.job.max_runtime = 5000;
  CHECK(apply_guardrails(q, classes, asked));
  CHECK(*asked.job.max_runtime == 5000);  // its own, within the ceiling
}

TEST_CASE("allowedPriorityClasses refuses other classes and numbers, and gives the default class") {
  const PriorityClasses classes;  // low -100, normal 0, high 100, critical 1000
  QueueSpec q = vision();
  q.allowed_priority_classes = {"normal", "high"};

  Submission named = submission(1, 1000);
  named.priority = "high";
  CHECK(apply_guardrails(q, classes, named));
  CHECK(named.priority == "high");

  Submission other = submission(1, 1000);
  other.priority = "critical";
  auto r = apply_guardrails(q, classes, other);
  REQUIRE_FALSE(r);
  CHECK(r.error() == "spec.priority: class critical is not allowed in queue \"vision\"; name one of normal or high "
                     "(its allowedPriorityClasses)");

  Submission number = submission(1, 1000);
  number.priority = "100";
  r = apply_guardrails(q, classes, number);
  REQUIRE_FALSE(r);
  CHECK(r.error() == "spec.priority: \"100\" is a number; queue \"vision\" takes only priority classes; name one of "
                     "normal or high (its allowedPriorityClasses)");

  Submission none = submission(1, 1000);
  CHECK(apply_guardrails(q, classes, none));
  CHECK(none.priority == "normal");  // the default class: the one of priority 0

  q.allowed_priority_classes = {"high"};
  Submission none2 = submission(1, 1000);
  r = apply_guardrails(q, classes, none2);
  REQUIRE_FALSE(r);
  CHECK(r.error() == "spec.priority: the job names no priority class, so it would get the default class normal, "
                     "which queue \"vision\" does not allow; name one of high (its allowedPriorityClasses)");
  CHECK(none2.priority.empty());

  // Without the list any priority goes, a number included.
  q.allowed_priority_classes.clear();
  Submission free = submission(1, 1000);
  free.priority = "-5";
  CHECK(apply_guardrails(q, classes, free));
}
