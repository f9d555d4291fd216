#pragma once
// The accounting reads (storage/usage.hpp) on a connection of their own: a report over a long
// period reads many rows, and must hold neither the API's read lock (a submit's id check waits
// on it) nor the writer's. Each read is one read transaction: one consistent state.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/sqlite_db.hpp"
#include "spec/result.hpp"
#include "storage/usage.hpp"

namespace gpuq::storage {

// The candidates: the columns of JobFacts, in this order. ?1 until, ?2 queue ('' any), ?3 owner
// ('' any), ?4 since, ?5 after number (by job).
// Unfinished jobs submitted before the period ends (partial index jobs_unfinished).
inline constexpr const char* kUsageUnfinished =
    "SELECT number, id, queue, owner, state, submitted_at, admitted_at, finished_at, flavor, "
    "gpu_milli, "
    "attempts, preemptions, gpu_samples, gpu_util_sum FROM jobs WHERE state < 4 "
    "AND submitted_at < ?1 AND (?2 = '' OR queue = ?2) AND (?3 = '' OR owner = ?3)";
// Jobs that ended at or after its start (partial index jobs_by_finished).
inline constexpr const char* kUsageFinished =
    "SELECT number, id, queue, owner, state, submitted_at, admitted_at, finished_at, flavor, "
    "gpu_milli, "
    "attempts, preemptions, gpu_samples, gpu_util_sum FROM jobs WHERE state >= 4 AND finished_at >= ?4 "
    "AND submitted_at < ?1 AND (?2 = '' OR queue = ?2) AND (?3 = '' OR owner = ?3)";
// By job: both, in submission order after a number (the primary key, from the page's token on).
inline constexpr const char* kUsageJobs =
    "SELECT number, id, queue, owner, state, submitted_at, admitted_at, finished_at, flavor, "
    "gpu_milli, "
    "attempts, preemptions, gpu_samples, gpu_util_sum FROM jobs WHERE number > ?5 AND (state < 4 OR finished_at >= ?4) "
    "AND submitted_at < ?1 AND (?2 = '' OR queue = ?2) AND (?3 = '' OR owner = ?3) ORDER BY number";
// Members still in their arrays' rows (storage/README.md: Arrays), as kUsageJobs filters jobs:
// the row's columns stand for each member (number and id aside), then its indices and positions.
inline constexpr const char* kUsageArrays =
    "SELECT number, array_id, queue, owner, state, submitted_at, admitted_at, finished_at, flavor, "
    "gpu_milli, attempts, preemptions, gpu_samples, gpu_util_sum, indices, unsplit FROM array_rows "
    "WHERE unsplit <> '' AND last_number > ?5 AND (state < 4 OR finished_at >= ?4) "
    "AND submitted_at < ?1 AND (?2 = '' OR queue = ?2) AND (?3 = '' OR owner = ?3) ORDER BY number";
// The array row a job number falls in (a member's events at submission are in its row).
inline constexpr const char* kUsageArrayOf =
    "SELECT number, last_number, array_id, indices, events FROM array_rows WHERE number <= ?1 "
    "ORDER BY number DESC LIMIT 1";
// A job's events in order from its submission on (index events_by_job; an id freed by
// jobRetention and taken again never mixes in the older job's events, all before it).
inline constexpr const char* kUsageEvents =
    "SELECT at, from_state, to_state, flavor FROM events WHERE job = ?1 AND at >= ?2 ORDER BY seq";

class UsageReader {
 public:
  // Its own connection to the state file (reads only).
  static Result<std::unique_ptr<UsageReader>> open(const std::string& path);
  // The rows of `q`: groups in key order after q.after_key, jobs in submission order after
  // q.after_number; at most q.limit (0: all).
  Result<std::vector<UsageRow>> read(const UsageQuery& q);

 private:
  Error failed(const std::string& doing) const;
  // The candidates of `s` (bound; kUsageJobs' columns) and the members in arrays' rows (kUsageArrays)
  // merged by number into `tally`; by job, stops once `stop_after` jobs had something in the
  // period (0: never). `s` null: the arrays' members alone.
  Result<void> each_job(Stmt* s, const UsageQuery& q, UsageTally& tally, std::size_t stop_after);
  Result<void> events_of(const JobFacts& job, std::vector<StateChange>& out);

  std::string path_;
  std::mutex mu_;
  Db db_;  // before the statements: they are finalized first
  Stmt begin_, end_, unfinished_, finished_, jobs_, events_, arrays_, array_of_;
};

}  // namespace gpuq::storage
