// The YAML tree (spec/yaml.hpp): what libyaml's events become, where each node is, and what is
// refused while parsing, each with its line and column.
#include <doctest/doctest.h>

#include <string>

#include "spec/queue_write.hpp"
#include "spec/yaml.hpp"
#include "spec/yaml_json.hpp"
#include "spec/yaml_read.hpp"

using namespace gpuq;
using namespace gpuq::spec;
using yaml::Node;

namespace {

// The message of the SpecError parse_one throws, or "(accepted)".
std::string error_of(const std::string& text) {
  try {
    (void)yaml::parse_one(text);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a document becomes a tree of maps, lists and scalars with their lines and columns") {
  const auto doc = yaml::parse_one(
      "# a comment\n"
      "queues:\n"
      "  - name: a\n"
      "    weight: 2\n"
      "  - {name: \"b\", cohort: 'c'}\n"
      "empty:\n"
      "tilde: ~\n"
      "quoted_null: \"null\"\n"
      "block: |\n"
      "  two\n"
      "  lines\n");
  const Node root = doc.root();
  REQUIRE(root.is_map());
  CHECK(root.size() == 5);
  CHECK(root.key(0).text() == "queues");
  CHECK(root.key(0).mark().line == 2);
  CHECK(root.key(0).mark().column == 1);
  const Node queues = root.find("queues");
  REQUIRE(queues.is_list());
  CHECK(queues.size() == 2);
  CHECK(queues.item(0).find("name").text() == "a");
  CHECK(queues.item(0).find("weight").mark().line == 4);
  CHECK(queues.item(0).find("weight").mark().column == 13);
  CHECK(queues.item(1).find("name").text() == "b");
  CHECK(queues.item(1).find("name").quoted());
  CHECK(queues.item(1).find("cohort").text() == "c");
  CHECK(queues.item(1).mark().column == 5);
  CHECK(root.find("empty").is_null());
  CHECK(root.find("tilde").is_null());
  CHECK(root.find("quoted_null").is_scalar());  // quoted: a string, whatever it says
  CHECK(root.find("quoted_null").text() == "null");
  CHECK(root.find("block").text() == "two\nlines\n");
  CHECK_FALSE(root.find("absent"));
  CHECK(root.find("absent").shown() == "nothing");
  CHECK(queues.shown() == "a list");
  CHECK(root.find("tilde").shown() == "nothing");
}

TEST_CASE("the path of an error leads back to its node, or to the deepest one on the way") {
  const auto doc = yaml::parse_one("queues:\n  - name: a\n    quotas:\n      - {flavor: x}\n");
  Path at;
  at.push_key("queues");
  at.push_index(0);
  at.push_key("quotas");
  at.push_index(0);
  at.push_key("flavor");
  const SpecError e(at, "why");
  CHECK(e.path_text() == "queues[0].quotas[0].flavor");
  CHECK(doc.at(e.path()).text() == "x");
  CHECK(doc.at(e.path()).mark().line == 4);
  at.pop();
  at.push_key("resources");  // missing: its map
  const SpecError missing(at, "is required");
  CHECK(doc.at(missing.path()).is_map());
  CHECK(doc.at(missing.path()).mark().column == 9);
}

TEST_CASE("syntax errors say where, and what libyaml found; a tab before a key gets a hint") {
  CHECK(error_of("queues: [{name: q}\n").rfind("2:1: did not find expected ',' or ']'", 0) == 0);
  const std::string tab = error_of("queues:\n\t- name: q\n");
  CHECK(tab.rfind("2:1: ", 0) == 0);
  CHECK(tab.find("indent with spaces, not tabs") != std::string::npos);
  CHECK(error_of("a: \"open\n").find("found unexpected end of stream") != std::string::npos);
}

TEST_CASE("a key given twice is refused where it is given the second time, naming the first") {
  CHECK(error_of("now: 1\nnow: 2\n") ==
        "2:1: now: is listed twice in this map (first at line 1, column 1); give each key once");
  CHECK(error_of("queues:\n  - {name: a, weight: 1, name: b}\n") ==
        "2:26: queues[0].name: is listed twice in this map (first at line 2, column 6); give each key once");
  // A big map is checked by sorting its keys (linear-logarithmic), with the same words.
  std::string big = "labels:\n";
  for (int i = 0; i < 100; ++i) big += "  k" + std::to_string(i) + ": v\n";
  big += "  k42: again\n";
  CHECK(error_of(big) ==
        "102:3: labels.k42: is listed twice in this map (first at line 44, column 3); give each key once");
}

TEST_CASE("a key must be a plain name, not a list or a map") {
  CHECK(error_of("queues: [{name: q, [a]: 1}]\n") ==
        "1:20: queues[0]: has a key that is a list; a key must be a plain name");
  CHECK(error_of("? {a: 1}\n: x\n").find("has a key that is a map") != std::string::npos);
}

TEST_CASE("nesting deeper than the limit is refused") {
  std::string deep;
  for (std::size_t i = 0; i < yaml::kMaxDepth; ++i) deep += "[";
  CHECK(error_of(deep + std::string(yaml::kMaxDepth, ']') + "\n") == "(accepted)");
  const std::string too_deep = deep + "[" + std::string(yaml::kMaxDepth + 1, ']') + "\n";
  CHECK(error_of(too_deep).find("nests deeper than 64 levels of lists and maps") != std::string::npos);
}

TEST_CASE("aliases share their anchor's node; expanding past the limit is refused") {
  const auto doc = yaml::parse_one(
      "quota: &q {nominal: 8}\n"
      "queues:\n"
      "  - {name: a, gpu: *q}\n"
      "  - {name: b, gpu: *q}\n");
  CHECK(doc.root().find("queues").item(1).find("gpu").find("nominal").text() == "8");
  CHECK(error_of("a: *nothing\n").find("the alias *nothing names no anchor") != std::string::npos);
  CHECK(error_of("a: &x [1, *x]\n").find("refers to a list or map that contains it") != std::string::npos);
  // The "billion laughs": nine levels of ten aliases each would be a billion nodes.
  std::string laughs = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i < 10; ++i) {
    laughs += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) laughs += (k ? ", *l" : "*l") + std::to_string(i - 1);
    laughs += "]\n";
  }
  const std::string e = error_of(laughs);
  CHECK(e.find("aliases expand this part of the document to more than 1000000 nodes") != std::string::npos);
  CHECK(e.rfind("6:5: l5: ", 0) == 0);  // where the part that went past the limit is
}

TEST_CASE("documents: one expected, several with content refused, empty ones ignored") {
  CHECK(yaml::parse_one("").root().is_null());
  CHECK(yaml::parse_one("# only a comment\n").root().is_null());
  CHECK(yaml::parse_one("---\na: 1\n...\n").root().find("a").text() == "1");
  CHECK(error_of("a: 1\n---\nb: 2\n") ==
        "3:1: the text holds 2 YAML documents (separated by ---); put everything in one");
  CHECK(error_of("---\n---\nb: 2\n").find("the first YAML document is empty") != std::string::npos);
  const auto docs = yaml::parse_stream("a: 1\n---\n# nothing\n---\nb: 2\n");
  REQUIRE(docs.size() == 3);
  CHECK(docs[1].root().is_null());
  CHECK(docs[2].root().find("b").mark().line == 5);  // lines count from the start of the stream
}

namespace {

std::string json_of(const std::string& text) { return to_json(yaml::parse_one(text).root()); }

}  // namespace

TEST_CASE("a tree as canonical JSON: maps in document order, lists, null; compact") {
  CHECK(json_of("zeta: 1\nalpha: [x, y]\nmid: {b: 2, a: 1}\n") == R"({"zeta":1,"alpha":["x","y"],"mid":{"b":2,"a":1}})");
  CHECK(json_of("a: null\nb: ~\nc:\nd: []\ne: {}\n") == R"({"a":null,"b":null,"c":null,"d":[],"e":{}})");
  CHECK(json_of("") == "null");
  CHECK(to_json(Node()) == "null");
  // Nesting, and an alias written out where it is used.
  CHECK(json_of("spec:\n  containers:\n    - name: main\n      env: [{name: A, value: \"1\"}]\n"
                "      ports: [[1, 2], []]\n"
                "base: &b {k: v}\nother: *b\n") ==
        R"({"spec":{"containers":[{"name":"main","env":[{"name":"A","value":"1"}],"ports":[[1,2],[]]}]},)"
        R"("base":{"k":"v"},"other":{"k":"v"}})");
}

TEST_CASE("a plain scalar becomes true, false or a number when it is one; anything quoted stays a string") {
  CHECK(json_of("[true, True, TRUE, false, False, FALSE, yes, no, on, off]") ==
        R"([true,true,true,false,false,false,"yes","no","on","off"])");
  CHECK(json_of("[1000, -5, 0, -0, 1.5, -0.25, 2e-3, 1E+6, +3, .5, -.5, 1., 007.5]") ==
        "[1000,-5,0,-0,1.5,-0.25,2e-3,1E+6,3,0.5,-0.5,1,7.5]");
  // Octal as Kubernetes' YAML reading has it (a volume's defaultMode: 0644 is 420), 0o and hex.
  CHECK(json_of("[0644, 0o17, 0x1F, -0x10, 00]") == "[420,15,31,-16,0]");
  // Not numbers: strings.
  CHECK(json_of("[089, 0x, 0xG, 1_000, .inf, .nan, 1e, 1.2.3, v1.2, 12Gi, 500m, '-', +, 0o8, "
                "99999999999999999999999x]") ==
        R"(["089","0x","0xG","1_000",".inf",".nan","1e","1.2.3","v1.2","12Gi","500m","-","+","0o8",)"
        R"("99999999999999999999999x"])");
  CHECK(json_of("0o7777777777777777777777777") == R"("0o7777777777777777777777777")");  // over 64 bits
  CHECK(json_of("123456789012345678901234567890") == "123456789012345678901234567890");  // as written
  // Quoted or block scalars are strings whatever they say.
  CHECK(json_of("[\"true\", '1000', \"null\", '~', \"\", '0644']") == R"(["true","1000","null","~","","0644"])");
  CHECK(json_of("script: |\n  echo 1\n  echo 2\nfolded: >\n  one\n  two\n") ==
        R"({"script":"echo 1\necho 2\n","folded":"one two\n"})");
  CHECK(json_number("+1") == "1");
  CHECK(json_number("0644") == "420");
  CHECK(json_number("10") == "10");
  CHECK(json_number("ten").empty());
}

TEST_CASE("JSON strings: quotes, backslashes and control characters escaped, UTF-8 as it is") {
  CHECK(json_of(R"("say \"hi\" C:\\dir")") == R"("say \"hi\" C:\\dir")");
  CHECK(json_of(R"("tab\tnl\ncr\rbs\bff\f")") == R"("tab\tnl\ncr\rbs\bff\f")");
  CHECK(json_of(R"("\x01\x1f\x00end")") == R"("\u0001\u001f\u0000end")");
  CHECK(json_of("\"del\\x7f é ✓\"") == "\"del\x7f é ✓\"");  // not control characters to JSON
  CHECK(json_of("{\"a\\\"b\": 1, 'c\\d': 2}") == R"({"a\"b":1,"c\\d":2})");  // keys too
  CHECK(json_string("") == R"("")");
  CHECK(json_string(std::string("a\0b", 3)) == R"("a\u0000b")");
}

TEST_CASE("the JSON read back as YAML gives the same JSON: it is canonical") {
  for (const char* text : {"metadata: {labels: {team: vision}}\nspec: {securityContext: {runAsUser: 1000}, "
                           "volumes: [{name: cfg, configMap: {defaultMode: 0644}}], tty: true, x: null}\n",
                           "[\"q\\\"\\\\\\t\\x01\", 1.50, -.5, \"\", {}, []]"}) {
    CAPTURE(text);
    const std::string once = json_of(text);
    CHECK(json_of(once) == once);
  }
}

namespace {

// A Queue object read as the kubernetes binder reads it; the error's message, or its name.
std::string queue_object(const std::string& text) {
  try {
    const yaml::Document doc = yaml::parse_one(text);
    Path at;
    ResourceNames names;
    return "queue " + read_queue_object(doc.root(), at, names).name.value;
  } catch (const SpecError& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("a Queue object: its name from metadata, its spec the queue's keys, errors naming spec.<key>") {
  CHECK(queue_object("apiVersion: gpuq.io/v1alpha1\nkind: Queue\nmetadata: {name: team-a, generation: 3}\n"
                     "spec: {cohort: r, quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]}\n"
                     "status: {pendingJobs: 2}\n") == "queue team-a");
  CHECK(queue_object("apiVersion: gpuq.io/v1alpha1\nkind: Queue\nmetadata: {name: q}\nspec: {weight: -1}\n")
            .find("spec.weight: ") != std::string::npos);
  CHECK(queue_object("apiVersion: gpuq.io/v1alpha1\nkind: Queue\nmetadata: {name: q}\nspec: {name: other}\n")
            .find("spec.name: is not a key of a Queue object's spec: its name is metadata.name") != std::string::npos);
  CHECK(queue_object("apiVersion: gpuq.io/v2\nkind: Queue\nmetadata: {name: q}\nspec: {}\n")
            .find("apiVersion: \"gpuq.io/v2\" is not served; use gpuq.io/v1alpha1") != std::string::npos);
  CHECK(queue_object("apiVersion: gpuq.io/v1alpha1\nkind: Queue\nmetadata: {}\nspec: {}\n")
            .find("metadata.name: is required") != std::string::npos);
  CHECK(queue_object("apiVersion: gpuq.io/v1alpha1\nkind: Queue\nmetadata: {name: q}\n").find("spec") != std::string::npos);
}


TEST_CASE("a queue written as a Queue object reads back the same, with every key the reader takes") {
  const std::string every_key =
      "name: team-a\ncohort: research\nweight: 2.5\nqueueingStrategy: StrictFIFO\n"
      "quotas: [{flavor: h100, resources: {gpu: {nominal: 8, borrowingLimit: 4, lendingLimit: 2}, memory: {nominal: 1Ti}}},"
      " {flavor: a100, resources: {gpu: {nominal: \"0.5\"}}}]\n"
      "preemption: {withinQueue: LowerPriority, reclaimWithinCohort: Any,"
      " borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 10}, minRuntime: 60}\n"
      "maxPendingJobs: 100\nmaxGpusPerJob: 16\nmaxPodsPerJob: 4\nmaxRuntime: 86400\ndefaultMaxRuntime: 3600\n"
      "runtimeEstimate: 600\nmaxGracePeriod: 30\nallowedPriorityClasses: [high, low]\nnonPreemptibleMayBorrow: true\n"
      "maxRunningJobsPerUser: 3\nmaxPendingJobsPerUser: 50\nmaxSubmitsPerUserPerMinute: 60\nmaxRetries: 2\n"
      "idle: {warnAfter: 2h, cancelAfter: 6h}\nsubmitters: {users: [alice, \"*\"], groups: [ml]}\n"
      "viewers: {users: [bob], groups: []}\nnotify: {url: \"http://hooks.local/x\", on: [started, failed]}\n"
      "kubernetes: {namespace: team-a, defaultImage: \"registry.local/t:1\", allowedImages: [registry.local/],"
      " podTemplate: {metadata: {labels: {team: a}}, spec: {serviceAccountName: trainer}}}\n";
  ResourceNames names;
  const yaml::Document in = yaml::parse_one(every_key);
  Path at;
  const QueueSpec spec = read_queue(in.root(), at, names);
  const std::string written = write_queue_object(spec, names);
  // Every key the reader takes (but name, which is metadata.name) is written.
  for (const char* key : {"cohort:", "weight:", "queueingStrategy:", "quotas:", "borrowingLimit:", "lendingLimit:",
                          "preemption:", "withinQueue:", "reclaimWithinCohort:", "borrowWithinCohort:",
                          "maxPriorityThreshold:", "minRuntime:", "maxPendingJobs:", "maxGpusPerJob:", "maxPodsPerJob:",
                          "maxRuntime:", "defaultMaxRuntime:", "runtimeEstimate:", "maxGracePeriod:",
                          "allowedPriorityClasses:", "nonPreemptibleMayBorrow:", "maxRunningJobsPerUser:",
                          "maxPendingJobsPerUser:", "maxSubmitsPerUserPerMinute:", "maxRetries:", "idle:", "submitters:",
                          "viewers:", "notify:", "kubernetes:", "namespace:", "defaultImage:", "allowedImages:", "podTemplate:"})
    CHECK_MESSAGE(written.find(key) != std::string::npos, key << " not in\n" << written);
  const yaml::Document back = yaml::parse_one(written);
  Path at2;
  const QueueSpec again = read_queue_object(back.root(), at2, names);
  CHECK(again.name.value == "team-a");
  CHECK(write_queue_object(again, names) == written);
  CHECK(again.kubernetes == spec.kubernetes);
  CHECK(again.idle == spec.idle);
  CHECK(again.notify == spec.notify);
  CHECK(again.quotas.size() == 2);
  CHECK(again.quotas[1].resources[0].second.nominal == 500);
  // A queue with nothing but its name.
  QueueSpec bare;
  bare.name = QueueName("bare");
  CHECK(write_queue_object(bare, names) == "apiVersion: gpuq.io/v1alpha1\nkind: Queue\nmetadata:\n  name: \"bare\"\nspec:\n  {}\n");
}
