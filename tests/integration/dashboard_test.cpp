// The web dashboard (web/README.md) through a real gpuqd: its JSON API over raw HTTP (status
// codes, errors naming the parameter, who sees what by bearer token), the HTTP port staying
// open for others while a client stalls, and the page itself rendered by headless Chromium
// with an admin's token, a user's token and none. The admin's view is saved as a screenshot
// (GPUQ_ARTIFACT_DIR/dashboard.png), kept as a test artifact.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "tests/integration/daemon_process.hpp"
#include "tests/support/files.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace integration_dashboard_test {

using namespace gpuq::test;
namespace json = boost::json;

namespace {

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  return fd;
}

// One request as written, the whole answer back (gpuqd closes after it).
std::string round_trip(int port, const std::string& request) {
  const int fd = connect_to(port);
  for (std::size_t at = 0; at < request.size();) {
    const ssize_t n = ::write(fd, request.data() + at, request.size() - at);
    if (n <= 0) break;
    at += static_cast<std::size_t>(n);
  }
  std::string got;
  char buf[8192];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return got;
}

struct Reply {
  int status = 0;
  std::string head, body;
};

Reply fetch(int port, const std::string& path, const std::string& token = "", const std::string& method = "GET") {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
  if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
  const std::string got = round_trip(port, req + "\r\n");
  Reply r;
  const auto split = got.find("\r\n\r\n");
  r.head = got.substr(0, split);
  r.body = split == std::string::npos ? std::string() : got.substr(split + 4);
  if (got.size() > 12) r.status = std::atoi(got.substr(9, 3).c_str());
  return r;
}

std::vector<std::string> job_ids(const std::string& body) {
  std::vector<std::string> ids;
  const json::value v = json::parse(body);
  for (const auto& j : v.at("jobs").as_array())
    ids.emplace_back(j.at("spec").at("id").as_string());
  return ids;
}

std::string token_for(Daemon& d, const std::string& user) {
  auto admin = v1::Admin::NewStub(grpc::CreateChannel("unix:" + d.socket(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  v1::CreateTokenRequest req;
  req.set_user(user);
  req.set_ttl_seconds(3600);
  v1::CreateTokenResponse resp;
  const auto s = admin->CreateToken(&ctx, req, &resp);
  REQUIRE_MESSAGE(s.ok(), s.error_message());
  return resp.secret();
}

v1::SubmitJobRequest job(const std::string& id, const std::string& queue, int gpus, const std::string& owner) {
  v1::SubmitJobRequest r;
  r.mutable_spec()->set_id(id);
  r.mutable_spec()->set_queue(queue);
  r.mutable_spec()->set_owner(owner);
  r.mutable_spec()->set_name("train-" + id);
  (*r.mutable_spec()->add_pod_sets()->mutable_resources())["gpu"] = std::to_string(gpus);
  r.mutable_spec()->add_command("true");
  return r;
}

std::string run_out(const std::string& cmd) {
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[8192];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = pclose(pipe);
  CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "exited " << status << ": " << cmd);
  return out;
}

std::string chromium() {
  std::string path = run_out("command -v chromium 2>/dev/null || true");
  while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
  if (path.empty()) FAIL("chromium is not on PATH; scripts/deps.sh installs it (the dashboard test needs a real browser)");
  return path;
}

// The page at `fragment` (#token=...&job=...) as Chromium drew it, after its script ran; with
// `screenshot`, also a PNG of it there.
std::string rendered(const fs::path& dir, int port, const std::string& fragment, const std::string& screenshot = "") {
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/" + fragment;
  const std::string common = "timeout 60 '" + chromium() +
                             "' --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run"
                             " --hide-scrollbars --virtual-time-budget=8000 --window-size=1400,1300 --user-data-dir='" +
                             (dir / "profile").string() + "' ";
  if (!screenshot.empty()) run_out(common + "--screenshot='" + screenshot + "' '" + url + "' 2>/dev/null");
  return run_out(common + "--dump-dom '" + url + "' 2>/dev/null");
}

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

// The rows of the jobs table: from its <tbody> to its end.
std::string jobs_table(const std::string& dom) {
  const auto from = dom.find("<table id=\"jobs\">");
  if (from == std::string::npos) return {};
  return dom.substr(from, dom.find("</table>", from) - from);
}

// The GPU map: from its box to the note under it (the legend above it has cells too).
std::string gpu_map(const std::string& dom) {
  const auto from = dom.find("<div id=\"nodes\">");
  if (from == std::string::npos) return {};
  return dom.substr(from, dom.find("id=\"nodes-error\"", from) - from);
}

struct Cluster {
  TempDir dir;
  Daemon d{dir.path};
  std::string admin, user;
  Cluster() {
    // research holds all 16 GPUs (8 of them borrowed from prod): r3 waits.
    REQUIRE(submit(d, job("r1", "research", 8, "root")).ok());
    REQUIRE(submit(d, job("r2", "research", 8, "nobody")).ok());
    REQUIRE(submit(d, job("r3", "research", 8, "root")).ok());
    admin = token_for(d, "root");
    user = token_for(d, "nobody");
  }
};

}  // namespace

TEST_CASE("dashboard API: read-only JSON of the gRPC API, as the token's user may see it") {
  Cluster c;
  const int port = c.d.http_port();

  const Reply page = fetch(port, "/");
  CHECK(page.status == 200);
  CHECK(page.head.find("Content-Security-Policy: default-src 'none'; script-src 'self'") != std::string::npos);
  CHECK(page.body.find("<script src=\"/static/app.js\"") != std::string::npos);
  CHECK(fetch(port, "/static/app.js").head.find("text/javascript") != std::string::npos);
  CHECK(fetch(port, "/static/nope.js").status == 404);

  // Anonymous: the queue summaries, nothing of jobs.
  CHECK(fetch(port, "/api/v1/queues").status == 200);
  const Reply anon = fetch(port, "/api/v1/jobs");
  CHECK(anon.status == 401);
  CHECK(json::parse(anon.body).at("code").as_string() == "UNAUTHENTICATED");

  // The admin sees every job; nobody only its own; a bad token is refused, not anonymous.
  const Reply all = fetch(port, "/api/v1/jobs", c.admin);
  REQUIRE(all.status == 200);
  CHECK(job_ids(all.body) == std::vector<std::string>{"r1", "r2", "r3"});
  CHECK(job_ids(fetch(port, "/api/v1/jobs", c.user).body) == std::vector<std::string>{"r2"});
  CHECK(fetch(port, "/api/v1/jobs", "gpuq_bogus_secret").status == 401);
  CHECK(fetch(port, "/api/v1/jobs/r1", c.user).status == 403);
  CHECK(fetch(port, "/api/v1/jobs/r2", c.user).status == 200);
  CHECK(job_ids(fetch(port, "/api/v1/jobs?state=pending", c.admin).body) == std::vector<std::string>{"r3"});
  CHECK(job_ids(fetch(port, "/api/v1/jobs?state=Running,admitted&queue=research", c.admin).body).size() == 2);

  const Reply why = fetch(port, "/api/v1/jobs/r3/explain", c.admin);
  REQUIRE(why.status == 200);
  CHECK(json::parse(why.body).at("explanation").at("queue_position").as_int64() == 1);
  CHECK(fetch(port, "/api/v1/jobs/zz/explain", c.admin).status == 404);

  // Usage by user: the admin sees both owners, nobody itself only.
  const Reply usage = fetch(port, "/api/v1/usage?by=user", c.user);
  REQUIRE(usage.status == 200);
  const auto rows = json::parse(usage.body).at("rows").as_array();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("key").as_string() == "nobody");

  // Bad input: 400 naming the parameter, the value and what is allowed; writes are refused.
  const Reply bad_state = fetch(port, "/api/v1/jobs?state=sleeping", c.admin);
  CHECK(bad_state.status == 400);
  CHECK(bad_state.body.find("state: \\\"sleeping\\\" is not a job state; use pending") != std::string::npos);
  const Reply bad_param = fetch(port, "/api/v1/jobs?colour=red", c.admin);
  CHECK(bad_param.status == 400);
  CHECK(bad_param.body.find("\\\"colour\\\" is not known here; use queue, state, owner") != std::string::npos);
  CHECK(fetch(port, "/api/v1/jobs?page_size=5000", c.admin).body.find("page_size: \\\"5000\\\" is not an integer from 0 to 1000") !=
        std::string::npos);
  CHECK(fetch(port, "/api/v1/usage?by=team", c.admin).body.find("use queue, user, flavor or job") != std::string::npos);
  const Reply post = fetch(port, "/api/v1/jobs", c.admin, "POST");
  CHECK(post.status == 405);
  CHECK(post.body.find("read-only") != std::string::npos);
  CHECK(fetch(port, "/api/v2/jobs", c.admin).status == 404);
  CHECK(job_ids(fetch(port, "/api/v1/jobs", c.admin).body).size() == 3);  // nothing changed
}

TEST_CASE("dashboard HTTP: a stalled or oversized request does not hold the port") {
  Cluster c;
  const int port = c.d.http_port();
  // Clients that send half a request and wait: others are still answered.
  std::vector<int> stalled;
  for (int i = 0; i < 8; ++i) {
    stalled.push_back(connect_to(port));
    const std::string half = "GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\n";
    CHECK(::write(stalled.back(), half.data(), half.size()) == static_cast<ssize_t>(half.size()));
  }
  CHECK(fetch(port, "/healthz").status == 200);
  CHECK(fetch(port, "/api/v1/queues").status == 200);
  for (int fd : stalled) ::close(fd);
  // A header over the 64 KiB limit: 413, and gpuqd goes on.
  const std::string big = "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(70 * 1024, 'a') + "\r\n\r\n";
  CHECK(round_trip(port, big).find("413") != std::string::npos);
  CHECK(fetch(port, "/healthz").status == 200);
}

TEST_CASE("dashboard page in headless Chromium: queues, jobs, the explanation, the GPU map and usage per viewer") {
  Cluster c;
  const int port = c.d.http_port();
  fs::create_directories(GPUQ_ARTIFACT_DIR);
  const std::string shot = std::string(GPUQ_ARTIFACT_DIR) + "/dashboard.png";
  fs::remove(shot);

  const std::string dom = rendered(c.dir.path, port, "#token=" + c.admin + "&job=r3", shot);
  CHECK(dom.find("data-loaded=\"1\"") != std::string::npos);
  // The token left the address bar; the page kept it for its calls.
  CHECK(dom.find(c.admin) == std::string::npos);
  // Queues: research uses 16 GPUs of its nominal 8 and borrows 8; prod lends them.
  CHECK(dom.find("data-queue=\"research\"") != std::string::npos);
  CHECK(dom.find("data-flavor=\"h100\" data-used=\"16000\" data-nominal=\"8000\" data-borrowed=\"8000\"") !=
        std::string::npos);
  CHECK(dom.find("data-used=\"0\" data-nominal=\"8000\" data-borrowed=\"0\" data-lent=\"8000\"") != std::string::npos);
  // Jobs: all three, r3 pending and chosen, with its explanation.
  const std::string table = jobs_table(dom);
  for (const char* id : {"r1", "r2", "r3"}) CHECK(table.find(std::string("data-job=\"") + id + "\"") != std::string::npos);
  CHECK(table.find("class=\"job selected\" data-job=\"r3\" data-state=\"pending\"") != std::string::npos);
  CHECK(dom.find("Why: r3") != std::string::npos);
  CHECK(dom.find("Place in its queue: 1 of 1 pending") != std::string::npos);
  CHECK(dom.find("h100/gpu") != std::string::npos);
  // The GPU map: every GPU of both nodes held, by r1 or r2.
  CHECK(count(gpu_map(dom), "class=\"gpu held\"") == 16);
  CHECK(count(dom, "data-job=\"r1\" title=\"GPU") + count(dom, "data-job=\"r2\" title=\"GPU") == 16);
  // Usage charts: a bar per queue and per user that used GPUs.
  CHECK(dom.find("class=\"used\" data-key=\"research\"") != std::string::npos);
  CHECK(dom.find("class=\"used\" data-key=\"nobody\"") != std::string::npos);
  CHECK_MESSAGE(fs::exists(shot), "no screenshot at " << shot);
  if (fs::exists(shot)) CHECK(fs::file_size(shot) > 10'000);

  // nobody: its own job only; root's GPUs are drawn as others', without their job ids.
  const std::string mine = rendered(c.dir.path, port, "#token=" + c.user);
  const std::string my_table = jobs_table(mine);
  CHECK(my_table.find("data-job=\"r2\"") != std::string::npos);
  CHECK(my_table.find("data-job=\"r1\"") == std::string::npos);
  CHECK(my_table.find("data-job=\"r3\"") == std::string::npos);
  CHECK(count(gpu_map(mine), "class=\"gpu held\"") == 8);
  CHECK(count(gpu_map(mine), "class=\"gpu other\"") == 8);
  CHECK(mine.find(">r1<") == std::string::npos);
  CHECK(mine.find("class=\"used\" data-key=\"root\"") == std::string::npos);

  // No token: the queues, and a note where the jobs would be.
  const std::string anon = rendered(c.dir.path, port, "");
  CHECK(anon.find("data-queue=\"prod\"") != std::string::npos);
  CHECK(jobs_table(anon).find("data-job=") == std::string::npos);
  CHECK(anon.find("Sign in with a token to see more.") != std::string::npos);
}

}  // namespace integration_dashboard_test
