// Store on one SQLite file: see storage/README.md for the schema, the migrations and the guarantees.
#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "storage/array_rows.hpp"
#include "storage/backup.hpp"
#include "storage/codec.hpp"
#include "storage/audit_rows.hpp"
#include "storage/history_rows.hpp"
#include "storage/job_rows.hpp"
#include "storage/schema.hpp"
#include "storage/state_file.hpp"
#include "storage/sqlite_db.hpp"
#include "storage/store.hpp"
#include "storage/token_rows.hpp"
#include "storage/usage_rows.hpp"

namespace gpuq::storage {
namespace {

// Only another process (an admin with the sqlite3 shell, a second gpuqd) can hold the write lock;
// the engine thread waits this long for it, then the commit fails with kUnavailable.
constexpr int kStoreBusyTimeoutMs = 1000;
constexpr int kCheckpointFrames = 1000;  // pages: SQLite's autocheckpoint default (4 MiB)
constexpr std::size_t kDefaultListLimit = 100;

class SqliteStore final : public Store {
 public:
  SqliteStore(std::string path, Db db, Db reader, std::unique_ptr<UsageReader> usage, ResourceNames& names)
      : path_(std::move(path)), db_(std::move(db)), rdb_(std::move(reader)), usage_reader_(std::move(usage)),
        names_(names) {
    // Replaces SQLite's autocheckpoint (commit() checkpoints instead).
    sqlite3_wal_hook(
        db_.get(),
        [](void* self, sqlite3*, const char*, int frames) {
          static_cast<SqliteStore*>(self)->wal_frames_ = frames;
          return SQLITE_OK;
        },
        this);
  }

  std::optional<SqliteError> prepare_statements();

  using Store::load;
  Result<void> load(const std::function<Result<void>(Loaded&)>& meta, const JobSink& jobs,
                    const RunSink& runs) override;
  Result<void> commit(const Batch& batch) override;
  Result<std::optional<JobRecord>> job(const std::string& id) override;
  Result<bool> has_job(const std::string& id) override;
  Result<bool> has_job_with_prefix(const std::string& prefix) override;
  Result<std::vector<JobRecord>> jobs(const JobFilter& filter) override {
    JobFilter f = filter;
    f.fold = false;
    auto listed = list(f);
    if (!listed) return Error{listed.error(), listed.code()};
    std::vector<ListEntry> entries = std::move(listed).value();
    std::vector<JobRecord> out;
    out.reserve(entries.size());
    for (ListEntry& e : entries) out.push_back(std::move(e.job));
    return out;
  }
  Result<std::vector<ListEntry>> list(const JobFilter& filter) override;
  Result<std::vector<EventRecord>> events_after(std::uint64_t seq, std::size_t limit) override;
  Result<std::vector<UsageRow>> usage(const UsageQuery& q) override { return usage_reader_->read(q); }
  Result<std::vector<TokenRecord>> tokens() override;
  Result<std::vector<AuditRecord>> audit(const AuditFilter& filter) override;
  Result<void> backup_to(const std::string& dest) override;
  Result<void> checked() override {
    std::lock_guard lock(check_mu_);
    if (check_.valid()) check_result_ = check_.get();
    return check_result_;
  }
  void check_in_background(std::future<Result<void>> check) { check_ = std::move(check); }

 private:
  Error failed(const std::string& doing) const { return failed_on(db_, doing); }
  // With rmu_ held. The transaction is ended, so the next read starts afresh.
  Error read_failed(const std::string& doing) {
    Error e = failed_on(rdb_, doing);
    if (reading_) {
      Stmt::Reset r(end_snapshot_);
      end_snapshot_.step();
      reading_ = false;
    }
    return e;
  }
  // With rmu_ held: the reads' snapshot, begun if there is none.
  std::optional<Error> read_snapshot();
  // f() with rmu_ held, in the reads' snapshot.
  template <class F>
  auto reading(F&& f) -> decltype(f());
  // With mu_ held: splits the members `batch` writes a row for from their arrays' rows, and
  // writes the batch's arrays (write_batch).
  Result<void> write_arrays(const Batch& batch);
  // With rmu_ held: find_member (array_rows.hpp) on the reader's statements.
  Result<std::optional<JobRecord>> member(const std::string& id, bool whole);
  // Decoding errors from a state file's contents name the file.
  Error in_file(const std::string& message, ErrorCode code) const {
    return code == ErrorCode::kFailedPrecondition ? Error{"state file " + path_ + ": " + message, code}
                                                  : Error{message, code};
  }
  Error failed_on(const Db& db, const std::string& doing) const {
    return {"state file " + path_ + ": " + doing + ": " + sqlite3_errmsg(db.get()), ErrorCode::kUnavailable};
  }
  Result<void> write_batch(const Batch& batch);
  Result<std::vector<JobRecord>> read_jobs(Stmt& s, std::size_t expected, const Db& db);

  // Two connections, each with its statements and its lock: the writer (load, commit) and the
  // reader (the API's reads), so a read never waits for a commit's fsync. Under WAL the reader
  // sees the last committed state.
  std::mutex check_mu_;
  std::future<Result<void>> check_;  // the integrity check, when it runs in the background
  Result<void> check_result_ = Ok();
  std::mutex mu_;   // the writer's statements
  std::mutex rmu_;  // the reader's statements and its transaction
  // The reads share one read transaction (a snapshot) from the first read after a commit to
  // the next commit, which ends it: a read after commit() returned sees the commit, a stream of
  // reads between two commits (Submit's id checks) does not pay for a new snapshot and a cold
  // page cache each time, and no snapshot outlives a commit (it would hold the WAL back).
  bool reading_ = false;
  // The WAL is checkpointed by commit() once it holds kCheckpointFrames or more, after the
  // commit has ended the reads' snapshot: not inside COMMIT, as SQLite's autocheckpoint would,
  // where that snapshot (older than the commit) stops the checkpoint short of the WAL's end, so
  // the WAL is never restarted and grows with every commit (and each commit copies a little of
  // it into the database and syncs once more).
  int wal_frames_ = 0;  // after the last commit (sqlite3_wal_hook), with mu_ held
  void end_snapshot() {
    std::lock_guard lock(rmu_);
    if (!reading_) return;
    Stmt::Reset r(end_snapshot_);
    end_snapshot_.step();
    reading_ = false;
  }
  std::string path_;
  Db db_;  // declared before the statements: they are finalized first
  Db rdb_;
  std::unique_ptr<UsageReader> usage_reader_;
  ResourceNames& names_;
  std::mutex names_mu_;  // for ResourceInterner; load() interns from two threads
  Stmt begin_, begin_read_, commit_, rollback_;
  Stmt put_queue_, delete_queue_, put_node_, put_job_, put_event_, put_history_, delete_history_, put_token_;
  Stmt put_audit_, prune_audit_, prune_jobs_, prune_events_;
  Stmt put_array_, array_at_, set_unsplit_, prune_arrays_, prune_array_events_, unfinished_arrays_;
  Stmt all_queues_, all_nodes_, all_history_, count_unfinished_, unfinished_, last_seq_, last_number_;
  // On the reader connection:
  Stmt begin_snapshot_, end_snapshot_;
  Stmt job_by_id_, job_exists_, job_prefixed_, jobs_any_, jobs_in_queue_, jobs_unfinished_, events_after_, all_tokens_;
  Stmt member_rows_, member_positions_, array_prefixed_, array_named_, array_page_, array_events_;
  Stmt audit_page_;
};

std::optional<SqliteError> SqliteStore::prepare_statements() {
  const std::string cols = kJobColumns;
  const std::string list_where =
      " AND (?2 = '' OR owner = ?2) AND (?3 = 0 OR ((?3 >> state) & 1) = 1) ORDER BY number "
      "LIMIT ?4";
  const std::string s_unfinished =
      "SELECT " + cols + " FROM jobs WHERE state < 4 ORDER BY number";
  const std::string s_by_id = "SELECT " + cols + " FROM jobs WHERE id = ?1";
  const std::string s_any = "SELECT " + cols + " FROM jobs WHERE number > ?1" + list_where;
  const std::string s_queue =
      "SELECT " + cols + " FROM jobs WHERE queue = ?5 AND number > ?1" + list_where;
  // Unfinished states alone, in any queue: through the partial index jobs_unfinished, so that
  // the finished jobs before them (however many) are not read.
  const std::string s_unfinished_page =
      "SELECT " + cols + " FROM jobs WHERE number > ?1 AND state < 4" + list_where;
  const std::string job_cols = kJobRowColumns, job_values = kJobRowValues;
  const std::string s_put_array = "INSERT INTO array_rows(" + job_cols + ", " + kArrayRowColumns + ") VALUES(" +
                                  job_values + ", " + kArrayRowValues + ")";
  const std::string arrays = array_row_select();
  const std::string s_unfinished_arrays = arrays + " WHERE unsplit <> '' AND state < 4 ORDER BY number";
  const std::string s_member_rows = arrays + " WHERE array_id = ?1 AND unsplit <> '' ORDER BY number DESC";
  // The arrays with unsplit members numbered over ?1 (from the one holding ?1 on), as jobs_any_
  // and jobs_in_queue_ filter (?5: '' any queue).
  const std::string s_array_page =
      arrays + " WHERE unsplit <> '' AND number >= COALESCE((SELECT MAX(number) FROM array_rows WHERE number <= ?1), 0) "
               "AND last_number > ?1 AND (?5 = '' OR queue = ?5)" + list_where.substr(0, list_where.find(" ORDER BY")) +
               " ORDER BY number";
  const std::string s_array_events = arrays + " WHERE last_seq > ?1 ORDER BY number";
  const std::pair<Stmt*, const char*> all[] = {
      {&begin_, "BEGIN IMMEDIATE"},
      {&begin_read_, "BEGIN DEFERRED"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
      {&put_queue_, "INSERT OR REPLACE INTO queues(name, spec) VALUES(?1, ?2)"},
      {&delete_queue_, "DELETE FROM queues WHERE name = ?1"},
      {&put_node_, "INSERT OR REPLACE INTO nodes(name, spec) VALUES(?1, ?2)"},
      {&put_job_,
       "INSERT INTO jobs(number, id, queue, owner, name, state, priority, priority_text, "
       "submitted_at, admitted_at, finished_at, flavor, gpu_milli, attempts, preemptions, "
       "exit_code, preempted_by, reason, body, gpu_samples, gpu_util_sum, gpu_memory_peak_mib) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
       "?22) "
       "ON CONFLICT(number) DO UPDATE SET id = excluded.id, queue = excluded.queue, "
       "owner = excluded.owner, name = excluded.name, state = excluded.state, "
       "priority = excluded.priority, priority_text = excluded.priority_text, "
       "submitted_at = excluded.submitted_at, admitted_at = excluded.admitted_at, "
       "finished_at = excluded.finished_at, flavor = excluded.flavor, "
       "gpu_milli = excluded.gpu_milli, attempts = excluded.attempts, "
       "preemptions = excluded.preemptions, exit_code = excluded.exit_code, "
       "preempted_by = excluded.preempted_by, reason = excluded.reason, body = excluded.body, "
       "gpu_samples = excluded.gpu_samples, gpu_util_sum = excluded.gpu_util_sum, "
       "gpu_memory_peak_mib = excluded.gpu_memory_peak_mib"},
      {&put_event_,
       "INSERT INTO events(seq, at, job, queue, from_state, to_state, reason, flavor) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
      {&put_history_, "INSERT OR REPLACE INTO usage_history(queue, at, average) VALUES(?1, ?2, ?3)"},
      {&delete_history_, "DELETE FROM usage_history WHERE queue = ?1"},
      {&put_token_, kPutToken},
      {&put_audit_, kPutAudit},
      {&prune_audit_, kPruneAudit},
      // jobRetention: the oldest finished jobs, and events in the oldest window, never the last
      // job or event (their numbers are where the next ones count on from).
      {&prune_jobs_,
       "DELETE FROM jobs WHERE number IN (SELECT number FROM jobs WHERE state >= 4 AND "
       "finished_at < ?1 ORDER BY finished_at LIMIT ?2) AND number < MAX((SELECT MAX(number) FROM jobs), "
       "(SELECT COALESCE(MAX(last_number), 0) FROM array_rows))"},
      {&prune_events_,
       "DELETE FROM events WHERE seq IN (SELECT seq FROM (SELECT seq, at FROM events ORDER BY seq "
       "LIMIT ?2) WHERE at < ?1) AND seq < MAX((SELECT MAX(seq) FROM events), "
       "(SELECT COALESCE(MAX(last_seq), 0) FROM array_rows))"},
      {&all_queues_, "SELECT spec FROM queues ORDER BY name"},
      {&all_nodes_, "SELECT spec FROM nodes ORDER BY name"},
      {&all_history_, "SELECT queue, at, average FROM usage_history ORDER BY queue"},
      {&count_unfinished_, "SELECT count(*) FROM jobs WHERE state < 4"},
      {&unfinished_, s_unfinished.c_str()},
      // Counting on from arrays' members and events too (an array's row may hold the last ones).
      {&last_seq_, "SELECT MAX((SELECT COALESCE(MAX(seq), 0) FROM events), "
                   "(SELECT COALESCE(MAX(last_seq), 0) FROM array_rows))"},
      {&last_number_, "SELECT MAX((SELECT COALESCE(MAX(number), 0) FROM jobs), "
                      "(SELECT COALESCE(MAX(last_number), 0) FROM array_rows))"},
      {&put_array_, s_put_array.c_str()},
      // The row a job number would be a member of, if any still has unsplit members.
      {&array_at_, "SELECT number, last_number, unsplit FROM array_rows WHERE unsplit <> '' AND number <= ?1 "
                   "ORDER BY number DESC LIMIT 1"},
      {&set_unsplit_, "UPDATE array_rows SET unsplit = ?2 WHERE number = ?1"},
      // jobRetention: an array's row once every member has its own row, as old as the jobs
      // pruned, and never the one holding the last number or seq.
      {&prune_arrays_,
       "DELETE FROM array_rows WHERE unsplit = '' AND submitted_at < ?1 AND "
       "last_number <= (SELECT COALESCE(MAX(number), 0) FROM jobs) AND "
       "last_seq < (SELECT COALESCE(MAX(seq), 0) FROM events)"},
      // ... and before that, its members' events once they are as old (the row keeps standing for
      // its unsplit members, with no events: as the events rows pruned).
      {&prune_array_events_,
       "UPDATE array_rows SET events = '[]' WHERE events <> '[]' AND submitted_at < ?1 AND "
       "last_seq < (SELECT COALESCE(MAX(seq), 0) FROM events)"},
      {&unfinished_arrays_, s_unfinished_arrays.c_str()},
  };
  for (const auto& [stmt, sql] : all)
    if (auto e = Stmt::prepare(db_, sql, *stmt)) return e;
  const std::pair<Stmt*, const char*> reads[] = {
      {&begin_snapshot_, "BEGIN DEFERRED"},
      {&end_snapshot_, "COMMIT"},
      {&member_rows_, s_member_rows.c_str()},
      {&member_positions_,
       "SELECT number, indices, unsplit FROM array_rows WHERE array_id = ?1 AND unsplit <> '' ORDER BY number DESC"},
      {&array_prefixed_, "SELECT 1 FROM array_rows WHERE array_id >= ?1 AND array_id < ?2 LIMIT 1"},
      {&array_named_, "SELECT 1 FROM array_rows WHERE array_id = ?1 LIMIT 1"},
      {&array_page_, s_array_page.c_str()},
      {&array_events_, s_array_events.c_str()},
      {&job_by_id_, s_by_id.c_str()},
      {&job_exists_, "SELECT 1 FROM jobs WHERE id = ?1"},
      // Through the id index: ids from the prefix up to the prefix with its last byte + 1.
      {&job_prefixed_, "SELECT 1 FROM jobs WHERE id >= ?1 AND id < ?2 LIMIT 1"},
      {&all_tokens_, kAllTokens},
      {&audit_page_, kAuditPage},
      {&jobs_any_, s_any.c_str()},
      {&jobs_in_queue_, s_queue.c_str()},
      {&jobs_unfinished_, s_unfinished_page.c_str()},
      {&events_after_,
       "SELECT seq, at, job, queue, from_state, to_state, reason, flavor FROM events WHERE seq > ?1 "
       "ORDER BY seq LIMIT ?2"},
  };
  for (const auto& [stmt, sql] : reads)
    if (auto e = Stmt::prepare(rdb_, sql, *stmt)) return e;
  return std::nullopt;
}

Result<std::vector<JobRecord>> SqliteStore::read_jobs(Stmt& s, std::size_t expected, const Db& db) {
  auto jobs = read_all_jobs(s, expected, names_, [&] { return failed_on(db, "reading jobs"); });
  if (!jobs && jobs.code() == ErrorCode::kFailedPrecondition)
    return Error{"state file " + path_ + ": " + jobs.error(), jobs.code()};
  return jobs;
}

Result<void> SqliteStore::load(const std::function<Result<void>(Loaded&)>& meta, const JobSink& jobs,
                               const RunSink& runs) {
  std::lock_guard lock(mu_);
  // One read transaction: every read sees the same committed state.
  if (Stmt::Reset r(begin_read_); begin_read_.step() != SQLITE_DONE) return failed("load");
  auto result = [&]() -> Result<void> {
    Loaded out;
    int rc;
    {
      Stmt::Reset r(all_queues_);
      while ((rc = all_queues_.step()) == SQLITE_ROW) {
        auto q = decode_queue(all_queues_.text(0), names_);
        if (!q) return Error{"state file " + path_ + ": " + q.error(), q.code()};
        out.queues.push_back(std::move(q).value());
      }
      if (rc != SQLITE_DONE) return failed("reading queues");
    }
    {
      Stmt::Reset r(all_nodes_);
      while ((rc = all_nodes_.step()) == SQLITE_ROW) {
        auto n = decode_node(all_nodes_.text(0), names_);
        if (!n) return Error{"state file " + path_ + ": " + n.error(), n.code()};
        out.nodes.push_back(std::move(n).value());
      }
      if (rc != SQLITE_DONE) return failed("reading nodes");
    }
    auto history_failed = [&] { return failed("reading the usage history"); };
    if (auto h = read_history_rows(all_history_, path_, out, history_failed); !h) return h;
    for (auto [stmt, field] : {std::pair{&last_seq_, &out.last_event_seq},
                               std::pair{&last_number_, &out.last_job_number}}) {
      Stmt::Reset r(*stmt);
      if (stmt->step() != SQLITE_ROW) return failed("reading counters");
      *field = static_cast<std::uint64_t>(stmt->int64(0));
    }
    {
      Stmt::Reset reset_count(count_unfinished_);
      if (count_unfinished_.step() != SQLITE_ROW) return failed("counting unfinished jobs");
      out.unfinished_count = static_cast<std::size_t>(count_unfinished_.int64(0));
    }
    // The arrays' unsplit members, as runs of consecutive numbers (one array row has few).
    std::vector<ArrayRows> arrays;
    {
      Stmt::Reset ra(unfinished_arrays_);
      ResourceInterner interner(names_, names_mu_);
      while ((rc = unfinished_arrays_.step()) == SQLITE_ROW)
        if (auto a = read_array_row(unfinished_arrays_, arrays.emplace_back(), interner); !a) return in_file(a.error(), a.code());
      if (rc != SQLITE_DONE) return failed("reading array_rows");
    }
    RunMerger merger(arrays, jobs, runs);
    out.unfinished_in_rows = merger.members();
    out.unfinished_count += out.unfinished_in_rows;
    if (auto m = meta(out); !m) return m;
    Stmt::Reset r(unfinished_);
    auto streamed = stream_all_jobs(unfinished_, names_, [&] { return failed("reading jobs"); },
                                    [&](std::vector<JobRecord>& chunk) { return merger.chunk(chunk); });
    if (!streamed) return in_file(streamed.error(), streamed.code());
    return merger.rest();
  }();
  Stmt::Reset r(commit_);
  commit_.step();  // ends the read transaction; nothing to write
  return result;
}

Result<void> SqliteStore::commit(const Batch& batch) {
  if (auto c = checked(); !c) return c;
  std::lock_guard lock(mu_);
  if (batch.empty()) return Ok();
  {
    Stmt::Reset r(begin_);
    if (begin_.step() != SQLITE_DONE) return failed("commit: cannot begin a write transaction");
  }
  auto written = write_batch(batch);
  if (written) {
    Stmt::Reset r(commit_);
    if (commit_.step() != SQLITE_DONE) {
      written = failed("commit");
    } else {
      end_snapshot();
      // PASSIVE: waits for no reader. A failure here loses nothing (the commit is in the WAL);
      // the next commit tries again.
      if (wal_frames_ >= kCheckpointFrames)
        sqlite3_wal_checkpoint_v2(db_.get(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    }
  }
  if (!written && sqlite3_get_autocommit(db_.get()) == 0) {
    // After some errors (a full disk, I/O) SQLite has already rolled back; otherwise do it here.
    Stmt::Reset r(rollback_);
    rollback_.step();
  }
  return written;
}

Result<void> SqliteStore::write_batch(const Batch& batch) {
  auto unknown = [&](const std::string& what, const std::optional<std::string>& slot) {
    return Error{"commit: " + what + " uses " + *slot + ", which has no name in this process's "
                 "ResourceNames; nothing was written", ErrorCode::kInvalidArgument};
  };
  for (const auto& q : batch.queues) {
    if (auto u = unknown_resource(q, names_)) return unknown("queue " + q.name.value, u);
    Stmt::Reset r(put_queue_);
    put_queue_.bind(1, q.name.value);
    put_queue_.bind(2, encode_queue(q, names_));
    if (put_queue_.step() != SQLITE_DONE) return failed("commit: writing queue " + q.name.value);
  }
  for (const auto& name : batch.deleted_queues)
    for (Stmt* s : {&delete_queue_, &delete_history_}) {
      Stmt::Reset r(*s);
      s->bind(1, name);
      if (s->step() != SQLITE_DONE) return failed("commit: deleting queue " + name);
    }
  for (const auto& n : batch.nodes) {
    if (auto u = unknown_resource(n, names_)) return unknown("node " + n.name, u);
    Stmt::Reset r(put_node_);
    put_node_.bind(1, n.name);
    put_node_.bind(2, encode_node(n, names_));
    if (put_node_.step() != SQLITE_DONE) return failed("commit: writing node " + n.name);
  }
  if (auto a = write_arrays(batch); !a) return a;
  for (const auto& j : batch.jobs) {
    if (j.number == 0)
      return Error{"commit: job " + j.spec.id.value + " has no number (0); nothing was written",
                   ErrorCode::kInvalidArgument};
    if (auto u = unknown_resource(j.spec, names_)) return unknown("job " + j.spec.id.value, u);
    Stmt::Reset r(put_job_);
    Stmt& s = put_job_;
    bind_job(s, j, encode_job_body(j, names_));
    if (s.step() != SQLITE_DONE) return failed("commit: writing job " + j.spec.id.value);
  }
  for (const auto& e : batch.events) {
    Stmt::Reset r(put_event_);
    Stmt& s = put_event_;
    bind_event(s, e);
    if (s.step() != SQLITE_DONE)
      return failed("commit: writing event " + std::to_string(e.seq));
  }
  if (batch.jobs_prune_before > 0) {
    Stmt::Reset rj(prune_jobs_);
    prune_jobs_.bind(1, batch.jobs_prune_before);
    prune_jobs_.bind(2, std::int64_t{kJobPruneBatch});
    if (prune_jobs_.step() != SQLITE_DONE) return failed("commit: pruning finished jobs (jobRetention)");
    Stmt::Reset re(prune_events_);
    prune_events_.bind(1, batch.jobs_prune_before);
    prune_events_.bind(2, std::int64_t{3 * kJobPruneBatch});
    if (prune_events_.step() != SQLITE_DONE) return failed("commit: pruning events (jobRetention)");
    for (Stmt* st : {&prune_array_events_, &prune_arrays_}) {
      Stmt::Reset ra(*st);
      st->bind(1, batch.jobs_prune_before);
      if (st->step() != SQLITE_DONE) return failed("commit: pruning array rows (jobRetention)");
    }
  }
  auto history = write_history_rows(put_history_, batch.history, [&](const std::string& queue) {
    return failed("commit: writing the usage history of queue " + queue);
  });
  if (!history) return history;
  auto tokens = write_token_rows(put_token_, batch.tokens,
                                 [&](const std::string& id) { return failed("commit: writing token " + id); });
  if (!tokens) return tokens;
  return write_audit_rows(put_audit_, prune_audit_, batch, [&] { return failed("commit: writing the audit log"); });
}

Result<void> SqliteStore::write_arrays(const Batch& batch) {
  return write_batch_arrays(batch, ArrayWrites{put_array_, array_at_, set_unsplit_}, names_,
                            [&](const std::string& doing) { return failed("commit: " + doing); }, path_);
}

Result<std::optional<JobRecord>> SqliteStore::member(const std::string& id, bool whole) {
  ResourceInterner interner(names_, names_mu_);
  auto m = find_member(whole ? member_rows_ : member_positions_, whole, id, interner);
  if (!m && m.code() == ErrorCode::kUnavailable) return read_failed("reading array_rows for job " + id);
  if (!m) return in_file(m.error(), m.code());
  return m;
}

Result<std::optional<JobRecord>> SqliteStore::job(const std::string& id) {
  return reading([&]() -> Result<std::optional<JobRecord>> {
    Stmt::Reset r(job_by_id_);
    job_by_id_.bind(1, id);
    const int rc = job_by_id_.step();
    if (rc == SQLITE_DONE) return member(id, true);
    if (rc != SQLITE_ROW) return read_failed("reading job " + id);
    std::optional<JobRecord> j(std::in_place);
    ResourceInterner interner(names_, names_mu_);
    if (auto d = decode_job(RowView::of(job_by_id_), *j, interner); !d)
      return Error{"state file " + path_ + ": " + d.error(), d.code()};
    return j;
  });
}

std::optional<Error> SqliteStore::read_snapshot() {
  if (reading_) return std::nullopt;
  Stmt::Reset r(begin_snapshot_);
  if (begin_snapshot_.step() != SQLITE_DONE) return read_failed("starting a read");
  reading_ = true;
  return std::nullopt;
}

template <class F>
auto SqliteStore::reading(F&& f) -> decltype(f()) {
  std::lock_guard lock(rmu_);
  if (auto e = read_snapshot()) return std::move(*e);
  return f();
}

Result<bool> SqliteStore::has_job(const std::string& id) {
  return reading([&]() -> Result<bool> {
    Stmt::Reset r(job_exists_);
    job_exists_.bind(1, id);
    const int rc = job_exists_.step();
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) return read_failed("looking up job " + id);
    auto m = member(id, false);
    if (!m) return Error{m.error(), m.code()};
    return m->has_value();
  });
}

Result<bool> SqliteStore::has_job_with_prefix(const std::string& prefix) {
  std::string end = prefix;
  if (end.empty() || static_cast<unsigned char>(end.back()) == 0xFF) return true;  // not a job id's prefix: may be
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return reading([&]() -> Result<bool> {
    Stmt::Reset r(job_prefixed_);
    job_prefixed_.bind(1, prefix);
    job_prefixed_.bind(2, end);
    int rc = job_prefixed_.step();
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) return read_failed("looking up jobs " + prefix + "*");
    // Members in arrays' rows: "<array>_<index>" starts with the prefix when the array's id does,
    // or may when the prefix is the array's id, '_' and digits.
    Stmt::Reset ra(array_prefixed_);
    array_prefixed_.bind(1, prefix);
    array_prefixed_.bind(2, end);
    if ((rc = array_prefixed_.step()) == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) return read_failed("looking up arrays " + prefix + "*");
    for (auto cut = prefix.rfind('_'); cut != std::string::npos && cut > 0; cut = prefix.rfind('_', cut - 1)) {
      if (!std::all_of(prefix.begin() + static_cast<std::ptrdiff_t>(cut) + 1, prefix.end(),
                       [](char c) { return c >= '0' && c <= '9'; }))
        break;
      Stmt::Reset rn(array_named_);
      array_named_.bind(1, prefix.substr(0, cut));
      if ((rc = array_named_.step()) == SQLITE_ROW) return true;
      if (rc != SQLITE_DONE) return read_failed("looking up arrays " + prefix + "*");
      break;
    }
    return false;
  });
}

Result<std::vector<ListEntry>> SqliteStore::list(const JobFilter& filter) {
  return reading([&]() -> Result<std::vector<ListEntry>> {
    std::int64_t mask = 0;
    bool unfinished = !filter.states.empty();
    for (auto st : filter.states) {
      mask |= std::int64_t{1} << state_code(st);
      unfinished = unfinished && state_code(st) < 4;  // as the index jobs_unfinished
    }
    Stmt& s = !filter.queue.empty() ? jobs_in_queue_ : unfinished ? jobs_unfinished_ : jobs_any_;
    const std::size_t limit = filter.limit == 0 ? kDefaultListLimit : filter.limit;
    Stmt::Reset r(s);
    s.bind(1, static_cast<std::int64_t>(filter.after_number));
    s.bind(2, filter.owner);
    s.bind(3, mask);
    s.bind(4, static_cast<std::int64_t>(limit));
    if (!filter.queue.empty()) s.bind(5, filter.queue);
    auto read = read_jobs(s, std::min<std::size_t>(limit, 1000), rdb_);
    if (!read) return Error{read.error(), read.code()};
    std::vector<JobRecord> rows = std::move(read).value();
    // The members still in arrays' rows, merged in by number.
    Stmt& a = array_page_;
    Stmt::Reset ra(a);
    a.bind(1, static_cast<std::int64_t>(filter.after_number));
    a.bind(2, filter.owner);
    a.bind(3, mask);
    a.bind(5, filter.queue);
    ResourceInterner interner(names_, names_mu_);
    MemberCursor members(a, interner, filter.after_number);
    auto out = merge_members(std::move(rows), members, limit, filter.fold);
    if (!out) return out.code() == ErrorCode::kUnavailable ? read_failed("reading array_rows") : in_file(out.error(), out.code());
    return out;
  });
}

Result<std::vector<EventRecord>> SqliteStore::events_after(std::uint64_t seq, std::size_t limit) {
  return reading([&]() -> Result<std::vector<EventRecord>> {
    Stmt& s = events_after_;
    Stmt::Reset r(s);
    s.bind(1, static_cast<std::int64_t>(seq));
    s.bind(2, static_cast<std::int64_t>(limit));
    std::vector<EventRecord> rows;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      EventRecord& e = rows.emplace_back();
      e.seq = static_cast<std::uint64_t>(s.int64(0));
      e.at = s.int64(1);
      e.job = s.text(2);
      e.queue = s.text(3);
      if (!s.is_null(4)) e.from = state_from_code(s.int64(4));
      auto to = state_from_code(s.int64(5));
      if (!to || (!s.is_null(4) && !e.from))
        return Error{"state file " + path_ + ": event " + std::to_string(e.seq) +
                         " has an unknown state code",
                     ErrorCode::kFailedPrecondition};
      e.to = *to;
      e.reason = s.text(6);
      e.flavor = s.text(7);
    }
    if (rc != SQLITE_DONE) return read_failed("reading events");
    // The arrays' members' events (their rows' runs), merged in by seq.
    Stmt::Reset ra(array_events_);
    array_events_.bind(1, static_cast<std::int64_t>(seq));
    ResourceInterner interner(names_, names_mu_);
    EventRunCursor runs(array_events_, interner, seq);
    auto out = merge_events(std::move(rows), runs, limit);
    if (!out) return out.code() == ErrorCode::kUnavailable ? read_failed("reading array_rows") : in_file(out.error(), out.code());
    return out;
  });
}

Result<std::vector<TokenRecord>> SqliteStore::tokens() {
  return reading([&]() -> Result<std::vector<TokenRecord>> {
    return read_token_rows(all_tokens_, [&] { return read_failed("reading the tokens"); });
  });
}

Result<std::vector<AuditRecord>> SqliteStore::audit(const AuditFilter& filter) {
  return reading([&]() -> Result<std::vector<AuditRecord>> {
    return read_audit_rows(audit_page_, filter, [&] { return read_failed("reading the audit log"); });
  });
}

Result<void> SqliteStore::backup_to(const std::string& dest) {
  // No lock: the copy goes through its own connection and never touches the cached statements.
  return backup_file(path_, dest);
}

}  // namespace

Result<Loaded> Store::load() {
  Loaded all;
  auto r = load(
      [&](Loaded& meta) {
        all = std::move(meta);
        all.unfinished.reserve(all.unfinished_count);
        return Result<void>(Ok());
      },
      [&](std::vector<JobRecord>& chunk) {
        for (JobRecord& j : chunk) all.unfinished.push_back(std::move(j));
        return Result<void>(Ok());
      });
  if (!r) return Error{r.error(), r.code()};
  return all;
}

Result<std::unique_ptr<Store>> Store::open(const std::string& path, ResourceNames& names, Check check) {
  SqliteError e;
  if (const std::string was = make_private(path); !was.empty())
    spdlog::warn("event=state_file_private note=\"made mode 0600: {}\"", was);
  // NOMUTEX: SQLite's own per-call locking is redundant under the store's mutex (and costs ~10% of
  // load()); the backup thread has a connection of its own.
  Db db = Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, e);
  if (!db) return unavailable(path, "cannot open or create", e);
  sqlite3_busy_timeout(db.get(), kStoreBusyTimeoutMs);
  // A write-protected file opens read-only without an error: gpuqd could never commit.
  if (sqlite3_db_readonly(db.get(), "main") == 1)
    return Error{"state file " + path + " can only be opened read-only; gpuqd must write it: "
                 "check its permissions and those of its directory",
                 ErrorCode::kUnavailable};
  auto version = identify(db, path, check == Check::kBeforeOpen);
  if (!version) return Error{version.error(), version.code()};
  // A file to migrate is checked first, whatever was asked: a migration must not write into a
  // corrupt file.
  const bool background = check == Check::kInBackground && *version == kSchemaVersion;
  if (check == Check::kInBackground && !background)
    if (auto c = quick_check(db, path); !c) return Error{c.error(), c.code()};
  auto mode = query_text(db, "PRAGMA journal_mode = WAL", e);
  if (!mode) return unavailable(path, "cannot switch to WAL", e);
  if (*mode != "wal")
    return Error{"state file " + path + ": journal_mode is " + *mode + ", not wal",
                 ErrorCode::kUnavailable};
  if (auto err = db.exec("PRAGMA synchronous = FULL")) return unavailable(path, "synchronous", *err);
  if (*version < kSchemaVersion) {
    auto finish = [&](Db& d) -> std::optional<SqliteError> {
      if (*version > 8) return std::nullopt;
      auto up = upgrade_array_rows(d, names);  // schema 8's arrays not yet settled
      if (!up) return SqliteError{SQLITE_ERROR, up.error()};
      return std::nullopt;
    };
    if (auto err = migrate(db, *version, kSchemaVersion, migrations(), finish))
      return unavailable(path, "migrating from schema " + std::to_string(*version), *err);
  }
  Db reader = Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, e);
  if (!reader) return unavailable(path, "cannot open a second connection for reads", e);
  sqlite3_busy_timeout(reader.get(), kStoreBusyTimeoutMs);
  if (auto err = reader.exec("PRAGMA query_only = 1")) return unavailable(path, "query_only", *err);
  auto usage = UsageReader::open(path);
  if (!usage) return Error{usage.error(), usage.code()};
  auto store = std::make_unique<SqliteStore>(path, std::move(db), std::move(reader), std::move(usage).value(), names);
  if (auto err = store->prepare_statements()) return unavailable(path, "preparing statements", *err);
  if (background)
    store->check_in_background(std::async(std::launch::async, [path]() -> Result<void> {
      SqliteError e;
      Db db = Db::open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, e);
      if (!db) return unavailable(path, "cannot open for the integrity check", e);
      return quick_check(db, path);
    }));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace gpuq::storage
