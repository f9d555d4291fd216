#pragma once
// Job arrays kept as one row while their members are unchanged (table array_rows; store.hpp:
// ArrayRows; README.md: Arrays): the row's bindings and decoding, and the cursors that give
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

// Arrays written by schema 8 (no array_id, last_number, last_seq or unsplit yet): filled in,
// each member that has a `jobs` row already counted as split, in the caller's transaction (the
// migration to 9). Returns how many rows it mended.
Result<std::size_t> upgrade_array_rows(Db& db, ResourceNames& names);

}  // namespace gpuq::storage
