#pragma once
// The usage history rows (table usage_history): a batch's records written, all of them read at
// load. The averages are JSON by resource name (codec.hpp).
#include <functional>
#include <string>
#include <vector>

#include "storage/sqlite_db.hpp"
#include "storage/store.hpp"

namespace gpuq::storage {

// `put` is "INSERT OR REPLACE INTO usage_history(queue, at, average) VALUES(?1, ?2, ?3)".
// A record with a value that may not be stored is refused (kInvalidArgument) before anything of
// it is written; `failed` makes the error for a failed step, given the queue.
Result<void> write_history_rows(Stmt& put, const std::vector<HistoryRecord>& history,
                                const std::function<Error(const std::string&)>& failed);

// `all` is "SELECT queue, at, average FROM usage_history ORDER BY queue". A row that does not
// decode is left out and said in out.history_skipped (naming `path`): a checkpoint is advisory,
// and losing one queue's history must not keep gpuqd from starting.
Result<void> read_history_rows(Stmt& all, const std::string& path, Loaded& out,
                               const std::function<Error()>& failed);

}  // namespace gpuq::storage
