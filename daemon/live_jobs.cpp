// Core's unfinished jobs' records (core.hpp: unfinished_ and packed_): a pending job at rest is
// kept as storage::pack_job's string, unpacked when a turn uses it and packed again once the
// turn is written.
#include <algorithm>
#include <charconv>
#include <mutex>

#include <spdlog/spdlog.h>

#include "daemon/core.hpp"
#include "storage/codec.hpp"
#include "storage/job_rows.hpp"

namespace gpuq::daemon {

storage::JobRecord* Core::live(const std::string& id) {
  if (auto it = unfinished_.find(id); it != unfinished_.end()) return &it->second;
  const auto packed = packed_.find(id);
  if (!packed) {
    if (auto rec = in_template(id) ? from_template(id) : std::nullopt) return &enter_live(std::move(*rec));
    return nullptr;
  }
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

std::optional<std::pair<const Core::ArrayTemplate*, std::uint32_t>> Core::template_of(const std::string& id) const {
  if (templates_.empty()) return std::nullopt;
  const std::size_t cut = id.rfind('_');
  if (cut == std::string::npos) return std::nullopt;
  auto it = templates_.find(id.substr(0, cut));
  if (it == templates_.end()) return std::nullopt;
  std::int32_t index = 0;
  const char* last = id.data() + id.size();
  if (auto [end, ec] = std::from_chars(id.data() + cut + 1, last, index); ec != std::errc() || end != last)
    return std::nullopt;
  const Job* e = engine_->entry(JobId(id));
  if (e == nullptr || e->spec.array_id != it->first) return std::nullopt;  // ended and written: gone
  for (const ArrayTemplate& t : it->second) {
    auto at = std::lower_bound(t.indices->begin(), t.indices->end(), index);
    if (at != t.indices->end() && *at == index)
      return std::make_pair(&t, static_cast<std::uint32_t>(at - t.indices->begin()));
  }
  return std::nullopt;
}

std::optional<storage::JobRecord> Core::from_template(const std::string& id) const {
  auto t = template_of(id);
  if (!t) return std::nullopt;
  storage::JobRecord rec;
  std::mutex mu;  // as live()'s
  storage::ResourceInterner interner(*names_, mu);
  if (auto r = storage::unpack_job(t->first->packed, rec, interner); !r) {
    spdlog::critical("event=unpack_failed job={} error=\"{}\"", id, r.error());
    std::abort();
  }
  rec.spec.id = JobId(id);
  rec.spec.array_index = (*t->first->indices)[t->second];
  rec.number = t->first->first_number + t->second;
  refresh(rec, *engine_->entry(JobId(id)));
  return rec;
}

void Core::note_suffixed(const std::string& id, const std::string& array_id) {
  const auto cut = id.rfind('_');
  if (cut == std::string::npos || cut == 0 || cut + 1 == id.size() ||
      !std::all_of(id.begin() + static_cast<std::ptrdiff_t>(cut) + 1, id.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return;
  if (std::string_view(id).substr(0, cut) == array_id) return;  // a member of that array
  suffixed_bases_.emplace(id.substr(0, cut));
}

storage::JobRecord& Core::enter_live(storage::JobRecord rec) {
  note_suffixed(rec.spec.id.value, rec.spec.array_id);
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
    std::string packed = storage::pack_job(it->second, *names_);
    // Still what its array's template makes: the template stands for it again.
    if (!templates_.empty() && engine_->job(it->second.spec.id) == nullptr)
      if (auto t = from_template(id); t && storage::pack_job(*t, *names_) == packed) {
        unfinished_.erase(it);
        continue;
      }
    packed_.put(id, std::move(packed));
    unfinished_.erase(it);
  }
  unpacked_.clear();
}

}  // namespace gpuq::daemon
