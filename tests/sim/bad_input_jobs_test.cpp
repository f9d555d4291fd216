// Bad scenario files, part 2: jobs (running or pending), duplicate jobs, quantities, and the
// corner cases that must be accepted (the harness: bad_input.hpp).
#include <boost/json.hpp>

#include "tests/sim/bad_input.hpp"

using namespace gpuq::test;

TEST_CASE("bad input: jobs, running or pending") {
  struct JobBad {
    const char* what;
    std::string job;   // one entry of the list
    std::string path;  // after "running[0]" or "pending[0]"
    std::string value;
    std::string hint;
  };
  const std::vector<JobBad> cases = {
      {"job: a scalar", "a", "", "a", "expected a map"},
      {"job: a list", "[a, q]", "", "", "expected a map, got a list"},
      {"job: unknown key", job("colour: red"), ".colour", "",
       "unknown key; allowed here: id, queue"},
      {"job: a key twice", job("priority: 1, priority: 2"), ".priority", "", "listed twice"},
      {"id: missing", "{queue: q, pods: [{resources: {gpu: 1}}]}", ".id", "", "is required"},
      {"id: empty", "{id: \"\", queue: q, pods: [{resources: {gpu: 1}}]}", ".id", "", "is empty"},
      {"id: a map", "{id: {a: 1}, queue: q, pods: [{resources: {gpu: 1}}]}", ".id", "",
       "expected a string, got a map"},
      {"queue: missing", "{id: a, pods: [{resources: {gpu: 1}}]}", ".queue", "", "is required"},
      {"queue: empty", "{id: a, queue: \"\", pods: [{resources: {gpu: 1}}]}", ".queue", "",
       "is empty"},
      {"queue: a list", "{id: a, queue: [q], pods: [{resources: {gpu: 1}}]}", ".queue", "",
       "expected a string, got a list"},
      {"priority: a word", job("priority: urgent"), ".priority", "urgent",
       "is neither an integer nor a priority class; the classes are critical (1000), high (100)"},

      {"priority: a fraction", job("priority: 1.5"), ".priority", "1.5", "is not an integer"},
      {"priority: beyond 32 bits", job("priority: 3000000000"), ".priority", "3000000000",
       "32-bit integer range"},
      {"submittedAt: a word", job("submittedAt: yesterday"), ".submittedAt", "yesterday",
       "is not an integer"},
      {"submittedAt: a map", job("submittedAt: {t: 1}"), ".submittedAt", "",
       "expected an integer, got a map"},
      {"pods: missing", "{id: a, queue: q}", ".pods", "", "is required"},
      {"pods: a map", pods("{count: 1, resources: {gpu: 1}}"), ".pods", "",
       "expected a list, got a map"},
      {"pods: empty", pods("[]"), ".pods", "", "is empty; a job needs at least one pod set"},
      {"pod: a scalar", pods("[x]"), ".pods[0]", "x", "expected a map"},
      {"pod: unknown key", pods("[{replicas: 2, resources: {gpu: 1}}]"), ".pods[0].replicas", "",
       "unknown key; allowed here: name, count, resources"},
      {"count: zero", pods("[{count: 0, resources: {gpu: 1}}]"), ".pods[0].count", "0",
       "must be 1..100000"},
      {"count: negative", pods("[{count: -1, resources: {gpu: 1}}]"), ".pods[0].count", "-1",
       "must be 1..100000"},
      {"count: too many", pods("[{count: 100001, resources: {gpu: 1}}]"), ".pods[0].count",
       "100001", "must be 1..100000"},
      {"count: a word", pods("[{count: two, resources: {gpu: 1}}]"), ".pods[0].count", "two",
       "is not an integer"},
      {"pod resources: missing", pods("[{count: 1}]"), ".pods[0].resources", "", "is required"},
      {"pod resources: a list", pods("[{resources: [gpu]}]"), ".pods[0].resources", "",
       "expected a map, got a list"},
      {"pod resources: a resource twice", pods("[{resources: {gpu: 1, gpu: 2}}]"),
       ".pods[0].resources.gpu", "", "listed twice"},
      {"pod resources: negative", pods("[{resources: {cpu: -1}}]"), ".pods[0].resources.cpu", "-1",
       "it must be >= 0"},
      {"pod resources: a list value", pods("[{resources: {gpu: [1]}}]"), ".pods[0].resources.gpu",
       "", "got a list"},
      {"flavors: a scalar", job("flavors: h100"), ".flavors", "h100", "expected a list"},
      {"flavors: a list in the list", job("flavors: [[h100]]"), ".flavors[0]", "",
       "expected a string, got a list"},
      {"flavors: empty name", job("flavors: [h100, \"\"]"), ".flavors[1]", "", "is empty"},
      {"preemptible: yes", job("preemptible: yes"), ".preemptible", "yes", "use true or false"},
      {"preemptible: a map", job("preemptible: {a: 1}"), ".preemptible", "",
       "expected true or false, got a map"},
      {"exclusive: 1", job("exclusive: 1"), ".exclusive", "1", "use true or false"},
      {"maxRuntime: zero", job("maxRuntime: 0"), ".maxRuntime", "0", "must be > 0 seconds"},
      {"maxRuntime: negative", job("maxRuntime: -5"), ".maxRuntime", "-5", "must be > 0 seconds"},
      {"maxRuntime: a word", job("maxRuntime: long"), ".maxRuntime", "long",
       "is not a duration; use 90 (seconds), 90s, 15m, 2h, 1d, 1h30m, 1:30:00 or 1-12:00:00"},
      {"maxRuntime: a fraction", job("maxRuntime: 1.5h"), ".maxRuntime", "1.5h", "is not a duration"},
      {"gracePeriod: negative", job("gracePeriod: -1"), ".gracePeriod", "-1",
       "must be >= 0 seconds"},
      {"gracePeriod: a word", job("gracePeriod: short"), ".gracePeriod", "short",
       "is not a duration"},
  };
  for (const char* list : {"running", "pending"}) {
    for (const JobBad& c : cases) {
      const std::string which = list;
      CAPTURE(which);
      check_bad({c.what, kQueue + list + ":\n  - " + c.job + "\n",
                 std::string(list) + "[0]" + c.path, c.value, c.hint});
    }
  }
}

TEST_CASE("bad input: running-only and pending-only job fields, duplicate jobs") {
  const std::string node = "nodes: [{name: n1, flavor: h100, capacity: {gpu: 8}}]\n";
  const std::string r0 = "running[0]";
  check_all({
      {"admittedAt: a word", kQueue + "running: [" + job("admittedAt: noon") + "]\n",
       r0 + ".admittedAt", "noon", "is not an integer"},
      {"nodes: a scalar", kQueue + node + "running: [" + job("nodes: n1") + "]\n", r0 + ".nodes",
       "n1", "expected a list"},
      {"nodes: a map in the list", kQueue + node + "running: [" + job("nodes: [{n: 1}]") + "]\n",
       r0 + ".nodes[0]", "", "expected a string, got a map"},
      {"nodes: unknown node", kQueue + node + "running: [" + job("nodes: [n9]") + "]\n",
       r0 + ".nodes[0]", "n9", "is not a node; the nodes are n1"},
      {"nodes: the scenario has no nodes", kQueue + "running: [" + job("nodes: [n1]") + "]\n",
       r0 + ".nodes[0]", "n1", "the scenario has no nodes"},
      {"nodes: fewer than pods",
       kQueue + node + "running: [" + pods("[{count: 2, resources: {gpu: 1}}], nodes: [n1]") +
           "]\n",
       r0 + ".nodes", "", "1 node for 2 pods; give one node per pod"},
      {"nodes: more than pods", kQueue + node + "running: [" + job("nodes: [n1, n1]") + "]\n",
       r0 + ".nodes", "", "2 nodes for 1 pod; give one node per pod"},
      {"flavor: a list", kQueue + node + "running: [" + job("flavor: [h100]") + "]\n",
       r0 + ".flavor", "", "expected a string, got a list"},
      {"flavor: unknown", kQueue + node + "running: [" + job("flavor: a100") + "]\n",
       r0 + ".flavor", "a100", "is not a flavor; the flavors are h100"},
      {"flavor: not the flavor of its nodes",
       "queues: [{name: q}]\nnodes: [{name: n1, flavor: h100, capacity: {gpu: 8}}, {name: n2, "
       "flavor: a100, capacity: {gpu: 8}}]\nrunning: [" +
           job("flavor: a100, nodes: [n1]") + "]\n",
       r0 + ".flavor", "a100", "node n1 is of flavor h100"},
      {"nodes: of two flavors",
       "queues: [{name: q}]\nnodes: [{name: n1, flavor: h100, capacity: {gpu: 8}}, {name: n2, "
       "flavor: a100, capacity: {gpu: 8}}]\nrunning: [" +
           pods("[{count: 2, resources: {gpu: 1}}], nodes: [n1, n2]") + "]\n",
       r0 + ".nodes[1]", "",
       "node n2 is of flavor a100, but node n1 (nodes[0]) is of flavor h100; a job's pods share "
       "one flavor"},
      {"admittedAt: after now",
       "now: 100\n" + kQueue + "running: [" + job("admittedAt: 200") + "]\n", r0 + ".admittedAt",
       "200", "is after now (100); a running job was admitted at or before now"},
      {"submittedAt: after admittedAt",
       "now: 100\n" + kQueue + "running: [" + job("submittedAt: 50, admittedAt: 40") + "]\n",
       r0 + ".submittedAt", "50", "is after admittedAt (40)"},
      {"submittedAt: after now (admittedAt defaults to now)",
       "now: 100\n" + kQueue + "running: [" + job("submittedAt: 150") + "]\n", r0 + ".submittedAt",
       "150", "is after admittedAt (100)"},
      {"queue: unknown (running)",
       kQueue + "running: [{id: a, queue: zz, pods: [{resources: {gpu: "
                "1}}]}]\n",
       r0 + ".queue", "zz", "is not a queue; the queues are q"},
      {"running job: 1.5 GPUs per pod",
       kQueue + node + "running: [" + pods("[{resources: {cpu: 1}}, {resources: {gpu: 1.5}}]") +
           "]\n",
       r0 + ".pods[1].resources.gpu", "1.5",
       "is not allowed; a pod takes either a share of one GPU (below 1) or whole GPUs"},
      {"running job: does not fit (engine)",
       kQueue + node + "running: [" + pods("[{resources: {gpu: 9}}]") + "]\n", r0, "",
       "does not fit"},
      {"admittedAt: on a pending job", kQueue + "pending: [" + job("admittedAt: 5") + "]\n",
       "pending[0].admittedAt", "", "only running jobs have admittedAt, nodes and flavor"},
      {"nodes: on a pending job", kQueue + node + "pending: [" + job("nodes: [n1]") + "]\n",
       "pending[0].nodes", "", "only running jobs have"},
      {"flavor: on a pending job", kQueue + node + "pending: [" + job("flavor: h100") + "]\n",
       "pending[0].flavor", "", "only running jobs have"},
      {"job id twice: running", kQueue + "running: [" + job("") + ", " + job("") + "]\n",
       "running[1].id", "a", "listed twice; also at running[0].id"},
      {"job id twice: pending", kQueue + "pending: [" + job("") + ", " + job("") + "]\n",
       "pending[1].id", "a", "listed twice; also at pending[0].id"},
      {"job id twice: running and pending",
       kQueue + "running: [" + job("") + "]\npending: [" + job("") + "]\n", "pending[0].id", "a",
       "listed twice; also at running[0].id"},
      {"running: a map", kQueue + "running: {id: a}\n", "running", "",
       "expected a list, got a map"},
      {"pending: a scalar", kQueue + "pending: a\n", "pending", "a", "expected a list"},
  });
}

TEST_CASE("bad input: quantities, in quotas, node capacities and pods") {
  struct Q {
    const char* resource;
    const char* value;
    const char* hint;
  };
  const std::vector<Q> bad = {
      {"gpu", "abc", "not a number; use a number with an optional suffix, e.g. 2, 500m"},
      {"gpu", "", "empty; use a number with an optional suffix"},
      {"gpu", "1.5x", "unknown suffix \"x\"; allowed: n u m k M G T P E Ki Mi Gi Ti Pi Ei"},
      {"gpu", "0.0001", "finer than the smallest unit (1m, one thousandth)"},
      {"gpu", "1 000", "unknown suffix"},
      {"gpu", "1e400", "exponent out of range"},
      {"gpu", "1e", "unknown suffix \"e\""},
      {"cpu", "1234567890123456789", "more than 18 significant digits"},
      {"cpu", "10000000000000000", "too large"},
      {"memory", "100m", "not a whole number of units; this resource counts whole units"},
      {"memory", "0.5", "not a whole number of units"},
      {"memory", "100Ei", "too large"},
      {"memory", "16GiB", "unknown suffix \"GiB\""},
      {"memory", "-1Gi", "it must be >= 0"},
  };
  for (const Q& q : bad) {
    const std::string r = q.resource;
    const std::string v = std::string("\"") + q.value + "\"";
    check_all({
        {"in a quota",
         "queues: [{name: q, quotas: [{flavor: f, resources: {" + r + ": {nominal: " + v +
             "}}}]}]\n",
         "queues[0].quotas[0].resources." + r + ".nominal", q.value, q.hint},
        {"in a node", "nodes: [{name: n, flavor: f, capacity: {" + r + ": " + v + "}}]\n",
         "nodes[0].capacity." + r, q.value, q.hint},
        {"in a pod",
         "pending: [{id: a, queue: default, pods: [{resources: {" + r + ": " + v + "}}]}]\n",
         "pending[0].pods[0].resources." + r, q.value, q.hint},
    });
  }
}

namespace {

// What happened to job "j": admitted, pending or rejected.
std::string outcome(const std::string& yaml) {
  boost::json::value out;
  try {
    out = gpuq::sim::run_scenario(yaml, "file.yaml");
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
  for (const char* k : {"admitted", "pending", "rejected"})
    for (const auto& d : out.at(k).as_array())
      if (d.at("job") == "j") return k;
  return "(missing)";
}

std::string one_job(const std::string& quota, const std::string& pod) {
  return "queues: [{name: q, quotas: [{flavor: f, resources: {" + quota +
         "}}]}]\npending: [{id: j, queue: q, pods: [" + pod + "]}]\n";
}

}  // namespace

TEST_CASE("bad input: good quantities are accepted with their meaning") {
  struct Good {
    const char* what;
    std::string yaml;
    const char* want;
  };
  const std::vector<Good> cases = {
      {"gpu \"500m\" is half a GPU",
       one_job("gpu: {nominal: 1}", "{count: 2, resources: {gpu: \"500m\"}}"), "admitted"},
      {"gpu 0.5 is half a GPU", one_job("gpu: {nominal: \"500m\"}", "{resources: {gpu: 0.5}}"),
       "admitted"},
      {"gpu 0.5 three times is more than 1",
       one_job("gpu: {nominal: 1}", "{count: 3, resources: {gpu: 0.5}}"), "rejected"},
      {"gpu 2 (a YAML integer)", one_job("gpu: {nominal: 2}", "{count: 1, resources: {gpu: 2}}"),
       "admitted"},
      {"gpu 2 is more than 1.5", one_job("gpu: {nominal: 1.5}", "{resources: {gpu: 2}}"),
       "rejected"},
      {"memory 16Gi is 2^34 bytes",
       one_job("memory: {nominal: 16Gi}", "{resources: {memory: 17179869184}}"), "admitted"},
      {"memory 16Gi is less than 17179869185 bytes",
       one_job("memory: {nominal: 16Gi}", "{resources: {memory: 17179869185}}"), "rejected"},
      {"cpu \"1e3\" is 1000", one_job("cpu: {nominal: \"1e3\"}", "{resources: {cpu: 1000}}"),
       "admitted"},
      {"cpu \"1e3\" is less than 1001",
       one_job("cpu: {nominal: \"1e3\"}", "{resources: {cpu: 1001}}"), "rejected"},
      {"cpu 1.5k", one_job("cpu: {nominal: 1.5k}", "{resources: {cpu: 1500}}"), "admitted"},
      {"memory 1G is 10^9 bytes", one_job("memory: {nominal: 1G}", "{resources: {memory: 1e9}}"),
       "admitted"},
  };
  for (const Good& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    CAPTURE(c.yaml);
    CHECK(outcome(c.yaml) == c.want);
  }
}

TEST_CASE("bad input: valid corner cases are accepted") {
  check_ok("an empty map", "{}\n");
  check_ok("comments only, then a key", "# nothing here\nnow: 0\n");
  check_ok("weight 0.5", "queues: [{name: q, weight: 0.5}]\n");
  check_ok("weight quoted", "queues: [{name: q, weight: \"2\"}]\n");
  check_ok("weight with an exponent", "queues: [{name: q, weight: 1e-3}]\n");
  check_ok("empty running list", kQueue + "running: []\npending: [" + job("") + "]\n");
  check_ok("null lists", "queues:\nnodes:\nrunning:\npending:\n");
  check_ok("no queues: the default queue",
           "queues: []\npending: [{id: a, queue: default, pods: [{resources: {gpu: 1}}]}]\n");
  check_ok("unknown queue for a pending job is a rejection, not an error",
           kQueue + "pending: [{id: a, queue: nope, pods: [{resources: {gpu: 1}}]}]\n");
  check_ok("now with a plus sign", "now: +5\n");
  check_ok("negative priority and zero durations",
           "queues: [{name: q, preemption: {minRuntime: 0, reclaimWithinCohort: Any, borrowWithinCohort: {policy: "
           "LowerPriority, maxPriorityThreshold: -10}}}]\npending: [" +
               job("priority: -5, gracePeriod: 0, maxRuntime: 1") + "]\n");
  check_ok("every enum value",
           "fairSharing: {enabled: false, preemptionStrategies: [LessThanOrEqualToFinalShare, "
           "LessThanInitialShare]}\nplacement: spread\nqueues: [{name: q, queueingStrategy: "
           "StrictFIFO, preemption: {withinQueue: LowerOrNewerEqualPriority, reclaimWithinCohort: "
           "LowerPriority, borrowWithinCohort: {policy: Never}}}]\nnodes: [{name: a, flavor: f, "
           "capacity: {gpu: 0}, state: Down}, {name: b, flavor: f, capacity: {gpu: 255}, state: "
           "Cordoned}, {name: c, flavor: f, capacity: {}, state: Draining, labels: {}}]\n");
  check_ok("topology with labels",
           "topology: {levels: [zone, rack]}\nnodes: [{name: a, flavor: f, capacity: {gpu: 8}, "
           "labels: {zone: z1, rack: r1}}]\n");
  check_ok("empty topology levels", "topology: {levels: []}\n");
  check_ok("borrowing limits in a cohort",
           "queues: [{name: q, cohort: c, quotas: [{flavor: f, resources: {gpu: {nominal: 0, "
           "borrowingLimit: 0, lendingLimit: 0}}}]}]\n");
  check_ok("a running job on named nodes, with its flavor",
           kQueue + "nodes: [{name: n1, flavor: h100, capacity: {gpu: 8}}]\nrunning: [" +
               pods("[{count: 2, resources: {gpu: 4}}], nodes: [n1, n1], flavor: h100, "
                    "admittedAt: 0") +
               "]\n");
  check_ok("a job with many pods",
           kQueue + "pending: [" + pods("[{count: 100000, resources: {cpu: 1}}]") + "]\n");
  check_ok("a node dedicated to a queue",
           kQueue + "nodes: [{name: n1, flavor: f, capacity: {gpu: 1}, dedicatedTo: q}]\n");
}
