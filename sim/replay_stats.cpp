#include "sim/replay_stats.hpp"

#include <algorithm>
#include <cmath>
#include <boost/json.hpp>

namespace gpuq::sim::detail {

namespace json = boost::json;

Timeline::Timeline(std::size_t series, std::size_t sampled, std::size_t points, Time start)
    : points_(std::max<std::size_t>(points, 2)),
      start_(start),
      now_(start),
      next_sample_(start),
      plain_(series),
      level_(series + sampled, 0.0),
      integral_(series + sampled, std::vector<double>(2 * points_, 0.0)) {}

void Timeline::grow() {
  auto halve = [](auto& v) {
    const std::size_t n = v.size() / 2;
    for (std::size_t i = 0; i < n; ++i) v[i] = v[2 * i] + v[2 * i + 1];
    std::fill(v.begin() + static_cast<std::ptrdiff_t>(n), v.end(), 0);
  };
  for (auto& s : integral_) halve(s);
  width_ *= 2;
}

void Timeline::advance(Time now) {
  if (now <= now_) return;
  const std::size_t buckets = 2 * points_;
  while (now - start_ > width_ * static_cast<Time>(buckets)) grow();
  Time t = now_;
  while (t < now) {
    const auto b = static_cast<std::size_t>((t - start_) / width_);
    const Time end = std::min(now, start_ + (static_cast<Time>(b) + 1) * width_);
    const auto dt = static_cast<double>(end - t);
    for (std::size_t s = 0; s < level_.size(); ++s) integral_[s][b] += level_[s] * dt;
    t = end;
  }
  now_ = now;
}

void Timeline::sample(std::size_t sampled, double value) { level_[plain_ + sampled] = value; }

void Timeline::sampled_now() { next_sample_ = now_ + std::max<Time>(1, width_ / 2); }

double Timeline::total(std::size_t series) const {
  double sum = 0;
  for (double x : integral_[series]) sum += x;
  return sum;
}

double Timeline::sample_mean(std::size_t sampled) const {
  const std::size_t s = plain_ + sampled;
  if (now_ == start_) return level_[s];  // no time has passed: the value as sampled
  return total(s) / static_cast<double>(now_ - start_);
}

Timeline::Output Timeline::finish() const {
  Output out;
  const Time span = now_ - start_;
  std::size_t used = static_cast<std::size_t>((span + width_ - 1) / width_);
  used = std::clamp<std::size_t>(used, 1, 2 * points_);
  // Merge pairs once more when more buckets are used than points were asked for.
  const std::size_t step = used > points_ ? 2 : 1;
  const std::size_t n = (used + step - 1) / step;
  const Time width = width_ * static_cast<Time>(step);
  out.series.assign(plain_, std::vector<double>(n, 0.0));
  out.sampled.assign(integral_.size() - plain_, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < n; ++i) {
    const Time from = start_ + static_cast<Time>(i) * width;
    const Time to = std::min(now_, from + width);
    out.t.push_back(static_cast<double>(from));
    const double covered = static_cast<double>(std::max<Time>(1, to - from));
    for (std::size_t s = 0; s < integral_.size(); ++s) {
      double v = 0;
      for (std::size_t k = i * step; k < std::min((i + 1) * step, 2 * points_); ++k) v += integral_[s][k];
      if (s < plain_)
        out.series[s][i] = v / covered;
      else
        out.sampled[s - plain_][i] = to > from ? v / covered : level_[s];
    }
  }
  return out;
}

namespace {

// Nearest-rank percentiles over sorted values.
double rank(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto k = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(k, 1, sorted.size()) - 1];
}

json::object stats(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  return json::object{{"count", v.size()},
                      {"mean", v.empty() ? 0.0 : sum / static_cast<double>(v.size())},
                      {"p50", rank(v, 50)},
                      {"p95", rank(v, 95)},
                      {"p99", rank(v, 99)},
                      {"max", v.empty() ? 0.0 : v.back()}};
}

// 101 points (value, fraction): the CDF at every percent, over sorted values.
json::array cdf(const std::vector<double>& sorted) {
  json::array out;
  if (sorted.empty()) return out;
  for (int p = 0; p <= 100; ++p)
    out.push_back(json::array{p == 0 ? sorted.front() : rank(sorted, p), p / 100.0});
  return out;
}

double round6(double x) { return std::round(x * 1e6) / 1e6; }

json::array rounded(const std::vector<double>& v, double scale = 1.0) {
  json::array a;
  a.reserve(v.size());
  for (double x : v) a.push_back(round6(x * scale));
  return a;
}

struct Tally {
  std::size_t jobs = 0, finished = 0, rejected = 0;
  std::int64_t preemptions = 0, lost_runs = 0;
  double gpu_seconds_lost = 0;
  std::vector<double> wait, completion;
};

void count(Tally& t, const TraceJob& job, const JobOutcome& o) {
  ++t.jobs;
  const Quantity gpu = job.total_gpu_milli();
  t.preemptions += o.preemptions;
  t.lost_runs += o.lost_runs;
  t.gpu_seconds_lost += static_cast<double>(o.lost_work) * static_cast<double>(gpu) / 1000.0;
  if (o.first_admit >= 0) t.wait.push_back(static_cast<double>(o.first_admit - job.submit));
  if (o.finish >= 0 && o.first_admit >= 0) {
    ++t.finished;
    t.completion.push_back(static_cast<double>(o.finish - job.submit));
  } else if (o.finish >= 0) {
    ++t.rejected;
  }
}

json::object tally_json(Tally& t) {
  json::object o{{"jobs", t.jobs},
                 {"finished", t.finished},
                 {"rejected", t.rejected},
                 {"unfinished", t.jobs - t.finished - t.rejected}};
  o["wait"] = stats(t.wait);
  o["completion"] = stats(t.completion);
  o["preemptions"] = t.preemptions;
  o["lost_runs"] = t.lost_runs;
  o["gpu_hours_lost"] = round6(t.gpu_seconds_lost / 3600.0);
  return o;
}

// A queue's entitlement: its nominal GPU quota over the sum of all queues', or, when no queue has
// a GPU quota, its weight over the sum of weights.
std::vector<double> entitlements(const std::vector<QueueSpec>& queues,
                                 const std::vector<std::string>& names) {
  std::vector<double> nominal(names.size(), 0.0), weight(names.size(), 0.0);
  double total_nominal = 0, total_weight = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (const QueueSpec& q : queues) {
      if (q.name.value != names[i]) continue;
      weight[i] = q.weight;
      for (const FlavorQuota& f : q.quotas)
        for (const auto& [r, quota] : f.resources)
          if (r == kGpu) nominal[i] += static_cast<double>(quota.nominal);
    }
    total_nominal += nominal[i];
    total_weight += weight[i];
  }
  std::vector<double> out(names.size(), 0.0);
  for (std::size_t i = 0; i < names.size(); ++i)
    out[i] = total_nominal > 0 ? nominal[i] / total_nominal
                               : (total_weight > 0 ? weight[i] / total_weight : 0.0);
  return out;
}

}  // namespace

json::value build_summary(const ReplayInput& input, const std::vector<JobOutcome>& jobs,
                          const Measured& m) {
  const std::size_t nq = m.queue_names.size();
  std::vector<Tally> per_queue(nq);
  Tally all;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const TraceJob& tj = (*input.jobs)[i];
    count(per_queue[m.job_queue[i]], tj, jobs[i]);
    count(all, tj, jobs[i]);
  }
  double used_total = 0;
  for (double x : m.gpu_milli_seconds) used_total += x;
  const std::vector<double> entitled = entitlements(input.queues, m.queue_names);

  json::array queues;
  double jain_sum = 0, jain_sq = 0;
  std::size_t jain_n = 0;
  for (std::size_t q = 0; q < nq; ++q) {
    json::object o{{"name", m.queue_names[q]}};
    const json::object t = tally_json(per_queue[q]);  // sorts its waits
    for (const auto& kv : t) o[kv.key()] = kv.value();
    o["gpu_hours_used"] = round6(m.gpu_milli_seconds[q] / 1000.0 / 3600.0);
    const double share = used_total > 0 ? m.gpu_milli_seconds[q] / used_total : 0.0;
    o["entitlement"] = round6(entitled[q]);
    o["share"] = round6(share);
    const double ratio = entitled[q] > 0 ? share / entitled[q] : 0.0;
    o["share_vs_entitlement"] = round6(ratio);
    if (per_queue[q].jobs > 0 && entitled[q] > 0) {
      jain_sum += ratio;
      jain_sq += ratio * ratio;
      ++jain_n;
    }
    o["wait_cdf"] = cdf(per_queue[q].wait);
    queues.push_back(std::move(o));
  }

  json::object overall = tally_json(all);
  overall["gpu_hours_used"] = round6(used_total / 1000.0 / 3600.0);
  overall["gpu_utilization_mean"] = round6(m.busy_gpu_mean);
  overall["alloc_ratio_mean"] =
      round6(m.capacity_milli_seconds > 0 ? used_total / m.capacity_milli_seconds : 0.0);
  overall["fragmentation_mean"] = round6(m.frag_mean);
  overall["jain_index"] =
      round6(jain_n > 0 && jain_sq > 0 ? jain_sum * jain_sum / (static_cast<double>(jain_n) * jain_sq) : 1.0);
  overall["makespan"] = m.end - m.start;

  json::object timeline;
  const auto& tl = m.timeline;
  timeline["t"] = rounded(tl.t);
  // Series: [0, nq) GPU milli by queue, [nq, 2nq) pending by queue, 2nq up capacity milli.
  timeline["capacity_gpu"] = rounded(tl.series[2 * nq], 1e-3);
  json::object gpu_by_queue, pending_by_queue;
  std::vector<double> alloc(tl.t.size(), 0.0);
  for (std::size_t q = 0; q < nq; ++q) {
    gpu_by_queue[m.queue_names[q]] = rounded(tl.series[q], 1e-3);
    pending_by_queue[m.queue_names[q]] = rounded(tl.series[nq + q]);
    for (std::size_t i = 0; i < alloc.size(); ++i) alloc[i] += tl.series[q][i];
  }
  for (std::size_t i = 0; i < alloc.size(); ++i)
    alloc[i] = tl.series[2 * nq][i] > 0 ? alloc[i] / tl.series[2 * nq][i] : 0.0;
  timeline["gpu_by_queue"] = std::move(gpu_by_queue);
  timeline["pending_by_queue"] = std::move(pending_by_queue);
  timeline["alloc_ratio"] = rounded(alloc);
  timeline["gpu_utilization"] = rounded(tl.sampled[0]);
  timeline["fragmentation"] = rounded(tl.sampled[1]);

  json::object s{{"variant", input.label},
                 {"policy", to_string(input.config.placement)},
                 {"queues_file", input.queues_file},
                 {"cluster", json::object{{"nodes", m.nodes}, {"gpus", m.gpus}}},
                 {"jobs", jobs.size()}};
  s["overall"] = std::move(overall);
  s["queues"] = std::move(queues);
  s["timeline"] = std::move(timeline);
  return s;
}

}  // namespace gpuq::sim::detail
