#pragma once
// Job arrays kept as one row while their members are unchanged (table array_rows; store.hpp:
// ArrayRows; README.md in this folder: Arrays): the row's bindings and decoding, and the cursors that give
// its members and events in number and seq order, for the reads to merge with the `jobs` and
// `events` rows.
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "storage/job_rows.hpp"
#include "storage/sqlite_db.hpp"
#include "storage/store.hpp"

namespace gpuq::storage {

// A job row's columns in the order bind_job binds them (?1 to ?22).
inline constexpr const char* kJobRowColumns =
    "number, id, queue, owner, name, state, priority, priority_text, submitted_at, admitted_at, finished_at, "
    "flavor, gpu_milli, attempts, preemptions, exit_code, preempted_by, reason, body, gpu_samples, "
    "gpu_util_sum, gpu_memory_peak_mib";
inline constexpr const char* kJobRowValues =
    "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22";
void bind_job(Stmt& s, const JobRecord& j, const std::string& body);
// An event row's columns: seq, at, job, queue, from_state, to_state, reason, flavor (?1 to ?8).
void bind_event(Stmt& s, const EventRecord& e);

// The array row's own columns after the job row's: written as ?23 to ?29, read after kJobColumns.
inline constexpr const char* kArrayRowColumns = "indices, first_seq, events, array_id, last_number, last_seq, unsplit";
inline constexpr const char* kArrayRowValues = "?23, ?24, ?25, ?26, ?27, ?28, ?29";
// Every column of an array row, for reads: kJobColumns then the array's (read_array_row).
std::string array_row_select();

// Binds `a` with `unsplit` as its positions still in the row and steps `put` (an INSERT of
// kJobRowColumns and kArrayRowColumns). false: the step failed.
bool write_array_row(Stmt& put, const ArrayRows& a, const IndexRanges& unsplit, const ResourceNames& names);
// An array row's `events` column (JSON); `what` names the row in errors. queue and owner unset.
Result<std::vector<EventRecord>> decode_array_events(std::string_view text, const std::string& what);
// The row `s` is on (array_row_select()'s columns). Errors name the array and the column.
Result<void> read_array_row(const Stmt& s, ArrayRows& a, ResourceInterner& names);

// Steps through array rows (array_row_select()'s columns), one decoded row at a time.
class ArrayRowCursor {
 protected:
  ArrayRowCursor(Stmt& s, ResourceInterner& names) : s_(s), names_(names) {}
  Result<bool> next_row();  // the next row into row_; false: no more
  Stmt& s_;
  ResourceInterner& names_;
  bool loaded_ = false, done_ = false;
  ArrayRows row_;
};

// The unsplit members of the array rows `s` steps through (in number order), in number order,
// from the first with a number over `after` on.
class MemberCursor : ArrayRowCursor {
 public:
  MemberCursor(Stmt& s, ResourceInterner& names, std::uint64_t after) : ArrayRowCursor(s, names), after_(after) {}
  // The next member's number (nullopt: no more), reading rows as needed.
  Result<std::optional<std::uint64_t>> peek();
  JobRecord take();  // the member peek() named, and on to the next
  ListEntry take_run();  // it and the members after it in the row, numbered one after the other

 private:
  std::uint64_t after_;
  std::size_t range_ = 0;  // in row_.unsplit
  std::uint64_t p_ = 0;    // the next position
};

// The events of the array rows `s` steps through (in number order, so in seq order), from the
// first with a seq over `after` on.
class EventRunCursor : ArrayRowCursor {
 public:
  EventRunCursor(Stmt& s, ResourceInterner& names, std::uint64_t after) : ArrayRowCursor(s, names), after_(after) {}
  Result<std::optional<std::uint64_t>> peek();
  EventRecord take();

 private:
  std::uint64_t after_;
  std::uint64_t next_ = 0;  // seq
};

// A page: `rows` (jobs rows by number, `limit` of them at most) and the cursor's members merged
// by number, `limit` entries; with `fold`, a run of members as one (ListEntry).
Result<std::vector<ListEntry>> merge_members(std::vector<JobRecord> rows, MemberCursor& members, std::size_t limit,
                                             bool fold);
// The same for events by seq.
Result<std::vector<EventRecord>> merge_events(std::vector<EventRecord> rows, EventRunCursor& runs, std::size_t limit);

// What a commit does to array rows (Store::commit): writes the batch's arrays (`put`, an insert
// of kJobRowColumns and kArrayRowColumns), and takes every member a `jobs` row of the batch is
// for out of its row's unsplit positions (`at`: the row with unsplit members holding a number,
// ?1; `set_unsplit`: ?1 number, ?2 positions). `failed` makes the error of a failed step.
struct ArrayWrites {
  Stmt& put;
  Stmt& at;
  Stmt& set_unsplit;
};
Result<void> write_batch_arrays(const Batch& batch, const ArrayWrites& st, const ResourceNames& names,
                                const std::function<Error(const std::string&)>& failed, const std::string& path);

// The member `id` ("<array>_<index>") names if it is still in its array's row; `s` selects by
// array_id (?1), newest first: array_row_select()'s columns (`whole`), or number, indices and
// unsplit (then the record has its number alone). kUnavailable: a step failed.
Result<std::optional<JobRecord>> find_member(Stmt& s, bool whole, const std::string& id, ResourceInterner& names);

// load(): the unfinished jobs' chunks with the rows' unsplit members put in their places by
// number, as runs (`runs`) or, without it, as records of their own (`jobs`).
class RunMerger {
 public:
  RunMerger(const std::vector<ArrayRows>& rows, const Store::JobSink& jobs, const Store::RunSink& runs);
  std::size_t members() const { return members_; }  // unsplit, in all
  Result<void> chunk(std::vector<JobRecord>& chunk);  // the next chunk of jobs, in number order
  Result<void> rest();                                // the runs after the last job

 private:
  Result<void> emit();  // the next run
  std::uint64_t next_number() const { return next_->first->first.number + next_->second.first; }
  const Store::JobSink& jobs_;
  const Store::RunSink& runs_;
  std::vector<std::pair<const ArrayRows*, std::pair<std::uint64_t, std::uint64_t>>> pending_;  // by number
  decltype(pending_)::const_iterator next_;
  std::size_t members_ = 0;
};

// Arrays written by schema 8 (no array_id, last_number, last_seq or unsplit yet): filled in,
// each member that has a `jobs` row already counted as split, in the caller's transaction (the
// migration to 9). Returns how many rows it mended.
Result<std::size_t> upgrade_array_rows(Db& db, ResourceNames& names);

}  // namespace gpuq::storage
