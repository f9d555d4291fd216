// Bad scenario files: every field of the format (shared/SCENARIOS.md), fed a wrong value, a wrong
// type, a duplicate or nothing at all, must give a SpecError that starts with the file's name,
// names the field by its path, shows the offending value and says what is allowed.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <cctype>
#include <string>
#include <vector>

#include "sim/scenario.hpp"
#include "spec/error.hpp"

namespace {

struct Bad {
  const char* what;
  std::string yaml;
  std::string path;   // the message must start with "file.yaml: " + path + ": " (unless empty)
  std::string value;  // the message must contain "\"" + value + "\"" (unless empty)
  std::string hint;   // the message must contain this: what is allowed, or what is wrong
};

// The message of the SpecError, or a line saying what happened instead.
std::string error_of(const std::string& yaml) {
  try {
    (void)gpuq::sim::run_scenario(yaml, "file.yaml");
  } catch (const gpuq::spec::SpecError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not a SpecError) ") + e.what();
  }
  return "(accepted)";
}

// "file.yaml:LINE:COLUMN: " at the start of msg: every error says where it is. Returns the
// position after it and the "LINE:COLUMN" seen (npos when absent).
std::pair<std::size_t, std::string> location(const std::string& msg) {
  const std::string file = "file.yaml:";
  if (msg.rfind(file, 0) != 0) return {std::string::npos, ""};
  std::size_t i = file.size();
  const std::size_t start = i;
  for (int part = 0; part < 2; ++part) {
    const std::size_t digits = i;
    while (i < msg.size() && std::isdigit(static_cast<unsigned char>(msg[i]))) ++i;
    if (i == digits || i >= msg.size() || msg[i] != ':') return {std::string::npos, ""};
    ++i;
  }
  if (i >= msg.size() || msg[i] != ' ') return {std::string::npos, ""};
  return {i + 1, msg.substr(start, i - 1 - start)};
}

void check_bad(const Bad& c) {
  const std::string what = c.what;
  CAPTURE(what);
  CAPTURE(c.yaml);
  const std::string msg = error_of(c.yaml);
  CAPTURE(msg);
  const auto [after, where] = location(msg);
  REQUIRE(after != std::string::npos);
  // `path` is a field's path, or, for a syntax error, "line L, column C".
  if (c.path.rfind("line ", 0) == 0) {
    const std::size_t comma = c.path.find(", column ");
    CHECK(where == c.path.substr(5, comma - 5) + ":" + c.path.substr(comma + 9));
  } else if (!c.path.empty()) {
    CHECK(msg.compare(after, c.path.size() + 2, c.path + ": ") == 0);
  }
  if (!c.value.empty()) CHECK(msg.find("\"" + c.value + "\"") != std::string::npos);
  CHECK(msg.find(c.hint) != std::string::npos);
}

void check_all(const std::vector<Bad>& cases) {
  for (const Bad& c : cases) check_bad(c);
}

void check_ok(const std::string& what, const std::string& yaml) {
  CAPTURE(what);
  CAPTURE(yaml);
  CHECK(error_of(yaml) == "(accepted)");
}

// A job that is fine, with `extra` keys added.
std::string job(const std::string& extra) {
  return "{id: a, queue: q, pods: [{resources: {gpu: 1}}]" + (extra.empty() ? "" : ", " + extra) +
         "}";
}
// A job with these pods.
std::string pods(const std::string& p) { return "{id: a, queue: q, pods: " + p + "}"; }

const std::string kQueue = "queues: [{name: q}]\n";

}  // namespace

TEST_CASE("bad input: the file as a whole") {
  check_all({
      {"syntax error: unclosed flow list", "queues: [{name: q}\n", "line 2, column 1", "",
       "did not find expected ',' or ']' while parsing a flow sequence started at line 1, column 9"},
      {"syntax error: bad indentation", "queues:\n  - name: q\n   weight: 1\n", "line 3, column 4",
       "", "did not find expected '-' indicator while parsing a block collection started at line 2"},
      {"syntax error: tab indentation", "queues:\n\t- name: q\n", "line 2, column 1", "",
       "found character that cannot start any token while scanning for the next token started at line 2, "
       "column 1; indent with spaces, not tabs"},
      {"syntax error: a tab inside a value is no error, a tab before a key is",
       "now: 1\nqueues:\n  - name: q\n  \tweight: 1\n", "line 4, column 3", "",
       "indent with spaces, not tabs"},
      {"syntax error: unclosed quote", "queues: [{name: \"q}]\n", "", "", "end of"},
      {"not a map: a list", "- a\n- b\n", "", "", "the file must be a YAML map"},
      {"not a map: a scalar", "hello\n", "", "", "the file must be a YAML map"},
      {"empty file", "", "", "", "the file must be a YAML map"},
      {"two YAML documents", "now: 1\n---\nnow: 2\n", "", "", "2 YAML documents"},
      {"unknown top-level key", "nows: 5\n", "nows", "",
       "unknown key; did you mean now? allowed here: now, fairSharing, topology, placement, priorityClasses, "
       "queues, nodes, running, pending"},
      {"priorityClasses: a list", "priorityClasses: [high]\n", "priorityClasses", "",
       "expected a map"},
      {"priorityClasses: a value not an integer", "priorityClasses: {batch: lots}\n",
       "priorityClasses.batch", "lots", "is not an integer"},
      {"priorityClasses: a number as a name", "priorityClasses: {7: 1}\n", "priorityClasses.7", "",
       "a class name must not be a number"},
      {"priority: a class the file does not define",
       "priorityClasses: {batch: 1}\nqueues: [{name: q}]\n"
       "pending: [{id: a, queue: q, priority: high, pods: [{resources: {gpu: 1}}]}]\n",
       "pending[0].priority", "high", "the classes are batch (1)"},
      {"preemptionStrategies: empty", "fairSharing: {preemptionStrategies: []}\n",
       "fairSharing.preemptionStrategies", "", "list one or both"},
      {"preemptionStrategies: twice",
       "fairSharing: {preemptionStrategies: [LessThanInitialShare, LessThanInitialShare]}\n",
       "fairSharing.preemptionStrategies[1]", "LessThanInitialShare", "listed twice"},
      {"duplicate top-level key", "now: 1\nnow: 2\n", "now", "", "listed twice"},
      {"now: not an integer", "now: soon\n", "now", "soon", "is not an integer"},
      {"now: a fraction", "now: 1.5\n", "now", "1.5", "is not an integer"},
      {"now: a map", "now: {at: 5}\n", "now", "", "expected an integer, got a map"},
      {"now: overflows", "now: 99999999999999999999\n", "now", "99999999999999999999",
       "64-bit integer range"},
      {"now: empty", "now:\n", "now", "", "expected an integer, got nothing"},
  });
}

TEST_CASE("bad input: fairSharing, topology, placement") {
  check_all({
      {"fairSharing: a scalar", "fairSharing: true\n", "fairSharing", "true",
       "expected a map, got \"true\""},
      {"fairSharing: unknown key", "fairSharing: {enable: true}\n", "fairSharing.enable", "",
       "unknown key; did you mean enabled? allowed here: enabled, preemptionStrategies"},
      {"fairSharing.enabled: not a bool", "fairSharing: {enabled: yes}\n", "fairSharing.enabled",
       "yes", "use true or false"},
      {"fairSharing.enabled: a list", "fairSharing: {enabled: [true]}\n", "fairSharing.enabled", "",
       "got a list"},
      {"fairSharing.preemptionStrategies: a scalar",
       "fairSharing: {preemptionStrategies: LessThanInitialShare}\n",
       "fairSharing.preemptionStrategies", "LessThanInitialShare", "expected a list"},
      {"fairSharing.preemptionStrategies: unknown strategy",
       "fairSharing: {preemptionStrategies: [LessThanFinalShare]}\n",
       "fairSharing.preemptionStrategies[0]", "LessThanFinalShare",
       "is not allowed; use one of LessThanOrEqualToFinalShare, LessThanInitialShare"},
      {"fairSharing.preemptionStrategies: a list in the list",
       "fairSharing: {preemptionStrategies: [LessThanInitialShare, [x]]}\n",
       "fairSharing.preemptionStrategies[1]", "", "expected a string, got a list"},
      {"topology: a list", "topology: [zone]\n", "topology", "", "expected a map, got a list"},
      {"topology: unknown key", "topology: {level: [zone]}\n", "topology.level", "",
       "unknown key; did you mean levels? allowed here: levels"},
      {"topology.levels: missing", "topology: {}\n", "topology.levels", "", "is required"},
      {"topology.levels: a scalar", "topology: {levels: zone}\n", "topology.levels", "zone",
       "expected a list"},
      {"topology.levels: a map in the list", "topology: {levels: [zone, {rack: 1}]}\n",
       "topology.levels[1]", "", "expected a string, got a map"},
      {"topology.levels: empty key", "topology: {levels: [\"\"]}\n", "topology.levels[0]", "",
       "is empty"},
      {"topology.levels: listed twice", "topology: {levels: [zone, zone]}\n", "topology.levels[1]",
       "zone", "listed twice"},
      {"placement: unknown", "placement: packed\n", "placement", "packed",
       "is not allowed; use one of pack, spread"},
      {"placement: a list", "placement: [pack]\n", "placement", "",
       "expected a string, got a list"},
  });
}

TEST_CASE("bad input: queues") {
  const std::string q0 = "queues[0]";
  const std::string gq = "queues[0].quotas[0].resources.gpu";
  check_all({
      {"queues: a map", "queues: {name: q}\n", "queues", "", "expected a list, got a map"},
      {"queues: a scalar", "queues: q\n", "queues", "q", "expected a list"},
      {"queue: a scalar", "queues: [q]\n", q0, "q", "expected a map"},
      {"queue: unknown key", "queues: [{name: q, colour: red}]\n", q0 + ".colour", "",
       "unknown key; allowed here: name, cohort, weight, queueingStrategy, quotas, preemption"},
      {"queue: a key twice", "queues: [{name: q, name: r}]\n", q0 + ".name", "", "listed twice"},
      {"queue: a key that is a list", "queues: [{name: q, [a]: 1}]\n", q0, "",
       "has a key that is a list; a key must be a plain name"},
      {"queue: an empty key", "queues: [{name: q, \"\": 1}]\n", q0, "",
       "has an empty key; allowed here: name, cohort"},
      {"name: missing", "queues: [{weight: 1}]\n", q0 + ".name", "", "is required"},
      {"name: empty", "queues: [{name: \"\"}]\n", q0 + ".name", "", "is empty"},
      {"name: a list", "queues: [{name: [q]}]\n", q0 + ".name", "",
       "expected a string, got a list"},
      {"name: listed twice", "queues: [{name: q}, {name: q}]\n", "queues[1].name", "q",
       "listed twice"},
      {"cohort: a map", "queues: [{name: q, cohort: {name: c}}]\n", q0 + ".cohort", "",
       "expected a string, got a map"},
      {"cohort: empty", "queues: [{name: q, cohort: \"\"}]\n", q0 + ".cohort", "", "is empty"},
      {"weight: zero", "queues: [{name: q, weight: 0}]\n", q0 + ".weight", "0", "must be > 0"},
      {"weight: negative", "queues: [{name: q, weight: -1}]\n", q0 + ".weight", "-1",
       "must be > 0"},
      {"weight: a word", "queues: [{name: q, weight: heavy}]\n", q0 + ".weight", "heavy",
       "is not a number"},
      {"weight: NaN", "queues: [{name: q, weight: .nan}]\n", q0 + ".weight", ".nan",
       "is not a number"},
      {"weight: infinite", "queues: [{name: q, weight: inf}]\n", q0 + ".weight", "inf",
       "is not a number"},
      {"weight: hexadecimal", "queues: [{name: q, weight: 0x10}]\n", q0 + ".weight", "0x10",
       "is not a number"},
      {"weight: a list", "queues: [{name: q, weight: [1]}]\n", q0 + ".weight", "",
       "expected a number, got a list"},
      {"queueingStrategy: unknown", "queues: [{name: q, queueingStrategy: FIFO}]\n",
       q0 + ".queueingStrategy", "FIFO", "is not allowed; use one of BestEffortFIFO, StrictFIFO"},
      {"quotas: a map", "queues: [{name: q, quotas: {flavor: h100}}]\n", q0 + ".quotas", "",
       "expected a list, got a map"},
      {"quota: a scalar", "queues: [{name: q, quotas: [h100]}]\n", q0 + ".quotas[0]", "h100",
       "expected a map"},
      {"quota: unknown key", "queues: [{name: q, quotas: [{flavour: h100}]}]\n",
       q0 + ".quotas[0].flavour", "", "unknown key; did you mean flavor? allowed here: flavor, resources"},
      {"quota.flavor: missing", "queues: [{name: q, quotas: [{resources: {}}]}]\n",
       q0 + ".quotas[0].flavor", "", "is required"},
      {"quota.flavor: empty", "queues: [{name: q, quotas: [{flavor: \"\", resources: {}}]}]\n",
       q0 + ".quotas[0].flavor", "", "is empty"},
      {"quota.flavor: a map", "queues: [{name: q, quotas: [{flavor: {a: 1}, resources: {}}]}]\n",
       q0 + ".quotas[0].flavor", "", "expected a string, got a map"},
      {"quota.flavor: listed twice",
       "queues: [{name: q, quotas: [{flavor: h100, resources: {}}, {flavor: h100, resources: "
       "{}}]}]\n",
       q0 + ".quotas[1].flavor", "h100", "listed twice"},
      {"quota.resources: missing", "queues: [{name: q, quotas: [{flavor: h100}]}]\n",
       q0 + ".quotas[0].resources", "", "is required"},
      {"quota.resources: a list",
       "queues: [{name: q, quotas: [{flavor: h100, resources: [gpu]}]}]\n",
       q0 + ".quotas[0].resources", "", "expected a map, got a list"},
      {"quota.resources.gpu: a number, not a map",
       "queues: [{name: q, quotas: [{flavor: h100, resources: {gpu: 8}}]}]\n", gq, "8",
       "expected a map such as {nominal: 8"},
      {"quota.resources.gpu: listed twice",
       "queues: [{name: q, quotas: [{flavor: h100, resources: {gpu: {nominal: 1}, gpu: {nominal: "
       "2}}}]}]\n",
       gq, "", "listed twice"},
      {"quota.resources: empty resource name",
       "queues: [{name: q, quotas: [{flavor: h100, resources: {\"\": {nominal: 1}}}]}]\n",
       q0 + ".quotas[0].resources", "", "is not a resource name"},
      {"quota.resources.gpu: unknown key",
       "queues: [{name: q, quotas: [{flavor: h100, resources: {gpu: {nominal: 1, borrow: 1}}}]}]\n",
       gq + ".borrow", "", "unknown key; allowed here: nominal, borrowingLimit, lendingLimit"},
      {"nominal: missing",
       "queues: [{name: q, quotas: [{flavor: h100, resources: {gpu: {borrowingLimit: 1}}}]}]\n",
       gq + ".nominal", "", "is required"},
      {"nominal: a word",
       "queues: [{name: q, quotas: [{flavor: h100, resources: {gpu: {nominal: abc}}}]}]\n",
       gq + ".nominal", "abc", "not a number; use a number with an optional suffix"},
      {"nominal: negative",
       "queues: [{name: q, quotas: [{flavor: h100, resources: {gpu: {nominal: -1}}}]}]\n",
       gq + ".nominal", "-1", "it must be >= 0"},
      {"nominal: a map",
       "queues: [{name: q, quotas: [{flavor: h100, resources: {gpu: {nominal: {a: 1}}}}]}]\n",
       gq + ".nominal", "", "got a map"},
      {"borrowingLimit: unknown suffix",
       "queues: [{name: q, cohort: c, quotas: [{flavor: h100, resources: {gpu: {nominal: 1, "
       "borrowingLimit: 1.5x}}}]}]\n",
       gq + ".borrowingLimit", "1.5x", "unknown suffix \"x\"; allowed: n u m k M G T P E Ki"},
      {"borrowingLimit: negative",
       "queues: [{name: q, cohort: c, quotas: [{flavor: h100, resources: {gpu: {nominal: 1, "
       "borrowingLimit: -2}}}]}]\n",
       gq + ".borrowingLimit", "-2", "it must be >= 0"},
      {"borrowingLimit: without a cohort",
       "queues: [{name: q, quotas: [{flavor: h100, resources: {gpu: {nominal: 1, borrowingLimit: "
       "4}}}]}]\n",
       gq + ".borrowingLimit", "4", "cohort"},
      {"lendingLimit: without a cohort",
       "queues: [{name: q, quotas: [{flavor: h100, resources: {gpu: {nominal: 1, lendingLimit: "
       "4}}}]}]\n",
       gq + ".lendingLimit", "4", "cohort"},
      {"lendingLimit: too fine",
       "queues: [{name: q, cohort: c, quotas: [{flavor: h100, resources: {gpu: {nominal: 1, "
       "lendingLimit: 0.0001}}}]}]\n",
       gq + ".lendingLimit", "0.0001", "finer than the smallest unit"},
      {"preemption: a scalar", "queues: [{name: q, preemption: Never}]\n", q0 + ".preemption",
       "Never", "expected a map"},
      {"preemption: unknown key", "queues: [{name: q, preemption: {withinCohort: Any}}]\n",
       q0 + ".preemption.withinCohort", "",
       "unknown key; allowed here: withinQueue, reclaimWithinCohort, borrowWithinCohort, "
       "minRuntime"},
      {"withinQueue: unknown", "queues: [{name: q, preemption: {withinQueue: Always}}]\n",
       q0 + ".preemption.withinQueue", "Always",
       "is not allowed; use one of Never, LowerPriority, LowerOrNewerEqualPriority"},
      {"withinQueue: Any (only for reclaim)",
       "queues: [{name: q, preemption: {withinQueue: Any}}]\n", q0 + ".preemption.withinQueue",
       "Any", "use one of Never, LowerPriority"},
      {"reclaimWithinCohort: unknown",
       "queues: [{name: q, preemption: {reclaimWithinCohort: LowerOrNewerEqualPriority}}]\n",
       q0 + ".preemption.reclaimWithinCohort", "LowerOrNewerEqualPriority",
       "is not allowed; use one of Never, LowerPriority, Any"},
      {"borrowWithinCohort: a scalar",
       "queues: [{name: q, preemption: {borrowWithinCohort: LowerPriority}}]\n",
       q0 + ".preemption.borrowWithinCohort", "LowerPriority", "expected a map such as {policy:"},
      {"borrowWithinCohort.policy: missing",
       "queues: [{name: q, preemption: {borrowWithinCohort: {maxPriorityThreshold: 1}}}]\n",
       q0 + ".preemption.borrowWithinCohort.policy", "", "is required"},
      {"borrowWithinCohort.policy: unknown",
       "queues: [{name: q, preemption: {borrowWithinCohort: {policy: Any}}}]\n",
       q0 + ".preemption.borrowWithinCohort.policy", "Any",
       "is not allowed; use one of Never, LowerPriority"},
      {"borrowWithinCohort without reclaimWithinCohort",
       "queues: [{name: q, preemption: {borrowWithinCohort: {policy: LowerPriority}}}]\n",
       q0 + ".preemption.borrowWithinCohort", "", "needs reclaimWithinCohort LowerPriority or Any"},
      {"borrowWithinCohort: unknown key",
       "queues: [{name: q, preemption: {borrowWithinCohort: {policy: Never, threshold: 1}}}]\n",
       q0 + ".preemption.borrowWithinCohort.threshold", "",
       "unknown key; allowed here: policy, maxPriorityThreshold"},
      {"maxPriorityThreshold: a word",
       "queues: [{name: q, preemption: {borrowWithinCohort: {policy: LowerPriority, "
       "maxPriorityThreshold: high}}}]\n",
       q0 + ".preemption.borrowWithinCohort.maxPriorityThreshold", "high", "is not an integer"},
      {"maxPriorityThreshold: beyond 32 bits",
       "queues: [{name: q, preemption: {borrowWithinCohort: {policy: LowerPriority, "
       "maxPriorityThreshold: 3000000000}}}]\n",
       q0 + ".preemption.borrowWithinCohort.maxPriorityThreshold", "3000000000",
       "32-bit integer range"},
      {"minRuntime: negative", "queues: [{name: q, preemption: {minRuntime: -1}}]\n",
       q0 + ".preemption.minRuntime", "-1", "must be >= 0 seconds"},
      {"minRuntime: with a unit", "queues: [{name: q, preemption: {minRuntime: 10m}}]\n",
       q0 + ".preemption.minRuntime", "10m", "is not an integer"},
  });
}

TEST_CASE("bad input: too many distinct resources") {
  check_bad({"a ninth resource",
             "nodes: [{name: n, flavor: f, capacity: {gpu: 1, cpu: 1, memory: 1, r1: 1, r2: 1, "
             "r3: 1, r4: 1, r5: 1, r6: 1}}]\n",
             "nodes[0].capacity.r6", "r6", "too many distinct resources (at most 8)"});
}

TEST_CASE("bad input: nodes") {
  const std::string n0 = "nodes[0]";
  check_all({
      {"nodes: a map", "nodes: {name: n}\n", "nodes", "", "expected a list, got a map"},
      {"node: a scalar", "nodes: [n1]\n", n0, "n1", "expected a map"},
      {"node: unknown key", "nodes: [{name: n, flavor: f, capacity: {}, gpus: 8}]\n", n0 + ".gpus",
       "", "unknown key; allowed here: name, flavor, capacity, labels, state, dedicatedTo"},
      {"node: a key twice", "nodes: [{name: n, flavor: f, capacity: {}, flavor: g}]\n",
       n0 + ".flavor", "", "listed twice"},
      {"name: missing", "nodes: [{flavor: f, capacity: {}}]\n", n0 + ".name", "", "is required"},
      {"name: empty", "nodes: [{name: \"\", flavor: f, capacity: {}}]\n", n0 + ".name", "",
       "is empty"},
      {"name: a map", "nodes: [{name: {a: 1}, flavor: f, capacity: {}}]\n", n0 + ".name", "",
       "expected a string, got a map"},
      {"name: listed twice",
       "nodes: [{name: n, flavor: f, capacity: {}}, {name: n, flavor: f, capacity: {}}]\n",
       "nodes[1].name", "n", "listed twice"},
      {"flavor: missing", "nodes: [{name: n, capacity: {}}]\n", n0 + ".flavor", "", "is required"},
      {"flavor: empty", "nodes: [{name: n, flavor: \"\", capacity: {}}]\n", n0 + ".flavor", "",
       "is empty"},
      {"flavor: a list", "nodes: [{name: n, flavor: [f], capacity: {}}]\n", n0 + ".flavor", "",
       "expected a string, got a list"},
      {"capacity: missing", "nodes: [{name: n, flavor: f}]\n", n0 + ".capacity", "", "is required"},
      {"capacity: a list", "nodes: [{name: n, flavor: f, capacity: [8]}]\n", n0 + ".capacity", "",
       "expected a map, got a list"},
      {"capacity: a scalar", "nodes: [{name: n, flavor: f, capacity: 8}]\n", n0 + ".capacity", "8",
       "expected a map"},
      {"capacity: a resource twice", "nodes: [{name: n, flavor: f, capacity: {gpu: 8, gpu: 4}}]\n",
       n0 + ".capacity.gpu", "", "listed twice"},
      {"capacity: empty resource name", "nodes: [{name: n, flavor: f, capacity: {\"\": 8}}]\n",
       n0 + ".capacity", "", "is not a resource name"},
      {"capacity.gpu: a fraction", "nodes: [{name: n, flavor: f, capacity: {gpu: 1.5}}]\n",
       n0 + ".capacity.gpu", "1500m", "not a whole number of GPUs"},  // 1.5 GPUs, as a quantity
      {"capacity.gpu: millis", "nodes: [{name: n, flavor: f, capacity: {gpu: 500m}}]\n",
       n0 + ".capacity.gpu", "500m", "not a whole number of GPUs"},
      {"capacity.gpu: too many", "nodes: [{name: n, flavor: f, capacity: {gpu: 256}}]\n",
       n0 + ".capacity.gpu", "256", "at most 255 GPUs"},
      {"capacity.gpu: a map", "nodes: [{name: n, flavor: f, capacity: {gpu: {count: 8}}}]\n",
       n0 + ".capacity.gpu", "", "got a map"},
      {"capacity.cpu: negative", "nodes: [{name: n, flavor: f, capacity: {cpu: -4}}]\n",
       n0 + ".capacity.cpu", "-4", "it must be >= 0"},
      {"labels: a list", "nodes: [{name: n, flavor: f, capacity: {}, labels: [zone]}]\n",
       n0 + ".labels", "", "expected a map, got a list"},
      {"labels: a value that is a map",
       "nodes: [{name: n, flavor: f, capacity: {}, labels: {zone: {a: 1}}}]\n", n0 + ".labels.zone",
       "", "expected a string, got a map"},
      {"labels: an empty key", "nodes: [{name: n, flavor: f, capacity: {}, labels: {\"\": a}}]\n",
       n0 + ".labels", "", "has an empty key"},
      {"capacity: a key that is a map", "nodes: [{name: n, flavor: f, capacity: {{a: 1}: 8}}]\n",
       n0 + ".capacity", "", "has a key that is a map"},
      {"labels: a key twice",
       "nodes: [{name: n, flavor: f, capacity: {}, labels: {zone: a, zone: b}}]\n",
       n0 + ".labels.zone", "", "listed twice"},
      {"state: unknown", "nodes: [{name: n, flavor: f, capacity: {}, state: Offline}]\n",
       n0 + ".state", "Offline", "is not allowed; use one of Ready, Cordoned, Draining, Down"},
      {"state: lower case", "nodes: [{name: n, flavor: f, capacity: {}, state: ready}]\n",
       n0 + ".state", "ready", "use one of Ready"},
      {"dedicatedTo: unknown queue",
       "queues: [{name: q}]\nnodes: [{name: n, flavor: f, capacity: {}, dedicatedTo: team-z}]\n",
       n0 + ".dedicatedTo", "team-z", "is not a queue; the queues are q"},
      {"dedicatedTo: empty",
       "queues: [{name: q}]\nnodes: [{name: n, flavor: f, capacity: {}, "
       "dedicatedTo: \"\"}]\n",
       n0 + ".dedicatedTo", "", "is empty"},
      {"dedicatedTo: a list",
       "queues: [{name: q}]\nnodes: [{name: n, flavor: f, capacity: {}, dedicatedTo: [q]}]\n",
       n0 + ".dedicatedTo", "", "expected a string, got a list"},
  });
}

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
      {"maxRuntime: with a unit", job("maxRuntime: 1h"), ".maxRuntime", "1h", "is not an integer"},
      {"gracePeriod: negative", job("gracePeriod: -1"), ".gracePeriod", "-1",
       "must be >= 0 seconds"},
      {"gracePeriod: a word", job("gracePeriod: short"), ".gracePeriod", "short",
       "is not an integer"},
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
           "fairSharing: {enabled: false, preemptionStrategies: [LessThanInitialShare, "
           "LessThanOrEqualToFinalShare]}\nplacement: spread\nqueues: [{name: q, queueingStrategy: "
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
