#pragma once
// Job arrays as submitted, one row each (table array_rows, schema 8; store.hpp: ArrayRows), and
// the job and event rows of their members, written after (Store::settle) in the same form as any
// other job's.
#include <functional>
#include <mutex>
#include <string>
#include <vector>

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

// An array's row: its first member's job row (bind_job), then indices (?23), first_seq (?24) and
// events (?25). `put` inserts into array_rows with those columns.
Result<void> write_array_row(Stmt& put, const ArrayRows& a, const ResourceNames& names);
// `all` selects kJobColumns (job_rows.hpp), indices, first_seq and events from array_rows by number.
Result<std::vector<ArrayRows>> read_array_rows(Stmt& all, ResourceNames& names,
                                               const std::function<Error()>& failed);

}  // namespace gpuq::storage
