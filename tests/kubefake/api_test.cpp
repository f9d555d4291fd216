// The fake's REST API as a client sees it: authentication, discovery, create/get/list, selectors,
// paging, optimistic concurrency, patches, status subresources, faults and the request log.
#include <doctest/doctest.h>

#include <set>

#include "tests/kubefake/server.hpp"
#include "tests/kubefake/test_client.hpp"

namespace {

using namespace gpuq::kubefake;
using namespace gpuq::kubefake::testing;
namespace json = boost::json;

std::string rv_of(const json::object& o) { return str(o.at("metadata").at("resourceVersion")); }

std::vector<std::string> names(const json::object& list) {
  std::vector<std::string> out;
  for (const auto& item : list.at("items").as_array())
    out.push_back(str(item.at("metadata").at("name")));
  return out;
}

Options quiet() {
  Options o;
  o.kubelet = false;
  return o;
}

}  // namespace

TEST_CASE("a request without a valid token is 401 Unauthorized with a Status body") {
  Server server(quiet());
  for (std::optional<std::string> token :
       {std::optional<std::string>(""), std::optional<std::string>("wrong")}) {
    Client c(server, token);
    Response r = c.get(kPods);
    CHECK(r.status == 401);
    json::object s = r.json();
    CHECK(str(s.at("kind")) == "Status");
    CHECK(str(s.at("status")) == "Failure");
    CHECK(str(s.at("reason")) == "Unauthorized");
    CHECK(s.at("code").as_int64() == 401);
  }
}

TEST_CASE("the forbidden token authenticates but gets 403 with RBAC's message") {
  Server server(quiet());
  Client c(server, server.options().forbidden_token);
  Response r = c.get("/api/v1/pods");
  REQUIRE(r.status == 403);
  CHECK(str(r.json().at("message")) ==
        "pods is forbidden: User \"system:serviceaccount:gpuq-system:gpuq\" cannot list resource "
        "\"pods\" in API group \"\" at the cluster scope");
  CHECK(str(r.json().at("reason")) == "Forbidden");
  Response lease =
      c.request("PUT", "/apis/coordination.k8s.io/v1/namespaces/gpuq-system/leases/gpuq", "{}");
  CHECK(str(lease.json().at("message")) ==
        "leases.coordination.k8s.io \"gpuq\" is forbidden: User "
        "\"system:serviceaccount:gpuq-system:gpuq\" "
        "cannot update resource \"leases\" in API group \"coordination.k8s.io\" in the namespace "
        "\"gpuq-system\"");
  CHECK(c.get("/version").status == 200);  // discovery stays open to every authenticated user
}

TEST_CASE("a client certificate signed by the fake's CA authenticates as its CN") {
  Server server(quiet());
  Client c(server, "");
  c.use_cert(server.issue_client_cert("system:kube-scheduler"));
  CHECK(c.get(kPods).status == 200);
  auto log = server.requests();
  REQUIRE(!log.empty());
  CHECK(log.back().user == "system:kube-scheduler");
}

TEST_CASE("discovery documents name the resources, verbs and subresources") {
  Server server(quiet());
  Client c(server);
  CHECK(str(c.get("/version").json().at("gitVersion")).starts_with("v1.28"));
  CHECK(str(c.get("/api").json().at("kind")) == "APIVersions");
  std::string apis = c.get("/apis").body;
  CHECK(apis.find("\"coordination.k8s.io/v1\"") != std::string::npos);
  CHECK(apis.find("\"policy/v1\"") != std::string::npos);
  std::set<std::string> core;
  json::object v1 = c.get("/api/v1").json();
  for (const auto& r : v1.at("resources").as_array()) core.insert(str(r.at("name")));
  for (const char* want : {"pods", "pods/binding", "pods/eviction", "pods/status", "nodes",
                           "nodes/status", "namespaces", "events", "configmaps"}) {
    CHECK_MESSAGE(core.count(want) == 1, want);
  }
  CHECK(c.get("/apis/coordination.k8s.io/v1").body.find("\"leases\"") != std::string::npos);
  CHECK(c.get("/apis/policy/v1").body.find("\"poddisruptionbudgets\"") != std::string::npos);
  CHECK(c.get("/apis/apps/v1").status == 404);
  CHECK(c.get("/api/v1/widgets").status == 404);
}

TEST_CASE("create fills metadata; objects carry kind and apiVersion, list items do not") {
  Server server(quiet());
  Client c(server);
  Response r = c.post(kPods, gpu_pod("a", 1));
  REQUIRE(r.status == 201);
  json::object pod = r.json();
  CHECK(str(pod.at("kind")) == "Pod");
  CHECK(str(pod.at("apiVersion")) == "v1");
  const json::object& meta = pod.at("metadata").as_object();
  CHECK(str(meta.at("namespace")) == "default");
  CHECK(str(meta.at("uid")).size() == 36);
  CHECK(!str(meta.at("creationTimestamp")).empty());
  CHECK(std::stoull(rv_of(pod)) == server.resource_version());
  CHECK(str(pod.at("status").at("phase")) == "Pending");
  // The real defaults: requests from limits for extended resources, the scheduler's name kept.
  CHECK(str(pod.at("spec")
                .at("containers")
                .at(0)
                .at("resources")
                .at("requests")
                .at("nvidia.com/gpu")) == "1");
  CHECK(str(pod.at("spec").at("schedulerName")) == "gpuq");
  CHECK(str(pod.at("spec").at("restartPolicy")) == "Never");

  json::object got = c.get(kPods + "/a").json();
  CHECK(str(got.at("kind")) == "Pod");
  json::object list = c.get(kPods).json();
  CHECK(str(list.at("kind")) == "PodList");
  CHECK(rv_of(list) == std::to_string(server.resource_version()));
  REQUIRE(list.at("items").as_array().size() == 1);
  CHECK(!list.at("items").at(0).as_object().contains("kind"));
  CHECK(!list.at("items").at(0).as_object().contains("apiVersion"));
  CHECK(c.get("/api/v1/pods").json().at("items").as_array().size() == 1);  // across namespaces
}

TEST_CASE("create refuses duplicates (409), missing namespaces (404) and nameless objects (422)") {
  Server server(quiet());
  Client c(server);
  REQUIRE(c.post(kPods, gpu_pod("a", 0)).status == 201);
  Response dup = c.post(kPods, gpu_pod("a", 0));
  CHECK(dup.status == 409);
  CHECK(str(dup.json().at("reason")) == "AlreadyExists");
  CHECK(str(dup.json().at("message")) == "pods \"a\" already exists");
  Response nons = c.post("/api/v1/namespaces/x/pods", gpu_pod("a", 0));
  CHECK(nons.status == 404);
  CHECK(str(nons.json().at("message")) == "namespaces \"x\" not found");
  json::object nameless = gpu_pod("", 0);
  Response bad = c.post(kPods, nameless);
  CHECK(bad.status == 422);
  CHECK(str(bad.json().at("reason")) == "Invalid");
  nameless["metadata"].as_object()["generateName"] = "job-";
  json::object made = c.post(kPods, nameless).json();
  std::string name = str(made.at("metadata").at("name"));
  CHECK(name.starts_with("job-"));
  CHECK(name.size() == 9);
  CHECK(c.get(kPods + "/missing").status == 404);
  CHECK(str(c.get(kPods + "/missing").json().at("message")) == "pods \"missing\" not found");
}

TEST_CASE("label selectors: equality, inequality, set-based and existence") {
  Server server(quiet());
  Client c(server);
  c.post(kPods, gpu_pod("a", 0, {{"team", "vision"}, {"tier", "gold"}}));
  c.post(kPods, gpu_pod("b", 0, {{"team", "nlp"}}));
  c.post(kPods, gpu_pod("c", 0, {{"tier", "bronze"}}));
  auto select = [&](const std::string& s) {
    return names(c.get(kPods + "?labelSelector=" + s).json());
  };
  using V = std::vector<std::string>;
  CHECK(select("team%3Dvision") == V{"a"});
  CHECK(select("team%3D%3Dnlp") == V{"b"});
  CHECK(select("team!%3Dvision") == V{"b", "c"});  // != matches objects without the label too
  CHECK(select("team+in+(vision,nlp)") == V{"a", "b"});
  CHECK(select("tier+notin+(gold)") == V{"b", "c"});
  CHECK(select("team") == V{"a", "b"});
  CHECK(select("!team") == V{"c"});
  CHECK(select("team,tier%3Dgold") == V{"a"});
  Response bad = c.get(kPods + "?labelSelector=team+in+vision");
  CHECK(bad.status == 400);
  CHECK(str(bad.json().at("reason")) == "BadRequest");
}

TEST_CASE("field selectors: the fields the real server supports, 400 for others") {
  Server server(quiet());
  server.add_node("n1");
  Client c(server);
  c.post(kPods, gpu_pod("a", 0));
  c.post(kPods, gpu_pod("b", 0));
  c.post(kPods + "/a/binding", json::object{{"metadata", {{"name", "a"}}},
                                            {"target", {{"kind", "Node"}, {"name", "n1"}}}});
  using V = std::vector<std::string>;
  auto select = [&](const std::string& s) {
    return names(c.get("/api/v1/pods?fieldSelector=" + s).json());
  };
  CHECK(select("spec.nodeName%3Dn1") == V{"a"});
  CHECK(select("spec.nodeName%3D") == V{"b"});  // unscheduled pods
  CHECK(select("spec.schedulerName%3Dgpuq,spec.nodeName!%3Dn1") == V{"b"});
  CHECK(select("metadata.name%3D%3Db") == V{"b"});
  CHECK(select("status.phase%3DPending") == V{"a", "b"});
  CHECK(select("metadata.namespace%3Dkube-system").empty());
  Response bad = c.get("/api/v1/pods?fieldSelector=spec.foo%3Dx");
  CHECK(bad.status == 400);
  CHECK(str(bad.json().at("message")) == "field label not supported: spec.foo");
}

TEST_CASE("paging: limit and continue return every item once from one snapshot") {
  Server server(quiet());
  Client c(server);
  for (int i = 0; i < 7; ++i) c.post(kPods, gpu_pod("p" + std::to_string(i), 0));
  json::object first = c.get(kPods + "?limit=3").json();
  CHECK(names(first) == std::vector<std::string>{"p0", "p1", "p2"});
  CHECK(first.at("metadata").at("remainingItemCount").as_int64() == 4);
  std::string rv = rv_of(first);
  // Changes after the first page do not show in the later ones (a consistent list).
  c.post(kPods, gpu_pod("p3a", 0));
  c.del(kPods + "/p5");
  std::vector<std::string> all = names(first);
  std::string token = str(first.at("metadata").at("continue"));
  while (!token.empty()) {
    json::object page = c.get(kPods + "?limit=3&continue=" + token).json();
    CHECK(rv_of(page) == rv);
    for (auto& n : names(page)) all.push_back(n);
    const json::value* next = page.at("metadata").as_object().if_contains("continue");
    token = next == nullptr ? "" : str(*next);
  }
  CHECK(all == std::vector<std::string>{"p0", "p1", "p2", "p3", "p4", "p5", "p6"});
  CHECK(c.get(kPods + "?limit=3&continue=garbage").status == 400);
}

TEST_CASE("a continue token from before compaction is 410 Expired with the real message") {
  Server server(quiet());
  Client c(server);
  for (int i = 0; i < 4; ++i) c.post(kPods, gpu_pod("p" + std::to_string(i), 0));
  std::string token = str(c.get(kPods + "?limit=2").json().at("metadata").at("continue"));
  c.post(kPods, gpu_pod("later", 0));
  server.compact();
  Response r = c.get(kPods + "?limit=2&continue=" + token);
  REQUIRE(r.status == 410);
  json::object s = r.json();
  CHECK(str(s.at("reason")) == "Expired");
  CHECK(str(s.at("message"))
            .starts_with(
                "The provided continue parameter is too old to display a consistent list result."));
  // The Status carries a token that continues (inconsistently) at the latest version.
  json::object rest = c.get(kPods + "?continue=" + str(s.at("metadata").at("continue"))).json();
  CHECK(names(rest) == std::vector<std::string>{"p2", "p3"});
}

TEST_CASE("PUT with a stale resourceVersion is 409 Conflict; a no-op write makes no new version") {
  Server server(quiet());
  Client c(server);
  const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
  json::object lease{{"apiVersion", "coordination.k8s.io/v1"},
                     {"kind", "Lease"},
                     {"metadata", {{"name", "gpuq"}}},
                     {"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", 15}}}};
  json::object made = c.post(leases, lease).json();
  json::object mine = made;
  mine["spec"].as_object()["holderIdentity"] = "b";
  json::object taken = c.put(leases + "/gpuq", mine).json();
  CHECK(rv_of(taken) != rv_of(made));
  Response stale = c.put(leases + "/gpuq", mine);  // still carries made's resourceVersion
  CHECK(stale.status == 409);
  CHECK(str(stale.json().at("reason")) == "Conflict");
  CHECK(str(stale.json().at("message")) ==
        "Operation cannot be fulfilled on leases.coordination.k8s.io \"gpuq\": the object has been "
        "modified; please apply your changes to the latest version and try again");
  CHECK(str(stale.json().at("details").at("group")) == "coordination.k8s.io");
  std::uint64_t before = server.resource_version();
  CHECK(rv_of(c.put(leases + "/gpuq", taken).json()) == rv_of(taken));
  CHECK(server.resource_version() == before);
  json::object unconditional = taken;
  unconditional["metadata"].as_object().erase("resourceVersion");
  unconditional["spec"].as_object()["holderIdentity"] = "c";
  CHECK(c.put(leases + "/gpuq", unconditional).status == 200);
  CHECK(c.put(leases + "/other", unconditional).status == 400);  // the name must match the URL
}

TEST_CASE("merge, strategic-merge and JSON patches") {
  Server server(quiet());
  Client c(server);
  c.post(kPods, gpu_pod("a", 0, {{"keep", "1"}, {"drop", "1"}}));
  json::object merged =
      c.patch(kPods + "/a", json::parse(R"({"metadata":{"labels":{"drop":null,"new":"x"}}})"),
              "application/merge-patch+json")
          .json();
  CHECK(merged.at("metadata").at("labels") == json::parse(R"({"keep":"1","new":"x"})"));

  // Strategic merge on status: conditions merge by type.
  auto cond = [](const char* type, const char* status) {
    return json::object{{"type", type}, {"status", status}};
  };
  c.patch(kPods + "/a/status",
          json::object{{"status", {{"conditions", json::array{cond("GpuqAdmitted", "True")}}}}},
          "application/strategic-merge-patch+json");
  json::object sm =
      c.patch(kPods + "/a/status",
              json::object{{"status", {{"conditions", json::array{cond("GpuqQueued", "False")}}}}},
              "application/strategic-merge-patch+json")
          .json();
  std::set<std::string> types;
  for (const auto& x : sm.at("status").at("conditions").as_array()) types.insert(str(x.at("type")));
  CHECK(types == std::set<std::string>{"GpuqAdmitted", "GpuqQueued"});
  // A merge patch replaces the list instead.
  json::object mp =
      c.patch(kPods + "/a/status",
              json::object{{"status", {{"conditions", json::array{cond("X", "True")}}}}},
              "application/merge-patch+json")
          .json();
  CHECK(mp.at("status").at("conditions").as_array().size() == 1);

  json::object jp = c.patch(kPods + "/a", json::parse(R"([
      {"op":"test","path":"/metadata/labels/keep","value":"1"},
      {"op":"add","path":"/metadata/annotations","value":{"a/b":"c"}},
      {"op":"replace","path":"/metadata/labels/new","value":"y"},
      {"op":"remove","path":"/metadata/labels/keep"}])"),
                            "application/json-patch+json")
                        .json();
  CHECK(jp.at("metadata").at("labels") == json::parse(R"({"new":"y"})"));
  CHECK(jp.at("metadata").at("annotations") == json::parse(R"({"a/b":"c"})"));
  Response failed =
      c.patch(kPods + "/a", json::parse(R"([{"op":"test","path":"/metadata/name","value":"b"}])"),
              "application/json-patch+json");
  CHECK(failed.status == 422);
  Response apply = c.patch(kPods + "/a", json::object{}, "application/apply-patch+yaml");
  CHECK(apply.status == 415);
  CHECK(c.patch(kPods + "/zzz", json::object{}, "application/merge-patch+json").status == 404);
}

TEST_CASE("status subresource: the main resource keeps status, /status changes only status") {
  Server server(quiet());
  Client c(server);
  json::object pod = c.post(kPods, gpu_pod("a", 0)).json();
  pod["status"].as_object()["phase"] = "Running";
  pod["metadata"].as_object()["labels"] = json::object{{"x", "1"}};
  json::object after = c.put(kPods + "/a", pod).json();
  CHECK(str(after.at("status").at("phase")) == "Pending");
  CHECK(after.at("metadata").at("labels") == json::parse(R"({"x":"1"})"));
  after["status"].as_object()["phase"] = "Running";
  after["metadata"].as_object()["labels"] = json::object{{"x", "2"}};
  json::object st = c.put(kPods + "/a/status", after).json();
  CHECK(str(st.at("status").at("phase")) == "Running");
  CHECK(st.at("metadata").at("labels") == json::parse(R"({"x":"1"})"));
  // A pod's spec is immutable but for images and a few fields: nodeName goes through binding.
  st["spec"].as_object()["nodeName"] = "n1";
  Response r = c.put(kPods + "/a", st);
  CHECK(r.status == 422);
  CHECK(str(r.json().at("message")).find("pod updates may not change fields") != std::string::npos);
}

TEST_CASE("fail_next answers the next matching requests with the Status and Retry-After") {
  Server server(quiet());
  Client c(server);
  server.fail_next("GET", "/pods", 429, 2, 3);
  for (int i = 0; i < 2; ++i) {
    Response r = c.get(kPods);
    CHECK(r.status == 429);
    CHECK(r.headers["retry-after"] == "3");
    CHECK(str(r.json().at("reason")) == "TooManyRequests");
    CHECK(r.json().at("details").at("retryAfterSeconds").as_int64() == 3);
  }
  CHECK(c.get(kPods).status == 200);
  server.fail_next("", "/binding", 503);
  CHECK(c.get(kPods).status == 200);  // does not match
  CHECK(c.post(kPods + "/x/binding", json::object{}).status == 503);
  CHECK(c.post(kPods + "/x/binding", json::object{}).status == 400);  // served again
}

TEST_CASE(
    "the request log records method, path, query, content type, user agent, user and status") {
  Server server(quiet());
  Client c(server);
  server.clear_requests();
  c.post(kPods, gpu_pod("a", 0));
  c.get(kPods + "?labelSelector=x%3Dy");
  Client(server, "").get(kPods);
  auto log = server.requests();
  REQUIRE(log.size() == 3);
  CHECK(log[0].method == "POST");
  CHECK(log[0].path == kPods);
  CHECK(log[0].content_type == "application/json");
  CHECK(log[0].status == 201);
  CHECK(log[0].user == server.options().user);
  CHECK(log[0].user_agent == "kubefake-test/1.0");
  CHECK(log[1].query == "labelSelector=x%3Dy");
  CHECK(log[2].status == 401);
  CHECK(log[2].user.empty());
  CHECK(log[0].at <= log[1].at);
}

TEST_CASE("kubectl's Table request gets a meta.k8s.io/v1 Table") {
  Server server(quiet());
  server.add_node("n1");
  Client c(server);
  Response r =
      c.request("GET", "/api/v1/nodes", "", "",
                {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}});
  json::object t = r.json();
  CHECK(str(t.at("kind")) == "Table");
  CHECK(str(t.at("apiVersion")) == "meta.k8s.io/v1");
  CHECK(str(t.at("rows").at(0).at("cells").at(1)) == "Ready");
}

TEST_CASE("plain HTTP, deletes of other kinds answer a Status, namespaces delete their content") {
  Options o = quiet();
  o.tls = false;
  Server server(o);
  CHECK(server.url().starts_with("http://"));
  Client c(server);
  c.post("/api/v1/namespaces", json::object{{"metadata", {{"name", "team"}}}});
  c.post("/api/v1/namespaces/team/configmaps",
         json::object{{"metadata", {{"name", "cm"}}}, {"data", {{"k", "v"}}}});
  json::object s = c.del("/api/v1/namespaces/team/configmaps/cm").json();
  CHECK(str(s.at("kind")) == "Status");
  CHECK(str(s.at("status")) == "Success");
  CHECK(str(s.at("details").at("kind")) == "configmaps");
  c.post("/api/v1/namespaces/team/pods", gpu_pod("p", 0));
  CHECK(c.del("/api/v1/namespaces/team").status == 200);
  CHECK(c.get("/api/v1/namespaces/team/pods/p").status == 404);
  CHECK(c.del("/api/v1/namespaces/default").status == 403);
}
