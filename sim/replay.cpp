#include "sim/replay.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <queue>
#include <tuple>
#include <stdexcept>

#include <boost/json.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include "spec/quantity.hpp"
#include "sim/replay_stats.hpp"

namespace gpuq::sim {
namespace {

namespace json = boost::json;

// Events on the virtual clock besides arrivals and node events (both already sorted lists).
enum class Kind : std::uint8_t { kFinish, kStop };
struct Ev {
  Time at;
  Kind kind;
  std::uint32_t job;
  std::uint32_t attempt;  // stale when the job has started or stopped since
  bool operator>(const Ev& o) const {
    return std::tie(at, kind, job, attempt) > std::tie(o.at, o.kind, o.job, o.attempt);
  }
};

struct Live {
  std::uint32_t attempt = 0;
  Time run_start = -1;
  Time remaining = 0;  // seconds of work left
  Quantity gpu = 0;    // milli-GPU over all pods
  std::uint32_t queue = 0;
};

JobSpec spec_of(const TraceJob& t, Time grace) {
  JobSpec s;
  s.id = JobId(t.id);
  s.queue = QueueName(t.queue);
  s.priority = t.priority;
  s.submitted_at = t.submit;
  s.pod_sets = t.pod_sets;
  s.max_runtime = t.max_runtime;
  s.grace_period = grace;
  return s;
}

std::string placement_of(const Admission& a) {
  std::string out;
  for (const PodPlacement& p : a.pods) {
    if (!out.empty()) out += ';';
    out.append(p.node).push_back('[');
    for (std::size_t g = 0; g < p.gpus.size(); ++g) {
      if (g) out.push_back(',');
      out.append(std::to_string(p.gpus[g]));
    }
    if (p.gpu_milli > 0 && p.gpu_milli < kMilliPerGpu) {
      out.push_back(':');
      out.append(std::to_string(p.gpu_milli)).push_back('m');
    }
    out.push_back(']');
  }
  return out;
}

bool holds(std::optional<JobState> s) {
  return s && (*s == JobState::kAdmitted || *s == JobState::kRunning || *s == JobState::kPreempting);
}

class Replay {
 public:
  explicit Replay(const ReplayInput& in) : in_(in), jobs_(*in.jobs), engine_(in.config) {
    engine_.resource_names() = in.names;
    for (const QueueSpec& q : in.queues)
      if (auto r = engine_.apply_queue(q); !r)
        throw std::invalid_argument("queue " + q.name.value + ": " + r.error());
    for (const NodeSpec& n : in.nodes) {
      if (auto r = engine_.upsert_node(n, 0); !r)
        throw std::invalid_argument("node " + n.name + ": " + r.error());
      gpus_ += n.capacity[kGpu] / kMilliPerGpu;
    }
    for (const NodeEvent& e : in.node_events)
      if (!engine_.cluster().find(e.node))
        throw std::invalid_argument("node event at " + std::to_string(e.at) + ": node \"" + e.node +
                                    "\" is not in the cluster");
    for (std::size_t q = 0; q < engine_.queue_count(); ++q)
      queue_names_.push_back(engine_.queue_spec(static_cast<QueueIdx>(q)).name.value);
    live_.resize(jobs_.size());
    out_.resize(jobs_.size());
    index_.reserve(jobs_.size());
    engine_.reserve_jobs(jobs_.size());
    std::vector<PodShape> shapes;
    std::vector<NodeConstraints> where;
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      const TraceJob& t = jobs_[i];
      if (!index_.emplace(t.id, static_cast<std::uint32_t>(i)).second)
        throw std::invalid_argument("job id \"" + t.id + "\" appears twice in the trace");
      const auto q = engine_.queue_index(QueueName(t.queue));
      if (!q) throw std::invalid_argument("job " + t.id + ": queue \"" + t.queue + "\" does not exist");
      live_[i].queue = *q;
      live_[i].remaining = t.duration;
      live_[i].gpu = t.total_gpu_milli();
      for (const PodSet& s : t.pod_sets) {
        PodShape shape = shape_of(s.per_pod);
        shape.where = intern_where(where, s.where);
        shape.weight = s.count;
        shapes.push_back(shape);
      }
    }
    frag_ = FragModel::typical(shapes, std::move(where));
  }

  ReplayResult run() {
    const auto started = std::chrono::steady_clock::now();
    const Time start = jobs_.empty() ? 0 : jobs_.front().submit;
    const std::size_t nq = queue_names_.size();
    timeline_.emplace(2 * nq + 1, 2, in_.timeline_points, std::min<Time>(start, 0));
    Quantity capacity = 0;
    for (const Node& n : engine_.cluster().nodes())
      if (n.schedulable()) capacity += n.capacity[kGpu];
    timeline_->add(2 * nq, static_cast<double>(capacity));
    std::size_t next_job = 0, next_node = 0;
    const auto& jobs = jobs_;
    const auto& nodes = in_.node_events;
    Time now = 0;
    while (next_job < jobs.size() || !heap_.empty() || next_node < nodes.size()) {
      now = INT64_MAX;
      if (next_job < jobs.size()) now = jobs[next_job].submit;
      if (!heap_.empty()) now = std::min(now, heap_.top().at);
      if (next_node < nodes.size()) now = std::min(now, nodes[next_node].at);
      timeline_->advance(now);
      while (!heap_.empty() && heap_.top().at == now) {
        const Ev e = heap_.top();
        heap_.pop();
        if (live_[e.job].attempt != e.attempt) continue;  // overtaken
        ++events_;
        apply(e, now);
      }
      while (next_node < nodes.size() && nodes[next_node].at == now) {
        const NodeEvent& e = nodes[next_node++];
        ++events_;
        const Node& n = engine_.cluster().node(*engine_.cluster().find(e.node));
        const bool was_up = n.schedulable();
        (void)engine_.set_node_state(e.node, e.down ? NodeState::kDown : NodeState::kReady, now);
        if (n.schedulable() != was_up)
          timeline_->add(2 * nq, static_cast<double>(was_up ? -n.capacity[kGpu] : n.capacity[kGpu]));
      }
      while (next_job < jobs.size() && jobs[next_job].submit == now) {
        const auto i = static_cast<std::uint32_t>(next_job++);
        ++events_;
        if (auto r = engine_.submit(spec_of(jobs[i], in_.grace_period), now); !r) {
          out_[i].state = JobState::kFailed;
          out_[i].finish = now;
          out_[i].reason = "rejected: " + r.error();
        }
      }
      book(engine_.take_events());
      const std::vector<Decision> decisions = engine_.schedule(now);
      ++cycles_;
      for (const Decision& d : decisions) decide(d, now);
      book(engine_.take_events());
      if (now >= timeline_->next_sample_at()) sample();
    }
    timeline_->advance(now);
    sample();

    detail::Measured m;
    m.timeline = timeline_->finish();
    m.queue_names = queue_names_;
    for (const Live& l : live_) m.job_queue.push_back(l.queue);
    for (std::size_t q = 0; q < nq; ++q) m.gpu_milli_seconds.push_back(timeline_->total(q));
    m.capacity_milli_seconds = timeline_->total(2 * nq);
    m.busy_gpu_mean = timeline_->sample_mean(0);
    m.frag_mean = timeline_->sample_mean(1);
    m.start = start;
    m.end = now;
    m.nodes = static_cast<std::int64_t>(in_.nodes.size());
    m.gpus = gpus_;
    ReplayResult r;
    r.summary = detail::build_summary(in_, out_, m);
    r.summary.as_object()["events"] = events_;
    r.summary.as_object()["cycles"] = cycles_;
    r.jobs = std::move(out_);
    r.events = events_;
    r.cycles = cycles_;
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return r;
  }

 private:
  // Fragmentation and busy GPUs of the up nodes, as shares of the up capacity.
  void sample() {
    Quantity capacity = 0, gpus = 0, busy = 0;
    double frag = 0;
    NodeFreeState state;
    const Cluster& cluster = engine_.cluster();
    for (NodeIdx i = 0; i < cluster.size(); ++i) {
      const Node& n = cluster.node(i);
      if (n.state == NodeState::kDown) continue;
      capacity += n.capacity[kGpu];
      gpus += n.gpu_count();
      for (std::int16_t f : n.gpu_free) busy += f < kMilliPerGpu ? 1 : 0;
      const Quantity cpu_free = n.capacity[kCpu] - n.used[kCpu];
      const std::uint64_t allowed = frag_.allowed(
          i, cluster.nodes_version(), [&](const NodeConstraints& where) { return cluster.allows(i, where); });
      frag += state.assign(cpu_free, n.gpu_free, allowed) ? frag_.fragmentation(state)
                                                          : frag_.fragmentation(cpu_free, n.gpu_free, allowed);
    }
    const double busy_share = gpus ? static_cast<double>(busy) / static_cast<double>(gpus) : 0.0;
    const double frag_share = capacity ? frag / static_cast<double>(capacity) : 0.0;
    timeline_->sample(0, busy_share);
    timeline_->sample(1, frag_share);
    timeline_->sampled_now();
  }

  void apply(const Ev& e, Time now) {
    const JobId id(jobs_[e.job].id);
    const Job* job = engine_.job(id);
    if (e.kind == Kind::kStop) {
      (void)engine_.observe(JobStopped{id}, now);
      return;
    }
    // A job told to stop finishes by its stop event (the engine counts it preempted either way).
    if (job->state == JobState::kPreempting) return;
    const Live& l = live_[e.job];
    const auto& max = jobs_[e.job].max_runtime;
    if (max && now - l.run_start >= *max && l.remaining > *max)
      (void)engine_.observe(JobFinished{id, 1, "max runtime of " + std::to_string(*max) + " s exceeded"}, now);
    else
      (void)engine_.observe(JobFinished{id, 0, {}}, now);
  }

  void decide(const Decision& d, Time now) {
    if (const auto* a = std::get_if<Admission>(&d)) {
      const std::uint32_t i = index_.at(a->job.value);
      Live& l = live_[i];
      ++l.attempt;
      l.run_start = now;
      out_[i].placement = placement_of(*a);
      (void)engine_.observe(JobStarted{a->job}, now);
      Time run = l.remaining;
      if (const auto& max = jobs_[i].max_runtime) run = std::min(run, *max);
      heap_.push(Ev{now + run, Kind::kFinish, i, l.attempt});
    } else {
      const auto& p = std::get<Preemption>(d);
      const std::uint32_t i = index_.at(p.job.value);
      heap_.push(Ev{now + p.grace_period, Kind::kStop, i, live_[i].attempt});
    }
  }

  // The engine's state changes: what the timeline and the outcomes follow.
  void book(const std::vector<Event>& events) {
    const std::size_t nq = queue_names_.size();
    for (const Event& e : events) {
      const std::uint32_t i = index_.at(e.job.value);
      Live& l = live_[i];
      JobOutcome& o = out_[i];
      const bool was_pending = !e.from || *e.from == JobState::kPending;
      if (e.to == JobState::kPending && was_pending) {
        timeline_->add(nq + l.queue, 1);
      } else if (e.to == JobState::kAdmitted) {
        timeline_->add(nq + l.queue, -1);
        timeline_->add(l.queue, static_cast<double>(l.gpu));
        if (o.first_admit < 0) o.first_admit = e.at;
      } else if (e.to == JobState::kPending && holds(e.from)) {
        // Its run ended without finishing: preempted, or lost with its node.
        timeline_->add(l.queue, -static_cast<double>(l.gpu));
        timeline_->add(nq + l.queue, 1);
        const Time run = e.at - l.run_start;
        const Time every = jobs_[i].checkpoint_interval;
        const Time saved = every > 0 ? std::min(run / every * every, l.remaining - 1) : 0;
        l.remaining -= std::max<Time>(saved, 0);
        o.lost_work += run - std::max<Time>(saved, 0);
        if (e.reason.starts_with("preempted")) ++o.preemptions; else ++o.lost_runs;
        ++l.attempt;
      } else if (is_finished(e.to)) {
        if (holds(e.from)) timeline_->add(l.queue, -static_cast<double>(l.gpu));
        else timeline_->add(nq + l.queue, -1);
        o.state = e.to;
        o.finish = e.at;
        o.reason = e.reason;
        ++l.attempt;
      }
    }
  }

  const ReplayInput& in_;
  const std::vector<TraceJob>& jobs_;
  Engine engine_;
  std::vector<std::string> queue_names_;
  boost::unordered_flat_map<std::string, std::uint32_t> index_;
  std::vector<Live> live_;
  std::vector<JobOutcome> out_;
  std::priority_queue<Ev, std::vector<Ev>, std::greater<>> heap_;
  std::optional<detail::Timeline> timeline_;
  FragModel frag_;
  std::uint64_t events_ = 0, cycles_ = 0;
  std::int64_t gpus_ = 0;
};

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + '"';
}

std::string time_or_empty(Time t) { return t < 0 ? std::string() : std::to_string(t); }

}  // namespace

ReplayResult run_replay(const ReplayInput& input) {
  Replay replay(input);
  return replay.run();
}

std::string jobs_csv(const ReplayInput& input, const ReplayResult& result) {
  std::string out =
      "id,queue,priority,gpus,submit,admit,finish,wait,completion,state,preemptions,lost_runs,"
      "lost_work_s,placement,reason\n";
  for (std::size_t i = 0; i < (*input.jobs).size(); ++i) {
    const TraceJob& t = (*input.jobs)[i];
    const JobOutcome& o = result.jobs[i];
    const Quantity gpu = t.total_gpu_milli();
    const bool admitted = o.first_admit >= 0;
    out += csv_field(t.id) + ',' + csv_field(t.queue) + ',' + std::to_string(t.priority) + ',' +
           format_quantity(gpu, UnitScale::kMilli) + ',' + std::to_string(t.submit) + ',' + time_or_empty(o.first_admit) +
           ',' + time_or_empty(o.finish) + ',' +
           (admitted ? std::to_string(o.first_admit - t.submit) : std::string()) + ',' +
           (admitted && o.finish >= 0 ? std::to_string(o.finish - t.submit) : std::string()) + ',' +
           (o.reason.starts_with("rejected") ? "Rejected" : to_string(o.state)) + ',' +
           std::to_string(o.preemptions) + ',' + std::to_string(o.lost_runs) + ',' +
           std::to_string(o.lost_work) + ',' + csv_field(o.placement) + ',' + csv_field(o.reason) +
           '\n';
  }
  return out;
}

void add_timing(ReplayResult& result) {
  auto& s = result.summary.as_object();
  s["wall_seconds"] = result.wall_seconds;
  s["events_per_second"] =
      result.wall_seconds > 0 ? static_cast<double>(result.events) / result.wall_seconds : 0.0;
}

}  // namespace gpuq::sim
