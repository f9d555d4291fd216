// The Core's side of GPU sampling: each running job's GPU use, and its queue's idle policy.
#include "daemon/gpu_use.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "daemon/core.hpp"

namespace gpuq::daemon {

namespace {

// A running job's GPU use is written with every this many samples (and with each of its state
// changes): a crash loses fewer samples than this, and a sample is not a write per job.
constexpr std::int64_t kSamplesPerWrite = 10;

}  // namespace

bool add_gpu_sample(storage::GpuUse& use, std::span<const binder::GpuReading> readings, Time at, int idle_threshold) {
  if (readings.empty()) return false;
  std::int64_t util = 0, memory = 0;
  bool idle = true;
  for (const binder::GpuReading& g : readings) {
    util += g.utilization;
    memory += g.memory_used_mib;
    idle = idle && g.utilization <= idle_threshold;
  }
  const auto n = static_cast<std::int64_t>(readings.size());
  ++use.samples;
  use.util_sum += (util + n / 2) / n;  // rounded mean; util and n are not negative
  use.memory_peak_mib = std::max(use.memory_peak_mib, memory);
  if (!idle) {
    use.idle_since = 0;
    use.idle_warned = false;
  } else if (use.idle_since == 0) {
    use.idle_since = at;
  }
  return true;
}

IdleAction idle_action(const storage::GpuUse& use, const IdlePolicy& policy, Time now) {
  if (use.idle_since == 0) return IdleAction::kNone;
  const Time idle_for = now - use.idle_since;
  if (policy.cancel_after && idle_for >= *policy.cancel_after) return IdleAction::kCancel;
  if (policy.warn_after && idle_for >= *policy.warn_after && !use.idle_warned) return IdleAction::kWarn;
  return IdleAction::kNone;
}

std::string idle_duration_text(Time seconds) {
  seconds = std::max<Time>(seconds, 0);
  if (seconds >= 3600) return std::to_string(seconds / 3600) + "h" + std::to_string(seconds % 3600 / 60) + "m";
  if (seconds >= 60) return std::to_string(seconds / 60) + "m" + std::to_string(seconds % 60) + "s";
  return std::to_string(seconds) + "s";
}

std::string gpus_text(const std::vector<int>& gpus) {
  std::string out = gpus.size() == 1 ? "GPU " : "GPUs ";
  for (std::size_t i = 0; i < gpus.size(); ++i) out += (i ? "," : "") + std::to_string(gpus[i]);
  return out;
}

void Core::record_note(const storage::JobRecord& rec, std::string reason, Time now) {
  storage::EventRecord e;
  e.seq = ++last_event_seq_;
  e.at = now;
  e.job = rec.spec.id.value;
  e.queue = rec.spec.queue.value;
  e.owner = rec.spec.owner;
  e.from = rec.state;
  e.to = rec.state;
  e.reason = std::move(reason);
  e.flavor = rec.flavor;
  spdlog::info("event=job_note job={} reason=\"{}\"", e.job, e.reason);
  batch_.events.push_back(std::move(e));
}

void Core::observe_usage(const binder::PodUsage& u) {
  storage::JobRecord* rec = live(u.job);
  if (rec == nullptr) return;  // ended already (cancelled while it ran): /metrics has it
  if (u.cpu_usec >= 0) rec->used.cpu_usec = std::max<std::int64_t>(rec->used.cpu_usec, 0) + u.cpu_usec;
  if (u.memory_peak_bytes >= 0) rec->used.memory_peak = std::max(rec->used.memory_peak, u.memory_peak_bytes);
  batch_.jobs.push_back(*rec);
}

void Core::observe_gpus(const binder::GpuSample& sample, Time now) {
  std::unordered_map<int, const binder::GpuReading*> by_index;
  for (const binder::GpuReading& g : sample.gpus) by_index.emplace(g.index, &g);
  std::vector<std::pair<std::string, std::string>> idle;  // jobs to cancel, and why
  std::vector<binder::GpuReading> readings;
  for (auto& [id, rec] : unfinished_) {
    if (rec.state != JobState::kRunning) continue;
    // Its GPUs on the sampled node; a shared GPU's reading counts for every job on it.
    std::vector<int> gpus;
    readings.clear();
    for (const PodPlacement& p : rec.placement) {
      if (p.node != sample.node) continue;
      for (int g : p.gpus) {
        gpus.push_back(g);
        if (auto it = by_index.find(g); it != by_index.end()) readings.push_back(*it->second);
      }
    }
    if (!add_gpu_sample(rec.gpu_use, readings, now, config_.gpu_idle_threshold)) continue;
    if (rec.gpu_use.samples % kSamplesPerWrite == 0) batch_.jobs.push_back(rec);
    const QueueSpec* q = queue_spec(rec.spec.queue.value);
    if (q == nullptr || q->idle.empty()) continue;
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    const std::string stretch = idle_duration_text(now - rec.gpu_use.idle_since) + " on " + gpus_text(gpus);
    switch (idle_action(rec.gpu_use, q->idle, now)) {
      case IdleAction::kWarn:
        rec.gpu_use.idle_warned = true;
        record_note(rec,
                    "idle for " + stretch + " (queue " + q->name.value + ": idle.warnAfter " +
                        idle_duration_text(*q->idle.warn_after) +
                        (q->idle.cancel_after ? "; it is cancelled once idle for " +
                                                    idle_duration_text(*q->idle.cancel_after)
                                              : std::string()) +
                        ")",
                    now);
        break;
      case IdleAction::kCancel:
        idle.emplace_back(id, "cancelled: idle for " + stretch + " (queue " + q->name.value + ": idle.cancelAfter " +
                                  idle_duration_text(*q->idle.cancel_after) + ")");
        break;
      case IdleAction::kNone:
        break;
    }
  }
  for (auto& [id, why] : idle) {
    if (auto r = cancel(id, now, false, why); !r)
      spdlog::warn("event=idle_cancel_failed job={} error=\"{}\"", id, r.error());
    else
      spdlog::info("event=idle_cancelled job={} reason=\"{}\"", id, why);
  }
}

}  // namespace gpuq::daemon
