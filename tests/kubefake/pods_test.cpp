// Pods end to end: binding, the simulated kubelet and device plugin, graceful deletion,
// disruption budgets and the Eviction API, node readiness, events.
#include <doctest/doctest.h>

#include <set>
#include <thread>

#include "tests/kubefake/server.hpp"
#include "tests/kubefake/test_client.hpp"

namespace {

using namespace gpuq::kubefake;
using namespace gpuq::kubefake::testing;
namespace json = boost::json;
using namespace std::chrono_literals;


json::object binding(const std::string& pod, const std::string& node) {
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Binding"},
                      {"metadata", {{"name", pod}}},
                      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
}

std::string phase(Server& s, const std::string& pod) {
  auto p = s.get("pods", "default", pod);
  if (!p) return "<gone>";
  const json::value* ph = p->at("status").as_object().if_contains("phase");
  return ph == nullptr ? "" : str(*ph);
}

bool reaches(Server& s, const std::string& pod, const std::string& want) {
  return eventually([&] { return phase(s, pod) == want; });
}

}  // namespace

TEST_CASE("binding sets nodeName and PodScheduled; a second binding is 409 with the real message") {
  Options o;
  o.kubelet = false;
  Server server(o);
  server.add_node("n1");
  Client c(server);
  c.post(kPods, gpu_pod("a", 1));
  Response r = c.post(kPods + "/a/binding", binding("a", "n1"));
  CHECK(r.status == 201);
  CHECK(str(r.json().at("kind")) == "Status");
  CHECK(str(r.json().at("status")) == "Success");
  json::object pod = *server.get("pods", "default", "a");
  CHECK(str(pod.at("spec").at("nodeName")) == "n1");
  CHECK(str(pod.at("status").at("conditions").at(0).at("type")) == "PodScheduled");
  CHECK(str(pod.at("status").at("conditions").at(0).at("status")) == "True");
  Response again = c.post(kPods + "/a/binding", binding("a", "n2"));
  CHECK(again.status == 409);
  CHECK(str(again.json().at("reason")) == "Conflict");
  CHECK(str(again.json().at("message")) ==
        "Operation cannot be fulfilled on pods/binding \"a\": pod a is already assigned to node "
        "\"n1\"");
  CHECK(c.post(kPods + "/missing/binding", binding("missing", "n1")).status == 404);
  // A node that does not exist still binds (as the real server); its kubelet never starts it.
  c.post(kPods, gpu_pod("b", 1));
  CHECK(c.post(kPods + "/b/binding", binding("b", "ghost")).status == 201);
}

TEST_CASE("the kubelet runs a bound pod: Running, ready containers, devices") {
  Server server;
  server.add_node("n1", 8);
  Client c(server);
  c.post(kPods, gpu_pod("a", 2));
  c.post(kPods + "/a/binding", binding("a", "n1"));
  REQUIRE(reaches(server, "a", "Running"));
  json::object pod = *server.get("pods", "default", "a");
  const json::object& st = pod.at("status").as_object();
  CHECK(st.at("containerStatuses").at(0).at("ready").as_bool());
  CHECK(st.at("containerStatuses").at(0).at("state").as_object().contains("running"));
  CHECK(!str(st.at("podIP")).empty());
  CHECK(!str(st.at("startTime")).empty());
  std::set<std::string> ready;
  for (const auto& cond : st.at("conditions").as_array()) {
    if (str(cond.at("status")) == "True") ready.insert(str(cond.at("type")));
  }
  CHECK(ready == std::set<std::string>{"PodScheduled", "Initialized", "ContainersReady", "Ready"});
  CHECK(server.devices_of("default", "a") == std::vector<std::string>{"GPU-0", "GPU-1"});
  CHECK(str(pod.at("metadata").at("annotations").at("sim.gpuq.io/devices")) == "GPU-0,GPU-1");
}

TEST_CASE("a pod that does not fit goes Failed OutOfnvidia.com/gpu with the kubelet's message") {
  Server server;
  server.add_node("n1", 4);
  Client c(server);
  c.post(kPods, gpu_pod("fits", 3));
  c.post(kPods, gpu_pod("too-big", 2));
  c.post(kPods + "/fits/binding", binding("fits", "n1"));
  REQUIRE(reaches(server, "fits", "Running"));
  c.post(kPods + "/too-big/binding", binding("too-big", "n1"));
  REQUIRE(reaches(server, "too-big", "Failed"));
  json::object pod = *server.get("pods", "default", "too-big");
  CHECK(str(pod.at("status").at("reason")) == "OutOfnvidia.com/gpu");
  CHECK(str(pod.at("status").at("message")) ==
        "Pod was rejected: Node didn't have enough resource: nvidia.com/gpu, requested: 2, used: "
        "3, capacity: 4");
  CHECK(server.devices_of("default", "too-big").empty());
  CHECK(eventually([&] {
    return c.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dtoo-big")
               .body.find("OutOfnvidia.com/gpu") != std::string::npos;
  }));
}

TEST_CASE("the device plugin never gives one GPU to two running pods") {
  Server server;
  server.add_node("n1", 8);
  Client c(server);
  // 1+2+3+2 = 8 GPUs, then a pod that must wait for a finished one's devices.
  int sizes[] = {1, 2, 3, 2};
  for (int i = 0; i < 4; ++i) {
    std::string name = "p" + std::to_string(i);
    c.post(kPods, gpu_pod(name, sizes[i]));
    c.post(kPods + "/" + name + "/binding", binding(name, "n1"));
  }
  for (int i = 0; i < 4; ++i) REQUIRE(reaches(server, "p" + std::to_string(i), "Running"));
  std::set<std::string> held;
  std::size_t count = 0;
  for (int i = 0; i < 4; ++i) {
    for (const auto& d : server.devices_of("default", "p" + std::to_string(i))) {
      held.insert(d);
      ++count;
    }
  }
  CHECK(count == 8);
  CHECK(held.size() == 8);  // no device twice
  auto freed = server.devices_of("default", "p2");
  server.finish_pod("default", "p2", 0);
  REQUIRE(reaches(server, "p2", "Succeeded"));
  c.post(kPods, gpu_pod("next", 3));
  c.post(kPods + "/next/binding", binding("next", "n1"));
  REQUIRE(reaches(server, "next", "Running"));
  CHECK(server.devices_of("default", "next") == freed);
}

TEST_CASE("finish_pod: 0 is Succeeded, other codes Failed; restartPolicy Always restarts") {
  Server server;
  server.add_node("n1");
  Client c(server);
  for (const char* name : {"ok", "bad"}) {
    c.post(kPods, gpu_pod(name, 1));
    c.post(kPods + "/" + std::string(name) + "/binding", binding(name, "n1"));
    REQUIRE(reaches(server, name, "Running"));
  }
  server.finish_pod("default", "ok", 0);
  server.finish_pod("default", "bad", 3);
  CHECK(phase(server, "ok") == "Succeeded");
  CHECK(phase(server, "bad") == "Failed");
  json::object bad = *server.get("pods", "default", "bad");
  const json::object& term =
      bad.at("status").at("containerStatuses").at(0).at("state").at("terminated").as_object();
  CHECK(term.at("exitCode").as_int64() == 3);
  CHECK(str(term.at("reason")) == "Error");
  CHECK(eventually([&] { return server.devices_of("default", "ok").empty(); }));

  c.post(kPods, gpu_pod("svc", 0, {}, "Always"));
  c.post(kPods + "/svc/binding", binding("svc", "n1"));
  REQUIRE(reaches(server, "svc", "Running"));
  server.finish_pod("default", "svc", 0);
  json::object svc = *server.get("pods", "default", "svc");
  CHECK(str(svc.at("status").at("phase")) == "Running");
  CHECK(svc.at("status").at("containerStatuses").at(0).at("restartCount").as_int64() == 1);
  CHECK_THROWS_AS(server.finish_pod("default", "nobody", 0), StatusError);
}

TEST_CASE("a pod with sim.gpuq.io/run-seconds finishes by itself") {
  Server server;
  server.add_node("n1");
  Client c(server);
  json::object pod = gpu_pod("batch", 1);
  pod["metadata"].as_object()["annotations"] = json::object{{"sim.gpuq.io/run-seconds", "0"}};
  c.post(kPods, pod);
  c.post(kPods + "/batch/binding", binding("batch", "n1"));
  CHECK(reaches(server, "batch", "Succeeded"));
}

TEST_CASE("graceful deletion: deletionTimestamp first, DELETED after the grace period") {
  Server server;
  server.add_node("n1");
  Client c(server);
  c.post(kPods, gpu_pod("a", 1));
  c.post(kPods + "/a/binding", binding("a", "n1"));
  REQUIRE(reaches(server, "a", "Running"));
  WatchStream w(server,
                kPods + "?watch=true&resourceVersion=" + std::to_string(server.resource_version()));
  REQUIRE(w.status() == 200);
  Response r =
      c.del(kPods + "/a", R"({"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":1})");
  CHECK(r.status == 200);
  json::object gone = r.json();
  CHECK(str(gone.at("kind")) == "Pod");
  CHECK(gone.at("metadata").at("deletionGracePeriodSeconds").as_int64() == 1);
  CHECK(gone.at("metadata").as_object().contains("deletionTimestamp"));
  CHECK(str(gone.at("status").at("phase")) == "Running");  // it is still running meanwhile
  auto modified = w.next();
  REQUIRE(modified);
  CHECK(str(modified->at("type")) == "MODIFIED");
  auto deleted = w.next();
  REQUIRE(deleted);
  CHECK(str(deleted->at("type")) == "DELETED");
  CHECK(!server.get("pods", "default", "a"));
  // An unbound pod goes at once.
  c.post(kPods, gpu_pod("b", 1));
  CHECK(c.del(kPods + "/b").status == 200);
  CHECK(!server.get("pods", "default", "b"));
  CHECK(c.del(kPods + "/b").status == 404);
}

TEST_CASE(
    "eviction: 429 with the DisruptionBudget cause while the budget forbids, 201 when it allows") {
  Server server;
  server.add_node("n1");
  Client c(server);
  for (const char* name : {"w0", "w1", "w2"}) {
    c.post(kPods, gpu_pod(name, 1, {{"app", "train"}}));
    c.post(kPods + "/" + std::string(name) + "/binding", binding(name, "n1"));
    REQUIRE(reaches(server, name, "Running"));
  }
  const std::string pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
  c.post(pdbs,
         json::object{
             {"apiVersion", "policy/v1"},
             {"kind", "PodDisruptionBudget"},
             {"metadata", {{"name", "train"}}},
             {"spec", {{"minAvailable", 3}, {"selector", {{"matchLabels", {{"app", "train"}}}}}}}});
  json::object st =
      server.get("poddisruptionbudgets", "default", "train")->at("status").as_object();
  CHECK(st.at("currentHealthy").as_int64() == 3);
  CHECK(st.at("desiredHealthy").as_int64() == 3);
  CHECK(st.at("expectedPods").as_int64() == 3);
  CHECK(st.at("disruptionsAllowed").as_int64() == 0);
  json::object eviction{{"apiVersion", "policy/v1"},
                        {"kind", "Eviction"},
                        {"metadata", {{"name", "w0"}, {"namespace", "default"}}}};
  Response refused = c.post(kPods + "/w0/eviction", eviction);
  CHECK(refused.status == 429);
  json::object s = refused.json();
  CHECK(str(s.at("reason")) == "TooManyRequests");
  CHECK(str(s.at("message")) ==
        "Cannot evict pod as it would violate the pod's disruption budget.");
  CHECK(str(s.at("details").at("causes").at(0).at("reason")) == "DisruptionBudget");
  CHECK(str(s.at("details").at("causes").at(0).at("message")) ==
        "The disruption budget train needs 3 healthy pods and has 3 currently");
  CHECK(phase(server, "w0") == "Running");

  c.patch(pdbs + "/train", json::object{{"spec", {{"minAvailable", "50%"}}}},
          "application/merge-patch+json");
  st = server.get("poddisruptionbudgets", "default", "train")->at("status").as_object();
  CHECK(st.at("desiredHealthy").as_int64() == 2);  // 50% of 3, rounded up
  CHECK(st.at("disruptionsAllowed").as_int64() == 1);
  // An integer minAvailable stays what it is when the evicted pod is gone (a percentage would
  // follow the fake's count of pods; see tests/kubefake/README.md).
  c.patch(pdbs + "/train", json::object{{"spec", {{"minAvailable", 2}}}},
          "application/merge-patch+json");
  eviction["deleteOptions"] = json::object{{"gracePeriodSeconds", 0}};
  Response allowed = c.post(kPods + "/w0/eviction", eviction);
  CHECK(allowed.status == 201);
  CHECK(str(allowed.json().at("status")) == "Success");
  CHECK(!server.get("pods", "default", "w0"));
  st = server.get("poddisruptionbudgets", "default", "train")->at("status").as_object();
  CHECK(st.at("disruptionsAllowed").as_int64() == 0);
  CHECK(c.post(kPods + "/w1/eviction", json::object{{"metadata", {{"name", "w1"}}}}).status == 429);
  CHECK(c.post(kPods + "/nope/eviction", json::object{{"metadata", {{"name", "nope"}}}}).status ==
        404);
}

TEST_CASE("a NotReady node starts nothing new; Ready again starts what waits") {
  Server server;
  server.add_node("n1");
  server.set_node_ready("n1", false);
  json::object node = *server.get("nodes", "", "n1");
  CHECK(node.at("spec").at("taints").as_array().size() == 2);
  Client c(server);
  c.post(kPods, gpu_pod("a", 1));
  c.post(kPods + "/a/binding", binding("a", "n1"));
  CHECK(phase(server, "a") == "Pending");
  server.set_node_ready("n1", true);
  CHECK(reaches(server, "a", "Running"));
  CHECK(!server.get("nodes", "", "n1")->at("spec").as_object().contains("taints"));
}

TEST_CASE("start_delay keeps an admitted pod Pending with ContainerCreating first") {
  Options o;
  o.start_delay = 200ms;
  Server server(o);
  server.add_node("n1");
  Client c(server);
  WatchStream w(server,
                kPods + "?watch=true&resourceVersion=" + std::to_string(server.resource_version()));
  REQUIRE(w.status() == 200);
  c.post(kPods, gpu_pod("a", 1));
  c.post(kPods + "/a/binding", binding("a", "n1"));
  std::vector<std::string> states;
  while (states.size() < 8) {
    auto ev = w.next();
    if (!ev) break;
    const json::object& st = ev->at("object").at("status").as_object();
    std::string p = str(st.at("phase"));
    const json::value* cs = st.if_contains("containerStatuses");
    if (cs != nullptr) p += "/" + std::string(cs->at(0).at("state").as_object().begin()->key());
    states.push_back(p);
    if (p == "Running/running") break;
  }
  CHECK(states ==
        std::vector<std::string>{"Pending", "Pending", "Pending/waiting", "Running/running"});
}

TEST_CASE("two concurrent bindings of one pod: exactly one wins, the other is 409") {
  Options o;
  o.kubelet = false;
  Server server(o);
  server.add_node("n1");
  server.add_node("n2");
  Client setup(server);
  setup.post(kPods, gpu_pod("a", 1));
  server.set_bind_delay(50ms);  // both requests are in flight at once
  server.set_pause(5ms);
  int codes[2] = {0, 0};
  std::thread t1(
      [&] { codes[0] = Client(server).post(kPods + "/a/binding", binding("a", "n1")).status; });
  std::thread t2(
      [&] { codes[1] = Client(server).post(kPods + "/a/binding", binding("a", "n2")).status; });
  t1.join();
  t2.join();
  CHECK(std::min(codes[0], codes[1]) == 201);
  CHECK(std::max(codes[0], codes[1]) == 409);
  std::string node = str(server.get("pods", "default", "a")->at("spec").at("nodeName"));
  CHECK(node == (codes[0] == 201 ? "n1" : "n2"));
  int binds = 0;
  for (const Request& r : server.requests())
    binds += r.path.ends_with("/binding") && r.status == 201;
  CHECK(binds == 1);
}

TEST_CASE("the C++ calls refuse what the API refuses, with the same code and reason") {
  Server server;
  server.add_node("n1");
  CHECK_THROWS_AS(server.add_node("n1"), StatusError);
  try {
    server.create("pods", "nowhere", gpu_pod("a", 1));
    FAIL("created a pod in a missing namespace");
  } catch (const StatusError& e) {
    CHECK(e.code == 404);
    CHECK(e.reason == "NotFound");
    CHECK(std::string(e.what()) == "namespaces \"nowhere\" not found");
  }
  json::object made = server.create("pods", "default", gpu_pod("a", 1));
  CHECK(str(made.at("kind")) == "Pod");
  CHECK(server.list("pods").size() == 1);
  CHECK(server.list("nodes").size() == 1);
  CHECK_THROWS_AS(server.set_node_ready("ghost", true), StatusError);
}
