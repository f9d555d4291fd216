// The Kubernetes client against the fake API server (tests/kubefake): TLS with the fake's CA and
// its token, clear refusals, retries on 5xx and 429, and the reflector: lists in pages, watches,
// resumes after a dropped stream, relists after 410 Gone, and delivers each change exactly once.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "binder/kubernetes/client.hpp"
#include "binder/kubernetes/reflector.hpp"
#include "tests/kubefake/server.hpp"

using namespace gpuq::binder::k8s;
namespace json = boost::json;
using gpuq::kubefake::Server;

namespace {

Access access_to(const Server& s, const std::string& token = "") {
  Access a;
  a.server = s.url();
  a.ca_pem = s.ca_pem();
  a.token = token.empty() ? s.token() : token;
  a.source = "the fake";
  return a;
}

ClientOptions fast() {
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(5000);
  o.backoff_base = std::chrono::milliseconds(5);
  o.backoff_cap = std::chrono::milliseconds(50);
  return o;
}

json::object pod(const std::string& name, const std::string& gpus = "1") {
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", json::object{{"name", name}, {"namespace", "default"}, {"labels", json::object{{"app", "train"}}}}},
      {"spec", json::object{{"schedulerName", "gpuq"},
                            {"containers", json::array{json::object{
                                               {"name", "main"},
                                               {"image", "busybox"},
                                               {"resources", json::object{{"requests", json::object{{"nvidia.com/gpu", gpus}}},
                                                                          {"limits", json::object{{"nvidia.com/gpu", gpus}}}}}}}}}}};
}

// What a reflector delivered, by key, with a count of deliveries per (key, resourceVersion).
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::string> live;                // key -> resourceVersion
  std::map<std::pair<std::string, std::string>, int> n;   // deliveries of each version
  int deleted = 0;
  int synced = 0;
  void take(std::vector<WatchEvent>& events) {
    std::lock_guard lock(mu);
    for (const WatchEvent& e : events) {
      const std::string key = object_key(e.object);
      if (e.type == EventType::kDeleted) {
        live.erase(key);
        ++deleted;
      } else {
        const std::string rv = resource_version_of(e.object);
        live[key] = rv;
        ++n[{key, rv}];
      }
    }
    cv.notify_all();
  }
  // Waits (bounded, so a bug fails instead of hanging) until pred() holds.
  template <class P>
  bool wait(P pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return pred(); });
  }
};

}  // namespace

TEST_CASE("requests over TLS with the fake's CA and token; refusals name the verb and resource") {
  Server s;
  Client c(access_to(s), fast());
  auto v = c.get("/version");
  REQUIRE_MESSAGE(v.ok(), describe(v));
  CHECK(check_access(c, {{"list", "pods", "/api/v1/pods?limit=1"}}).ok());

  Client anonymous(access_to(s, "wrong-token"), fast());
  auto denied = check_access(anonymous, {{"list", "pods", "/api/v1/pods?limit=1"}});
  REQUIRE_FALSE(denied.ok());
  CHECK(denied.error().find("refused the credentials of the fake (401 Unauthorized) to list pods") != std::string::npos);

  Client forbidden(access_to(s, "forbidden-token"), fast());
  auto no = check_access(forbidden, {{"list", "pods", "/api/v1/pods?limit=1"}});
  REQUIRE_FALSE(no.ok());
  CHECK(no.error().rfind("gpuqd may not list pods: ", 0) == 0);
  CHECK(no.error().find("(Forbidden, 403)") != std::string::npos);

  Access nowhere = access_to(s);
  nowhere.server = "https://127.0.0.1:1";
  Client unreachable(nowhere, fast());
  auto gone = check_access(unreachable, {{"list", "nodes", "/api/v1/nodes?limit=1"}});
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().rfind("cannot reach the Kubernetes API server at https://127.0.0.1:1", 0) == 0);

  Access wrong_ca = access_to(s);
  wrong_ca.ca_pem.clear();  // the system's trust store does not know the fake's CA
  Client untrusted(wrong_ca, fast());
  CHECK(untrusted.get("/version").status == 0);
}

TEST_CASE("5xx and 429 are retried with backoff; a write is retried only on 429") {
  Server s;
  Client c(access_to(s), fast());
  s.fail_next("GET", "/api/v1/nodes", 503, 2);
  auto r = c.get("/api/v1/nodes");
  CHECK(r.ok());
  CHECK(r.attempts == 3);
  s.fail_next("POST", "/api/v1/namespaces/default/pods", 500, 1);
  auto w = c.request("POST", "/api/v1/namespaces/default/pods", json::serialize(pod("p0")), "application/json",
                     Retry::kUnsafe);
  CHECK(w.status == 500);  // its outcome is unknown to the client: not repeated
  CHECK(w.attempts == 1);
  s.fail_next("POST", "/api/v1/namespaces/default/pods", 429, 1, 1);
  auto t = c.request("POST", "/api/v1/namespaces/default/pods", json::serialize(pod("p1")), "application/json",
                     Retry::kUnsafe);
  CHECK(t.status == 201);
  CHECK(t.attempts == 2);
}

TEST_CASE("a throttled server halves the requests in flight, once per burst of 429s; answers let them grow back") {
  InFlightLimit limit(32);
  CHECK(limit.limit() == 32);
  // A burst of 429s (all within 100 ms) is one cut.
  for (int i = 0; i < 5; ++i) {
    limit.acquire();
    limit.release(true);
  }
  CHECK(limit.limit() == 16);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  limit.acquire();
  limit.release(true);
  CHECK(limit.limit() == 8);
  // Each answer that is not throttled adds 1/limit: about a limit's worth of answers, one more
  // place (8 + 1/8 + 1/8.125 + ... passes 9 at the ninth).
  for (int i = 0; i < 8; ++i) {
    limit.acquire();
    limit.release(false);
  }
  CHECK(limit.limit() == 8);
  limit.acquire();
  limit.release(false);
  CHECK(limit.limit() == 9);
  // Never below one, never above the most.
  InFlightLimit one(1);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(110));
    one.acquire();
    one.release(true);
  }
  CHECK(one.limit() == 1);
  for (int i = 0; i < 10; ++i) {
    one.acquire();
    one.release(false);
  }
  CHECK(one.limit() == 1);
  // A place is waited for: a second acquire with one place blocks until the first is released.
  std::atomic<bool> second{false};
  one.acquire();
  std::thread t([&] {
    one.acquire();
    second = true;
    one.release(false);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(second.load());
  one.release(false);
  t.join();
  CHECK(second.load());
}

TEST_CASE("a kept-alive connection the server has closed is not used again: a write goes over a new one") {
  Server s;
  Client c(access_to(s), fast());
  REQUIRE(c.get("/api/v1/nodes").ok());  // leaves one connection kept alive
  s.drop_connections();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto w = c.request("POST", "/api/v1/namespaces/default/pods", json::serialize(pod("fresh")), "application/json",
                     Retry::kUnsafe);
  CHECK(w.status == 201);
  CHECK(w.attempts == 1);
}

TEST_CASE("the reflector: pages, live changes, a dropped watch, 410 Gone; each change once, none lost") {
  Server s;
  for (int i = 0; i < 25; ++i) s.create("pods", "default", pod("p" + std::to_string(i)));
  Client c(access_to(s), fast());
  Seen seen;
  std::vector<std::string> errors;
  ReflectorOptions o;
  o.path = "/api/v1/pods";
  o.field_selector = "spec.schedulerName=gpuq";
  o.page_size = 10;
  o.retry = std::chrono::milliseconds(10);
  Reflector r(c, o,
              {[&](std::vector<WatchEvent>& e) { seen.take(e); },
               [&] {
                 std::lock_guard lock(seen.mu);
                 ++seen.synced;
                 seen.cv.notify_all();
               },
               [&](const std::string& why) {
                 std::lock_guard lock(seen.mu);
                 errors.push_back(why);
               }});
  std::thread t([&] { r.run(); });
  // Stops the reflector however the test ends (a failed REQUIRE must not leave the thread).
  struct Join {
    Reflector& r;
    std::thread& t;
    ~Join() {
      r.stop();
      if (t.joinable()) t.join();
    }
  } join{r, t};
  REQUIRE(seen.wait([&] { return seen.synced == 1 && seen.live.size() == 25; }));
  CHECK(r.lists() == 1);

  s.create("pods", "default", pod("late"));
  REQUIRE_MESSAGE(seen.wait([&] { return seen.live.count("default/late") == 1; }),
                  (errors.empty() ? std::string("no error") : errors.back()));

  s.drop_watches();  // the stream ends without a word: resumed from the last version seen
  s.create("pods", "default", pod("after-drop"));
  REQUIRE(seen.wait([&] { return seen.live.count("default/after-drop") == 1; }));

  // The history is compacted and a watch must start over: a relist delivers only what changed.
  s.drop_watches();
  s.compact();
  s.create("pods", "default", pod("after-compact"));
  REQUIRE(seen.wait([&] { return seen.live.count("default/after-compact") == 1 && seen.synced >= 2; }));

  r.stop();
  t.join();
  // Nothing was delivered twice at the same version, and what the API holds is what was seen.
  for (const auto& [key, count] : seen.n) CHECK_MESSAGE(count == 1, key.first << "@" << key.second);
  const auto pods = s.list("pods", "default");
  CHECK(seen.live.size() == pods.size());
  for (const auto& p : pods) CHECK(seen.live[object_key(p)] == resource_version_of(p));
}
