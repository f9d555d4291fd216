// daemon_bench: gpuqd end to end on this machine (bench/README.md).
//  1. Durable submits: a real gpuqd with a fresh state file, called through its Unix socket (the
//     caller known and checked) or, with --transports tcp, loopback TCP with insecure: true; C clients
//     (1, 16, 64) each send Submit in a loop for --seconds; every OK is a job on disk. Prints
//     acknowledged submits per second and latency percentiles.
//  2. Restart: a state file with --restart-jobs pending jobs (written through the Store, as a
//     daemon would have), then the time from starting gpuqd to it serving, and its memory.
//  3. Arrays (--array-members): held arrays of --array-size members submitted to a fresh gpuqd
//     one after the other; each submit's time next to a single held job's, and the memory per
//     member once settled.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include "gpuq/v1/gpuq.grpc.pb.h"
#include "bench/proc_stats.hpp"
#include "bench/restart_job.hpp"
#include "storage/store.hpp"
#include "tests/support/gpuqd_child.hpp"

namespace fs = std::filesystem;
namespace v1 = gpuq::v1;
using Clock = std::chrono::steady_clock;

namespace {

const char* kConfig = R"(queues:
  - name: team
    quotas:
      - flavor: h100
        resources: {gpu: {nominal: 64}}
nodes:
  - {name: n0, flavor: h100, capacity: {gpu: 8, cpu: 128, memory: 1Ti}}
  - {name: n1, flavor: h100, capacity: {gpu: 8, cpu: 128, memory: 1Ti}}
)";

using gpuq::bench::cpu_seconds;
using gpuq::test::GpuqdChild;

std::string g_transport = "unix";  // --transports: this run's

// gpuqd with kConfig; with --transports tcp also `insecure: true` (TCP callers trusted, as before
// gpuqd knew its callers), and the run's address is its TCP one.
GpuqdChild start(const std::string& gpuqd, const fs::path& dir, const fs::path& state) {
  const fs::path config = dir / "gpuqd.yaml";
  std::ofstream(config) << (g_transport == "tcp" ? "insecure: true\n" : "") << kConfig;
  GpuqdChild c = gpuq::test::start_gpuqd(gpuqd,
                                         {"--config", config.string(), "--state-file", state.string(),
                                          "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"},
                                         dir / "gpuqd.out", dir / "gpuqd.err", std::chrono::minutes(5));
  if (c.address.empty()) {
    std::fprintf(stderr, "gpuqd did not start; see %s\n", (dir / "gpuqd.err").c_str());
    std::exit(1);
  }
  if (g_transport == "tcp") c.address = c.tcp;
  return c;
}


double pct(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

std::string g_client = "callback";  // --client
std::string g_ids = "client";       // --ids
std::string g_server;  // --server: load an already running gpuqd (e.g. under perf) instead

void submits(const std::string& gpuqd, const fs::path& dir, int clients, double seconds) {
  const fs::path state = dir / ("submits-" + g_transport + "-" + std::to_string(clients) + ".db");
  GpuqdChild d;
  if (g_server.empty())
    d = start(gpuqd, dir, state);
  else
    d.address = g_server;
  auto channel = grpc::CreateChannel(d.address, grpc::InsecureChannelCredentials());
  std::vector<std::vector<double>> lat(static_cast<std::size_t>(clients));
  std::atomic<long> errors{0};
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  const std::string prefix = std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000007) + "-";
  auto request = [&](int c, long i) {
    v1::SubmitJobRequest r;
    if (g_ids == "client") r.mutable_spec()->set_id(prefix + "c" + std::to_string(c) + "-" + std::to_string(i));
    r.mutable_spec()->set_queue("team");
    (*r.mutable_spec()->add_pod_sets()->mutable_resources())["gpu"] = "1";
    r.mutable_spec()->add_command("true");
    return r;
  };
  // One channel per 8 clients: several HTTP/2 connections, as separate client processes would use.
  auto channel_of = [&](int c) {
    return c % 8 == 0 ? grpc::CreateChannel(d.address, grpc::InsecureChannelCredentials()) : channel;
  };
  std::vector<std::thread> threads;
  const double cpu0 = d.pid > 0 ? cpu_seconds(d.pid) : 0;
  const auto t0 = Clock::now();
  if (g_client == "callback") {
    // Each client: one request in flight, the next sent from the completion of the last (gRPC's
    // callback API: no thread per client, so the load generator takes less of the 2 cores).
    struct Client {
      std::unique_ptr<v1::Jobs::Stub> stub;
      int c = 0;
      long i = 0;
      std::unique_ptr<grpc::ClientContext> ctx;  // one per call
      v1::SubmitJobRequest req;
      v1::SubmitJobResponse resp;
      Clock::time_point sent;
    };
    std::vector<std::unique_ptr<Client>> all(static_cast<std::size_t>(clients));
    std::mutex mu;
    std::condition_variable cv;
    int running = clients;
    std::function<void(Client&)> send = [&](Client& cl) {
      cl.ctx = std::make_unique<grpc::ClientContext>();
      cl.req = request(cl.c, cl.i++);
      cl.resp.Clear();
      cl.sent = Clock::now();
      cl.stub->async()->Submit(cl.ctx.get(), &cl.req, &cl.resp, [&, p = &cl](grpc::Status st) {
        if (!st.ok()) ++errors;
        else
          lat[static_cast<std::size_t>(p->c)].push_back(
              std::chrono::duration<double, std::milli>(Clock::now() - p->sent).count());
        if (Clock::now() < until) {
          send(*p);
          return;
        }
        std::lock_guard lock(mu);
        if (--running == 0) cv.notify_one();
      });
    };
    for (int c = 0; c < clients; ++c) {
      all[static_cast<std::size_t>(c)] = std::make_unique<Client>();
      all[static_cast<std::size_t>(c)]->stub = v1::Jobs::NewStub(channel_of(c));
      all[static_cast<std::size_t>(c)]->c = c;
    }
    for (auto& cl : all) send(*cl);
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return running == 0; });
  } else {
    for (int c = 0; c < clients; ++c)
      threads.emplace_back([&, c] {
        auto stub = v1::Jobs::NewStub(channel_of(c));
        for (long i = 0; Clock::now() < until; ++i) {
          v1::SubmitJobRequest r = request(c, i);
          grpc::ClientContext ctx;
          v1::SubmitJobResponse resp;
          const auto s0 = Clock::now();
          auto st = stub->Submit(&ctx, r, &resp);
          if (!st.ok()) {
            ++errors;
            continue;
          }
          lat[static_cast<std::size_t>(c)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - s0).count());
        }
      });
  }
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = d.pid > 0 ? cpu_seconds(d.pid) - cpu0 : 0;
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  const double rate = static_cast<double>(all.size()) / wall;
  const double p50 = pct(all, 0.50), p99 = pct(all, 0.99), mx = all.empty() ? 0 : *std::max_element(all.begin(), all.end());
  // gpuqd's CPU time per acknowledged submit (all of its threads: gRPC, engine, store, replies).
  const double cpu_us = all.empty() ? 0 : cpu * 1e6 / static_cast<double>(all.size());
  std::printf("submits  %s %s %s-ids clients %3d  acknowledged %7zu in %.1f s  %8.0f /s  latency ms p50 %6.2f  p99 %6.2f  max %7.2f  gpuqd cpu us/submit %6.1f  errors %ld\n",
              g_transport.c_str(), g_client.c_str(), g_ids.c_str(), clients, all.size(), wall, rate, p50, p99, mx, cpu_us, errors.load());
  if (g_server.empty()) d.stop(SIGTERM);
}

// Nodes.Apply of one node with `labels` labels, `times` times in a row: the median latency and
// gpuqd's CPU per call (the spec layer reads a request field by field; before it, a node went
// through YAML text, quadratic in its labels).
void apply_nodes(const std::string& gpuqd, const fs::path& dir, int labels, int times) {
  GpuqdChild d = start(gpuqd, dir, dir / "apply.db");
  auto nodes = v1::Nodes::NewStub(grpc::CreateChannel(d.address, grpc::InsecureChannelCredentials()));
  v1::ApplyNodeRequest req;
  req.mutable_spec()->set_name("labelled");
  req.mutable_spec()->set_flavor("h100");
  (*req.mutable_spec()->mutable_capacity())["gpu"] = "8";
  for (int i = 0; i < labels; ++i)
    (*req.mutable_spec()->mutable_labels())["example.com/label-" + std::to_string(i)] = "value-" + std::to_string(i);
  std::vector<double> ms;
  int errors = 0;
  const double cpu0 = cpu_seconds(d.pid);
  for (int t = 0; t < times; ++t) {
    grpc::ClientContext ctx;
    v1::ApplyNodeResponse resp;
    const auto t0 = Clock::now();
    if (!nodes->Apply(&ctx, req, &resp).ok()) ++errors;
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const double cpu = cpu_seconds(d.pid) - cpu0;
  std::printf("apply    a node with %d labels, %d times: latency ms p50 %8.2f  max %8.2f  gpuqd cpu ms/apply %8.2f  errors %d\n",
              labels, times, pct(ms, 0.5), *std::max_element(ms.begin(), ms.end()), cpu * 1e3 / times, errors);
  d.stop(SIGTERM);
}

// Returns the bytes per pending job (RSS over an empty gpuqd's, after the start).
// RSS (KiB) sampled every 0.3 s until six samples in a row agree within 1% (at most 40 s):
// the settled value and the highest seen.
std::pair<long, long> settled_rss(int pid) {
  long rss = 0, peak = 0;
  int same = 0;
  for (int i = 0; i < 133 && same < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const long now = gpuq::bench::status_kib(pid, "VmRSS:");
    same = std::labs(now - rss) * 100 <= rss ? same + 1 : 0;
    rss = now;
    peak = std::max(peak, now);
  }
  return {rss, peak};
}

double restart(const std::string& gpuqd, const fs::path& dir, long jobs) {
  const fs::path state = dir / "restart.db";
  {
    gpuq::ResourceNames names;
    auto store = gpuq::storage::Store::open(state.string(), names);
    if (!store) {
      std::fprintf(stderr, "%s\n", store.error().c_str());
      std::exit(1);
    }
    // The queue and nodes come from the config; the jobs from the file.
    const auto t0 = Clock::now();
    const long batch = 10'000;
    for (long b = 0; b < jobs; b += batch) {
      gpuq::storage::Batch bt;
      for (long i = b; i < std::min(jobs, b + batch); ++i) bt.jobs.push_back(gpuq::bench::restart_job(i));
      if (auto c = (*store)->commit(bt); !c) {
        std::fprintf(stderr, "%s\n", c.error().c_str());
        std::exit(1);
      }
    }
    std::printf("restart  wrote %ld pending jobs in %.1f s, file %.0f MiB\n", jobs,
                std::chrono::duration<double>(Clock::now() - t0).count(),
                static_cast<double>(fs::file_size(state)) / (1 << 20));
  }
  GpuqdChild empty = start(gpuqd, dir, dir / "empty.db");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long rss_empty = gpuq::bench::status_kib(empty.pid, "VmRSS:");
  empty.stop(SIGTERM);
  GpuqdChild d = start(gpuqd, dir, state);
  // Once it has settled: the first turns after the start, the estimator's what-if on a copy of
  // the engine among them (seconds at a million jobs), come and go.
  const auto [rss, peak] = settled_rss(d.pid);
  const auto per = [&](long kib) { return static_cast<double>(kib - rss_empty) * 1024.0 / static_cast<double>(jobs); };
  const double per_job = per(rss);
  std::printf("restart  %ld pending jobs: serving after %.2f s; RSS %.0f MiB (empty %.0f MiB): %.0f bytes per pending job; peak %.0f MiB (%.0f bytes per job)\n",
              jobs, d.start_seconds, rss / 1024.0, rss_empty / 1024.0, per_job, peak / 1024.0, per(peak));
  d.stop(SIGTERM);
  return per_job;
}

// `members` pending members in held arrays of `size`, submitted one array at a time to a fresh
// gpuqd: the submit times (median and slowest) next to single held jobs', and the memory per
// member once settled. Returns bytes per member.
double arrays(const std::string& gpuqd, const fs::path& dir, long members, long size) {
  GpuqdChild d = start(gpuqd, dir, dir / "arrays.db");
  auto stub = v1::Jobs::NewStub(grpc::CreateChannel(d.address, grpc::InsecureChannelCredentials()));
  auto submit = [&](const std::string& id, long n) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_id(id);
    req.mutable_spec()->set_queue("team");
    (*req.mutable_spec()->add_pod_sets()->mutable_resources())["gpu"] = "1";
    req.mutable_spec()->add_command("true");
    req.mutable_spec()->set_hold(true);
    if (n > 0) req.mutable_spec()->set_array("0-" + std::to_string(n - 1));
    v1::SubmitJobResponse resp;
    grpc::ClientContext ctx;
    const auto t0 = Clock::now();
    const grpc::Status st = stub->Submit(&ctx, req, &resp);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!st.ok()) {
      std::fprintf(stderr, "submit %s: %s\n", id.c_str(), st.error_message().c_str());
      std::exit(1);
    }
    return ms;
  };
  std::vector<double> single;
  for (int i = 0; i < 20; ++i) single.push_back(submit("single-" + std::to_string(i), 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long rss_before = settled_rss(d.pid).first;
  std::vector<double> array;
  const auto t0 = Clock::now();
  for (long a = 0; a * size < members; ++a) array.push_back(submit("a" + std::to_string(a), std::min(size, members - a * size)));
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto [rss, peak] = settled_rss(d.pid);
  const double per = static_cast<double>(rss - rss_before) * 1024.0 / static_cast<double>(members);
  std::printf("arrays   %ld held members in arrays of %ld: submitted in %.2f s; an array's submit median %.1f ms, "
              "slowest %.1f ms (one held job: median %.1f ms); RSS %.0f MiB (%.0f before): %.0f bytes per member; "
              "peak %.0f MiB\n",
              members, size, wall, pct(array, 0.5), pct(array, 1.0), pct(single, 0.5), rss / 1024.0, rss_before / 1024.0,
              per, peak / 1024.0);
  d.stop(SIGTERM);
  // The same state file again: the time to serving, and the memory once settled.
  GpuqdChild again = start(gpuqd, dir, dir / "arrays.db");
  const auto [rss_again, peak_again] = settled_rss(again.pid);
  std::printf("arrays   restarted on them: serving after %.2f s; RSS %.0f MiB: %.0f bytes per member; peak %.0f MiB\n",
              again.start_seconds, rss_again / 1024.0,
              static_cast<double>(rss_again - rss_before) * 1024.0 / static_cast<double>(members), peak_again / 1024.0);
  again.stop(SIGTERM);
  return per;
}

// Memory that does not grow with history: `jobs` jobs submitted and cancelled (finished) through
// the none binder by 16 callback clients, gpuqd's RSS sampled as they go; then, on a fresh gpuqd,
// RSS with `live` unfinished jobs (16 running, the rest pending). The ratio is the claim.
void churn(const std::string& gpuqd, const fs::path& dir, long jobs, long live) {
  constexpr int kClients = 16;
  auto rss_mib = [](int pid) { return gpuq::bench::status_kib(pid, "VmRSS:") / 1024.0; };
  GpuqdChild d = start(gpuqd, dir, dir / "churn.db");
  auto channel = grpc::CreateChannel(d.address, grpc::InsecureChannelCredentials());
  std::atomic<long> next{0}, done{0}, errors{0};
  std::mutex mu;
  std::condition_variable cv;
  int running = kClients;
  struct Client {
    std::unique_ptr<v1::Jobs::Stub> stub;
    std::unique_ptr<grpc::ClientContext> ctx;
    v1::SubmitJobRequest submit;
    v1::SubmitJobResponse submitted;
    v1::CancelJobRequest cancel;
    v1::CancelJobResponse cancelled;
  };
  std::vector<std::unique_ptr<Client>> all;
  std::function<void(Client&)> send = [&](Client& cl) {
    const long i = next++;
    if (i >= jobs) {
      std::lock_guard lock(mu);
      if (--running == 0) cv.notify_one();
      return;
    }
    cl.ctx = std::make_unique<grpc::ClientContext>();
    cl.submit.Clear();
    cl.submit.mutable_spec()->set_id("c" + std::to_string(i));
    cl.submit.mutable_spec()->set_queue("team");
    (*cl.submit.mutable_spec()->add_pod_sets()->mutable_resources())["gpu"] = "1";
    cl.submit.mutable_spec()->add_command("true");
    cl.stub->async()->Submit(cl.ctx.get(), &cl.submit, &cl.submitted, [&, p = &cl, i](grpc::Status st) {
      if (!st.ok()) {
        ++errors;
        send(*p);
        return;
      }
      p->ctx = std::make_unique<grpc::ClientContext>();
      p->cancel.set_id("c" + std::to_string(i));
      p->stub->async()->Cancel(p->ctx.get(), &p->cancel, &p->cancelled, [&, p](grpc::Status st2) {
        if (!st2.ok()) ++errors;
        ++done;
        send(*p);
      });
    });
  };
  const auto t0 = Clock::now();
  for (int c = 0; c < kClients; ++c) {
    all.push_back(std::make_unique<Client>());
    all.back()->stub = v1::Jobs::NewStub(c % 8 == 0 ? grpc::CreateChannel(d.address, grpc::InsecureChannelCredentials()) : channel);
  }
  for (auto& cl : all) send(*cl);
  std::printf("churn    jobs finished, gpuqd RSS MiB:");
  for (long mark = jobs / 10;; mark += jobs / 10) {
    std::unique_lock lock(mu);
    if (cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return running == 0; })) break;
    lock.unlock();
    if (done >= mark) {
      std::printf(" %ld: %.0f;", done.load(), rss_mib(d.pid));
      std::fflush(stdout);
    } else {
      mark -= jobs / 10;
    }
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double rss_churn = rss_mib(d.pid);
  const double hwm_churn = gpuq::bench::status_kib(d.pid, "VmHWM:") / 1024.0;
  std::printf("\nchurn    %ld jobs submitted and cancelled in %.0f s (%.0f jobs/s, errors %ld); gpuqd RSS %.0f MiB, "
              "peak %.0f MiB, state file %.0f MiB\n",
              jobs, wall, static_cast<double>(jobs) / wall, errors.load(), rss_churn, hwm_churn,
              static_cast<double>(fs::file_size(dir / "churn.db")) / (1 << 20));
  d.stop(SIGTERM);

  GpuqdChild l = start(gpuqd, dir, dir / "live.db");
  auto stub = v1::Jobs::NewStub(grpc::CreateChannel(l.address, grpc::InsecureChannelCredentials()));
  long live_errors = 0;
  for (long i = 0; i < live; ++i) {
    v1::SubmitJobRequest r;
    r.mutable_spec()->set_id("l" + std::to_string(i));
    r.mutable_spec()->set_queue("team");
    (*r.mutable_spec()->add_pod_sets()->mutable_resources())["gpu"] = "1";
    r.mutable_spec()->add_command("true");
    grpc::ClientContext ctx;
    v1::SubmitJobResponse resp;
    if (!stub->Submit(&ctx, r, &resp).ok()) ++live_errors;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double rss_live = rss_mib(l.pid);
  std::printf("churn    %ld live jobs (16 running, the rest pending; errors %ld): gpuqd RSS %.0f MiB\n", live,
              live_errors, rss_live);
  std::printf("churn    RSS after %ld finished jobs / RSS with %ld live jobs = %.2f\n", jobs, live,
              rss_churn / rss_live);
  l.stop(SIGTERM);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"daemon_bench: durable submits and restart time of a real gpuqd"};
  std::string gpuqd = GPUQD_PATH;
  std::vector<int> clients = {1, 16, 64};
  double seconds = 5;
  long restart_jobs = 1'000'000;
  long max_bytes_per_job = 0;
  int apply_labels = 1000;
  app.add_option("--gpuqd", gpuqd, "the gpuqd binary");
  app.add_option("--clients", clients, "concurrent clients, one run each")->delimiter(',');
  app.add_option("--seconds", seconds, "per run");
  std::vector<std::string> transports = {"unix"};
  app.add_option("--transports", transports,
                 "unix: gpuqd's socket, each call's caller known and checked (root: an admin); tcp: loopback TCP "
                 "with insecure: true (no identity, no checks); one submit run per transport and client count")
      ->delimiter(',')
      ->check(CLI::IsMember({"unix", "tcp"}));
  app.add_option("--restart-jobs", restart_jobs, "pending jobs in the state file for the restart run (0: skip)");
  app.add_option("--max-bytes-per-job", max_bytes_per_job,
                 "fail (exit 1) when the restart run's bytes per pending job are above this (0: no budget)");
  long churn_jobs = 0, churn_live = 10'000;
  app.add_option("--churn-jobs", churn_jobs,
                 "jobs to submit and cancel for the memory run (e.g. 1000000; 0: skip), then RSS with --churn-live "
                 "live jobs");
  app.add_option("--churn-live", churn_live, "unfinished jobs for the memory run's comparison");
  long array_members = 0, array_size = 10'000;
  app.add_option("--array-members", array_members, "held array members for the arrays run (0: skip)");
  app.add_option("--array-size", array_size, "members per array in the arrays run");
  long max_bytes_per_member = 0;
  app.add_option("--max-bytes-per-member", max_bytes_per_member,
                 "fail (exit 1) when the arrays run's bytes per held member are above this (0: no budget)");
  app.add_option("--apply-labels", apply_labels, "labels on the node applied 20 times in the apply run (0: skip)");
  app.add_option("--client", g_client, "how the load generator calls: callback (gRPC's callback API, one request in flight per client) or sync (a thread per client)")
      ->check(CLI::IsMember({"callback", "sync"}));
  app.add_option("--ids", g_ids, "client: each Submit names its job id (checked for duplicates); server: gpuqd assigns them")
      ->check(CLI::IsMember({"client", "server"}));
  bool keep = false;
  app.add_option("--server", g_server, "load this gpuqd (its config must have queue team) instead of starting one; ids are prefixed by the time");
  app.add_flag("--keep", keep, "keep the state files (restart.db for profiling a start)");
  CLI11_PARSE(app, argc, argv);
  char tmpl[] = "/tmp/gpuq-bench-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  std::printf("daemon_bench: gpuqd %s, state in %s, %u cores\n", gpuqd.c_str(), dir.c_str(),
              std::thread::hardware_concurrency());
  for (const std::string& t : transports) {
    g_transport = t;
    for (int c : clients) submits(gpuqd, dir, c, seconds);
  }
  g_transport = "unix";
  if (apply_labels > 0 && g_server.empty()) apply_nodes(gpuqd, dir, apply_labels, 20);
  int rc = 0;
  if (restart_jobs > 0) {
    const double per_job = restart(gpuqd, dir, restart_jobs);
    if (max_bytes_per_job > 0 && per_job > max_bytes_per_job) {
      std::printf("FAIL: %.0f bytes per pending job is above the budget of %ld (--max-bytes-per-job; BENCHMARKS.md, "
                  "\"Memory per pending job\")\n",
                  per_job, max_bytes_per_job);
      rc = 1;
    }
  }
  if (churn_jobs > 0) churn(gpuqd, dir, churn_jobs, churn_live);
  if (array_members > 0) {
    const double per_member = arrays(gpuqd, dir, array_members, array_size);
    if (max_bytes_per_member > 0 && per_member > max_bytes_per_member) {
      std::printf("FAIL: %.0f bytes per held array member is above the budget of %ld (--max-bytes-per-member; "
                  "BENCHMARKS.md, \"Arrays as one row\")\n",
                  per_member, max_bytes_per_member);
      rc = 1;
    }
  }
  std::error_code ec;
  if (!keep) fs::remove_all(dir, ec);
  return rc;
}
