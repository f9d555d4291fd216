#pragma once
// Reading job rows: one row into a JobRecord, all rows of a (short) query, or all rows streamed
// in chunks from a helper thread while the caller takes them (load() at start-up: a million
// rows; stepping and decoding on the helper run beside the engine's restore).
#include <array>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "storage/sqlite_db.hpp"
#include "storage/store.hpp"

namespace gpuq::storage {

// The columns of every job query, in this order (RowView indexes them).
inline constexpr const char* kJobColumns =
    "number, state, priority, submitted_at, admitted_at, finished_at, attempts, preemptions, "
    "exit_code, gpu_samples, gpu_util_sum, gpu_memory_peak_mib, id, queue, owner, name, priority_text, flavor, "
    "preempted_by, reason, body";
inline constexpr int kJobIntColumns = 12;
inline constexpr int kJobTextColumns = 9;

struct RowView {
  std::array<std::int64_t, kJobIntColumns> ints{};
  std::array<std::string_view, kJobTextColumns> texts{};
  static RowView of(const Stmt& s);
};

// Interns resource names into one ResourceNames from several threads: each thread has its own;
// only a name that thread has not seen yet takes the lock.
class ResourceInterner {
 public:
  ResourceInterner(ResourceNames& names, std::mutex& mu) : names_(names), mu_(mu) {}
  std::optional<ResourceId> intern(std::string_view name);

 private:
  ResourceNames& names_;
  std::mutex& mu_;
  std::vector<std::pair<std::string, ResourceId>> seen_;
};

Result<void> decode_job(const RowView& row, JobRecord& out, ResourceInterner& names);

// Steps `s` to its end. `failed` makes the error for a failed step. expected: the row count
// when known (0: unknown), to size the result once.
Result<std::vector<JobRecord>> read_all_jobs(Stmt& s, std::size_t expected, ResourceNames& names,
                                             const std::function<Error()>& failed);

// Steps `s` to its end on a helper thread that decodes the rows into chunks, while the calling
// thread hands each chunk, in order, to `sink` (start-up: the engine takes jobs while SQLite
// reads on). The first error of either side stops both and is returned.
Result<void> stream_all_jobs(Stmt& s, ResourceNames& names, const std::function<Error()>& failed,
                             const Store::JobSink& sink);

}  // namespace gpuq::storage
