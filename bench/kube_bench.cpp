// kube_bench: gpuqd's kubernetes binder (a real gpuqd child process) against the fake API server
// (tests/kubefake, in this process) on loopback. bench/README.md says what each number means.
//   bind:    N nodes x 8 GPUs, M pending one-GPU pods of gpuq: pods bound per second, API
//            requests per bound pod, creation-to-binding latency, gpuqd's CPU and peak RSS.
//   watch:   gpuqd's memory while it watches 100,000 pods (most bound by another scheduler).
//   restart: 5,000 nodes and 140,000 pods: from exec to the first and the last binding of the
//            pods pending for gpuq, with an empty state file and again with the state file of
//            the first start.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include "bench/proc_stats.hpp"
#include "tests/kubefake/server.hpp"
#include "tests/support/gpuqd_child.hpp"

namespace fs = std::filesystem;
namespace json = boost::json;
namespace kf = gpuq::kubefake;
using Clock = std::chrono::steady_clock;
using Wall = std::chrono::system_clock;
using gpuq::bench::cpu_seconds;
using gpuq::bench::status_kib;
using gpuq::test::GpuqdChild;
using namespace std::chrono_literals;

namespace {

struct Common {
  std::string gpuqd = GPUQD_PATH;
  int fake_threads = 2;
  bool kubelet = true;
  std::vector<std::string> set;  // "key=value" lines for gpuqd's kubernetes: section
  fs::path dir;
};
Common g;

// ---- measurements ------------------------------------------------------------------------

double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The fake's CPU: this process (its I/O threads and kubelet) less the main thread, which
// creates objects and reads the request log.
double fake_cpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  auto tv = [](const timeval& v) { return static_cast<double>(v.tv_sec) + static_cast<double>(v.tv_usec) / 1e6; };
  return tv(u.ru_utime) + tv(u.ru_stime) - (static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9);
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

// gpuqd's /metrics: "turns T commits C (S s in commits) cycles S s".
std::string loop_metrics(int http_port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(http_port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string body;
  const std::string req = "GET /metrics HTTP/1.0\r\n\r\n";
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && write(fd, req.data(), req.size()) > 0) {
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) body.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  auto value = [&](const std::string& name) {
    const auto at = body.find("\n" + name + " ");
    return at == std::string::npos ? -1.0 : std::stod(body.substr(at + name.size() + 2));
  };
  char out[160];
  std::snprintf(out, sizeof out, "turns %.0f, commits %.0f (%.2f s), cycles %.2f s", value("gpuq_turns_total"),
                value("gpuq_store_commits_total"), value("gpuq_store_commit_duration_seconds_sum"),
                value("gpuq_cycle_duration_seconds_sum"));
  return out;
}

// ---- the fake and its objects ---------------------------------------------------------------

std::string numbered(const char* prefix, int i) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s-%06d", prefix, i);
  return buf;
}

// A pod asking `gpus` whole GPUs (0: none) and `cpu`; bound already when `node` is set.
json::object make_pod(const std::string& name, const std::string& scheduler, const std::string& node, int gpus,
                      const char* cpu) {
  json::object requests{{"cpu", cpu}, {"memory", "256Mi"}};
  json::object limits;
  if (gpus > 0) requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = std::to_string(gpus);
  json::object labels;
  if (scheduler == "gpuq") labels["gpuq.io/queue"] = "bench";
  json::object spec{{"schedulerName", scheduler},
                    {"restartPolicy", "Never"},
                    {"containers", json::array{json::object{
                                       {"name", "main"},
                                       {"image", "busybox"},
                                       {"resources", json::object{{"requests", requests}, {"limits", limits}}}}}}};
  if (!node.empty()) spec["nodeName"] = node;
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", json::object{{"name", name}, {"namespace", "default"}, {"labels", labels}}},
                      {"spec", spec}};
}

std::unique_ptr<kf::Server> make_fake(bool tls, int nodes, int gpus) {
  kf::Options o;
  o.tls = tls;
  o.kubelet = g.kubelet;
  o.threads = g.fake_threads;
  auto api = std::make_unique<kf::Server>(o);
  for (int i = 0; i < nodes; ++i) api->add_node(numbered("node", i), gpus);
  api->write_kubeconfig((g.dir / "kubeconfig").string());
  return api;
}

// `count` running pods of another scheduler, round-robin over the nodes (100m cpu, no GPU).
void create_foreign(kf::Server& api, const char* prefix, int count, int nodes) {
  for (int i = 0; i < count; ++i)
    api.create("pods", "default", make_pod(numbered(prefix, i), "default-scheduler", numbered("node", i % nodes), 0, "100m"));
}

// A pod's size as a list or watch carries it (JSON bytes, with its kubelet status).
std::size_t json_bytes(kf::Server& api, const std::string& name) {
  auto p = api.get("pods", "default", name);
  return p ? json::serialize(*p).size() : 0;
}

// Until the kubelet is done: no new resourceVersion for a second.
void settle(kf::Server& api) {
  auto rv = api.resource_version();
  for (auto still = Clock::now(); Clock::now() - still < 1s;) {
    std::this_thread::sleep_for(100ms);
    if (auto now = api.resource_version(); now != rv) rv = now, still = Clock::now();
  }
}

// ---- gpuqd ------------------------------------------------------------------------------

struct Daemon {
  GpuqdChild child;
  Clock::time_point exec;
  Wall::time_point exec_wall;
  fs::path out;
};

Daemon start_daemon(const std::string& name, int nominal, const std::vector<std::string>& set, const fs::path& state) {
  const fs::path config = g.dir / (name + ".yaml");
  std::ofstream f(config);
  f << "binder: kubernetes\nkubernetes:\n  kubeconfig: " << (g.dir / "kubeconfig").string() << "\n";
  for (const std::string& kv : set) f << "  " << kv.substr(0, kv.find('=')) << ": " << kv.substr(kv.find('=') + 1) << "\n";
  f << "queues:\n  - name: bench\n    quotas: [{flavor: default, resources: {gpu: {nominal: " << nominal << "}}}]\n";
  f.close();
  Daemon d;
  d.out = g.dir / (name + ".out");
  d.exec = Clock::now();
  d.exec_wall = Wall::now();
  d.child = gpuq::test::start_gpuqd(g.gpuqd, {"--config", config.string(), "--state-file", state.string(), "--grpc",
                                              "127.0.0.1:0", "--http", "127.0.0.1:0"},
                                    d.out, g.dir / (name + ".err"), 10min);
  if (d.child.address.empty()) {
    std::fprintf(stderr, "gpuqd did not start; see %s\n", (g.dir / (name + ".err")).c_str());
    std::exit(1);
  }
  return d;
}

// Seconds from exec to the first log line (gpuqd's own timestamps, ms) holding `needle`; -1: none.
double log_at(const Daemon& d, const std::string& needle) {
  std::ifstream in(d.out);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) == std::string::npos || line.size() < 23) continue;
    std::tm tm{};
    if (strptime(line.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) continue;
    tm.tm_isdst = -1;
    const auto t = Wall::from_time_t(std::mktime(&tm)) + std::chrono::milliseconds(std::stoi(line.substr(20, 3)));
    return std::chrono::duration<double>(t - d.exec_wall).count();
  }
  return -1;
}

// ---- the request log --------------------------------------------------------------------

bool from_gpuqd(const kf::Request& r) { return r.user_agent.rfind("gpuqd", 0) == 0; }
bool is_binding(const kf::Request& r) {
  return r.method == "POST" && r.path.size() > 8 && r.path.compare(r.path.size() - 8, 8, "/binding") == 0;
}
bool bound_ok(const kf::Request& r) { return from_gpuqd(r) && is_binding(r) && r.status >= 200 && r.status < 300; }

struct Tally {
  std::size_t total = 0, binds = 0, bind_errors = 0, events = 0, status = 0, lists = 0, watches = 0, other = 0;
  std::vector<std::pair<std::string, Clock::time_point>> bound;  // pod name, binding arrived
  std::string text() const {
    char buf[200];
    std::snprintf(buf, sizeof buf, "bind %zu (+%zu failed), event %zu, status %zu, list %zu, watch %zu, other %zu", binds,
                  bind_errors, events, status, lists, watches, other);
    return buf;
  }
};

Tally tally(const std::vector<kf::Request>& log) {
  Tally t;
  for (const kf::Request& r : log) {
    if (!from_gpuqd(r)) continue;
    ++t.total;
    if (bound_ok(r)) {
      ++t.binds;
      const auto end = r.path.size() - 8, start = r.path.rfind('/', end - 1) + 1;
      t.bound.emplace_back(r.path.substr(start, end - start), r.at);
    } else if (is_binding(r)) {
      ++t.bind_errors;
    } else if (r.method == "POST" && r.path.find("/events") != std::string::npos) {
      ++t.events;
    } else if (r.method == "PATCH" && r.path.find("/status") != std::string::npos) {
      ++t.status;
    } else if (r.method == "GET") {
      (r.query.find("watch=true") != std::string::npos ? t.watches : t.lists) += 1;
    } else {
      ++t.other;
    }
  }
  std::sort(t.bound.begin(), t.bound.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return t;
}

// Until `want` pods are bound, or none more for `idle`.
void wait_bound(kf::Server& api, std::size_t want, Clock::duration idle) {
  std::size_t seen = 0;
  for (auto progress = Clock::now(); Clock::now() - progress < idle;) {
    std::this_thread::sleep_for(100ms);
    const auto log = api.requests();
    const auto n = static_cast<std::size_t>(std::count_if(log.begin(), log.end(), bound_ok));
    if (n >= want) return;
    if (n != seen) seen = n, progress = Clock::now();
  }
}

// Until gpuqd made no request for `quiet` (its events trail its bindings), at most `limit`.
std::vector<kf::Request> wait_quiet(kf::Server& api, Clock::duration quiet, Clock::duration limit) {
  const auto end = Clock::now() + limit;
  for (;;) {
    std::this_thread::sleep_for(200ms);
    auto log = api.requests();
    Clock::time_point last{};
    for (const kf::Request& r : log)
      if (from_gpuqd(r)) last = std::max(last, r.at);
    if (Clock::now() - last >= quiet || Clock::now() >= end) return log;
  }
}

// Until gpuqd watches `path` (its list is done: the reflector watches right after syncing).
void wait_watch(kf::Server& api, const std::string& path) {
  for (auto end = Clock::now() + 10min; Clock::now() < end; std::this_thread::sleep_for(20ms))
    for (const kf::Request& r : api.requests())
      if (from_gpuqd(r) && r.path == path && r.query.find("watch=true") != std::string::npos) return;
  std::fprintf(stderr, "gpuqd never watched %s\n", path.c_str());
  std::exit(1);
}

// ---- bind -------------------------------------------------------------------------------

struct BindOpts {
  int nodes = 1250, gpus = 8, pods = 10000, runs = 1;
  bool before = false;
  std::vector<std::string> transports{"tls"}, qps{"default", "5000"};
};

struct BindResult {
  double rate = 0, per_pod = 0, p50 = 0, p99 = 0, hwm = 0, gpuqd_cpu = 0, fake_cpu = 0;
};

std::vector<std::string> qps_settings(const std::string& qps, std::string& label) {
  std::vector<std::string> set = g.set;
  label = "qps=200/400(default)";
  if (qps == "default") return set;
  const long q = std::stol(qps);
  set.push_back("qps=" + qps);
  set.push_back("burst=" + std::to_string(2 * q));
  label = "qps=" + qps + "/" + std::to_string(2 * q);
  return set;
}

BindResult bind_report(const BindOpts& o, const Tally& t, const std::vector<Clock::time_point>& created,
                       const Clock::time_point from, std::string& line) {
  BindResult r;
  std::vector<double> lat;
  for (const auto& [name, at] : t.bound) {
    const int i = std::stoi(name.substr(name.rfind('-') + 1));
    lat.push_back(secs(at - (o.before ? from : created[static_cast<std::size_t>(i)])));
  }
  const double span = t.bound.size() > 1 ? secs(t.bound.back().second - t.bound.front().second) : 0;
  r.rate = span > 0 ? static_cast<double>(t.bound.size() - 1) / span : 0;
  r.per_pod = t.binds ? static_cast<double>(t.total) / static_cast<double>(t.binds) : 0;
  r.p50 = pct(lat, 0.5);
  r.p99 = pct(lat, 0.99);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "bound %zu of %d, first %.2f s, last %.2f s after %s: %.0f pods/s | requests %zu = %.2f/bound pod (%s) | "
                "%s->bind p50 %.2f s p99 %.2f s",
                t.binds, o.pods, t.bound.empty() ? 0 : secs(t.bound.front().second - from),
                t.bound.empty() ? 0 : secs(t.bound.back().second - from), o.before ? "exec" : "burst", r.rate, t.total,
                r.per_pod, t.text().c_str(), o.before ? "exec" : "create", r.p50, r.p99);
  line = buf;
  return r;
}

BindResult bind_run(const BindOpts& o, bool tls, const std::string& qps, int run) {
  std::string label;
  const auto set = qps_settings(qps, label);
  auto api = make_fake(tls, o.nodes, o.gpus);
  std::vector<Clock::time_point> created(static_cast<std::size_t>(o.pods));
  double create_s = 0;
  auto create_all = [&] {
    const auto t0 = Clock::now();
    for (int i = 0; i < o.pods; ++i) {
      created[static_cast<std::size_t>(i)] = Clock::now();
      api->create("pods", "default", make_pod(numbered("p", i), "gpuq", "", 1, "1"));
    }
    create_s = secs(Clock::now() - t0);
  };
  if (o.before) create_all();
  const fs::path state = g.dir / ("bind-" + std::to_string(run) + ".db");
  Daemon d = start_daemon("bind", o.pods, set, state);
  Clock::time_point from = d.exec;
  double cpu0 = 0, fake0 = fake_cpu();
  if (!o.before) {
    wait_watch(*api, "/api/v1/pods");
    cpu0 = cpu_seconds(d.child.pid);
    fake0 = fake_cpu();
    from = Clock::now();
    create_all();
  }
  wait_bound(*api, std::min<std::size_t>(static_cast<std::size_t>(o.pods), static_cast<std::size_t>(o.nodes) * o.gpus), 30s);
  const Tally t = tally(wait_quiet(*api, 3s, 120s));
  BindResult r;
  std::string line;
  r = bind_report(o, t, created, from, line);
  r.gpuqd_cpu = cpu_seconds(d.child.pid) - cpu0;
  r.fake_cpu = fake_cpu() - fake0;
  r.hwm = static_cast<double>(status_kib(d.child.pid, "VmHWM:")) / 1024;
  const std::string loop = loop_metrics(d.child.http_port);
  d.child.stop(SIGTERM);
  std::printf("bind %s %s create=%s nodes=%d pods=%d: %s | cpu gpuqd %.2f s, fake %.2f s (creating the pods %.2f s) | "
              "gpuqd VmHWM %.0f MiB | %s\n",
              tls ? "tls" : "plain-http", label.c_str(), o.before ? "before" : "after", o.nodes, o.pods, line.c_str(),
              r.gpuqd_cpu, r.fake_cpu, create_s, r.hwm, loop.c_str());
  std::fflush(stdout);
  return r;
}

void bind(const BindOpts& o) {
  for (const std::string& transport : o.transports)
    for (const std::string& qps : o.qps) {
      std::vector<BindResult> rs;
      for (int i = 0; i < o.runs; ++i) rs.push_back(bind_run(o, transport == "tls", qps, i));
      if (o.runs < 2) continue;
      auto med = [&](double BindResult::*m) {
        std::vector<double> v;
        for (const auto& r : rs) v.push_back(r.*m);
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      std::string label;
      qps_settings(qps, label);
      std::printf("bind %s %s median of %d: %.0f pods/s, %.2f requests/bound pod, latency p50 %.2f s p99 %.2f s, cpu gpuqd "
                  "%.2f s fake %.2f s, VmHWM %.0f MiB\n",
                  transport.c_str(), label.c_str(), o.runs, med(&BindResult::rate), med(&BindResult::per_pod),
                  med(&BindResult::p50), med(&BindResult::p99), med(&BindResult::gpuqd_cpu), med(&BindResult::fake_cpu),
                  med(&BindResult::hwm));
      std::fflush(stdout);
    }
}

// ---- watch ------------------------------------------------------------------------------

struct WatchOpts {
  int nodes = 1000, pods = 100000, pending = 1000, quota = 200, churn = 10000;
  bool plain = false;
};

void watch(const WatchOpts& o) {
  auto api = make_fake(!o.plain, o.nodes, 8);
  const auto t0 = Clock::now();
  create_foreign(*api, "other", o.pods - o.pending, o.nodes);
  for (int i = 0; i < o.pending; ++i) api->create("pods", "default", make_pod(numbered("p", i), "gpuq", "", 1, "1"));
  settle(*api);
  std::printf("watch: %d pods (%d of another scheduler, bound; %d pending for gpuq, queue quota %d GPUs; a running pod "
              "is %zu bytes of JSON) on %d nodes, made in %.1f s\n",
              o.pods, o.pods - o.pending, o.pending, o.quota, json_bytes(*api, numbered("other", 0)), o.nodes,
              secs(Clock::now() - t0));
  Daemon d = start_daemon("watch", o.quota, g.set, g.dir / "watch.db");
  wait_bound(*api, static_cast<std::size_t>(std::min(o.quota, o.pending)), 60s);
  const Tally t = tally(wait_quiet(*api, 3s, 60s));
  const double cpu1 = cpu_seconds(d.child.pid);
  const long rss1 = status_kib(d.child.pid, "VmRSS:"), hwm1 = status_kib(d.child.pid, "VmHWM:");
  // Churn: pods of the other scheduler end and as many new ones come.
  for (int i = 0; i < o.churn; ++i) api->finish_pod("default", numbered("other", i), 0);
  create_foreign(*api, "again", o.churn, o.nodes);
  settle(*api);
  wait_quiet(*api, 3s, 60s);
  const long rss2 = status_kib(d.child.pid, "VmRSS:"), hwm2 = status_kib(d.child.pid, "VmHWM:");
  const double cpu2 = cpu_seconds(d.child.pid);
  d.child.stop(SIGTERM);
  std::printf("watch %s: pods synced %.2f s after exec, %zu bound; VmRSS %.0f MiB (VmHWM %.0f) after sync | after %d "
              "ended and %d new: VmRSS %.0f MiB, VmHWM %.0f MiB (goal < 1024) | cpu gpuqd %.2f s to sync, %.2f s for the churn "
              "| requests %zu (%s)\n",
              o.plain ? "plain-http" : "tls", log_at(d, "kubernetes_synced what=/api/v1/pods"), t.binds,
              static_cast<double>(rss1) / 1024, static_cast<double>(hwm1) / 1024, o.churn, o.churn,
              static_cast<double>(rss2) / 1024, static_cast<double>(hwm2) / 1024, cpu1, cpu2 - cpu1, t.total,
              t.text().c_str());
  std::fflush(stdout);
}

// ---- restart ----------------------------------------------------------------------------

struct RestartOpts {
  int nodes = 5000, pods = 140000, ours = 4000, pending = 500;
  bool plain = false;
};

// One start of gpuqd with `pending` of its pods waiting: from exec to each step.
void restart_run(kf::Server& api, const RestartOpts& o, const std::string& what, const fs::path& state) {
  api.clear_requests();
  const double fake0 = fake_cpu();
  Daemon d = start_daemon("restart", o.ours + 2 * o.pending, g.set, state);
  wait_bound(api, static_cast<std::size_t>(o.pending), 120s);
  const auto log = api.requests();
  const Tally t = tally(log);
  const double gpuqd_cpu = cpu_seconds(d.child.pid), fake = fake_cpu() - fake0;
  const long hwm = status_kib(d.child.pid, "VmHWM:");
  d.child.stop(SIGTERM);
  Clock::time_point first{}, last{};
  std::size_t pages = 0;
  for (const kf::Request& r : log)
    if (from_gpuqd(r) && r.method == "GET" && r.path == "/api/v1/pods" && r.query.find("watch=true") == std::string::npos &&
        r.query != "limit=1") {  // not the access check
      if (pages++ == 0) first = r.at;
      last = r.at;
    }
  auto since = [&](Clock::time_point p) { return secs(p - d.exec); };
  std::printf("restart %s %s: serving %.2f s | synced nodes %.2f s, pods %.2f s (pod list: %zu pages, first %.2f s, last "
              "%.2f s) | first binding %.2f s, last of %d pending %.2f s (bound %zu; goal < 10 s) | cpu gpuqd %.2f s, fake "
              "%.2f s | gpuqd VmHWM %.0f MiB\n",
              o.plain ? "plain-http" : "tls", what.c_str(), d.child.start_seconds,
              log_at(d, "kubernetes_synced what=/api/v1/nodes"), log_at(d, "kubernetes_synced what=/api/v1/pods"), pages,
              since(first), since(last), t.bound.empty() ? -1 : since(t.bound.front().second), o.pending,
              t.bound.empty() ? -1 : since(t.bound.back().second), t.binds, gpuqd_cpu, fake,
              static_cast<double>(hwm) / 1024);
  std::fflush(stdout);
}

void restart(const RestartOpts& o) {
  auto api = make_fake(!o.plain, o.nodes, 8);
  const auto t0 = Clock::now();
  const int foreign = o.pods - o.ours - o.pending;
  create_foreign(*api, "other", foreign, o.nodes);
  for (int i = 0; i < o.ours; ++i)  // bound by gpuq before: one GPU each
    api->create("pods", "default", make_pod(numbered("ran", i), "gpuq", numbered("node", i % o.nodes), 1, "1"));
  for (int i = 0; i < o.pending; ++i) api->create("pods", "default", make_pod(numbered("p", i), "gpuq", "", 1, "1"));
  settle(*api);
  std::printf("restart: %d nodes, %d pods (%d of another scheduler, %d bound by gpuq, %d pending for gpuq; a running pod "
              "is %zu bytes of JSON), made in %.1f s\n",
              o.nodes, o.pods, foreign, o.ours, o.pending, json_bytes(*api, numbered("other", 0)), secs(Clock::now() - t0));
  std::fflush(stdout);
  const fs::path state = g.dir / "restart.db";
  restart_run(*api, o, "first start (empty state file)", state);
  // As many new pods wait; gpuqd starts again with the state file of the first start.
  for (int i = 0; i < o.pending; ++i) api->create("pods", "default", make_pod(numbered("q", i), "gpuq", "", 1, "1"));
  settle(*api);
  restart_run(*api, o, "restart (its state file)", state);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kube_bench: gpuqd's kubernetes binder against the fake API server (bench/README.md)"};
  app.require_subcommand(1, 3);
  bool keep = false;
  app.add_option("--gpuqd", g.gpuqd, "the gpuqd binary");
  app.add_option("--fake-threads", g.fake_threads, "the fake API server's I/O threads");
  app.add_option("--set", g.set, "KEY=VALUE for gpuqd's kubernetes: section (repeatable), e.g. bindConcurrency=64");
  app.add_flag("--keep", keep, "keep the folder with gpuqd's config, logs and state files");
  bool no_kubelet = false;
  app.add_flag("--no-kubelet", no_kubelet, "the fake simulates no kubelets (bound pods stay Pending)");
  BindOpts b;
  CLI::App* sb = app.add_subcommand("bind", "N nodes, M pending one-GPU pods: binds per second, requests per pod");
  sb->add_option("--nodes", b.nodes, "nodes of --gpus GPUs");
  sb->add_option("--gpus", b.gpus, "GPUs per node");
  sb->add_option("--pods", b.pods, "pending one-GPU pods of gpuq (the queue's nominal quota is as many GPUs)");
  sb->add_option("--runs", b.runs, "runs of each setting (the median is printed too)");
  sb->add_flag("--create-before", b.before, "create the pods before gpuqd starts (measures the start)");
  sb->add_option("--transport", b.transports, "tls and/or plain (the fake over plain HTTP)")->delimiter(',');
  sb->add_option("--qps", b.qps, "gpuqd's client qps settings to run: default (200/400) or a number (burst: twice)")
      ->delimiter(',');
  WatchOpts w;
  CLI::App* sw = app.add_subcommand("watch", "gpuqd's memory while it watches many pods");
  sw->add_option("--nodes", w.nodes, "nodes");
  sw->add_option("--pods", w.pods, "pods in all");
  sw->add_option("--pending", w.pending, "of them pending for gpuq");
  sw->add_option("--quota", w.quota, "the gpuq queue's nominal GPUs (so many pending pods are bound)");
  sw->add_option("--churn", w.churn, "pods of the other scheduler that end, and as many new ones, after the sync");
  sw->add_flag("--plain-http", w.plain, "the fake over plain HTTP");
  RestartOpts r;
  CLI::App* sr = app.add_subcommand("restart", "from exec to binding with many pods and nodes in the API");
  sr->add_option("--nodes", r.nodes, "nodes");
  sr->add_option("--pods", r.pods, "pods in all");
  sr->add_option("--ours", r.ours, "of them bound by gpuq already (schedulerName gpuq, nodeName set)");
  sr->add_option("--pending", r.pending, "of them pending for gpuq");
  sr->add_flag("--plain-http", r.plain, "the fake over plain HTTP");
  CLI11_PARSE(app, argc, argv);
  g.kubelet = !no_kubelet;
  char tmpl[] = "/tmp/gpuq-kube-bench-XXXXXX";
  g.dir = mkdtemp(tmpl);
  std::printf("kube_bench: gpuqd %s, files in %s, %u cores, fake with %d I/O threads%s\n", g.gpuqd.c_str(), g.dir.c_str(),
              std::thread::hardware_concurrency(), g.fake_threads, g.kubelet ? "" : ", no kubelet");
  std::fflush(stdout);
  if (sb->parsed()) bind(b);
  if (sw->parsed()) watch(w);
  if (sr->parsed()) restart(r);
  std::error_code ec;
  if (!keep) fs::remove_all(g.dir, ec);
  return 0;
}
