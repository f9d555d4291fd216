// Notifications through a real gpuqd: a real HTTP server on a loopback port receives them.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "tests/integration/daemon_process.hpp"
#include "tests/support/files.hpp"
#include "tests/support/http_receiver.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace integration_notify_test {

using namespace gpuq::test;
namespace json = boost::json;

namespace {

v1::SubmitJobRequest job(const std::string& id, const std::string& queue, const std::string& gpus) {
  v1::SubmitJobRequest r;
  r.mutable_spec()->set_id(id);
  r.mutable_spec()->set_queue(queue);
  auto* p = r.mutable_spec()->add_pod_sets();
  (*p->mutable_resources())["gpu"] = gpus;
  r.mutable_spec()->add_command("true");
  return r;
}

}  // namespace

TEST_CASE("gpuqd: notifications are POSTed once the change is written, retried, and only to allowed URLs") {
  TempDir dir;
  HttpReceiver rx;
  const std::string base = "http://127.0.0.1:" + std::to_string(rx.port()) + "/";
  std::string config = kConfig;
  // prod tells its own hook of every start.
  config.replace(config.find("  - name: prod\n") + 15, 0, "    notify: {url: \"" + base + "queue\", on: [started]}\n");
  Daemon d(dir.path, true, config + "notifications: {allowedUrls: [\"" + base + "\"], retries: 2, retryDelay: 1s}\n");
  auto n1 = job("n1", "research", "1");
  n1.mutable_spec()->mutable_notify()->set_url(base + "job");
  n1.mutable_spec()->mutable_notify()->add_on("started");
  n1.mutable_spec()->mutable_notify()->add_on("cancelled");
  REQUIRE(submit(d, n1).ok());  // the none binder starts it at once
  grpc::ClientContext ctx;
  v1::CancelJobRequest cr;
  cr.set_id("n1");
  v1::CancelJobResponse cresp;
  REQUIRE(d.jobs->Cancel(&ctx, cr, &cresp).ok());
  auto got = rx.got(2);
  REQUIRE(got.size() == 2);
  CHECK(got[0].first == "/job");
  const json::value started = json::parse(got[0].second);
  CHECK(started.at("job").as_string() == "n1");
  CHECK(started.at("event").as_string() == "started");
  CHECK(started.at("state").as_string() == "Running");
  CHECK(started.at("queue").as_string() == "research");
  CHECK(json::parse(got[1].second).at("event").as_string() == "cancelled");

  // A hook that fails once gets the notification again after retryDelay; the queue's hook too.
  auto n2 = job("n2", "prod", "1");
  n2.mutable_spec()->mutable_notify()->set_url(base + "flaky");
  n2.mutable_spec()->mutable_notify()->add_on("started");
  REQUIRE(submit(d, n2).ok());
  got = rx.got(5);
  REQUIRE(got.size() == 5);
  std::size_t flaky = 0, queue = 0;
  for (const auto& [path, body] : got) {
    flaky += path == "/flaky";
    queue += path == "/queue";
    if (path != "/job") CHECK(json::parse(body).at("job").as_string() == "n2");
  }
  CHECK(flaky == 2);
  CHECK(queue == 1);
  // Its spec shows its hook to its owner.
  CHECK(get(d, "n2").spec().notify().url() == base + "flaky");

  // A URL outside notifications.allowedUrls, or not http://, is refused at submit.
  auto bad = job("bad", "research", "1");
  bad.mutable_spec()->mutable_notify()->set_url("http://elsewhere.example/hook");
  grpc::Status st = submit(d, bad);
  CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(st.error_message().find("notifications.allowedUrls") != std::string::npos);
  bad.mutable_spec()->mutable_notify()->set_url("ftp://127.0.0.1/x");
  st = submit(d, bad);
  CHECK(st.error_message().find("is not an http:// URL") != std::string::npos);
  bad.mutable_spec()->mutable_notify()->set_url(base + "x");
  bad.mutable_spec()->mutable_notify()->add_on("exploded");
  st = submit(d, bad);
  CHECK(st.error_message().find("\"exploded\" is not an event") != std::string::npos);
  const std::string m = d.http_get("/metrics");
  CHECK(m.find("gpuq_notifications_total{result=\"sent\"} 4") != std::string::npos);
}

}  // namespace integration_notify_test
