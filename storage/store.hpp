#pragma once
// gpuqd's durable state in one SQLite file (DESIGN.md: Daemon). The engine thread owns the one
// Store; everything a turn of its loop changed is handed to commit() as one Batch, written in one
// transaction with one fsync (WAL, synchronous=FULL), before any request of that turn is answered.
// A failed commit leaves the file exactly as it was (ROLLBACK) and says why.
//
// What is kept: queues and nodes as applied; every job ever accepted (spec, what the binder
// runs, state, placement while it holds one, how it ended); every job event with its sequence
// number (Watch replays them); the next event sequence number and job number; each queue's
// fair-share usage history as last checkpointed (the daemon writes it every
// usageCheckpointInterval, not every turn).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduler/model.hpp"
#include "spec/resources.hpp"
#include "spec/types.hpp"
#include "spec/result.hpp"
#include "storage/usage.hpp"

namespace gpuq::storage {

inline constexpr int kSchemaVersion = 9;
inline constexpr int kJobPruneBatch = 10000;


// A job's GPU use as the local executor sampled it (binder/local/README.md: GPU use). Integers
// (the sum of the per-sample percentages, not a float mean) so that a restart goes on exactly.
struct GpuUse {
  std::int64_t samples = 0;          // 0: never sampled (virtual GPUs, or not yet)
  std::int64_t util_sum = 0;         // sum over samples of its GPUs' mean utilization, percent
  std::int64_t memory_peak_mib = 0;  // the most memory its GPUs held in one sample, MiB
  // Not stored (a restart begins a new idle stretch, so gpuqd down never counts as idle):
  Time idle_since = 0;               // its first sample of the current idle stretch; 0: not idle
  bool idle_warned = false;          // the warning of this stretch was recorded
  std::optional<double> mean() const {
    if (samples <= 0) return std::nullopt;
    return static_cast<double>(util_sum) / static_cast<double>(samples);
  }
};

// What a job's processes used, as its binder measured it at each pod's end (the local executor:
// from the pods' cgroups; binder/local/CGROUPS.md), over all its pods and runs. -1: never
// measured (no cgroups, another binder, or only runs that were cancelled while they ran).
struct ProcessUse {
  std::int64_t cpu_usec = -1;     // CPU time, summed
  std::int64_t memory_peak = -1;  // bytes: the most one pod held at once
};

struct JobRecord {
  JobSpec spec;             // priority resolved to an integer; submitted_at set
  RunSpec run;
  NotifySpec notify;
  std::string priority_text;  // as submitted ("high", "100", or empty)
  JobState state = JobState::kPending;
  std::string reason;         // end reason, or the last transition's reason
  Time admitted_at = 0;       // 0: never admitted; the last admission only (usage() takes
                              // earlier ones from the events)
  Time finished_at = 0;       // 0: unfinished
  std::string flavor;         // while holding a placement; keep it on a finished job that was
                              // admitted (usage() falls back on it where events have none)
  std::vector<PodPlacement> placement;  // while Admitted, Running or Preempting
  std::int32_t attempts = 0;
  std::int32_t preemptions = 0;
  std::int32_t exit_code = 0;
  std::string preempted_by;
  std::uint64_t number = 0;   // submission number: strictly increasing, the listing order
  GpuUse gpu_use;
  ProcessUse used;
  bool held = false;  // pending and held (Engine::hold)
  std::vector<Dependency> after;  // what it waits for (gpuq submit --after-*)
  std::int32_t retried = 0;       // failed runs requeued so far (spec.retries)
};

struct EventRecord {
  std::uint64_t seq = 0;
  Time at = 0;
  std::string job;
  std::string queue;
  std::optional<JobState> from;
  JobState to = JobState::kPending;
  std::string reason;
  std::string owner;  // the job's owner: set on live events (not stored; a replay looks it up)
  std::string flavor;  // the flavor the job holds, on events to Admitted, Running, Preempting
};

// One queue's fair-share usage history (scheduler/usage_history.hpp) as checkpointed: its decayed
// average use per resource as of `at`, by resource NAME (a ResourceId means nothing in another
// process or on another replica), in base units (milli-GPU, millicores, bytes). Not integers: an
// average decays continuously. Absent resources are 0.
struct HistoryRecord {
  std::string queue;
  Time at = 0;
  std::map<std::string, double> average;
};

// A bearer token an admin created (docs/tasks/tenants-and-security.md): never its secret, only the secret's
// SHA-256 (hex), by which a call's token is found. Kept after it expires or is revoked, so that
// a refusal can say which it was.
struct TokenRecord {
  std::string id;          // public, unique: listed, revoked by
  std::string user;        // whose calls it makes
  std::string hash;        // SHA-256 of the whole secret, lowercase hex
  std::string note;
  std::string created_by;
  Time created_at = 0;
  Time expires_at = 0;
  Time revoked_at = 0;     // 0: not revoked
};

// One call that changed, or tried to change, gpuqd's state (docs/tasks/tenants-and-security.md, Audit).
struct AuditRecord {
  std::uint64_t seq = 0;  // the store's, increasing (0 until written)
  Time at = 0;
  std::string user;    // "" for an anonymous caller
  std::string origin;  // where from: "unix:uid=1000,pid=42", "ipv4:10.0.0.5:51234"
  std::string action;  // "submit", "cancel", "queue.apply", "node.cordon", "token.create", ...
  std::string target;  // the job, queue, node or token it named
  std::string result;  // "OK", or the status code and its message
};

struct AuditFilter {
  std::string user;               // empty: any
  Time since = 0;
  std::uint64_t before_seq = 0;   // paging, newest first: records with seq < this; 0: the newest
  std::size_t limit = 100;        // 0: 100
};

// Sorted, disjoint ranges of whole numbers, kept and written as ranges ("0-999,1200,1300-1310"):
// an array's indices, and the positions of its members still in its row. Operations cost
// O(log ranges), whatever the count.
class IndexRanges {
 public:
  IndexRanges() = default;
  static IndexRanges of(const std::vector<std::int32_t>& ascending);
  static IndexRanges span(std::uint64_t n);  // 0 to n - 1
  // "" is empty; nullopt for text that is not ascending, disjoint "a" or "a-b" items.
  static std::optional<IndexRanges> parse(std::string_view text);
  std::string text() const;
  std::uint64_t size() const { return before_.empty() ? 0 : before_.back() + width(ranges_.size() - 1); }
  bool empty() const { return ranges_.empty(); }
  bool contains(std::uint64_t v) const { return rank(v).has_value(); }
  // Where v is among the values (0 for the smallest), if it is one.
  std::optional<std::uint64_t> rank(std::uint64_t v) const;
  std::uint64_t at(std::uint64_t p) const;  // the p-th value; p < size()
  bool erase(std::uint64_t v);               // false: it was not there
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges() const { return ranges_; }  // [lo, hi]
  // The values at positions first to last (inclusive; last < size()).
  IndexRanges slice(std::uint64_t first, std::uint64_t last) const;
  std::uint64_t before(std::size_t range) const { return before_[range]; }  // values in the ranges before it
  bool operator==(const IndexRanges& o) const { return ranges_ == o.ranges_; }

 private:
  std::uint64_t width(std::size_t i) const { return ranges_[i].second - ranges_[i].first + 1; }
  void recount(std::size_t from);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges_;
  std::vector<std::uint64_t> before_;
};

// A job array's members as submitted (gpuq submit --array), kept as one row (table array_rows)
// for as long as they are unchanged (storage/README.md: Arrays): the first member's record, the
// indices, and the events each member had, the same for all. Member p (0 <= p < count()) has id
// "<array>_<indices.at(p)>", array_index indices.at(p) and number first.number + p, and its
// record is otherwise the first's; its t-th event has seq first_seq + p * each.size() + t. A
// member leaves the row (is "split") when a commit writes a `jobs` row for it: that row is the
// member from then on, and `unsplit` (positions) loses it; the row's events stay, as history.
struct ArrayRows {
  JobRecord first;
  IndexRanges indices;  // the members' indices by position, ascending
  // Read back: the positions still in the row. In a Batch: ignored (all of them, less the
  // members that also have a record in the batch's `jobs`).
  IndexRanges unsplit;
  std::uint64_t first_seq = 0;
  std::vector<EventRecord> each;  // seq and job are the member's; the rest as each member had it
  std::uint64_t count() const { return indices.size(); }
  std::uint64_t last_number() const { return first.number + count() - 1; }
  std::uint64_t last_seq() const { return first_seq + count() * each.size() - 1; }
  std::string member_id(std::uint64_t p) const;
  JobRecord member(std::uint64_t p) const;
  EventRecord event(std::uint64_t p, std::size_t t) const;
};

// Everything one turn changed. Upserts replace the whole row by key.
struct Batch {
  std::vector<QueueSpec> queues;
  std::vector<std::string> deleted_queues;  // their usage history rows go with them
  std::vector<NodeSpec> nodes;
  std::vector<JobRecord> jobs;
  std::vector<EventRecord> events;
  // Arrays submitted in the turn, with seqs and numbers of their own (not in `jobs` or `events`);
  // a member that changed again in the turn is also in `jobs`: it is split at once.
  std::vector<ArrayRows> arrays;
  std::vector<HistoryRecord> history;  // by queue; negative or non-finite values are refused
  std::vector<TokenRecord> tokens;     // by id (created or revoked)
  std::vector<AuditRecord> audit;      // appended, in order
  Time audit_prune_before = 0;         // > 0: audit records older than this go (retention)
  // > 0: finished jobs that ended before this go, and events older than it (jobRetention); at
  // most kJobPruneBatch jobs and 3x as many events per commit.
  Time jobs_prune_before = 0;
  bool empty() const {
    return queues.empty() && deleted_queues.empty() && nodes.empty() && jobs.empty() &&
           events.empty() && arrays.empty() && history.empty() && tokens.empty() && audit.empty() &&
           audit_prune_before == 0 && jobs_prune_before == 0;
  }
};

// Every event of a batch in seq order, its arrays' members' events included.
void for_each_event(const Batch& batch, const std::function<void(const EventRecord&)>& f);
// How many job rows a batch writes: its jobs, and one row per array (its members are not rows).
std::size_t jobs_in(const Batch& batch);

// What start-up needs to rebuild the engine.
struct Loaded {
  std::vector<QueueSpec> queues;        // by name
  std::vector<NodeSpec> nodes;          // by name
  std::vector<HistoryRecord> history;   // by queue; whatever is stored (the daemon checks it)
  // History rows that did not decode, each naming the queue, the field and the value: left out,
  // so that a damaged checkpoint never stops gpuqd from starting (it logs them).
  std::vector<std::string> history_skipped;
  std::vector<JobRecord> unfinished;    // Pending, Admitted, Running, Preempting; by number
  std::size_t unfinished_count = 0;     // how many there are (also when streamed)
  std::size_t unfinished_in_rows = 0;   // of them, members still in their array's row
  std::uint64_t last_event_seq = 0;     // 0: none yet
  std::uint64_t last_job_number = 0;
};

// Unfinished members still in their array's row, numbered one after the other: `first` is the
// first of them (its id, index and number), the others differ only by those.
struct MemberRun {
  JobRecord first;
  std::vector<std::int32_t> indices;  // ascending; member k has number first.number + k
};

struct JobFilter {
  std::string queue;                 // empty: any
  std::vector<JobState> states;      // empty: any
  std::string owner;                 // empty: any
  std::uint64_t after_number = 0;    // paging: jobs with number > this
  std::size_t limit = 100;           // 0: 100
  // list(): a run of members still in one array's row, numbered one after the other, as one
  // entry (ListEntry::members), counted as one against the limit.
  bool fold = false;
};

// An entry of Store::list: a job, or with JobFilter::fold the first of a run of members.
struct ListEntry {
  JobRecord job;
  IndexRanges members;  // the run's indices (two or more); empty: `job` alone
  std::uint64_t last_number = 0;  // the last number it covers (a page's token)
};

// Thread safety: methods may be called from any thread. load() and commit() share the writer
// connection and its lock; the reads (job, has_job, jobs, events_after) have a connection
// and a lock of their own, so a read does not wait for a commit's fsync; they share one
// snapshot, which each commit ends, so a read sees every commit that returned before it.
// usage() and backup_to() each use a connection of their own.
class Store {
 public:
  // Opens (creating when missing) and migrates to kSchemaVersion. Errors (kFailedPrecondition
  // unless said): a file that is not a gpuq state file or is corrupt (integrity_check), one
  // written by a newer gpuqd (schema_version > kSchemaVersion: "upgrade gpuqd or restore a
  // backup"), one that cannot be opened or written (kUnavailable). The message names the path
  // and says what to do; gpuqd refuses to start on any of them.
  //
  // kInBackground: the integrity check (quick_check, a read of the whole file) runs on its own
  // connection while the caller goes on loading; checked() waits for it and gives the same
  // refusal open() would have given. commit() writes nothing before the check passed.
  enum class Check { kBeforeOpen, kInBackground };
  static Result<std::unique_ptr<Store>> open(const std::string& path, ResourceNames& names,
                                             Check check = Check::kBeforeOpen);
  virtual ~Store() = default;
  virtual Result<void> checked() = 0;

  // In one read transaction: queues, nodes and counters to `meta` (with `unfinished` empty),
  // then the unfinished jobs in submission order to `jobs`, a chunk at a time, decoded on another
  // thread while `jobs` takes the last chunk (start-up: the engine restores jobs while SQLite
  // reads on). Members still in their array's row go to `runs` in their place among the jobs,
  // a run at a time (MemberRun), or without `runs` to `jobs` as records of their own. An error
  // from a callback stops the load and is returned.
  using JobSink = std::function<Result<void>(std::vector<JobRecord>& chunk)>;
  using RunSink = std::function<Result<void>(MemberRun& run)>;
  virtual Result<void> load(const std::function<Result<void>(Loaded&)>& meta, const JobSink& jobs,
                            const RunSink& runs = nullptr) = 0;
  // All of it in memory (members as records of their own).
  Result<Loaded> load();
  // One transaction; on any failure nothing of the batch is written (kUnavailable + why; a job
  // with number 0 or a history value that is negative or not finite: kInvalidArgument) and the
  // store stays usable. Order inside the transaction: queues, deleted queues (and their history),
  // nodes, arrays, jobs (splitting the members they are from their arrays' rows), events,
  // history, tokens, audit (pruned, then appended).
  virtual Result<void> commit(const Batch& batch) = 0;

  // Reads for the API (any job, finished ones included; events for Watch).
  virtual Result<std::optional<JobRecord>> job(const std::string& id) = 0;
  // Whether a job with this id was ever accepted (reads the id index only).
  virtual Result<bool> has_job(const std::string& id) = 0;
  // false when no job's id starts with `prefix` (one read for all of an array's member ids,
  // "<array>_"); true when one may (then ask has_job for each).
  virtual Result<bool> has_job_with_prefix(const std::string& prefix) = 0;
  // Jobs by number, members still in their arrays' rows among them as records of their own.
  virtual Result<std::vector<JobRecord>> jobs(const JobFilter& filter) = 0;
  // As jobs(), and with filter.fold the runs of members folded (ListEntry).
  virtual Result<std::vector<ListEntry>> list(const JobFilter& filter) = 0;
  virtual Result<std::vector<EventRecord>> events_after(std::uint64_t seq, std::size_t limit) = 0;
  // Accounting over [q.since, q.until) (storage/usage.hpp): GPU time held (from each job's
  // events: every admission, not only the last), lost to preemption, jobs by outcome, waits;
  // one row per queue, user, flavor or job, a page at a time. Its own connection and one read
  // transaction: it sees every commit that returned before it began.
  virtual Result<std::vector<UsageRow>> usage(const UsageQuery& q) = 0;
  // Every bearer token ever created (expired and revoked ones too), by creation time.
  virtual Result<std::vector<TokenRecord>> tokens() = 0;
  // A page of the audit log, newest first.
  virtual Result<std::vector<AuditRecord>> audit(const AuditFilter& filter) = 0;

  // A consistent copy of the whole state into `dest` (SQLite online backup) through its own
  // connection: safe to call from another thread while the engine thread commits.
  virtual Result<void> backup_to(const std::string& dest) = 0;
};

}  // namespace gpuq::storage
