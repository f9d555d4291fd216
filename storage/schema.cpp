#include "storage/schema.hpp"

#include <string>

#include "storage/store.hpp"

namespace gpuq::storage {

namespace {

// v1. Job states are the fixed codes of codec.hpp (0..3 unfinished). The cold part of a job
// (pod sets, flavors, options, run spec, placement) is JSON in `body`; everything a query filters
// or sorts on is a column. gpu_milli is derived from the pod sets at write time for usage().
constexpr const char* kV1 = R"sql(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE queues (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE jobs (
  number        INTEGER PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,
  queue         TEXT NOT NULL,
  owner         TEXT NOT NULL,
  name          TEXT NOT NULL,
  state         INTEGER NOT NULL,
  priority      INTEGER NOT NULL,
  priority_text TEXT NOT NULL,
  submitted_at  INTEGER NOT NULL,
  admitted_at   INTEGER NOT NULL,
  finished_at   INTEGER NOT NULL,
  flavor        TEXT NOT NULL,
  gpu_milli     INTEGER NOT NULL,
  attempts      INTEGER NOT NULL,
  preemptions   INTEGER NOT NULL,
  exit_code     INTEGER NOT NULL,
  preempted_by  TEXT NOT NULL,
  reason        TEXT NOT NULL,
  body          TEXT NOT NULL
);
CREATE INDEX jobs_unfinished ON jobs(number) WHERE state < 4;
CREATE INDEX jobs_by_queue ON jobs(queue, number);
CREATE INDEX jobs_by_admitted ON jobs(admitted_at) WHERE admitted_at > 0;
CREATE TABLE events (
  seq        INTEGER PRIMARY KEY,
  at         INTEGER NOT NULL,
  job        TEXT NOT NULL,
  queue      TEXT NOT NULL,
  from_state INTEGER,
  to_state   INTEGER NOT NULL,
  reason     TEXT NOT NULL
);
)sql";

// v2. Each queue's fair-share usage history as last checkpointed: the decayed averages as of
// `at`, as JSON by resource name ({"gpu": 1500.25}). A file at v1 gets the table empty: every
// queue starts with no history, as before.
constexpr const char* kV2 = R"sql(
CREATE TABLE usage_history (
  queue   TEXT PRIMARY KEY,
  at      INTEGER NOT NULL,
  average TEXT NOT NULL
) WITHOUT ROWID;
)sql";

// v3. Bearer tokens (docs/tasks/tenants-and-security.md): the SHA-256 of each secret, never the secret; kept after
// they expire or are revoked (revoked_at > 0) so a refusal can say which.
constexpr const char* kV3 = R"sql(
CREATE TABLE tokens (
  id         TEXT PRIMARY KEY,
  user       TEXT NOT NULL,
  hash       TEXT NOT NULL UNIQUE,
  note       TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  revoked_at INTEGER NOT NULL
) WITHOUT ROWID;
)sql";

// v4. The audit log (docs/tasks/tenants-and-security.md, Audit): every call that changed or tried to change the
// state, written in the transaction of its change; pruned by age (auditRetention).
constexpr const char* kV4 = R"sql(
CREATE TABLE audit (
  seq    INTEGER PRIMARY KEY,
  at     INTEGER NOT NULL,
  user   TEXT NOT NULL,
  origin TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  result TEXT NOT NULL
);
CREATE INDEX audit_by_time ON audit(at);
CREATE INDEX audit_by_user ON audit(user, seq);
)sql";

// v5. Finished jobs by when they ended, for pruning them (jobRetention) without a scan.
constexpr const char* kV5 = R"sql(
CREATE INDEX jobs_by_finished ON jobs(finished_at) WHERE state >= 4;
)sql";

// v6. Accounting (Admin.Usage): a job's events in order through an index (its admissions,
// preemptions and end make its attempts; a scan of the whole table per job would not do), and
// the flavor a job holds on its events to Admitted, Running or Preempting, so that each
// admission is charged to its own flavor (the job row keeps only the last one, and not while
// the job waits again). Events written before have flavor '': the job row's flavor stands in.
constexpr const char* kV6 = R"sql(
ALTER TABLE events ADD COLUMN flavor TEXT NOT NULL DEFAULT '';
CREATE INDEX events_by_job ON events(job, seq);
)sql";

// v7. GPU use as the local executor samples it (store.hpp: GpuUse), as columns so that usage()
// reads a job's mean utilization without decoding its body. Jobs written before: never sampled.
constexpr const char* kV7 = R"sql(
ALTER TABLE jobs ADD COLUMN gpu_samples INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN gpu_util_sum INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN gpu_memory_peak_mib INTEGER NOT NULL DEFAULT 0;
)sql";

// v8. A job array as submitted (store.hpp: ArrayRows): one row, written in its submission's
// transaction; gpuqd 8 wrote its members' jobs and events rows in the next transaction and
// deleted the row (v9 keeps it). The first member's job columns, then the array's.
constexpr const char* kV8 = R"sql(
CREATE TABLE array_rows (
  number        INTEGER PRIMARY KEY,
  id            TEXT NOT NULL,
  queue         TEXT NOT NULL,
  owner         TEXT NOT NULL,
  name          TEXT NOT NULL,
  state         INTEGER NOT NULL,
  priority      INTEGER NOT NULL,
  priority_text TEXT NOT NULL,
  submitted_at  INTEGER NOT NULL,
  admitted_at   INTEGER NOT NULL,
  finished_at   INTEGER NOT NULL,
  flavor        TEXT NOT NULL,
  gpu_milli     INTEGER NOT NULL,
  attempts      INTEGER NOT NULL,
  preemptions   INTEGER NOT NULL,
  exit_code     INTEGER NOT NULL,
  preempted_by  TEXT NOT NULL,
  reason        TEXT NOT NULL,
  body          TEXT NOT NULL,
  gpu_samples   INTEGER NOT NULL,
  gpu_util_sum  INTEGER NOT NULL,
  gpu_memory_peak_mib INTEGER NOT NULL,
  indices       TEXT NOT NULL,
  first_seq     INTEGER NOT NULL,
  events        TEXT NOT NULL
);
)sql";

// v9. An array's row stays while any member is unchanged since submission (store.hpp:
// ArrayRows; README.md in this folder: Arrays): the members it still stands for (`unsplit`, positions), the
// array's id, and its last number and seq, for the reads that merge its members and events
// with the `jobs` and `events` rows. A row written by schema 8 (a crash before its settle) has
// NULL there: Store::open fills them in (storage/array_rows.cpp, upgrade_array_rows).
constexpr const char* kV9 = R"sql(
ALTER TABLE array_rows ADD COLUMN array_id TEXT;
ALTER TABLE array_rows ADD COLUMN last_number INTEGER;
ALTER TABLE array_rows ADD COLUMN last_seq INTEGER;
ALTER TABLE array_rows ADD COLUMN unsplit TEXT;
CREATE INDEX array_rows_by_array ON array_rows(array_id, number);
CREATE INDEX array_rows_by_last_seq ON array_rows(last_seq);
CREATE INDEX array_rows_unsplit ON array_rows(number) WHERE unsplit <> '';
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> steps{{kV1}, {kV2}, {kV3}, {kV4}, {kV5}, {kV6}, {kV7}, {kV8}, {kV9}};
  static_assert(kSchemaVersion == 9, "add the new step to migrations()");
  return steps;
}

std::optional<SqliteError> migrate(Db& db, int from, int to, const std::vector<Migration>& steps,
                                   const std::function<std::optional<SqliteError>(Db&)>& finish) {
  if (from < 0 || to > static_cast<int>(steps.size()) || from > to)
    return SqliteError{SQLITE_MISUSE, "no migration path from schema " + std::to_string(from) +
                                          " to " + std::to_string(to)};
  if (auto e = db.exec("BEGIN IMMEDIATE")) return e;
  auto fail = [&](SqliteError e) {
    db.exec("ROLLBACK");
    return e;
  };
  for (int v = from; v < to; ++v)
    if (auto e = db.exec(steps[static_cast<std::size_t>(v)].sql))
      return fail({e->code, "migration to schema " + std::to_string(v + 1) + ": " + e->message});
  const std::string meta =
      "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', '" + std::to_string(to) +
      "'); PRAGMA application_id = " + std::to_string(kApplicationId) + ";";
  if (auto e = db.exec(meta.c_str())) return fail(*e);
  if (finish)
    if (auto e = finish(db)) return fail(*e);
  if (auto e = db.exec("COMMIT")) return fail(*e);
  return std::nullopt;
}

}  // namespace gpuq::storage
