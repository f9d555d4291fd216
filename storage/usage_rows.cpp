#include "storage/usage_rows.hpp"

#include <algorithm>
#include <iterator>

#include "storage/array_rows.hpp"
#include "storage/codec.hpp"

namespace gpuq::storage {

namespace {

constexpr int kUsageBusyTimeoutMs = 1000;

}  // namespace

Result<std::unique_ptr<UsageReader>> UsageReader::open(const std::string& path) {
  auto r = std::make_unique<UsageReader>();
  r->path_ = path;
  SqliteError e;
  r->db_ = Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, e);
  if (!r->db_)
    return Error{
        "state file " + path + ": cannot open a connection for usage reports: " + e.message,
        ErrorCode::kUnavailable};
  sqlite3_busy_timeout(r->db_.get(), kUsageBusyTimeoutMs);
  if (auto err = r->db_.exec("PRAGMA query_only = 1"))
    return Error{"state file " + path + ": query_only: " + err->message, ErrorCode::kUnavailable};
  const std::pair<Stmt*, const char*> all[] = {
      {&r->begin_, "BEGIN DEFERRED"},  {&r->end_, "COMMIT"},    {&r->unfinished_, kUsageUnfinished},
      {&r->finished_, kUsageFinished}, {&r->jobs_, kUsageJobs}, {&r->events_, kUsageEvents},
      {&r->arrays_, kUsageArrays},     {&r->array_of_, kUsageArrayOf},
  };
  for (const auto& [stmt, sql] : all)
    if (auto err = Stmt::prepare(r->db_, sql, *stmt))
      return Error{"state file " + path + ": preparing the usage reads: " + err->message,
                   ErrorCode::kUnavailable};
  return r;
}

Error UsageReader::failed(const std::string& doing) const {
  return {"state file " + path_ + ": " + doing + ": " + sqlite3_errmsg(db_.get()),
          ErrorCode::kUnavailable};
}

Result<void> UsageReader::events_of(const JobFacts& job, std::vector<StateChange>& out) {
  out.clear();
  // A member of an array kept as one row had its first events there (submitted, held...).
  if (const auto cut = job.id.rfind('_'); cut != std::string::npos && cut > 0) {
    Stmt::Reset ra(array_of_);
    array_of_.bind(1, static_cast<std::int64_t>(job.number));
    const int rc = array_of_.step();
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return failed("reading the events of job " + job.id);
    if (rc == SQLITE_ROW && static_cast<std::uint64_t>(array_of_.int64(1)) >= job.number &&
        array_of_.text(2) == std::string_view(job.id).substr(0, cut)) {
      const std::uint64_t p = job.number - static_cast<std::uint64_t>(array_of_.int64(0));
      auto indices = IndexRanges::parse(array_of_.text(3));
      auto each = decode_array_events(array_of_.text(4), "array " + job.id.substr(0, cut));
      if (!indices || !each)
        return Error{"state file " + path_ + ": the array row of job " + job.id + " does not decode",
                     ErrorCode::kFailedPrecondition};
      if (p < indices->size() && std::to_string(indices->at(p)) == std::string_view(job.id).substr(cut + 1))
        for (const EventRecord& e : *each)
          if (e.at >= job.submitted_at) out.push_back(StateChange{e.at, e.from, e.to, e.flavor});
    }
  }
  Stmt& s = events_;
  Stmt::Reset r(s);
  s.bind(1, job.id);
  s.bind(2, job.submitted_at);
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    StateChange c;
    c.at = s.int64(0);
    if (!s.is_null(1)) c.from = state_from_code(s.int64(1));
    const auto to = state_from_code(s.int64(2));
    if (!to || (!s.is_null(1) && !c.from))
      return Error{
          "state file " + path_ + ": an event of job " + job.id + " has an unknown state code",
          ErrorCode::kFailedPrecondition};
    c.to = *to;
    c.flavor = s.text(3);
    out.push_back(std::move(c));
  }
  if (rc != SQLITE_DONE) return failed("reading the events of job " + job.id);
  return Ok();
}

namespace {

// The columns both candidate queries begin with (kUsageJobs, kUsageArrays), as a job's facts.
Result<JobFacts> facts_of(const Stmt& s, const std::string& path) {
  JobFacts j;
  j.number = static_cast<std::uint64_t>(s.int64(0));
  j.id = s.text(1);
  j.queue = s.text(2);
  j.owner = s.text(3);
  const auto state = state_from_code(s.int64(4));
  if (!state)
    return Error{"state file " + path + ": job " + j.id + " has an unknown state code", ErrorCode::kFailedPrecondition};
  j.state = *state;
  j.submitted_at = s.int64(5);
  j.admitted_at = s.int64(6);
  j.finished_at = s.int64(7);
  j.flavor = s.text(8);
  j.gpu_milli = s.int64(9);
  j.attempts = static_cast<std::int32_t>(s.int64(10));
  j.preemptions = static_cast<std::int32_t>(s.int64(11));
  j.gpu_samples = s.int64(12);
  j.gpu_util_sum = s.int64(13);
  return j;
}

void bind_candidates(Stmt& s, const UsageQuery& q, std::uint64_t after) {
  s.bind(1, q.until);
  s.bind(2, q.queue);
  s.bind(3, q.user);
  s.bind(4, q.since);
  s.bind(5, static_cast<std::int64_t>(after));
}

}  // namespace

Result<void> UsageReader::each_job(Stmt* s, const UsageQuery& q, UsageTally& tally, std::size_t stop_after) {
  const std::uint64_t after = q.by == UsageBy::kJob ? q.after_number : 0;
  std::optional<Stmt::Reset> reset;
  if (s) {
    reset.emplace(*s);
    if (s == &jobs_)
      bind_candidates(*s, q, after);
    else {
      s->bind(1, q.until);
      s->bind(2, q.queue);
      s->bind(3, q.user);
      s->bind(4, q.since);
    }
  }
  // The arrays' members: one row's facts, the member's number and id set from its position.
  Stmt::Reset reset_arrays(arrays_);
  bind_candidates(arrays_, q, after);
  std::optional<JobFacts> row;  // the array row's facts
  std::string array_id;
  IndexRanges indices, unsplit;
  std::size_t range = 0;
  std::uint64_t p = 0;
  bool arrays_done = s != nullptr && s != &jobs_;  // grouped: the members go once, with the unfinished
  auto next_member = [&]() -> Result<std::optional<std::uint64_t>> {
    while (!arrays_done) {
      if (row) {
        const auto& r = unsplit.ranges();
        while (range < r.size() && r[range].second < p) ++range;
        if (range < r.size()) {
          p = std::max(p, r[range].first);
          return std::optional<std::uint64_t>(row->number + p);
        }
        row.reset();
      }
      const int rc = arrays_.step();
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return failed("reading arrays for usage");
      auto facts = facts_of(arrays_, path_);
      if (!facts) return Error{facts.error(), facts.code()};
      auto ix = IndexRanges::parse(arrays_.text(14));
      auto un = IndexRanges::parse(arrays_.text(15));
      if (!ix || !un)
        return Error{"state file " + path_ + ": array " + facts->id + " (row " + std::to_string(facts->number) +
                         ") does not decode",
                     ErrorCode::kFailedPrecondition};
      array_id = facts->id;
      row = std::move(facts).value();
      indices = std::move(*ix);
      unsplit = std::move(*un);
      range = 0;
      p = after >= row->number ? after - row->number + 1 : 0;
    }
    arrays_done = true;
    return std::optional<std::uint64_t>();
  };
  std::vector<StateChange> events;
  std::size_t counted = 0;
  std::optional<JobFacts> job;  // the next of `s`
  bool jobs_done = s == nullptr;
  while (true) {
    if (!job && !jobs_done) {
      const int rc = s->step();
      if (rc == SQLITE_ROW) {
        auto facts = facts_of(*s, path_);
        if (!facts) return Error{facts.error(), facts.code()};
        job = std::move(facts).value();
      } else if (rc == SQLITE_DONE) {
        jobs_done = true;
      } else {
        return failed("reading jobs for usage");
      }
    }
    auto m = next_member();
    if (!m) return Error{m.error(), m.code()};
    JobFacts j;
    if (job && (!*m || job->number < **m)) {
      j = std::move(*job);
      job.reset();
    } else if (*m) {
      j = *row;
      j.number = **m;
      j.id = array_id + "_" + std::to_string(indices.at(p));
      ++p;
    } else {
      break;
    }
    // A job never admitted (the bulk of a long queue) has no attempts to read.
    events.clear();
    if (j.admitted_at > 0 || j.attempts > 0 || j.preemptions > 0 || j.state != JobState::kPending)
      if (auto e = events_of(j, events); !e) return e;
    if (tally.add(j, attempts_of(j, events, q.now)) && stop_after > 0 && ++counted == stop_after) return Ok();
  }
  return Ok();
}

Result<std::vector<UsageRow>> UsageReader::read(const UsageQuery& q) {
  std::lock_guard lock(mu_);
  {
    Stmt::Reset r(begin_);
    if (begin_.step() != SQLITE_DONE) return failed("starting a read for usage");
  }
  auto rows = [&]() -> Result<std::vector<UsageRow>> {
    UsageTally tally(q);
    if (q.by == UsageBy::kJob) {
      if (auto r = each_job(&jobs_, q, tally, q.limit); !r) return Error{r.error(), r.code()};
      return tally.rows();
    }
    for (Stmt* s : {&unfinished_, &finished_, static_cast<Stmt*>(nullptr)})
      if (auto r = each_job(s, q, tally, 0); !r) return Error{r.error(), r.code()};
    std::vector<UsageRow> all = tally.rows();
    // Every group is summed before any is known whole; the page is cut from the sorted groups.
    auto from =
        !q.after_key
            ? all.begin()
            : std::upper_bound(all.begin(), all.end(), *q.after_key,
                               [](const std::string& k, const UsageRow& r) { return k < r.key; });
    auto to = q.limit == 0 || static_cast<std::size_t>(all.end() - from) <= q.limit
                  ? all.end()
                  : from + q.limit;
    return std::vector<UsageRow>(std::make_move_iterator(from), std::make_move_iterator(to));
  }();
  Stmt::Reset r(end_);
  end_.step();  // ends the read transaction
  return rows;
}

}  // namespace gpuq::storage
