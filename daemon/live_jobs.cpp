// Core's unfinished jobs' records (core.hpp: unfinished_ and packed_): a pending job at rest is
// kept as storage::pack_job's string, unpacked when a turn uses it and packed again once the
// turn is written.
#include <mutex>

#include <spdlog/spdlog.h>

#include "daemon/core.hpp"
#include "storage/codec.hpp"
#include "storage/job_rows.hpp"

namespace gpuq::daemon {

storage::JobRecord* Core::live(const std::string& id) {
  if (auto it = unfinished_.find(id); it != unfinished_.end()) return &it->second;
  const auto packed = packed_.find(id);
  if (!packed) return nullptr;
  storage::JobRecord rec;
  std::mutex mu;  // the interner's, for names met on other threads; this one is the only one here
  storage::ResourceInterner interner(*names_, mu);
  if (auto r = storage::unpack_job(*packed, rec, interner); !r) {
    // pack_job wrote it in this process: a failure is a bug, and the record cannot be trusted.
    spdlog::critical("event=unpack_failed job={} error=\"{}\"", id, r.error());
    std::abort();
  }
  packed_.erase(id);
  return &enter_live(std::move(rec));
}

storage::JobRecord& Core::enter_live(storage::JobRecord rec) {
  std::string key = rec.spec.id.value;
  unpacked_.push_back(key);
  return unfinished_.insert_or_assign(std::move(key), std::move(rec)).first->second;
}

void Core::pack_idle() {
  for (const std::string& id : unpacked_) {
    auto it = unfinished_.find(id);
    if (it == unfinished_.end() || it->second.state != JobState::kPending) continue;
    const Job* j = engine_->entry(it->second.spec.id);
    if (j == nullptr || j->state != JobState::kPending || j->reserved) continue;
    packed_.put(id, storage::pack_job(it->second, *names_));
    unfinished_.erase(it);
  }
  unpacked_.clear();
}

}  // namespace gpuq::daemon
