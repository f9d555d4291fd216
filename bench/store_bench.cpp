// Store throughput: durable commits (WAL, synchronous=FULL) per batch size, then writing and
// loading a large number of pending jobs (what a gpuqd restart reads), then accounting (usage())
// over up to 200,000 finished jobs and their events; before all, one 1,000-member held array's
// commit (--array-only 1: only that). Reports numbers only.
//   cmake --build build-bench --target store_bench && build-bench/bench/store_bench [--jobs N]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "storage/store.hpp"

using namespace gpuq;
using namespace gpuq::storage;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

JobRecord make_job(std::uint64_t n) {
  JobRecord j;
  j.number = n;
  j.spec.id = JobId("j-" + std::to_string(n));
  j.spec.queue = QueueName("team-" + std::to_string(n % 50));
  j.spec.owner = "user" + std::to_string(n % 200);
  j.spec.name = "train-" + std::to_string(n);
  j.spec.priority = static_cast<std::int32_t>(n % 3) * 100;
  j.spec.submitted_at = 1'700'000'000 + static_cast<Time>(n);
  PodSet p;
  p.name = "main";
  p.count = static_cast<std::int32_t>(1 + n % 4);
  p.per_pod[kGpu] = 1000;
  p.per_pod[kCpu] = 8000;
  p.per_pod[kMemory] = std::int64_t{64} << 30;
  j.spec.pod_sets = {p};
  j.run.command = {"python", "train.py", "--epochs", "10"};
  j.run.env = {{"SEED", std::to_string(n)}};
  j.run.working_dir = "/home/user/project";
  j.priority_text = "normal";
  return j;
}

EventRecord make_event(std::uint64_t seq, const JobRecord& j) {
  return {seq, j.spec.submitted_at, j.spec.id.value, j.spec.queue.value, std::nullopt,
          JobState::kPending, "submitted", "", ""};
}

std::unique_ptr<Store> open_or_die(const std::string& path, ResourceNames& names) {
  auto s = Store::open(path, names);
  if (!s) {
    std::fprintf(stderr, "open: %s\n", s.error().c_str());
    std::exit(1);
  }
  return std::move(s).value();
}

std::uintmax_t size_of(const std::string& path) {
  std::uintmax_t total = 0;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    auto s = fs::file_size(path + suffix, ec);
    if (!ec) total += s;
  }
  return total;
}

void bench_commits(const std::string& dir) {
  std::printf("durable commits (WAL, synchronous=FULL), jobs + one event each:\n");
  std::printf("  %6s %8s %12s %12s %12s %12s %12s\n", "batch", "commits", "commits/s", "jobs/s",
              "mean ms", "p50 ms", "p99 ms");
  ResourceNames names;
  const std::string path = dir + "/commits.db";
  auto store = open_or_die(path, names);
  std::uint64_t n = 0;
  for (int batch : {1, 16, 64, 256}) {
    const int commits = batch == 1 ? 300 : batch == 16 ? 200 : 100;
    std::vector<double> lat;
    const auto start = Clock::now();
    for (int c = 0; c < commits; ++c) {
      Batch b;
      for (int i = 0; i < batch; ++i) {
        b.jobs.push_back(make_job(++n));
        b.events.push_back(make_event(n, b.jobs.back()));
      }
      const auto t = Clock::now();
      if (auto r = store->commit(b); !r) {
        std::fprintf(stderr, "commit: %s\n", r.error().c_str());
        std::exit(1);
      }
      lat.push_back(seconds_since(t) * 1000);
    }
    const double total = seconds_since(start);
    std::sort(lat.begin(), lat.end());
    double mean = 0;
    for (double l : lat) mean += l;
    mean /= static_cast<double>(lat.size());
    std::printf("  %6d %8d %12.0f %12.0f %12.3f %12.3f %12.3f\n", batch, commits, commits / total,
                commits * batch / total, mean, lat[lat.size() / 2], lat[lat.size() * 99 / 100]);
  }
}

void bench_restart(const std::string& dir, std::uint64_t jobs, bool write) {
  const std::string path = dir + "/restart.db";
  ResourceNames names;
  if (write) {
    auto store = open_or_die(path, names);
    const auto start = Clock::now();
    constexpr std::uint64_t kPerCommit = 10'000;
    for (std::uint64_t n = 1; n <= jobs;) {
      Batch b;
      for (std::uint64_t i = 0; i < kPerCommit && n <= jobs; ++i, ++n) {
        b.jobs.push_back(make_job(n));
        b.events.push_back(make_event(n, b.jobs.back()));
      }
      if (auto r = store->commit(b); !r) {
        std::fprintf(stderr, "commit: %s\n", r.error().c_str());
        std::exit(1);
      }
    }
    const double t = seconds_since(start);
    std::printf("write %llu pending jobs (+1 event each, commits of 10000): %.2f s (%.0f jobs/s)\n",
                static_cast<unsigned long long>(jobs), t, static_cast<double>(jobs) / t);
  }
  std::printf("file size after close: %.1f MiB (%.0f bytes/job incl. event and indexes)\n",
              static_cast<double>(size_of(path)) / (1 << 20),
              static_cast<double>(size_of(path)) / static_cast<double>(jobs));
  ResourceNames fresh;
  auto start = Clock::now();
  auto store = open_or_die(path, fresh);
  const double open_s = seconds_since(start);
  start = Clock::now();
  auto loaded = store->load();
  const double load_s = seconds_since(start);
  if (!loaded || loaded->unfinished.size() != jobs) {
    std::fprintf(stderr, "load: %s\n", loaded ? "wrong count" : loaded.error().c_str());
    std::exit(1);
  }
  std::printf("restart: open (incl. quick_check) %.2f s, load() of %zu unfinished jobs %.2f s\n",
              open_s, loaded->unfinished.size(), load_s);
}

// Accounting over a state file of `jobs` finished jobs, one every 10 s, each with five events
// (submitted, admitted, running, and one in 10 preempted and admitted again before it ends), and
// 1% still running: usage() by queue over everything and over the last day, and the first page
// by job of the last day.
void bench_usage(const std::string& dir, std::uint64_t jobs) {
  const std::string path = dir + "/usage.db";
  ResourceNames names;
  auto store = open_or_die(path, names);
  const Time t0 = 1'700'000'000;
  std::uint64_t seq = 0;
  auto event = [&](const JobRecord& j, Time at, std::optional<JobState> from, JobState to) {
    const bool holds = to == JobState::kAdmitted || to == JobState::kRunning || to == JobState::kPreempting;
    return EventRecord{++seq, at, j.spec.id.value, j.spec.queue.value, from, to, "", "", holds ? "h100" : ""};
  };
  auto start = Clock::now();
  constexpr std::uint64_t kPerCommit = 10'000;
  for (std::uint64_t n = 1; n <= jobs;) {
    Batch b;
    for (std::uint64_t i = 0; i < kPerCommit && n <= jobs; ++i, ++n) {
      JobRecord j = make_job(n);
      const Time sub = t0 + static_cast<Time>(n) * 10;
      j.spec.submitted_at = sub;
      b.events.push_back(event(j, sub, std::nullopt, JobState::kPending));
      b.events.push_back(event(j, sub + 30, JobState::kPending, JobState::kAdmitted));
      b.events.push_back(event(j, sub + 31, JobState::kAdmitted, JobState::kRunning));
      if (n % 10 == 0) {
        b.events.push_back(event(j, sub + 600, JobState::kRunning, JobState::kPreempting));
        b.events.push_back(event(j, sub + 630, JobState::kPreempting, JobState::kPending));
        b.events.push_back(event(j, sub + 900, JobState::kPending, JobState::kAdmitted));
        ++j.attempts;
        ++j.preemptions;
      }
      j.admitted_at = n % 10 == 0 ? sub + 900 : sub + 30;
      j.flavor = "h100";
      if (n + jobs / 100 <= jobs) {
        b.events.push_back(event(j, sub + 3600, JobState::kRunning, JobState::kSucceeded));
        j.state = JobState::kSucceeded;
        j.finished_at = sub + 3600;
      } else {
        j.state = JobState::kRunning;
      }
      b.jobs.push_back(std::move(j));
    }
    if (auto r = store->commit(b); !r) {
      std::fprintf(stderr, "commit: %s\n", r.error().c_str());
      std::exit(1);
    }
  }
  std::printf("usage: wrote %llu jobs and %llu events in %.2f s\n", static_cast<unsigned long long>(jobs),
              static_cast<unsigned long long>(seq), seconds_since(start));
  const Time end = t0 + static_cast<Time>(jobs) * 10 + 3600;
  auto run = [&](const char* what, UsageBy by, Time since, std::size_t limit) {
    UsageQuery q;
    q.by = by;
    q.since = since;
    q.until = end;
    q.now = end;
    q.limit = limit;
    const auto t = Clock::now();
    auto rows = store->usage(q);
    if (!rows) {
      std::fprintf(stderr, "usage: %s\n", rows.error().c_str());
      std::exit(1);
    }
    std::printf("  %-36s %8zu rows %10.3f s\n", what, rows->size(), seconds_since(t));
  };
  run("by queue, everything", UsageBy::kQueue, 0, 0);
  run("by user, everything", UsageBy::kUser, 0, 0);
  run("by queue, the last day", UsageBy::kQueue, end - 86400, 0);
  run("by job, the last day, first 101", UsageBy::kJob, end - 86400, 101);
}

// One `gpuq submit --array 0-999 --hold` as the store sees it: 1,000 member rows and two events
// each (submitted, held) in one commit, against the same commit without the events and without the
// rows, so the split of the writer's time is measured rather than guessed. Medians of 20 commits.
void bench_array(const std::string& dir) {
  ResourceNames names;
  auto store = open_or_die(dir + "/array.db", names);
  std::uint64_t n = 0, seq = 0;
  std::printf("array commits, 1,000 held members (median of 20, ms):\n");
  for (const char* what : {"rows + 2 events each", "rows only", "2 events each only", "rows + 2 events each"}) {
    const bool rows = std::string(what) != "2 events each only";
    const bool events = std::string(what) != "rows only";
    std::vector<double> lat;
    for (int c = 0; c < 20; ++c) {
      Batch b;
      const std::string array = "a" + std::to_string(c) + "x" + std::to_string(n);
      for (int i = 0; i < 1000; ++i) {
        JobRecord j = make_job(++n);
        j.spec.id = JobId(array + "_" + std::to_string(i));
        j.spec.array_index = i;
        j.reason = "held by alice";
        if (events) {
          b.events.push_back({++seq, j.spec.submitted_at, j.spec.id.value, j.spec.queue.value, std::nullopt,
                              JobState::kPending, "submitted", "", ""});
          b.events.push_back({++seq, j.spec.submitted_at, j.spec.id.value, j.spec.queue.value,
                              JobState::kPending, JobState::kPending, "held by alice", "", ""});
        }
        if (rows) b.jobs.push_back(std::move(j));
      }
      const auto t = Clock::now();
      if (auto r = store->commit(b); !r) {
        std::fprintf(stderr, "commit: %s\n", r.error().c_str());
        std::exit(1);
      }
      lat.push_back(seconds_since(t) * 1000);
    }
    std::sort(lat.begin(), lat.end());
    std::printf("  %-34s %8.2f\n", what, lat[lat.size() / 2]);
  }
  // The same members as gpuqd commits them now (store.hpp: ArrayRows): one row, kept while they
  // are unchanged; then one member's own row (it split off: admitted), with the row's update.
  std::vector<double> commit_ms, split_ms;
  for (int c = 0; c < 20; ++c) {
    ArrayRows a;
    a.first = make_job(n + 1);
    a.first.spec.array_id = "b" + std::to_string(c);
    a.first.spec.array_index = 0;
    a.first.spec.id = JobId(a.first.spec.array_id + "_0");
    a.first.reason = "held by alice";
    a.first.held = true;
    std::vector<std::int32_t> indices;
    for (int i = 0; i < 1000; ++i) indices.push_back(i);
    a.indices = IndexRanges::of(indices);
    a.first_seq = seq + 1;
    a.each.push_back({0, a.first.spec.submitted_at, "", a.first.spec.queue.value, std::nullopt, JobState::kPending,
                      "submitted", "", ""});
    a.each.push_back({0, a.first.spec.submitted_at, "", a.first.spec.queue.value, JobState::kPending,
                      JobState::kPending, "held by alice", "", ""});
    n += 1000;
    seq += 2000;
    Batch b;
    JobRecord admitted = a.member(500);
    admitted.state = JobState::kRunning;
    b.arrays.push_back(std::move(a));
    auto t = Clock::now();
    if (auto r = store->commit(b); !r) {
      std::fprintf(stderr, "commit: %s\n", r.error().c_str());
      std::exit(1);
    }
    commit_ms.push_back(seconds_since(t) * 1000);
    Batch split;
    split.jobs.push_back(admitted);
    t = Clock::now();
    if (auto r = store->commit(split); !r) {
      std::fprintf(stderr, "commit: %s\n", r.error().c_str());
      std::exit(1);
    }
    split_ms.push_back(seconds_since(t) * 1000);
  }
  std::sort(commit_ms.begin(), commit_ms.end());
  std::sort(split_ms.begin(), split_ms.end());
  std::printf("  %-34s %8.2f\n", "as one array row: the commit", commit_ms[10]);
  std::printf("  %-34s %8.2f\n", "a member split off it: the commit", split_ms[10]);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t jobs = 1'000'000;
  std::string dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--jobs") jobs = std::stoull(argv[i + 1]);
    else if (a == "--dir") dir = argv[i + 1];
  }
  // --load-only 1 --dir D: only the restart half, on D/restart.db left by an earlier run.
  bool load_only = false, array_only = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--load-only") load_only = std::string(argv[i + 1]) == "1";
    if (std::string(argv[i]) == "--array-only") array_only = std::string(argv[i + 1]) == "1";
  }
  bool own_dir = dir.empty();
  if (own_dir) {
    std::string tmpl = (fs::temp_directory_path() / "gpuq-store-bench-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  std::printf("store_bench in %s\n", dir.c_str());
  if (!load_only) bench_array(dir);
  if (array_only) {
    if (own_dir) fs::remove_all(dir);
    return 0;
  }
  if (!load_only) bench_commits(dir);
  bench_restart(dir, jobs, !load_only);
  if (!load_only) bench_usage(dir, std::min<std::uint64_t>(jobs, 200'000));
  if (own_dir) fs::remove_all(dir);
  return 0;
}
