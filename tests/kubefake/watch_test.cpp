// Watches: from a resourceVersion (exactly the later changes, in order, once), from now (synthetic
// ADDED first), 410 when too old, bookmarks, timeouts, drop_watches, selectors.
#include <doctest/doctest.h>

#include "tests/kubefake/server.hpp"
#include "tests/kubefake/test_client.hpp"

namespace {

using namespace gpuq::kubefake;
using namespace gpuq::kubefake::testing;
namespace json = boost::json;
using namespace std::chrono_literals;

std::string type_of(const json::object& ev) { return str(ev.at("type")); }
std::string name_of(const json::object& ev) {
  return str(ev.at("object").at("metadata").at("name"));
}
std::uint64_t event_rv(const json::object& ev) {
  return std::stoull(str(ev.at("object").at("metadata").at("resourceVersion")));
}

Options fast() {
  Options o;
  o.kubelet = false;
  o.bookmark_interval = 20ms;
  return o;
}

// type:name of each event, until `n` came (or 5 s passed without one).
std::vector<std::string> take(WatchStream& w, std::size_t n) {
  std::vector<std::string> out;
  while (out.size() < n) {
    auto ev = w.next(5s);
    if (!ev) break;
    if (type_of(*ev) == "BOOKMARK") continue;
    out.push_back(type_of(*ev) + ":" + name_of(*ev));
  }
  return out;
}

}  // namespace

TEST_CASE("a watch from a resourceVersion sees exactly the later changes, in order, once") {
  Server server(fast());
  Client c(server);
  c.post(kPods, gpu_pod("before", 0));
  std::string rv = std::to_string(server.resource_version());
  c.post(kPods, gpu_pod("a", 0));
  c.patch(kPods + "/a", json::parse(R"({"metadata":{"labels":{"x":"1"}}})"),
          "application/merge-patch+json");
  c.post("/api/v1/namespaces/default/configmaps",
         json::object{{"metadata", {{"name", "not-a-pod"}}}});
  c.del(kPods + "/before");
  WatchStream w(server, kPods + "?watch=true&resourceVersion=" + rv);
  CHECK(w.status() == 200);
  c.post(kPods, gpu_pod("b", 0));  // live, after the history
  std::vector<std::uint64_t> rvs;
  std::vector<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    auto ev = w.next(5s);
    REQUIRE(ev);
    seen.push_back(type_of(*ev) + ":" + name_of(*ev));
    rvs.push_back(event_rv(*ev));
  }
  CHECK(seen == std::vector<std::string>{"ADDED:a", "MODIFIED:a", "DELETED:before", "ADDED:b"});
  CHECK(std::is_sorted(rvs.begin(), rvs.end()));
  CHECK(std::adjacent_find(rvs.begin(), rvs.end()) == rvs.end());
  CHECK(rvs.front() > std::stoull(rv));
  CHECK(!w.next(100ms));  // nothing twice
}

TEST_CASE("a watch without a resourceVersion starts with a synthetic ADDED per object") {
  Server server(fast());
  Client c(server);
  c.post(kPods, gpu_pod("x", 0));
  c.post(kPods, gpu_pod("y", 0));
  WatchStream w(server, "/api/v1/pods?watch=1");
  CHECK(take(w, 2) == std::vector<std::string>{"ADDED:x", "ADDED:y"});
  c.del(kPods + "/x");
  CHECK(take(w, 1) == std::vector<std::string>{"DELETED:x"});
  WatchStream zero(server, "/api/v1/pods?watch=1&resourceVersion=0");
  CHECK(take(zero, 1) == std::vector<std::string>{"ADDED:y"});
}

TEST_CASE("a watch from a compacted resourceVersion gets one ERROR 410 Expired event and ends") {
  Options o = fast();
  o.history = 3;
  Server server(o);
  Client c(server);
  std::uint64_t old = server.resource_version();
  for (int i = 0; i < 5; ++i) c.post(kPods, gpu_pod("p" + std::to_string(i), 0));
  WatchStream w(server, kPods + "?watch=true&resourceVersion=" + std::to_string(old));
  CHECK(w.status() == 200);  // as the real server: the error comes inside the stream
  auto ev = w.next();
  REQUIRE(ev);
  CHECK(type_of(*ev) == "ERROR");
  const json::object& s = ev->at("object").as_object();
  CHECK(str(s.at("kind")) == "Status");
  CHECK(s.at("code").as_int64() == 410);
  CHECK(str(s.at("reason")) == "Expired");
  CHECK(
      str(s.at("message")).starts_with("too old resource version: " + std::to_string(old) + " ("));
  CHECK(w.wait_end());
  CHECK(w.ended_cleanly());
  // After compact() no version handed out before it can be watched, not even the latest.
  std::uint64_t before = server.resource_version();
  server.compact();
  WatchStream stale(server, kPods + "?watch=true&resourceVersion=" + std::to_string(before));
  auto gone = stale.next();
  REQUIRE(gone);
  CHECK(type_of(*gone) == "ERROR");
  WatchStream fresh(
      server, kPods + "?watch=true&resourceVersion=" + std::to_string(server.resource_version()));
  CHECK(fresh.status() == 200);
  c.post(kPods, gpu_pod("late", 0));
  CHECK(take(fresh, 1) == std::vector<std::string>{"ADDED:late"});
}

TEST_CASE("bookmarks arrive with allowWatchBookmarks and carry the current resourceVersion") {
  Server server(fast());
  Client c(server);
  c.post(kPods, gpu_pod("a", 0));
  WatchStream w(server, kPods + "?watch=true&allowWatchBookmarks=true&resourceVersion=" +
                            std::to_string(server.resource_version()));
  auto ev = w.next();
  REQUIRE(ev);
  CHECK(type_of(*ev) == "BOOKMARK");
  CHECK(str(ev->at("object").at("kind")) == "Pod");
  CHECK(str(ev->at("object").at("apiVersion")) == "v1");
  CHECK(event_rv(*ev) == server.resource_version());
  c.post(kPods, gpu_pod("b", 0));
  CHECK(take(w, 1) == std::vector<std::string>{"ADDED:b"});  // the stream carries on
  WatchStream none(
      server, kPods + "?watch=true&resourceVersion=" + std::to_string(server.resource_version()));
  CHECK(!none.next(100ms));  // no bookmarks unless asked for
}

TEST_CASE("timeoutSeconds ends a watch cleanly; drop_watches ends it abruptly without ERROR") {
  Server server(fast());
  WatchStream dropped(server, kPods + "?watch=true");
  CHECK(dropped.status() == 200);
  server.drop_watches();
  CHECK(dropped.wait_end());
  CHECK(!dropped.ended_cleanly());
  CHECK(!dropped.next(10ms));
  WatchStream timed(server, kPods + "?watch=true&timeoutSeconds=1");
  CHECK(timed.wait_end());
  CHECK(timed.ended_cleanly());
}

TEST_CASE(
    "selected watches see an object that stops matching as DELETED and one that starts as ADDED") {
  Server server(fast());
  Client c(server);
  c.post(kPods, gpu_pod("a", 0, {{"queue", "vision"}}));
  WatchStream w(server, kPods + "?watch=true&labelSelector=queue%3Dvision&resourceVersion=" +
                            std::to_string(server.resource_version()));
  CHECK(w.status() == 200);
  auto relabel = [&](const char* q) {
    c.patch(kPods + "/a", json::object{{"metadata", {{"labels", {{"queue", q}}}}}},
            "application/merge-patch+json");
  };
  relabel("nlp");
  relabel("vision");
  c.post(kPods, gpu_pod("other", 0, {{"queue", "nlp"}}));
  c.patch(kPods + "/a", json::object{{"metadata", {{"annotations", {{"k", "v"}}}}}},
          "application/merge-patch+json");
  CHECK(take(w, 3) == std::vector<std::string>{"DELETED:a", "ADDED:a", "MODIFIED:a"});
  WatchStream byname(server, kPods + "?watch=true&fieldSelector=metadata.name%3Dother");
  CHECK(take(byname, 1) == std::vector<std::string>{"ADDED:other"});
}

TEST_CASE("large events arrive whole although they span several chunks") {
  Server server(fast());
  Client c(server);
  WatchStream w(server,
                kPods + "?watch=true&resourceVersion=" + std::to_string(server.resource_version()));
  CHECK(w.status() == 200);
  json::object pod = gpu_pod("big", 0);
  pod["metadata"].as_object()["annotations"] = json::object{{"blob", std::string(10000, 'x')}};
  c.post(kPods, pod);
  auto ev = w.next();
  REQUIRE(ev);
  CHECK(str(ev->at("object").at("metadata").at("annotations").at("blob")).size() == 10000);
}
