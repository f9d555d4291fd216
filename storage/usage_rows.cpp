#include "storage/usage_rows.hpp"

#include <algorithm>
#include <iterator>

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

// Walks the candidates of `s` (bound) into `tally`; by job, stops once `stop_after` jobs had
// something in the period (0: never).
Result<void> UsageReader::each_job(Stmt& s, const UsageQuery& q, UsageTally& tally,
                                   std::size_t stop_after) {
  Stmt::Reset reset(s);
  s.bind(1, q.until);
  s.bind(2, q.queue);
  s.bind(3, q.user);
  s.bind(4, q.since);
  if (&s == &jobs_) s.bind(5, static_cast<std::int64_t>(q.after_number));
  std::vector<StateChange> events;
  std::size_t counted = 0;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    JobFacts j;
    j.number = static_cast<std::uint64_t>(s.int64(0));
    j.id = s.text(1);
    j.queue = s.text(2);
    j.owner = s.text(3);
    const auto state = state_from_code(s.int64(4));
    if (!state)
      return Error{"state file " + path_ + ": job " + j.id + " has an unknown state code",
                   ErrorCode::kFailedPrecondition};
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
    // A job never admitted (the bulk of a long queue) has no attempts to read.
    events.clear();
    if (j.admitted_at > 0 || j.attempts > 0 || j.preemptions > 0 || j.state != JobState::kPending)
      if (auto e = events_of(j, events); !e) return e;
    if (tally.add(j, attempts_of(j, events, q.now)) && stop_after > 0 && ++counted == stop_after)
      return Ok();
  }
  if (rc != SQLITE_DONE) return failed("reading jobs for usage");
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
      if (auto r = each_job(jobs_, q, tally, q.limit); !r) return Error{r.error(), r.code()};
      return tally.rows();
    }
    for (Stmt* s : {&unfinished_, &finished_})
      if (auto r = each_job(*s, q, tally, 0); !r) return Error{r.error(), r.code()};
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
