// The fair-share usage history across restarts (docs/tasks/queues-and-fair-sharing.md, Usage history; storage/README.md, table
// usage_history). The engine keeps each queue's decayed average use in memory only; the Core
// writes a checkpoint of it with the turn that closes at least usageCheckpointInterval after the
// last one (and with a last turn at a clean stop, Loop::stop), and at start sets it again from
// the file once the queues are applied and the unfinished jobs restored.
//
// The time between the last checkpoint and the restart: each average is restored as of its
// checkpoint's `at`, and the first cycle after the start brings it up to then with what the
// queue uses at that moment, that is, the jobs restored as running (local executor, none
// binder; with a source binder such as Kubernetes, the running pods it reported, each from its
// admission if that came after the checkpoint). So that time is counted as if the jobs running
// at the restart had run through it: exact when no job of the queue started or ended after the
// checkpoint, approximated otherwise, both ways: use by a job that ended between the checkpoint
// and the stop is lost, and a job that started after the checkpoint, or ended while gpuqd was
// down (its end is applied at start, after this), counts for all of it.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "daemon/core.hpp"

namespace gpuq::daemon {

namespace {

// What the engine takes: whole base units (a milli-GPU, a millicore, a byte), rounded. nullopt
// when the record is unusable as a whole (said why); unknown resource names are left out (said).
std::optional<ResourceVec> engine_average(const storage::HistoryRecord& h,
                                          const ResourceNames& names) {
  ResourceVec out;
  for (const auto& [name, value] : h.average) {
    if (!std::isfinite(value) || value < 0 || value > static_cast<double>(kMaxQuantity)) {
      spdlog::warn(
          "event=usage_history_skipped queue={} field=average.{} value={} "
          "reason=\"an average must be a number from 0 to {}; the queue starts without history\"",
          h.queue, name, value, kMaxQuantity);
      return std::nullopt;
    }
    const auto r = names.find(name);
    if (!r) {
      spdlog::warn(
          "event=usage_history_resource_dropped queue={} field=average.{} value={} reason=\"no "
          "queue, node or job of this gpuqd names resource {}; that average is left out\"",
          h.queue, name, value, name);
      continue;
    }
    out[*r] = std::llround(value);
  }
  return out;
}

}  // namespace

std::vector<storage::HistoryRecord> Core::history_snapshot(Time now) const {
  std::vector<storage::HistoryRecord> out;
  if (!engine_->usage_history().enabled()) return out;
  for (const auto& [name, spec] : queue_specs_) {
    const auto q = engine_->queue_index(spec.name);
    if (!q) continue;
    const UsageHistory::Average average = engine_->usage_average(*q, now);
    storage::HistoryRecord h;
    h.queue = name;
    h.at = now;
    // The engine's slots are the Core's names' (names are only ever appended).
    for (std::size_t r = 0; r < names_->size(); ++r)
      if (average[r] != 0) h.average.emplace(names_->name(static_cast<ResourceId>(r)), average[r]);
    out.push_back(std::move(h));
  }
  return out;
}

std::size_t Core::set_history(const std::vector<storage::HistoryRecord>& records, Time now) {
  if (records.empty()) return 0;
  if (!engine_->usage_history().enabled()) {
    spdlog::info("event=usage_history_ignored queues={} reason=\"fairSharing.usageHalfLife is 0\"",
                 records.size());
    return 0;
  }
  sync_names();
  std::size_t set = 0;
  for (const storage::HistoryRecord& h : records) {
    if (queue_specs_.count(h.queue) == 0) {
      spdlog::warn("event=usage_history_skipped queue={} reason=\"no queue of this name here\"",
                   h.queue);
      continue;
    }
    if (h.at < 0) {
      spdlog::warn(
          "event=usage_history_skipped queue={} field=at value={} "
          "reason=\"must be >= 0 (Unix seconds)\"",
          h.queue, h.at);
      continue;
    }
    const auto average = engine_average(h, *names_);
    if (!average) continue;
    // A checkpoint from a clock ahead of this one (another replica) would hold the average still
    // until this clock caught up: it is taken as of now.
    if (auto r = engine_->set_usage_history(QueueName(h.queue), *average, std::min(h.at, now));
        !r) {
      spdlog::warn("event=usage_history_skipped queue={} reason=\"{}\"", h.queue, r.error());
      continue;
    }
    ++set;
  }
  return set;
}

void Core::apply_history(const std::vector<storage::HistoryRecord>& records, Time now) {
  if (set_history(records, now) > 0) checkpoint_due_ = true;
}

bool Core::checkpoint_history() {
  if (!engine_->usage_history().enabled()) return false;
  checkpoint_due_ = true;
  return true;
}

void Core::keep_stored_history(storage::Loaded& loaded) {
  for (const std::string& why : loaded.history_skipped)
    spdlog::warn("event=usage_history_skipped reason=\"{}; the queue starts without history\"",
                 why);
  stored_history_ = std::move(loaded.history);
}

// After the jobs are restored, so that the first cycle brings each average from its checkpoint
// up to now with the restored jobs' usage (the top of this file).
void Core::restore_stored_history(Time now) {
  const std::size_t set = set_history(stored_history_, now);
  if (set > 0) spdlog::info("event=usage_history_restored queues={}", set);
  stored_history_.clear();
  last_checkpoint_ = now;
  checkpoint_due_ = false;
}

void Core::add_history_checkpoint(Time now) {
  if (!engine_->usage_history().enabled()) return;
  if (!checkpoint_due_ && now - last_checkpoint_ < config_.usage_checkpoint_interval) return;
  batch_.history = history_snapshot(now);
  binder_->share_history(batch_.history);
  last_checkpoint_ = now;
  checkpoint_due_ = false;
}

}  // namespace gpuq::daemon
