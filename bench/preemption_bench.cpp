// preemption_bench: how long one preemption decision takes on a full cluster.
//
// It fills a cluster of N nodes x 8 GPUs (flavor h100) with J running jobs (restore_running, as
// the daemon does after a restart) of mixed sizes and priorities, spread over Q queues of one
// cohort so that some queues borrow and some are under their nominal quota. Every GPU is taken.
// Then, for each scenario, it repeats R times: copy the filled engine, submit one preemptor,
// time one schedule() (the only pending job, so the cycle is that job's admission attempt and
// its victim search), check the decisions, throw the copy away. Every measured decision starts
// from the same state; the preemptors differ (queue, size) from one repetition to the next.
// The same preemptor is also timed on a copy in which no queue may preempt: the difference of
// the two is the victim search and its booking. See bench/README.md.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/preemption_fill.hpp"

namespace {

using namespace gpuq;
using namespace gpuq::bench;

// One scenario: which queues its preemptors come from and what they ask for.
struct Scenario {
  const char* name;
  const char* what;
  bool fair;
  bool must_find_nothing;
};

constexpr Scenario kScenarios[] = {
    {"within-queue", "withinQueue LowerPriority, reclaim Never; prio 1000; 1/2/4 GPUs; queue at or above nominal", false, false},
    {"reclaim", "reclaimWithinCohort Any; prio 0; one 4- or 8-GPU pod; queue under nominal", false, false},
    {"borrow", "borrowWithinCohort LowerPriority (threshold 100); prio 1000; 1/2/4 GPUs; queue borrowing", false, false},
    {"fair-share", "fair sharing, default strategies; prio 0; 1/2/4/8 GPUs; queue under or at nominal", true, false},
    {"worst", "borrowWithinCohort LowerPriority; prio 1000; gang of (nodes it could empty + 1) x 8 GPUs", false, true},
};

struct Sample {
  double us = 0;           // schedule()
  double baseline_us = 0;  // the same schedule() with preemption off
  std::size_t candidates = 0;
  std::size_t victims = 0;
};

struct ScenarioResult {
  const Scenario* scenario = nullptr;
  std::vector<Sample> samples;
  int found = 0;
  std::array<int, 4> reasons{};  // victims by PreemptReason
  std::size_t gang_pods_max = 0;
  std::uint64_t checksum = 0;
  double copy_ms = 0;  // mean time to copy the filled engine (outside the timers)
};

class Bench {
 public:
  Bench(const Options& opt, const FilledCluster& w) : opt_(opt), w_(w), rng_{opt.seed ^ 0x5eedULL} {}

  ScenarioResult run(const Scenario& s) {
    ScenarioResult res;
    res.scenario = &s;
    Checksum sum;
    std::vector<int> queues = pick_queues(s);
    if (queues.empty()) {
      std::printf("  %-12s no queue fits this scenario at this size; skipped\n", s.name);
      return res;
    }
    double copy_secs = 0;
    for (int i = 0; i < opt_.repeat; ++i) {
      const int q = queues[static_cast<std::size_t>(i) % queues.size()];
      JobSpec spec = preemptor(s, q, i);
      const bool under = w_.used_milli(q) < w_.nominal_milli();
      FilledCluster::CandidateCount cc = w_.count_candidates(spec, under);
      if (std::string_view(s.name) == "worst") {
        // One more whole node than the candidates could ever empty: the search walks them all.
        spec.pod_sets[0].count = static_cast<std::int32_t>(cc.whole_nodes + 1);
        res.gang_pods_max = std::max(res.gang_pods_max, cc.whole_nodes + 1);
      }
      Sample sample;
      sample.candidates = cc.candidates;
      // The measured cycle, on a fresh copy of the filled engine.
      {
        const auto c0 = Clock::now();
        Engine e(w_.engine(s.fair));
        copy_secs += std::chrono::duration<double>(Clock::now() - c0).count();
        if (auto r = e.submit(spec, kNow); !r) fail(std::string(s.name) + ": submit: " + r.error());
        e.take_events();
        if (opt_.cold) evict_caches();
        const auto t0 = Clock::now();
        std::vector<Decision> out = e.schedule(kNow);
        sample.us = micros(Clock::now() - t0);
        sample.victims = check(s, e, spec, out, res, sum);
      }
      // The same cycle where no queue may preempt: what is not the victim search.
      {
        Engine e(w_.engine_without_preemption(s.fair));
        if (auto r = e.submit(spec, kNow); !r) fail(std::string(s.name) + ": submit: " + r.error());
        e.take_events();
        if (opt_.cold) evict_caches();
        const auto t0 = Clock::now();
        std::vector<Decision> out = e.schedule(kNow);
        sample.baseline_us = micros(Clock::now() - t0);
        if (!out.empty()) fail(std::string(s.name) + ": the preemptor fits without preemption");
      }
      sum.add(static_cast<std::int64_t>(sample.candidates));
      res.samples.push_back(sample);
    }
    res.checksum = sum.h;
    res.copy_ms = copy_secs * 1e3 / opt_.repeat;
    return res;
  }

 private:
  std::vector<int> pick_queues(const Scenario& s) const {
    std::vector<int> out;
    const std::string_view name = s.name;
    for (int q = 0; q < opt_.queues; ++q) {
      const int g = policy_group(q);
      const Quantity used = w_.used_milli(q), nominal = w_.nominal_milli();
      bool ok = false;
      if (name == "within-queue") ok = g == 6 && used >= nominal;
      if (name == "reclaim") ok = g <= 5 && used + 8000 <= nominal;
      if (name == "borrow") ok = g == 9 && used > nominal;
      if (name == "fair-share") ok = g <= 5 && used <= nominal;
      if (name == "worst") ok = g == 8 && used > nominal;
      if (ok) out.push_back(q);
    }
    return out;
  }

  JobSpec preemptor(const Scenario& s, int q, int i) {
    const std::string_view name = s.name;
    JobSpec spec;
    char id[48];
    std::snprintf(id, sizeof id, "pre-%s-%04d", s.name, i);
    spec.id = JobId(id);
    spec.queue = QueueName(queue_name(q));
    spec.submitted_at = kNow;
    Quantity gpu = 1000;
    const std::uint64_t k = rng_.below(10);
    if (name == "within-queue" || name == "borrow") {
      spec.priority = 1000;
      gpu = k < 5 ? 1000 : k < 8 ? 2000 : 4000;
    } else if (name == "reclaim") {
      gpu = k < 5 ? 4000 : 8000;
    } else if (name == "fair-share") {
      gpu = k < 3 ? 1000 : k < 5 ? 2000 : k < 8 ? 4000 : 8000;
    } else if (name == "worst") {
      spec.priority = 1000;
      gpu = 8000;
    }
    spec.pod_sets.push_back(PodSet{"main", 1, pod_resources(gpu)});
    return spec;
  }

  // Checks what the cycle decided and folds it into the checksum; returns the victim count.
  static std::size_t check(const Scenario& s, const Engine& e, const JobSpec& spec,
                           const std::vector<Decision>& out, ScenarioResult& res, Checksum& sum) {
    sum.add(spec.id.value);
    std::size_t victims = 0;
    for (const Decision& d : out) {
      const auto* p = std::get_if<Preemption>(&d);
      if (p == nullptr) fail(std::string(s.name) + ": the preemptor was admitted without preemption");
      if (p->by != spec.id) fail(std::string(s.name) + ": a preemption for another job");
      ++victims;
      ++res.reasons[static_cast<std::size_t>(p->reason)];
      sum.add(p->job.value);
      sum.add(p->queue.value);
      sum.add(static_cast<std::int64_t>(p->reason));
      sum.add(p->grace_period);
    }
    const Job* job = e.job(spec.id);
    if (job == nullptr || job->state != JobState::kPending) fail(std::string(s.name) + ": preemptor state");
    if (victims > 0) {
      if (!job->reserved || job->preemption->waiting_on.size() != victims)
        fail(std::string(s.name) + ": victims chosen but no booking");
      if (s.must_find_nothing) fail(std::string(s.name) + ": found victims where none can make room");
      ++res.found;
    } else if (!job->wait->preemption_found_nothing) {
      fail(std::string(s.name) + ": no victims, but the search did not run");
    }
    sum.add(static_cast<std::int64_t>(victims));
    return victims;
  }

  const Options& opt_;
  const FilledCluster& w_;
  Rng rng_;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::vector<std::string> parse_names(const char* s) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == ',' || *p == 0) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (*p == 0) break;
    } else {
      cur += *p;
    }
  }
  return out;
}

void usage() {
  std::puts(
      "usage: preemption_bench [--nodes 1000] [--queues 100] [--jobs 10000] [--repeat 200]\n"
      "                        [--seed 42] [--topology] [--spread] [--cold]\n"
      "                        [--only within-queue,reclaim,borrow,fair-share,worst]");
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) { usage(); std::exit(1); }
      return argv[++i];
    };
    if (a == "--nodes") opt.nodes = std::atoi(value());
    else if (a == "--queues") opt.queues = std::atoi(value());
    else if (a == "--jobs") opt.jobs = std::atoi(value());
    else if (a == "--repeat") opt.repeat = std::max(1, std::atoi(value()));
    else if (a == "--seed") opt.seed = std::strtoull(value(), nullptr, 10);
    else if (a == "--topology") opt.topology = true;
    else if (a == "--spread") opt.spread = true;
    else if (a == "--cold") opt.cold = true;
    else if (a == "--only") opt.only = parse_names(value());
    else { usage(); return a == "--help" || a == "-h" ? 0 : 1; }
  }
  if (opt.nodes <= 0 || opt.queues <= 0 || opt.jobs <= 0) { usage(); return 1; }
  for (const std::string& n : opt.only) {
    bool known = false;
    for (const Scenario& s : kScenarios) known = known || n == s.name;
    if (!known) { usage(); return 1; }
  }
  std::printf("preemption_bench: nodes=%d queues=%d jobs=%d repeat=%d seed=%" PRIu64
              " placement=%s topology=%s caches=%s\n",
              opt.nodes, opt.queues, opt.jobs, opt.repeat, opt.seed, opt.spread ? "spread" : "pack",
              opt.topology ? "zone/rack" : "off", opt.cold ? "cold (evicted before each cycle)" : "warm");
  std::fflush(stdout);

  FilledCluster world(opt);
  const FillStats& fs = world.stats();
  std::printf("\nFill: %zu running jobs on %d nodes x 8 GPUs in %.0f ms (restore_running), GPUs used %.2f%%\n",
              world.running().size(), opt.nodes, fs.seconds * 1e3,
              100.0 * static_cast<double>(fs.used_milli) / static_cast<double>(kNodeMilli * opt.nodes));
  std::printf("  shapes:");
  for (const auto& [shape, n] : fs.by_shape) std::printf(" %s %d,", shape.c_str(), n);
  std::printf(" (%d drawn larger, made smaller to fit)\n", fs.shrunk);
  std::printf("  queues: %d in one cohort, nominal %lld GPUs each; by fill target %d borrowing (1.35x), "
              "%d under, %d at nominal; measured: %d above nominal, %d below\n",
              opt.queues, static_cast<long long>(world.nominal_milli() / 1000), fs.queues_by_class[0],
              fs.queues_by_class[1], fs.queues_by_class[2], fs.borrowing, fs.under);
  std::fflush(stdout);

  Bench bench(opt, world);
  std::vector<ScenarioResult> results;
  for (const Scenario& s : kScenarios) {
    if (!opt.only.empty() && std::find(opt.only.begin(), opt.only.end(), s.name) == opt.only.end())
      continue;
    results.push_back(bench.run(s));
    const ScenarioResult& r = results.back();
    if (r.samples.empty()) continue;
    std::vector<double> t;
    for (const Sample& x : r.samples) t.push_back(x.us);
    std::printf("  done %-12s %zu decisions, median %.1f us, checksum %016" PRIx64 "\n", s.name,
                r.samples.size(), percentile(t, 0.5), r.checksum);
    std::fflush(stdout);
  }

  std::puts("\nScenarios (the preemptor's queue and size vary over the repetitions):");
  for (const ScenarioResult& r : results)
    std::printf("  %-12s %s\n", r.scenario->name, r.scenario->what);
  std::puts("\nOne schedule() with one pending preemptor, per decision (microseconds; search = cycle - same cycle with preemption off)");
  std::puts("scenario      n  found | cycle: median      p99      max | no-preempt median | search median | candidates median    max | victims median  max | reasons InQ/Recl/RWB/Fair | copy ms  checksum");
  std::uint64_t all = 0xcbf29ce484222325ULL;
  double worst_median = 0, worst_max = 0;
  for (const ScenarioResult& r : results) {
    if (r.samples.empty()) continue;
    std::vector<double> t, b, c, v, vf;
    for (const Sample& x : r.samples) {
      t.push_back(x.us);
      b.push_back(x.baseline_us);
      c.push_back(static_cast<double>(x.candidates));
      v.push_back(static_cast<double>(x.victims));
      if (x.victims > 0) vf.push_back(static_cast<double>(x.victims));
    }
    worst_median = std::max(worst_median, percentile(t, 0.5));
    worst_max = std::max(worst_max, percentile(t, 1.0));
    std::printf("%-12s %4zu %5d | %13.1f %8.1f %8.1f | %17.1f | %13.1f | %17.0f %6.0f | %14.0f %4.0f | %8d/%d/%d/%d | %7.1f  %016" PRIx64 "\n",
                r.scenario->name, r.samples.size(), r.found, percentile(t, 0.5), percentile(t, 0.99),
                percentile(t, 1.0), percentile(b, 0.5), percentile(t, 0.5) - percentile(b, 0.5),
                percentile(c, 0.5), percentile(c, 1.0), percentile(vf, 0.5), percentile(v, 1.0),
                r.reasons[0], r.reasons[1], r.reasons[2], r.reasons[3], r.copy_ms, r.checksum);
    if (r.gang_pods_max > 0)
      std::printf("%12s (worst: gangs of up to %zu pods x 8 GPUs; every one found nothing, as it must)\n", "",
                  r.gang_pods_max);
    Checksum k{all};
    k.add(static_cast<std::int64_t>(r.checksum));
    all = k.h;
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("all scenarios checksum %016" PRIx64 ", max RSS %ld MiB\n", all, ru.ru_maxrss / 1024);

  std::puts("\nTarget");
  std::printf("  < 1 ms per preemption decision (%d running jobs, %d nodes, %d queues): "
              "slowest scenario median %.1f us (%s), slowest single decision %.1f us (%s)\n",
              opt.jobs, opt.nodes, opt.queues, worst_median, worst_median < 1000 ? "met" : "MISSED",
              worst_max, worst_max < 1000 ? "met" : "MISSED");
  return 0;
}
