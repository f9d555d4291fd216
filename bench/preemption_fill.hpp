#pragma once
// The filled cluster preemption_bench measures on: N nodes x 8 GPUs full of running jobs of
// mixed sizes and priorities over Q queues of one cohort (see preemption_bench.cpp). Included
// by preemption_bench.cpp alone.
#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_common.hpp"
#include "scheduler/engine.hpp"

namespace gpuq::bench {

using Clock = std::chrono::steady_clock;

constexpr Quantity kNodeMilli = kGpusPerNode * kMilliPerGpu;
constexpr Quantity kSmallest = 250;  // milli-GPU of the smallest job
constexpr Time kFillSpan = 3600;     // running jobs were admitted over the last hour
constexpr Time kNow = kFillSpan + 60;
constexpr std::int64_t kMinRuntime = 900;  // on every 7th queue (i % 7 == 3)

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "preemption_bench: %s\n", what.c_str());
  std::exit(2);
}

inline double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

struct Options {
  int nodes = 1000;
  int queues = 100;
  int jobs = 10'000;
  int repeat = 200;  // preemption decisions measured per scenario
  std::uint64_t seed = 42;
  bool topology = false;
  bool spread = false;
  bool cold = false;              // evict the caches before every measured schedule()
  std::vector<std::string> only;  // scenario names; empty: all
};

// Writes and reads a buffer larger than the last-level cache (105 MiB shared on the development
// VM), so that the measured cycle starts with the engine's state out of every cache.
inline void evict_caches() {
  static std::vector<std::uint64_t> buffer(std::size_t{256} << 17);  // 256 MiB
  static std::uint64_t sink = 0;
  for (std::size_t i = 0; i < buffer.size(); i += 8) sink += buffer[i] += i;
  asm volatile("" : : "r"(sink) : "memory");
}

// The queues. Policy group g = i % 10 sets the preemption policy; usage class c = (i/10 + 3g) % 10
// sets how much of its nominal quota the fill gives the queue, so every group has queues of every
// class (at 100 queues: 5 borrowing, 3 under nominal, 2 at nominal per group).
enum class Usage { kBorrowing, kUnder, kAtNominal };
inline int policy_group(int i) { return i % 10; }
inline Usage usage_class(int i) {
  const int c = (i / 10 + 3 * policy_group(i)) % 10;
  return c < 5 ? Usage::kBorrowing : c < 8 ? Usage::kUnder : Usage::kAtNominal;
}

inline PreemptionSpec policy_of(int i) {
  PreemptionSpec p;
  p.within_queue = WithinQueuePolicy::kLowerPriority;
  p.reclaim_within_cohort = ReclaimPolicy::kAny;
  switch (policy_group(i)) {
    case 6: p.reclaim_within_cohort = ReclaimPolicy::kNever; break;  // own queue only
    case 7:
      p.within_queue = WithinQueuePolicy::kLowerOrNewerEqualPriority;
      p.reclaim_within_cohort = ReclaimPolicy::kLowerPriority;
      break;
    case 8: p.borrow_within_cohort = BorrowWithinCohortPolicy::kLowerPriority; break;
    case 9:
      p.borrow_within_cohort = BorrowWithinCohortPolicy::kLowerPriority;
      p.borrow_max_priority_threshold = 100;
      break;
    default: break;
  }
  if (i % 7 == 3) p.min_runtime = kMinRuntime;
  return p;
}

inline std::string queue_name(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "q%03d", i);
  return name;
}

// What the harness knows of each running job (the engine's copy is authoritative).
struct Running {
  std::string id;
  int queue = 0;
  std::int32_t priority = 0;
  bool preemptible = true;
  Time admitted_at = 0;
  Quantity gpu = 0;  // total milli-GPU
  int pods = 0;
  std::vector<NodeIdx> nodes;  // one per pod
};

struct FillStats {
  double seconds = 0;
  Quantity used_milli = 0;
  std::map<std::string, int> by_shape;  // "250m", "1", "gang 3x8", ...
  int shrunk = 0;                       // draws made smaller to fit the rest
  std::array<int, 3> queues_by_class{};
  int borrowing = 0, under = 0;  // measured on the engine after the fill
};

// The filled cluster: engines sharing one fill (classic and fair sharing), and what the harness
// needs to describe candidates from outside.
class FilledCluster {
 public:
  FilledCluster(const Options& opt) : opt_(opt), rng_{opt.seed} {
    nominal_milli_ = kNodeMilli * opt.nodes / opt.queues;
    if (nominal_milli_ % kSmallest != 0 || nominal_milli_ < kNodeMilli)
      fail("nodes x 8 GPUs must give every queue a multiple of 250m and at least one node");
    const auto t0 = Clock::now();
    classic_ = build(EngineConfig{});
    stats_.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    EngineConfig fair = config();
    fair.fair_sharing.enabled = true;
    fair_ = replay(fair);
    classic_off_ = without_preemption(*classic_);
    fair_off_ = without_preemption(*fair_);
    // One empty cycle on each, so that what the first cycle does once (rebuild the topology
    // index after the nodes were added) is not inside a measured one.
    for (Engine* e : {classic_.get(), fair_.get(), classic_off_.get(), fair_off_.get()}) {
      if (!e->schedule(kFillSpan).empty()) fail("fill: a cycle with nothing pending decided something");
      e->take_events();
    }
    f_ = *classic_->flavor_id("h100");
    by_queue_.resize(static_cast<std::size_t>(opt.queues));
    for (std::size_t k = 0; k < running_.size(); ++k)
      by_queue_[static_cast<std::size_t>(running_[k].queue)].push_back(k);
    by_node_.resize(static_cast<std::size_t>(opt.nodes));
    for (std::size_t k = 0; k < running_.size(); ++k)
      for (NodeIdx n : running_[k].nodes) by_node_[n].push_back(k);
    for (int q = 0; q < opt.queues; ++q) {
      ++stats_.queues_by_class[static_cast<std::size_t>(usage_class(q))];
      const Quantity used = classic_->quotas().usage(static_cast<QueueIdx>(q), f_)[kGpu];
      stats_.borrowing += used > nominal_milli_;
      stats_.under += used < nominal_milli_;
    }
  }

  const Engine& engine(bool fair) const { return fair ? *fair_ : *classic_; }
  const Engine& engine_without_preemption(bool fair) const { return fair ? *fair_off_ : *classic_off_; }
  const FillStats& stats() const { return stats_; }
  const std::vector<Running>& running() const { return running_; }
  Quantity nominal_milli() const { return nominal_milli_; }
  FlavorId flavor() const { return f_; }
  Quantity used_milli(int q) const { return classic_->quotas().usage(static_cast<QueueIdx>(q), f_)[kGpu]; }

  // The running jobs that could be victims of this preemptor (the rules of Engine::QueueRun,
  // computed from outside on the filled state), and how many
  // nodes they could empty completely (every job on the node a candidate).
  struct CandidateCount {
    std::size_t candidates = 0;
    std::size_t whole_nodes = 0;
  };
  CandidateCount count_candidates(const JobSpec& spec, bool under_nominal) const {
    const Engine& e = *classic_;
    const auto q0 = static_cast<int>(*e.queue_index(spec.queue));
    preemption::Preemptor p;
    p.queue = static_cast<std::uint32_t>(q0);
    p.priority = spec.priority;
    p.submitted_at = spec.submitted_at;
    p.submit_order = UINT64_MAX;  // submitted after every running job
    p.policy = e.queue_spec(static_cast<QueueIdx>(q0)).preemption;
    std::vector<int> sources;
    if (p.policy.within_queue != WithinQueuePolicy::kNever) sources.push_back(q0);
    if (p.policy.reclaim_within_cohort != ReclaimPolicy::kNever)
      for (int q = 0; q < opt_.queues; ++q)
        if (q != q0) sources.push_back(q);
    // Classic step 2 (borrowWithinCohort) drops other queues' candidates at or above the bound
    // when the queue is not under nominal; they are counted, but cannot empty a node.
    std::optional<std::int64_t> bound;
    if (p.policy.borrow_within_cohort == BorrowWithinCohortPolicy::kLowerPriority && !under_nominal) {
      bound = p.priority;
      if (p.policy.borrow_max_priority_threshold)
        bound = std::min<std::int64_t>(*bound, std::int64_t{*p.policy.borrow_max_priority_threshold} + 1);
    }
    std::vector<char> usable(running_.size(), 0);
    CandidateCount out;
    for (int q : sources) {
      if (q != q0 && used_milli(q) <= nominal_milli_) continue;  // not borrowing GPUs
      const std::int64_t min_runtime = e.queue_spec(static_cast<QueueIdx>(q)).preemption.min_runtime;
      for (std::size_t k : by_queue_[static_cast<std::size_t>(q)]) {
        const Running& r = running_[k];
        if (!r.preemptible || kNow - r.admitted_at < min_runtime) continue;
        preemption::Candidate c;
        c.job = static_cast<std::uint32_t>(k);
        c.queue = static_cast<std::uint32_t>(q);
        c.priority = r.priority;
        c.submitted_at = 0;
        c.submit_order = k;
        if (!preemption::eligible(p, c)) continue;
        ++out.candidates;
        usable[k] = !(bound && q != q0 && r.priority >= *bound);
      }
    }
    for (const auto& jobs : by_node_) {
      bool all = !jobs.empty();
      for (std::size_t k : jobs) all = all && usable[k];
      out.whole_nodes += all;
    }
    return out;
  }

 private:
  EngineConfig config() const {
    EngineConfig c;
    c.placement = opt_.spread ? PlacementPolicy::kSpread : PlacementPolicy::kPack;
    if (opt_.topology) c.topology_levels = {"zone", "rack"};
    return c;
  }

  void add_cluster(Engine& e) const {
    for (int i = 0; i < opt_.queues; ++i) {
      QueueSpec q;
      q.name = QueueName(queue_name(i));
      q.cohort = "all";
      q.preemption = policy_of(i);
      FlavorQuota fq;
      fq.flavor = "h100";
      const Quantity share[3] = {nominal_milli_, kNodeCpu * opt_.nodes / opt_.queues,
                                 kNodeMemory * opt_.nodes / opt_.queues};
      for (ResourceId r = 0; r < 3; ++r) {
        ResourceQuota rq;
        rq.nominal = share[r];
        fq.resources.emplace_back(r, rq);
      }
      q.quotas.push_back(fq);
      if (auto r = e.apply_queue(q); !r) fail(r.error());
    }
    for (int n = 0; n < opt_.nodes; ++n) {
      NodeSpec spec;
      char name[16];
      std::snprintf(name, sizeof name, "n%05d", n);
      spec.name = name;
      spec.flavor = "h100";
      spec.capacity[kGpu] = kNodeMilli;
      spec.capacity[kCpu] = kNodeCpu;
      spec.capacity[kMemory] = kNodeMemory;
      if (opt_.topology) {
        char zone[16], rack[16];
        std::snprintf(zone, sizeof zone, "z%d", n / 250);
        std::snprintf(rack, sizeof rack, "r%d", n / 32);
        spec.labels["zone"] = zone;
        spec.labels["rack"] = rack;
      }
      if (auto r = e.upsert_node(spec, 0); !r) fail(r.error());
    }
  }

  // GPU targets per queue: borrowing 1.35x nominal, at nominal 1x, under nominal what is left,
  // in 250m steps, summing exactly to the cluster.
  std::vector<Quantity> targets() const {
    std::vector<Quantity> t(static_cast<std::size_t>(opt_.queues));
    Quantity given = 0;
    int under = 0;
    for (int i = 0; i < opt_.queues; ++i) {
      if (usage_class(i) == Usage::kBorrowing) t[static_cast<std::size_t>(i)] = nominal_milli_ * 135 / 100 / kSmallest * kSmallest;
      if (usage_class(i) == Usage::kAtNominal) t[static_cast<std::size_t>(i)] = nominal_milli_;
      if (usage_class(i) == Usage::kUnder) ++under;
      given += t[static_cast<std::size_t>(i)];
    }
    const Quantity rest = kNodeMilli * opt_.nodes - given;
    if (under == 0 || rest < 0) fail("no room left for the queues under nominal");
    Quantity units = rest / kSmallest;
    for (int i = 0, k = 0; i < opt_.queues; ++i)
      if (usage_class(i) == Usage::kUnder) {
        t[static_cast<std::size_t>(i)] = units / under * kSmallest + (k < units % under ? kSmallest : 0);
        ++k;
      }
    return t;
  }

  // Fills the cluster with exactly opt.jobs running jobs using every GPU: sizes are drawn from
  // the mix, made smaller when the rest of the jobs would not otherwise fit (the last few hundred
  // are 250m), or when the drawn queue or the nodes have no room for them.
  std::unique_ptr<Engine> build(const EngineConfig& base) {
    EngineConfig c = config();
    c.fair_sharing = base.fair_sharing;
    auto e = std::make_unique<Engine>(c);
    add_cluster(*e);
    std::vector<Quantity> left = targets();
    Quantity remaining = kNodeMilli * opt_.nodes;
    static constexpr Quantity kLadder[] = {8000, 4000, 2000, 1000, 500, 250};
    for (int k = 0; k < opt_.jobs; ++k) {
      const std::int64_t jobs_after = opt_.jobs - k - 1;
      const std::uint64_t pr = rng_.below(100);
      const std::int32_t priority = pr < 10 ? -100 : pr < 70 ? 0 : pr < 90 ? 100 : 1000;
      const bool preemptible = rng_.below(100) != 0;
      // Mix (per 1000): 440 x 250m, 260 x 500m, 200 x 1, 60 x 2, 20 x 4, 12 x 8 GPUs,
      // 2 gangs of 2-4 pods x 8 GPUs, 6 gangs of 4-8 pods x 2 GPUs: 0.86 GPU per job on average.
      const std::uint64_t m = rng_.below(1000);
      std::int32_t count = 1;
      Quantity per_pod = 250;
      if (m < 440) per_pod = 250;
      else if (m < 700) per_pod = 500;
      else if (m < 900) per_pod = 1000;
      else if (m < 960) per_pod = 2000;
      else if (m < 980) per_pod = 4000;
      else if (m < 992) per_pod = 8000;
      else if (m < 994) { per_pod = 8000; count = 2 + static_cast<std::int32_t>(rng_.below(3)); }
      else { per_pod = 2000; count = 4 + static_cast<std::int32_t>(rng_.below(5)); }
      const std::uint64_t pick = rng_.next();
      bool shrunk = false;
      auto shrink = [&](Quantity cap) {  // the largest single pod of at most cap
        shrunk = true;
        count = 1;
        for (Quantity s : kLadder)
          if (s <= cap) {
            per_pod = s;
            return true;
          }
        return false;
      };
      const Quantity reserve = jobs_after * kSmallest;  // every later job needs 250m at least
      if (per_pod * count > remaining - reserve) shrink(remaining - reserve);
      for (;;) {
        // A queue with room for it, drawn in proportion to the room each has left.
        const Quantity total = per_pod * count;
        Quantity weight = 0, most = 0;
        for (Quantity l : left) {
          if (l >= total) weight += l;
          most = std::max(most, l);
        }
        if (weight == 0) {
          if (!shrink(std::min(most, total - 1))) fail("fill: no queue has room left");
          continue;
        }
        Quantity point = static_cast<Quantity>(pick % static_cast<std::uint64_t>(weight));
        int q = 0;
        for (; q < opt_.queues; ++q) {
          const Quantity l = left[static_cast<std::size_t>(q)];
          if (l < total) continue;
          if (point < l) break;
          point -= l;
        }
        JobSpec spec;
        char id[16];
        std::snprintf(id, sizeof id, "r%06d", k);
        spec.id = JobId(id);
        spec.queue = QueueName(queue_name(q));
        spec.priority = priority;
        spec.preemptible = preemptible;
        spec.submitted_at = 0;
        spec.pod_sets.push_back(PodSet{"main", count, pod_resources(per_pod)});
        RunningPlacement where;
        where.admitted_at = static_cast<Time>(k) * kFillSpan / opt_.jobs;
        if (auto r = e->restore_running(spec, where, 0); !r) {
          if (!shrink(total - 1)) fail("fill: the cluster is full before the last job");
          continue;  // no room on the nodes for this shape: a smaller one
        }
        left[static_cast<std::size_t>(q)] -= total;
        remaining -= total;
        stats_.shrunk += shrunk;
        stats_.used_milli += total;
        char shape[32];
        if (count > 1) std::snprintf(shape, sizeof shape, "gang %dx%lld", count, static_cast<long long>(per_pod / 1000));
        else if (per_pod < 1000) std::snprintf(shape, sizeof shape, "%lldm", static_cast<long long>(per_pod));
        else std::snprintf(shape, sizeof shape, "%lld GPU", static_cast<long long>(per_pod / 1000));
        ++stats_.by_shape[shape];
        Running run;
        run.id = id;
        run.queue = q;
        run.priority = priority;
        run.preemptible = preemptible;
        run.admitted_at = where.admitted_at;
        run.gpu = total;
        run.pods = count;
        for (const PodSlot& s : e->job(spec.id)->slots) run.nodes.push_back(s.node);
        running_.push_back(std::move(run));
        specs_.push_back(std::move(spec));
        break;
      }
    }
    e->take_events();
    return e;
  }

  // The same jobs on the same nodes in another engine configuration.
  std::unique_ptr<Engine> replay(const EngineConfig& c) {
    auto e = std::make_unique<Engine>(c);
    add_cluster(*e);
    for (std::size_t k = 0; k < specs_.size(); ++k) {
      RunningPlacement where;
      where.admitted_at = running_[k].admitted_at;
      where.flavor = "h100";
      for (NodeIdx n : running_[k].nodes) where.nodes.push_back(classic_->cluster().node(n).name);
      if (auto r = e->restore_running(specs_[k], where, 0); !r) fail(r.error());
    }
    e->take_events();
    return e;
  }

  // A copy in which no queue may preempt: the same cycle without the victim search.
  std::unique_ptr<Engine> without_preemption(const Engine& from) const {
    auto e = std::make_unique<Engine>(from);
    for (int i = 0; i < opt_.queues; ++i) {
      QueueSpec q = e->queue_spec(static_cast<QueueIdx>(i));
      q.preemption = PreemptionSpec{};
      if (auto r = e->apply_queue(q); !r) fail(r.error());
    }
    return e;
  }

  const Options& opt_;
  Rng rng_;
  Quantity nominal_milli_ = 0;
  FlavorId f_ = 0;
  std::unique_ptr<Engine> classic_, fair_, classic_off_, fair_off_;
  std::vector<JobSpec> specs_;
  std::vector<Running> running_;
  std::vector<std::vector<std::size_t>> by_queue_;
  std::vector<std::vector<std::size_t>> by_node_;
  FillStats stats_;
};

}  // namespace gpuq::bench
