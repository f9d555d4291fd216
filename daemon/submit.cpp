// Core::submit: one job, or a job array (gpuq submit --array) as one submission whose members
// all enter the engine in the same turn, so that the turn's one transaction writes them all or
// none. Checks come first and change nothing; a refused submission leaves no trace.
#include <spdlog/spdlog.h>

#include "daemon/core.hpp"
#include "spec/validate.hpp"
#include "storage/codec.hpp"

namespace gpuq::daemon {

// Whether `id` is free: no unfinished job, no array and no job on disk has it. on_disk_too false:
// the caller knows that no job on disk has it.
Result<bool> Core::id_free(const std::string& id, bool on_disk_too) {
  if (is_live(id) || arrays_.count(id) > 0 || engine_->entry(JobId(id))) return false;
  if (!on_disk_too) return true;
  auto on_disk = store_->has_job(id);
  if (!on_disk) return Error{on_disk.error(), ErrorCode::kUnavailable};
  return !on_disk.value();
}

// The next server-assigned id ("j" and the next submission number not taken by a client's id).
Result<std::string> Core::next_id() {
  while (true) {
    std::string id = std::string("j").append(std::to_string(last_job_number_ + 1));
    auto free = id_free(id);
    if (!free) return Error{free.error(), free.code()};
    if (free.value()) return id;
    ++last_job_number_;  // taken by a client-supplied id: skip the number
  }
}

Result<std::string> Core::submit(Submission sub, Time now) {
  JobSpec& spec = sub.job;
  sync_names();
  if (auto r = binder_->check_run(sub.run, spec.owner); !r) return Error{r.error(), r.code()};
  if (auto no = notify_url_refusal(config_.notify, sub.notify, "spec.notify.url"); !no.empty())
    return Error{no, ErrorCode::kInvalidArgument};
  // A source binder's nodes are known once it has listed them: until then a job's fit cannot be
  // judged (the engine would refuse it as larger than any node).
  if (!placing_)
    return Error{"gpuqd has just started and is still listing the cluster's nodes and pods; submit again in a moment",
                 ErrorCode::kUnavailable};
  if (auto q = queue_specs_.find(spec.queue.value); q != queue_specs_.end())
    if (auto r = binder_->prepare(sub, q->second); !r) return Error{r.error(), r.code()};
  if (sub.run.tty) {  // gpuq run
    if (!binder_->has_terminals())
      return Error{"spec.tty: gpuqd's binder runs no processes on terminals; gpuq run needs binder: local",
                   ErrorCode::kFailedPrecondition};
    std::int64_t pods = 0;
    for (const PodSet& s : spec.pod_sets) pods += s.count;
    if (pods != 1 || !sub.array.empty())
      return Error{"spec.tty: a job on a terminal is one pod, not " +
                       (sub.array.empty() ? std::to_string(pods) + " pods" : std::string("an array")),
                   ErrorCode::kInvalidArgument};
  }
  if (!sub.array.empty()) return submit_array(std::move(sub), now);
  if (spec.id.value.empty()) {
    auto id = next_id();
    if (!id) return Error{id.error(), id.code()};
    spec.id = JobId(id.value());
  } else {
    // The id's form was checked with the request (spec/validate.hpp); here, whether it is free.
    auto free = id_free(spec.id.value);
    if (!free) return Error{free.error(), free.code()};
    if (!free.value())
      return Error{"spec.id: job \"" + spec.id.value + "\" already exists", ErrorCode::kAlreadyExists};
  }
  auto queue = queue_specs_.find(spec.queue.value);
  if (queue == queue_specs_.end())
    return Error{"spec.queue: queue \"" + spec.queue.value + "\" does not exist", ErrorCode::kNotFound};
  // The queue's guardrails and limits (daemon/submit_limits.cpp); they may give the job the
  // queue's default maxRuntime and priority class.
  if (auto r = check_queue_limits(queue->second, sub, now, 1); !r) return Error{r.error(), r.code()};
  auto waiting = check_after(sub);  // daemon/dependencies.cpp
  if (!waiting) return Error{waiting.error(), waiting.code()};
  spec.submitted_at = now;
  if (auto r = engine_->submit(spec, now, held_at_submission(sub)); !r) return Error{r.error(), r.code()};
  if (const std::int32_t limit = queue->second.max_submits_per_user_per_minute; limit > 0 && !spec.owner.empty())
    submit_rate_.take(spec.queue.value, spec.owner, limit, now);
  std::string id = spec.id.value;
  enter(record_of(std::move(sub)), waiting.value(), now);
  return id;
}

// The reason of a hold at submission (gpuq submit --hold), given to Engine::submit.
std::optional<std::string> Core::held_at_submission(const Submission& sub) {
  if (!sub.hold) return std::nullopt;
  return "held at submission";
}

// A job the engine took (held already when asked: held_at_submission): what it waits for, and
// its record, numbered and kept (an array's members each enter a copy of one record).
storage::JobRecord& Core::enter(storage::JobRecord rec, const std::vector<Awaited>& awaited, Time now) {
  if (!awaited.empty()) wait_for(rec.spec.id.value, awaited, now, /*quiet=*/false);
  rec.number = ++last_job_number_;
  return enter_live(std::move(rec));
}

storage::JobRecord Core::record_of(Submission sub) {
  storage::JobRecord rec;
  rec.spec = std::move(sub.job);
  rec.run = std::move(sub.run);
  rec.notify = std::move(sub.notify);
  rec.priority_text = std::move(sub.priority);
  rec.after = std::move(sub.after);
  return rec;
}

// An array: its id is the job id the submission names, else the next number's ("j12"); its
// members are "<id>_<index>" (the local executor gives each GPUQ_ARRAY_ID and GPUQ_ARRAY_INDEX).
// The queue's limits count all of them, but it is one submission for maxSubmitsPerUserPerMinute
// (as sbatch --array is one). Every member is the same job but for its id, so once the first is
// taken, the engine takes the rest.
Result<std::string> Core::submit_array(Submission sub, Time now) {
  JobSpec& spec = sub.job;
  std::vector<std::int32_t> indices = std::move(sub.array);
  sub.array.clear();
  std::string base = spec.id.value;
  if (base.empty()) {
    auto id = next_id();
    if (!id) return Error{id.error(), id.code()};
    base = id.value();
  } else if (auto free = id_free(base); !free || !free.value()) {
    if (!free) return Error{free.error(), free.code()};
    return Error{"spec.id: job \"" + base + "\" already exists", ErrorCode::kAlreadyExists};
  }
  {
    // The longest member id must be a job id too.
    spec::Path at;
    spec::Path::Key k(at, "id");
    try {
      spec::check_job_id(base + "_" + std::to_string(indices.back()), at);
    } catch (const spec::SpecError& e) {
      return Error{std::string(e.what()) + " (an array's members are named <id>_<index>)", ErrorCode::kInvalidArgument};
    }
  }
  // One read for all members: usually no job on disk has an id "<array>_...", and then only the
  // memory is asked about each member.
  auto prefixed = store_->has_job_with_prefix(base + "_");
  if (!prefixed) return Error{prefixed.error(), ErrorCode::kUnavailable};
  // No job on disk or in memory has an id "<base>_<digits>" but as a member of an array <base>
  // (suffixed_bases_), and no array <base> is known: no member id can be taken.
  const bool fresh = !prefixed.value() && suffixed_bases_.count(base) == 0;
  for (std::size_t k = 0; !fresh && k < indices.size(); ++k) {
    const std::int32_t index = indices[k];
    auto free = id_free(base + "_" + std::to_string(index), /*on_disk_too=*/prefixed.value());
    if (!free) return Error{free.error(), free.code()};
    if (!free.value())
      return Error{"spec.id: job \"" + base + "_" + std::to_string(index) + "\" already exists (array " + base +
                       "'s member " + std::to_string(index) + ")",
                   ErrorCode::kAlreadyExists};
  }
  auto queue = queue_specs_.find(spec.queue.value);
  if (queue == queue_specs_.end())
    return Error{"spec.queue: queue \"" + spec.queue.value + "\" does not exist", ErrorCode::kNotFound};
  if (auto r = check_queue_limits(queue->second, sub, now, indices.size()); !r) return Error{r.error(), r.code()};
  spec.array_id = base;
  auto waiting = check_after(sub);
  if (!waiting) return Error{waiting.error(), waiting.code()};
  spec.submitted_at = now;
  const std::string queue_name = spec.queue.value, owner = spec.owner;
  // The members differ only in their ids and indices: the engine's job is made and checked once
  // (a refusal names the first member, as its own submit's would), and each member's record is a
  // copy of one record.
  spec.id = JobId(base + "_" + std::to_string(indices.front()));
  spec.array_index = indices.front();
  auto tmpl = engine_->array_template(spec);
  if (!tmpl) return Error{tmpl.error(), tmpl.code()};
  const std::optional<std::string> hold = held_at_submission(sub);
  storage::JobRecord rec_tmpl = record_of(std::move(sub));
  note_suffixed(base, "");
  std::vector<std::int32_t>& members = arrays_[base];
  members.insert(members.end(), indices.begin(), indices.end());
  std::vector<storage::JobRecord*> recs;
  // The turn's earlier events take their seqs first, so the array's follow them (record_array).
  record_changes(engine_->take_events(), now);
  // All members or none (the engine keeps the waiting ones as one block: EngineConfig::lazy_arrays,
  // and then gives the events each member had once, not a copy per member).
  // (Not for an array that waits for dependencies: its members are entered one by one below,
  // and their events recorded as any job's.)
  Engine::MemberEvents quiet;
  if (auto r = engine_->submit_array(tmpl.value(), indices, now, hold, waiting.value().empty() ? &quiet : nullptr); !r) {
    // Not expected: the ids were checked above, or no job could have one; but the engine may
    // still hold the ended members of an earlier array of this id, ended in this turn.
    spdlog::error("event=array_submit_failed array={} reason=\"{}\"", base, r.error());
    arrays_.erase(base);
    return Error{"array " + base + ": " + r.error(), r.code()};
  }
  const std::string first_id = base + "_" + std::to_string(indices.front());
  // Members the engine keeps as one block, with no dependency to wait for: one record (the
  // first member's) stands for all of them in the Core too (ArrayTemplate).
  const bool templated = waiting.value().empty() && engine_->job(JobId(first_id)) == nullptr;
  std::optional<storage::JobRecord> first;
  if (!templated) {
    recs.reserve(indices.size());
    for (std::size_t k = 0; k < indices.size(); ++k) {
      storage::JobRecord rec = k + 1 < indices.size() ? rec_tmpl : std::move(rec_tmpl);
      rec.spec.id = JobId(base + "_" + std::to_string(indices[k]));
      rec.spec.array_index = indices[k];
      recs.push_back(&enter(std::move(rec), waiting.value(), now));
    }
  } else {
    first = std::move(rec_tmpl);
    first->spec.id = JobId(first_id);
    first->spec.array_index = indices.front();
    first->number = last_job_number_ + 1;
    last_job_number_ += indices.size();
    refresh(*first, *engine_->entry(first->spec.id));
    templates_[base].push_back(
        ArrayTemplate{storage::pack_job(*first, *names_), std::make_shared<const std::vector<std::int32_t>>(indices),
                      first->number});
  }
  array_unfinished_[base] += indices.size();
  if (const std::int32_t limit = queue->second.max_submits_per_user_per_minute; limit > 0 && !owner.empty())
    submit_rate_.take(queue_name, owner, limit, now);
  if (templated && !quiet.each.empty())
    record_array_rows(base, indices, *first, quiet.each);
  else if (auto events = engine_->take_events(); !record_array(base, indices, recs, events, first ? &*first : nullptr))
    record_changes(events, now);
  return first_id;
}

bool Core::record_array(const std::string& array, const std::vector<std::int32_t>& indices,
                        const std::vector<storage::JobRecord*>& recs, const std::vector<Event>& events,
                        const storage::JobRecord* first) {
  const std::size_t n = indices.size();
  if (n < 2 || arrays_[array].size() != n || (first == nullptr && n != recs.size()) || events.empty() ||
      events.size() % n != 0)
    return false;
  const std::size_t k = events.size() / n;
  for (std::size_t p = 0; p < n; ++p) {
    const std::string member = array + "_" + std::to_string(indices[p]);
    const Job* j = engine_->entry(JobId(member));
    if (j == nullptr || j->state != JobState::kPending) return false;
    if (first == nullptr && (recs[p]->number != recs[0]->number + p || recs[p]->spec.array_index != indices[p]))
      return false;
    for (std::size_t t = 0; t < k; ++t) {
      const Event& e = events[p * k + t];
      const Event& first = events[t];
      if (e.job.value != member || e.to != JobState::kPending || e.from != first.from || e.at != first.at ||
          e.reason != first.reason || e.flavor != first.flavor)
        return false;
    }
    if (first == nullptr) refresh(*recs[p], *j);
  }
  record_array_rows(array, indices, first != nullptr ? *first : *recs[0],
                    std::vector<Event>(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(k)));
  return true;
}

void Core::record_array_rows(const std::string& array, const std::vector<std::int32_t>& indices,
                             const storage::JobRecord& first, const std::vector<Event>& each) {
  const std::size_t n = indices.size(), k = each.size();
  storage::ArrayRows rows;
  rows.first = first;
  rows.indices = storage::IndexRanges::of(indices);
  rows.first_seq = last_event_seq_ + 1;
  last_event_seq_ += n * k;
  for (const Event& ev : each) {
    storage::EventRecord& e = rows.each.emplace_back();
    e.at = ev.at;
    e.from = ev.from;
    e.to = ev.to;
    e.reason = ev.reason;
    e.flavor = ev.flavor;
    e.queue = rows.first.spec.queue.value;
    e.owner = rows.first.spec.owner;
    spdlog::info("event=job_state array={} members={} from={} to={} reason=\"{}\"", array, n,
                 ev.from ? to_string(*ev.from) : "-", to_string(ev.to), ev.reason);
  }
  batch_.arrays.push_back(std::move(rows));
}

// An array is known (by its id: cancel, hold, dependencies) while any member is unfinished.
void Core::array_member_ended(const std::string& array) {
  auto it = array_unfinished_.find(array);
  if (it == array_unfinished_.end() || --it->second > 0) return;
  array_unfinished_.erase(it);
  arrays_.erase(array);
  templates_.erase(array);
}

std::optional<std::vector<std::string>> Core::array_members(const std::string& id) const {
  auto it = arrays_.find(id);
  if (it == arrays_.end()) return std::nullopt;
  std::vector<std::string> ids;
  ids.reserve(it->second.size());
  for (std::int32_t i : it->second) ids.push_back(id + "_" + std::to_string(i));
  return ids;
}

std::optional<std::string> Core::first_member(const std::string& id) const {
  auto it = arrays_.find(id);
  if (it == arrays_.end() || it->second.empty()) return std::nullopt;
  return id + "_" + std::to_string(it->second.front());
}

}  // namespace gpuq::daemon
