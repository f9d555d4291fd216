// A queue's guardrails and roles: read from YAML (each key, and each bad value refused naming the
// field, the value and what is allowed), and a submission checked against them
// (spec/guardrails.hpp: refused with the field, the value and the limit, or given the queue's
// defaults).
#include <doctest/doctest.h>

#include <string>

#include "spec/guardrails.hpp"
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
      {"name: q\nidle: {warnAfter: soon}\n", "idle.warnAfter: \"soon\" is not a duration; use e.g. 90s, 30m, 2h or 1d"},
      {"name: q\nidle: {warn: 1h}\n", "idle.warn: unknown key"},
      {"name: q\nidle: 2h\n", "idle: expected a map such as {warnAfter: 2h, cancelAfter: 6h}"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    const std::string e = queue_error(c.yaml);
    CHECK_MESSAGE(e.find(c.error) != std::string::npos, e);
  }
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
