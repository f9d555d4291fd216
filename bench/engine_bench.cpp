// engine_bench: how fast the pure engine makes admission decisions as queues and nodes grow.
//
// For each (queues x nodes) combination it builds a cluster of N nodes x 8 GPUs (flavor h100,
// with cpu and memory), Q queues in a few cohorts whose nominal quotas sum to the cluster, and a
// backlog of P pending jobs drawn from a seeded generator, then measures:
//   1. fill:   one schedule() on the empty cluster, which admits all that fits;
//   2. rescan: schedule() again on the now full cluster (every decision is a skip), --rescans
//              times; nothing changes between them, so the median is reported;
//   3. steady: S rounds of "finish a random 10% of running jobs, top the backlog up to P,
//              schedule()".
// Only the engine calls named in each column are inside the timer; building specs, counting
// decisions, draining events and checking results are not. See bench/README.md.
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_common.hpp"
#include "scheduler/engine.hpp"

namespace {

using namespace gpuq;
using namespace gpuq::bench;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Options {
  std::vector<int> queues{10, 100, 1000};
  std::vector<int> nodes{100, 1000, 10000};
  std::int64_t pending = 100'000;
  int steps = 20;
  double finish_fraction = 0.10;
  std::uint64_t seed = 42;
  int repeat = 1;
  int rescans = 5;
  bool spread = false;
  bool topology = false;
  int flavors = 1;              // 1-3: h100, a100, l40s nodes; every queue has quota on each
  bool verify_reasons = false;  // fold every pending job's wait reason into the checksum
};

constexpr const char* kFlavorNames[] = {"h100", "a100", "l40s"};

// The job mix: mostly 1-GPU jobs, some shared-GPU (250m, 500m), some 2/4/8-GPU, a few gangs.
JobSpec make_job(Rng& rng, std::uint64_t serial, int queues, int flavors, Time now) {
  JobSpec spec;
  char id[32];
  std::snprintf(id, sizeof id, "j%08" PRIu64, serial);
  spec.id = JobId(id);
  char q[16];
  std::snprintf(q, sizeof q, "q%04d", static_cast<int>(rng.below(static_cast<std::uint64_t>(queues))));
  spec.queue = QueueName(q);
  spec.submitted_at = now;
  const std::uint64_t p = rng.below(100);
  spec.priority = p < 80 ? 0 : p < 95 ? 100 : 1000;
  std::int32_t count = 1;
  Quantity gpu = 1000;
  const std::uint64_t k = rng.below(100);
  if (k < 55) gpu = 1000;
  else if (k < 65) gpu = 500;
  else if (k < 75) gpu = 250;
  else if (k < 85) gpu = 2000;
  else if (k < 91) gpu = 4000;
  else if (k < 97) gpu = 8000;
  else if (k < 98) { gpu = 8000; count = 2 + static_cast<std::int32_t>(rng.below(3)); }  // 2-4 nodes
  else { gpu = 2000; count = 4 + static_cast<std::int32_t>(rng.below(5)); }             // 4-8 pods
  spec.pod_sets.push_back(PodSet{"main", count, pod_resources(gpu)});
  // With several flavors, one job in five accepts only one of them.
  if (flavors > 1 && rng.below(5) == 0)
    spec.flavors.push_back(kFlavorNames[rng.below(static_cast<std::uint64_t>(flavors))]);
  return spec;
}

int queue_number(const std::string& name) { return std::atoi(name.c_str() + 1); }

struct CycleResult {
  double seconds = 0;
  std::int64_t decisions = 0;  // admitted + skipped (heads looked at and passed over)
  std::int64_t admitted = 0;
  std::int64_t passes = 0;
};

struct Row {
  int queues = 0, nodes = 0;
  std::int64_t rejected = 0;
  double submit_per_s = 0;
  CycleResult fill, rescan, steady;
  int steady_cycles = 0;
  double finish_ns = 0;  // per observe(JobFinished)
  double max_util = 0, min_util = 1;
  std::uint64_t checksum = 0;
  long max_rss_mib = 0;
};

class Harness {
 public:
  Harness(const Options& opt, int queues, int nodes, std::uint64_t seed)
      : opt_(opt), queues_(queues), nodes_(nodes), rng_{seed}, pending_(queues, 0),
        strict_(queues, false) {
    EngineConfig config;
    config.placement = opt.spread ? PlacementPolicy::kSpread : PlacementPolicy::kPack;
    if (opt.topology) config.topology_levels = {"zone", "rack"};
    engine_ = std::make_unique<Engine>(config);
    add_queues();
    add_nodes();
  }

  Row run() {
    Row row;
    row.queues = queues_;
    row.nodes = nodes_;
    // Setup: the initial backlog. Only the submit() calls are timed.
    {
      std::int64_t accepted = 0;
      double secs = 0;
      while (accepted < opt_.pending) {
        std::vector<JobSpec> batch;
        batch.reserve(static_cast<std::size_t>(opt_.pending - accepted));
        for (std::int64_t i = accepted; i < opt_.pending; ++i) batch.push_back(next_job());
        std::vector<std::string> queue_of;
        for (const auto& s : batch) queue_of.push_back(s.queue.value);
        std::vector<char> ok(batch.size());
        auto t0 = Clock::now();
        for (std::size_t i = 0; i < batch.size(); ++i)
          ok[i] = engine_->submit(std::move(batch[i]), now_).ok();
        secs += seconds_since(t0);
        for (std::size_t i = 0; i < batch.size(); ++i) {
          if (ok[i]) {
            ++pending_[queue_number(queue_of[i])];
            ++accepted;
          } else {
            ++row.rejected;
          }
        }
        engine_->take_events();
      }
      row.submit_per_s = static_cast<double>(accepted) / secs;
    }
    now_ += 1;
    row.fill = cycle();
    note_utilisation(row);
    std::vector<CycleResult> rescans;
    for (int i = 0; i < std::max(1, opt_.rescans); ++i) {
      rescans.push_back(cycle());
      if (rescans.back().admitted != 0) fail("a rescan with nothing changed admitted a job");
    }
    std::sort(rescans.begin(), rescans.end(),
              [](const CycleResult& a, const CycleResult& b) { return a.seconds < b.seconds; });
    row.rescan = rescans[rescans.size() / 2];
    double finish_secs = 0;
    std::int64_t finished = 0;
    for (int s = 0; s < opt_.steps; ++s) {
      now_ += 60;
      // Finish a random share of the running jobs (partial Fisher-Yates from the back).
      auto k = static_cast<std::size_t>(static_cast<double>(running_.size()) * opt_.finish_fraction);
      if (k == 0 && !running_.empty()) k = 1;
      for (std::size_t i = 0; i < k; ++i) {
        std::size_t last = running_.size() - 1 - i;
        std::swap(running_[static_cast<std::size_t>(rng_.below(last + 1))], running_[last]);
      }
      std::vector<BinderFact> facts;
      for (std::size_t i = running_.size() - k; i < running_.size(); ++i)
        facts.emplace_back(JobFinished{JobId(running_[i]), 0, {}});
      auto t0 = Clock::now();
      for (const auto& f : facts)
        if (!engine_->observe(f, now_)) fail("observe(JobFinished) failed");
      finish_secs += seconds_since(t0);
      finished += static_cast<std::int64_t>(k);
      for (std::size_t i = running_.size() - k; i < running_.size(); ++i)
        running_gpu_ -= engine_->job(JobId(running_[i]))->total[kGpu];
      running_.resize(running_.size() - k);
      engine_->take_events();
      top_up();
      CycleResult c = cycle();
      row.steady.seconds += c.seconds;
      row.steady.decisions += c.decisions;
      row.steady.admitted += c.admitted;
      row.steady.passes += c.passes;
      ++row.steady_cycles;
      note_utilisation(row);
    }
    row.finish_ns = finished ? finish_secs * 1e9 / static_cast<double>(finished) : 0;
    row.checksum = checksum_.h;
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    row.max_rss_mib = ru.ru_maxrss / 1024;
    return row;
  }

 private:
  [[noreturn]] static void fail(const char* what) {
    std::fprintf(stderr, "engine_bench: %s\n", what);
    std::exit(2);
  }

  int flavor_of_node(int n) const { return n % opt_.flavors; }

  void add_queues() {
    // Sizes 1, 2 or 4: the nominal quota is proportional, and so is the fair-share weight.
    std::vector<int> size(static_cast<std::size_t>(queues_));
    int sum = 0;
    for (auto& s : size) sum += (s = 1 << rng_.below(3));
    // nominal[f][i][r]: queue i's share of flavor f's nodes, summing exactly to them.
    std::vector<std::vector<std::array<Quantity, 3>>> nominal(static_cast<std::size_t>(opt_.flavors));
    for (int f = 0; f < opt_.flavors; ++f) {
      Quantity count = 0;
      for (int n = 0; n < nodes_; ++n) count += flavor_of_node(n) == f;
      const Quantity total[3] = {kGpusPerNode * 1000 * count, kNodeCpu * count, kNodeMemory * count};
      auto& nom = nominal[static_cast<std::size_t>(f)];
      nom.resize(size.size());
      for (int r = 0; r < 3; ++r) {
        Quantity given = 0;
        for (std::size_t i = 0; i < size.size(); ++i) given += nom[i][r] = total[r] * size[i] / sum;
        for (std::size_t i = 0; given < total[r]; ++i, ++given) ++nom[i][r];  // exact sum
      }
    }
    const int cohorts = (queues_ + 249) / 250;  // 1 cohort up to 250 queues, 4 at 1,000
    // The largest job (a 4-node gang) must stay reachable under a borrowing limit.
    const ResourceVec biggest = pod_resources(32'000);
    for (int i = 0; i < queues_; ++i) {
      QueueSpec q;
      char name[16];
      std::snprintf(name, sizeof name, "q%04d", i);
      q.name = QueueName(name);
      char cohort[16];
      std::snprintf(cohort, sizeof cohort, "cohort-%d", i % cohorts);
      q.cohort = cohort;
      q.weight = size[static_cast<std::size_t>(i)];
      strict_[static_cast<std::size_t>(i)] = i % 10 == 9;
      q.strategy = strict_[static_cast<std::size_t>(i)] ? QueueingStrategy::kStrictFIFO
                                                        : QueueingStrategy::kBestEffortFIFO;
      // Every queue lists every flavor, starting from a different one.
      for (int k = 0; k < opt_.flavors; ++k) {
        const int f = (i + k) % opt_.flavors;
        FlavorQuota fq;
        fq.flavor = kFlavorNames[f];
        for (ResourceId r = 0; r < 3; ++r) {
          ResourceQuota rq;
          rq.nominal = nominal[static_cast<std::size_t>(f)][static_cast<std::size_t>(i)][r];
          if (i % 4 == 1) rq.borrowing_limit = std::max(rq.nominal, biggest[r]);  // capped borrowers
          if (i % 4 == 2) rq.lending_limit = rq.nominal / 2;  // keep half of nominal to itself
          fq.resources.emplace_back(r, rq);
        }
        q.quotas.push_back(fq);
      }
      if (auto r = engine_->apply_queue(q); !r) fail(r.error().c_str());
    }
  }

  void add_nodes() {
    for (int n = 0; n < nodes_; ++n) {
      NodeSpec spec;
      char name[16];
      std::snprintf(name, sizeof name, "n%05d", n);
      spec.name = name;
      spec.flavor = kFlavorNames[flavor_of_node(n)];
      spec.capacity[kGpu] = kGpusPerNode * 1000;
      spec.capacity[kCpu] = kNodeCpu;
      spec.capacity[kMemory] = kNodeMemory;
      if (opt_.topology) {
        char zone[16], rack[16];
        std::snprintf(zone, sizeof zone, "z%d", n / 1000);
        std::snprintf(rack, sizeof rack, "r%d", n / 32);
        spec.labels["zone"] = zone;
        spec.labels["rack"] = rack;
      }
      if (auto r = engine_->upsert_node(spec, 0); !r) fail(r.error().c_str());
    }
  }

  JobSpec next_job() { return make_job(rng_, serial_++, queues_, opt_.flavors, now_); }

  void top_up() {
    std::int64_t have = 0;
    for (auto p : pending_) have += p;
    while (have < opt_.pending) {
      JobSpec spec = next_job();
      int q = queue_number(spec.queue.value);
      if (engine_->submit(std::move(spec), now_)) {
        ++pending_[static_cast<std::size_t>(q)];
        ++have;
      }
    }
    engine_->take_events();
  }

  // One schedule(); only that call is timed. The engine counts its decisions and passes; for a
  // one-pass cycle the harness checks the count against what the pass must have looked at: a
  // BestEffortFIFO queue offers every pending job once (admitted or skipped), a StrictFIFO queue
  // offers jobs until the first one that does not fit.
  CycleResult cycle() {
    CycleResult c;
    auto t0 = Clock::now();
    std::vector<Decision> out = engine_->schedule(now_);
    c.seconds = seconds_since(t0);
    std::vector<std::int64_t> admitted(pending_.size(), 0);
    for (const Decision& d : out) {
      // Only admissions: no queue here has a preemption policy, and a Preemption (a victim
      // chosen) is not an admission.
      const auto* admission = std::get_if<Admission>(&d);
      if (admission == nullptr) continue;
      const Admission& a = *admission;
      ++admitted[static_cast<std::size_t>(queue_number(a.queue.value))];
      running_.push_back(a.job.value);
      const Job* job = engine_->job(a.job);
      if (job == nullptr || !job->holds_resources()) fail("admitted job is not holding resources");
      running_gpu_ += job->total[kGpu];
      checksum_.add(a.job.value);
      checksum_.add(a.flavor);
      for (const PodPlacement& p : a.pods) {
        checksum_.add(p.node);
        checksum_.add(p.gpu_milli);
        for (int g : p.gpus) checksum_.add(static_cast<std::int64_t>(g));
      }
    }
    std::int64_t one_pass = 0;
    for (std::size_t q = 0; q < pending_.size(); ++q) {
      const std::int64_t left = pending_[q] - admitted[q];
      one_pass += strict_[q] ? admitted[q] + (left > 0 ? 1 : 0) : pending_[q];
      c.admitted += admitted[q];
      pending_[q] = left;
    }
    const CycleStats& stats = engine_->last_cycle();
    c.decisions = static_cast<std::int64_t>(stats.decisions);
    c.passes = stats.passes;
    if (static_cast<std::int64_t>(stats.admitted) != c.admitted) fail("cycle stats: admitted differs");
    // A pass visits every job it may try, unless it left queues none of whose jobs could fit,
    // or a node reservation kept a job off room the queue-leaving test counts (then the jobs
    // behind it with its request are passed over untried).
    if (stats.passes == 1 && stats.queues_dropped == 0 && engine_->claim_count() == 0 && c.decisions != one_pass)
      fail("cycle stats: decisions differ");
    if (stats.passes == 1 && c.decisions > one_pass) fail("cycle stats: more decisions than jobs");
    if (running_gpu_ > kGpusPerNode * 1000 * nodes_) fail("more GPUs admitted than exist");
    engine_->take_events();
    if (opt_.verify_reasons)
      for (const Job* job : engine_->pending_in_submission_order()) {
        checksum_.add(job->spec.id.value);
        checksum_.add(engine_->pending_reason(*job));
      }
    return c;
  }

  void note_utilisation(Row& row) const {
    double u = static_cast<double>(running_gpu_) / static_cast<double>(kGpusPerNode * 1000 * nodes_);
    row.max_util = std::max(row.max_util, u);
    row.min_util = std::min(row.min_util, u);
  }

  const Options& opt_;
  int queues_, nodes_;
  Rng rng_;
  std::unique_ptr<Engine> engine_;
  std::vector<std::int64_t> pending_;  // by queue
  std::vector<bool> strict_;           // by queue
  std::vector<std::string> running_;   // ids of jobs holding resources
  Quantity running_gpu_ = 0;
  std::uint64_t serial_ = 0;
  Time now_ = 1;
  Checksum checksum_;
};

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return out;
}

void usage() {
  std::puts(
      "usage: engine_bench [--queues 10,100,1000] [--nodes 100,1000,10000] [--pending 100000]\n"
      "                    [--steps 20] [--finish 0.10] [--seed 42] [--repeat 1] [--rescans 5]\n"
      "                    [--spread] [--topology] [--flavors 1] [--verify-reasons]");
}

double per_s(std::int64_t n, double secs) { return secs > 0 ? static_cast<double>(n) / secs : 0; }
double ns_per(double secs, std::int64_t n) { return n > 0 ? secs * 1e9 / static_cast<double>(n) : 0; }

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) { usage(); std::exit(1); }
      return argv[++i];
    };
    if (a == "--queues") opt.queues = parse_list(value());
    else if (a == "--nodes") opt.nodes = parse_list(value());
    else if (a == "--pending") opt.pending = std::atoll(value());
    else if (a == "--steps") opt.steps = std::atoi(value());
    else if (a == "--finish") opt.finish_fraction = std::atof(value());
    else if (a == "--seed") opt.seed = std::strtoull(value(), nullptr, 10);
    else if (a == "--repeat") opt.repeat = std::atoi(value());
    else if (a == "--rescans") opt.rescans = std::atoi(value());
    else if (a == "--spread") opt.spread = true;
    else if (a == "--topology") opt.topology = true;
    else if (a == "--flavors") opt.flavors = std::clamp(std::atoi(value()), 1, 3);
    else if (a == "--verify-reasons") opt.verify_reasons = true;
    else { usage(); return a == "--help" || a == "-h" ? 0 : 1; }
  }
  std::printf("engine_bench: pending=%" PRId64 " steps=%d finish=%.2f seed=%" PRIu64
              " placement=%s topology=%s flavors=%d%s\n",
              opt.pending, opt.steps, opt.finish_fraction, opt.seed, opt.spread ? "spread" : "pack",
              opt.topology ? "zone/rack" : "off", opt.flavors,
              opt.verify_reasons ? " verify-reasons (checksum includes every wait reason)" : "");
  std::fflush(stdout);

  std::vector<Row> rows;
  for (int q : opt.queues)
    for (int n : opt.nodes)
      for (int r = 0; r < opt.repeat; ++r) {
        Harness h(opt, q, n, opt.seed);
        rows.push_back(h.run());
        const Row& x = rows.back();
        std::printf("  done %5d queues x %5d nodes: fill %.1f ms, steady %.1f ms/cycle, checksum %016" PRIx64 "\n",
                    q, n, x.fill.seconds * 1e3,
                    x.steady_cycles ? x.steady.seconds * 1e3 / x.steady_cycles : 0, x.checksum);
        std::fflush(stdout);
      }

  std::puts("\n1. Fill: one schedule() over the backlog on an empty cluster; rescan: schedule() again on the full cluster (median)");
  std::puts("queues  nodes   submit/s  rejected | fill: passes decisions  admitted       ms      adm/s   ns/dec | rescan: passes decisions      ms  ns/dec | est. ns/adm");
  for (const Row& x : rows) {
    // Admission cost estimated by taking out the skips at the rescan's price.
    const double skip_secs = static_cast<double>(x.fill.decisions - x.fill.admitted) *
                             ns_per(x.rescan.seconds, x.rescan.decisions) * 1e-9;
    // Only meaningful when admissions are a fair share of the fill's decisions.
    const bool estimate = x.fill.admitted * 20 >= x.fill.decisions;
    char est[32] = "-";
    if (estimate)
      std::snprintf(est, sizeof est, "%.1f",
                    ns_per(std::max(0.0, x.fill.seconds - skip_secs), x.fill.admitted));
    std::printf("%6d %6d %10.0f %9" PRId64 " | %12" PRId64 " %9" PRId64 " %9" PRId64 " %8.2f %10.0f %8.1f | %14" PRId64
                " %9" PRId64 " %7.2f %7.1f | %10s\n",
                x.queues, x.nodes, x.submit_per_s, x.rejected, x.fill.passes, x.fill.decisions, x.fill.admitted,
                x.fill.seconds * 1e3, per_s(x.fill.admitted, x.fill.seconds),
                ns_per(x.fill.seconds, x.fill.decisions), x.rescan.passes, x.rescan.decisions, x.rescan.seconds * 1e3,
                ns_per(x.rescan.seconds, x.rescan.decisions), est);
  }
  std::printf("\n2. Steady state: %d x (finish %.0f%% of running jobs, top up to %" PRId64
              " pending, schedule())\n",
              opt.steps, opt.finish_fraction * 100, opt.pending);
  std::puts("queues  nodes | passes/cycle adm/cycle  dec/cycle  ms/cycle     adm/s    ns/adm  ns/dec | ns/finish  GPU util min-max  RSS MiB  checksum");
  for (const Row& x : rows) {
    const double cycles = x.steady_cycles ? x.steady_cycles : 1;
    std::printf("%6d %6d | %12.2f %9.0f %10.0f %9.2f %9.0f %9.1f %7.1f | %9.1f  %5.1f%% - %5.1f%%  %7ld  %016" PRIx64 "\n",
                x.queues, x.nodes, static_cast<double>(x.steady.passes) / cycles,
                static_cast<double>(x.steady.admitted) / cycles,
                static_cast<double>(x.steady.decisions) / cycles, x.steady.seconds * 1e3 / cycles,
                per_s(x.steady.admitted, x.steady.seconds), ns_per(x.steady.seconds, x.steady.admitted),
                ns_per(x.steady.seconds, x.steady.decisions), x.finish_ns, x.min_util * 100,
                x.max_util * 100, x.max_rss_mib, x.checksum);
  }

  // Targets from the issue, for the rows that were run.
  auto find = [&](int q, int n) -> const Row* {
    for (const Row& x : rows)
      if (x.queues == q && x.nodes == n) return &x;
    return nullptr;
  };
  std::puts("\n3. Targets");
  if (const Row* t = find(1000, 10000)) {
    double fill = per_s(t->fill.admitted, t->fill.seconds);
    double steady = per_s(t->steady.admitted, t->steady.seconds);
    std::printf("  >= 100,000 admissions/s at 1,000 queues x 10,000 nodes: fill %.0f/s (%s), steady %.0f/s (%s)\n",
                fill, fill >= 100'000 ? "met" : "MISSED", steady, steady >= 100'000 ? "met" : "MISSED");
  }
  for (int q : opt.queues) {
    const Row* small = find(q, 100);
    const Row* big = find(q, 10000);
    if (!small || !big) continue;
    double fill = ns_per(big->fill.seconds, big->fill.decisions) / ns_per(small->fill.seconds, small->fill.decisions);
    double steady = ns_per(big->steady.seconds, big->steady.decisions) /
                    ns_per(small->steady.seconds, small->steady.decisions);
    double rescan = ns_per(big->rescan.seconds, big->rescan.decisions) /
                    ns_per(small->rescan.seconds, small->rescan.decisions);
    std::printf("  ns/decision 10,000 vs 100 nodes at %4d queues (<= 2x): fill %.2fx (%s), rescan %.2fx (%s), steady %.2fx (%s)\n",
                q, fill, fill <= 2 ? "met" : "MISSED", rescan, rescan <= 2 ? "met" : "MISSED", steady,
                steady <= 2 ? "met" : "MISSED");
    // A decision is either an admission (placement, a decision record) or a pass-over (a quota
    // check or a memo hit), and the mix shifts with cluster size: small clusters are mostly
    // pass-overs, big ones mostly admissions. The cost of an admission compares like with like.
    double fill_adm = ns_per(big->fill.seconds, big->fill.admitted) / ns_per(small->fill.seconds, small->fill.admitted);
    double steady_adm = ns_per(big->steady.seconds, big->steady.admitted) /
                        ns_per(small->steady.seconds, small->steady.admitted);
    std::printf("  ns/admission 10,000 vs 100 nodes at %4d queues (<= 2x): fill %.2fx (%s), steady %.2fx (%s)\n",
                q, fill_adm, fill_adm <= 2 ? "met" : "MISSED", steady_adm, steady_adm <= 2 ? "met" : "MISSED");
  }
  return 0;
}
