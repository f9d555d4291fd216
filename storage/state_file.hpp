#pragma once
// Whether a file is a gpuq state file this build can use, and the errors that say why not
// (Store::open): its identity, its schema version, its integrity.
#include <optional>
#include <string>

#include "spec/result.hpp"
#include "storage/sqlite_db.hpp"

namespace gpuq::storage {

// Refused: not a gpuq state file, or damaged (kFailedPrecondition), with what to do.
Error not_ours(const std::string& path, const std::string& why);
// Could not be done now (kUnavailable): permissions, I/O, another process's lock.
Error unavailable(const std::string& path, const std::string& doing, const SqliteError& e);
// A single-value query; nullopt + error on failure.
std::optional<std::string> query_text(Db& db, const char* sql, SqliteError& error);
// PRAGMA quick_check: a read of the whole file.
Result<void> quick_check(Db& db, const std::string& path);
// The file's schema version (0: empty or new), checked before anything is written: ours
// (application_id), not newer than this build, whole (quick_check) when `full`.
Result<int> identify(Db& db, const std::string& path, bool full);

}  // namespace gpuq::storage
