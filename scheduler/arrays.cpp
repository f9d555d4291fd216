// Lazy job arrays (EngineConfig::lazy_arrays; daemon/LAZY_ARRAYS.md, stage 3). An array's
// members that wait unchanged are one pending entry, a block: a job slot (the carrier) whose
// spec, id, index and order are those of its lowest such member, counted in the queue's pending
// indexes with its weight (how many members it stands for). A member becomes a job of its own
// (split) when a cycle decides it (the block's first member, as the walk reaches the block) or a
// command names it; a member never goes back. Splitting changes nothing anyone can see: the
// member is exactly the job it would have been, with the order it got at submission, so the
// walk meets the same jobs in the same order and the decisions and events are those of the
// eager arrays (tests/scheduler/lazy_array_test.cpp compares the two).
#include <algorithm>
#include <charconv>
#include <memory>
#include <string>
#include <unordered_map>

#include "scheduler/engine.hpp"

namespace gpuq {
namespace {

std::string member_id(const std::string& array, std::int32_t index) {
  return array + "_" + std::to_string(index);
}

}  // namespace

Result<void> Engine::submit_array(const Job& tmpl, const std::vector<std::int32_t>& indices, Time now,
                                  std::optional<std::string> hold, MemberEvents* quiet) {
  const std::string& array = tmpl.spec.array_id;
  {  // every member's id free (a finished member of an earlier array of this id may still be here)
    const bool blocks = block_of_.count(array) > 0;
    std::string id = array + "_";
    const std::size_t cut = id.size();
    for (std::int32_t index : indices) {
      id.resize(cut);
      id += std::to_string(index);
      if (find_job(id) != kNoJob || (blocks && in_block(id)))
        return Error{"job \"" + id + "\" already exists", ErrorCode::kAlreadyExists};
    }
  }
  if (!config_.lazy_arrays || indices.size() < 2) {
    reserve_jobs(indices.size());
    for (std::int32_t index : indices)
      if (auto r = submit_member(tmpl, JobId(member_id(array, index)), index, now, hold); !r) return r;
    return Ok();
  }
  const auto n = static_cast<std::uint32_t>(indices.size());
  Job carrier = tmpl;
  carrier.spec.id = JobId(member_id(array, indices.front()));
  carrier.spec.array_index = indices.front();
  const std::uint64_t first_order = next_order_;
  const std::uint32_t c = store_job(std::move(carrier));  // takes first_order
  next_order_ = first_order + n;
  forget_id(jobs_[c].spec.id.value);  // a member's id is found through its block
  if (config_.placement == PlacementPolicy::kFragAware) count_shapes(jobs_[c], n - 1);
  ArrayBlock& b = blocks_[c];
  b.indices = std::make_shared<const std::vector<std::int32_t>>(indices);
  b.first_order = first_order;
  b.unsplit = {{0, n}};
  b.count = n;
  block_of_[array].push_back(c);
  if (!hold)
    add_pending(c);
  else
    enter_held(c, n);  // as enter_job's held path, for every member at once
  // Each member's events, member by member, as submit_member of each would give them; or what
  // they would be (MemberEvents), without a copy per member.
  if (quiet) {
    quiet->first_seq = next_seq_;
    quiet->each = {Event{0, now, {}, std::nullopt, JobState::kPending, {}, {}}};
    if (hold) quiet->each.push_back(Event{0, now, {}, JobState::kPending, JobState::kPending, *hold, {}});
    next_seq_ += static_cast<std::uint64_t>(n) * quiet->each.size();
    return Ok();
  }
  for (std::int32_t index : indices) {
    const JobId id(member_id(array, index));
    events_.push_back(Event{next_seq_++, now, id, std::nullopt, JobState::kPending, {}, {}});
    if (hold) events_.push_back(Event{next_seq_++, now, id, JobState::kPending, JobState::kPending, *hold, {}});
  }
  return Ok();
}

std::optional<Engine::InBlock> Engine::in_block(std::string_view id) const {
  if (block_of_.empty()) return std::nullopt;
  const std::size_t cut = id.rfind('_');
  if (cut == std::string_view::npos || cut + 1 == id.size()) return std::nullopt;
  auto it = block_of_.find(std::string(id.substr(0, cut)));
  if (it == block_of_.end()) return std::nullopt;
  std::int32_t index = 0;
  const char* first = id.data() + cut + 1;
  const char* last = id.data() + id.size();
  if (auto [end, ec] = std::from_chars(first, last, index); ec != std::errc() || end != last) return std::nullopt;
  if (std::to_string(index) != id.substr(cut + 1)) return std::nullopt;  // "x_007" is not member 7
  for (const std::uint32_t c : it->second) {
    const ArrayBlock& b = blocks_.at(c);
    auto at = std::lower_bound(b.indices->begin(), b.indices->end(), index);
    if (at == b.indices->end() || *at != index) continue;
    const auto pos = static_cast<std::uint32_t>(at - b.indices->begin());
    auto r = std::upper_bound(b.unsplit.begin(), b.unsplit.end(), std::make_pair(pos, UINT32_MAX));
    if (r == b.unsplit.begin() || std::prev(r)->second <= pos) return std::nullopt;  // split already
    return InBlock{c, pos};
  }
  return std::nullopt;
}

std::uint32_t Engine::resolve(std::string_view id) {
  if (const std::uint32_t j = find_job(id); j != kNoJob) return j;
  if (auto b = in_block(id)) return split(b->carrier, b->pos);
  return kNoJob;
}

Job Engine::member_of_block(std::uint32_t carrier, std::uint32_t pos) const {
  const ArrayBlock& b = blocks_.at(carrier);
  Job member = jobs_[carrier];
  member.spec.id = JobId(member_id(member.spec.array_id, (*b.indices)[pos]));
  member.spec.array_index = (*b.indices)[pos];
  member.order = b.first_order + pos;
  return member;
}

// Position pos leaves block c: the carrier takes the identity of the lowest member left, and
// with one left it is that member, an ordinary job.
void Engine::take_out(std::uint32_t c, std::uint32_t pos) {
  ArrayBlock& b = blocks_.at(c);
  auto r = std::upper_bound(b.unsplit.begin(), b.unsplit.end(), std::make_pair(pos, UINT32_MAX));
  --r;  // the range holding pos
  const std::pair<std::uint32_t, std::uint32_t> range = *r;
  r = b.unsplit.erase(r);
  if (pos + 1 < range.second) r = b.unsplit.insert(r, {pos + 1, range.second});
  if (range.first < pos) b.unsplit.insert(r, {range.first, pos});
  --b.count;
  const std::uint32_t lowest = b.unsplit.front().first;
  Job& job = jobs_[c];
  job.spec.id = JobId(member_id(job.spec.array_id, (*b.indices)[lowest]));
  job.spec.array_index = (*b.indices)[lowest];
  job.order = b.first_order + lowest;
  if (b.count == 1) {
    blocks_.erase(c);
    auto of = block_of_.find(job.spec.array_id);
    std::erase(of->second, c);
    if (of->second.empty()) block_of_.erase(of);
    job_ids_.insert(job.spec.id.value, c);
  }
}

std::uint32_t Engine::split(std::uint32_t c, std::uint32_t pos) {
  Job member = member_of_block(c, pos);
  const bool in_order = jobs_[c].state == JobState::kPending && !jobs_[c].off_order();  // never reserved
  if (in_order) unindex_pending(c);
  take_out(c, pos);
  if (in_order) --queues_[jobs_[c].queue].in_blocks;  // one member moves to its own entry
  const std::uint32_t m = keep_job(std::move(member));  // with the order it got at submission
  if (in_order) {
    index_pending(c);
    index_pending(m);
  }
  return m;
}

std::optional<std::uint64_t> Engine::order_of(const JobId& id) const {
  if (const Job* j = job(id)) return j->order;
  if (auto b = in_block(id.value)) return blocks_.at(b->carrier).first_order + b->pos;
  return std::nullopt;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> Engine::block_orders(const Job& entry) const {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  const std::uint32_t j = stored_slot(entry);
  auto it = j == kNoJob ? blocks_.end() : blocks_.find(j);
  if (it == blocks_.end()) return out;
  for (const auto& [lo, hi] : it->second.unsplit) out.emplace_back(it->second.first_order + lo, it->second.first_order + hi);
  return out;
}

const Job* Engine::entry(const JobId& id) const {
  if (const Job* j = job(id)) return j;
  if (auto b = in_block(id.value)) return &jobs_[b->carrier];
  return nullptr;
}

std::optional<std::size_t> Engine::array_command(const std::string& array, const std::vector<std::string>& members,
                                                 ArrayCommand command, Time now, const std::string& reason,
                                                 const std::function<void(const JobId&)>& each) {
  auto it = block_of_.find(array);
  if (it == block_of_.end()) return std::nullopt;
  // Each block changed once; `takes`: whether its members take the command (all alike).
  std::unordered_map<std::uint32_t, bool> takes;
  std::size_t took = 0;
  for (const std::uint32_t c : it->second) {
    Job& job = jobs_[c];
    bool& t = takes[c];
    if (job.state != JobState::kPending) continue;
    const std::uint32_t w = weight(c);
    switch (command) {
      case ArrayCommand::kHold:
        if ((t = !job.held)) {
          if (!job.off_order()) leave_order(c, w);
          job.held = true;
        }
        break;
      case ArrayCommand::kRelease:
        if ((t = job.held)) {
          job.held = false;
          if (!job.off_order()) rejoin_order(c, w);
        }
        break;
      case ArrayCommand::kCancel:
        t = true;
        ++epoch_;
        if (job.off_order())
          drop_hold(job, w);
        else
          remove_pending(c);
        job.state = JobState::kCancelled;
        job.end_reason = reason;
        break;
    }
    if (t) took += w;
  }
  // The events, and the other members' commands, in member order. (`each` commands members
  // that are jobs of their own: the blocks do not change.)
  for (const std::string& m : members) {
    JobId id(m);
    if (auto b = in_block(m)) {
      if (takes[b->carrier])
        events_.push_back(Event{next_seq_++, now, std::move(id), JobState::kPending, jobs_[b->carrier].state, reason, {}});
    } else {
      each(id);
    }
  }
  return took;
}

std::size_t Engine::members_before(std::uint32_t j, const Job& job) const {
  const std::uint32_t w = weight(j);
  const Job& entry = jobs_[j];
  // Another array's members, or ones of another priority or time, are all before it (an
  // array's members' orders are one range no other job's order falls in).
  if (w == 1 || entry.spec.array_id != job.spec.array_id || entry.spec.priority != job.spec.priority ||
      entry.spec.submitted_at != job.spec.submitted_at)
    return w;
  const ArrayBlock& b = blocks_.at(j);
  std::size_t n = 0;
  for (const auto& [lo, hi] : b.unsplit) {
    const std::uint64_t from = b.first_order + lo, to = b.first_order + hi;  // [from, to)
    if (from >= job.order) break;
    n += static_cast<std::size_t>(std::min(to, job.order) - from);
  }
  return n;
}

}  // namespace gpuq
