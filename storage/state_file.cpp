#include "storage/state_file.hpp"

#include "storage/schema.hpp"
#include "storage/store.hpp"

namespace gpuq::storage {
namespace {

std::string what_to_do() {
  return "gpuqd will not start on it: restore a copy made by `gpuq admin backup`, or move the "
         "file away to start with an empty state";
}

// Reading the file's identity failed: the bytes are wrong (refuse) or the file cannot be read
// now (unavailable: permissions, I/O, another process holding a lock).
Error read_failure(const std::string& path, const SqliteError& e) {
  if (e.code == SQLITE_NOTADB || e.code == SQLITE_CORRUPT || e.code == SQLITE_FORMAT)
    return not_ours(path, e.message);
  return unavailable(path, "cannot read", e);
}

}  // namespace

Error not_ours(const std::string& path, const std::string& why) {
  return {"state file " + path + " is not a usable gpuq state file (" + why + "); " + what_to_do(),
          ErrorCode::kFailedPrecondition};
}

Error unavailable(const std::string& path, const std::string& doing, const SqliteError& e) {
  return {"state file " + path + ": " + doing + ": " + e.message, ErrorCode::kUnavailable};
}

std::optional<std::string> query_text(Db& db, const char* sql, SqliteError& error) {
  Stmt s;
  if (auto e = Stmt::prepare(db, sql, s)) {
    error = *e;
    return std::nullopt;
  }
  const int rc = s.step();
  if (rc == SQLITE_ROW) return std::string(s.text(0));
  if (rc == SQLITE_DONE) return std::string();
  error = db.last_error();
  return std::nullopt;
}

Result<void> quick_check(Db& db, const std::string& path) {
  SqliteError e;
  auto check = query_text(db, "PRAGMA quick_check", e);
  if (!check) return read_failure(path, e);
  if (*check != "ok") return not_ours(path, "corrupt: quick_check says " + *check);
  return Ok();
}

Result<int> identify(Db& db, const std::string& path, bool full) {
  SqliteError e;
  auto app_id = query_text(db, "PRAGMA application_id", e);
  if (!app_id) return read_failure(path, e);
  auto tables = query_text(db, "SELECT count(*) FROM sqlite_schema", e);
  if (!tables) return read_failure(path, e);
  if (*app_id == "0" && *tables == "0") return 0;  // empty or new: schema version 0
  if (*app_id != std::to_string(kApplicationId))
    return not_ours(path, "a SQLite database of another program: application_id " + *app_id +
                              ", " + *tables + " tables");
  if (full)
    if (auto c = quick_check(db, path); !c) return Error{c.error(), c.code()};
  auto version = query_text(db, "SELECT value FROM meta WHERE key = 'schema_version'", e);
  if (!version)
    return e.code == SQLITE_ERROR ? not_ours(path, "no schema_version: " + e.message)
                                  : read_failure(path, e);
  int v = -1;
  try {
    v = std::stoi(*version);
  } catch (const std::exception&) {
    return not_ours(path, "schema_version is \"" + *version + "\"");
  }
  if (v > kSchemaVersion)
    return Error{"state file " + path + " was written by a newer gpuqd (schema " +
                     std::to_string(v) + ", this build knows " + std::to_string(kSchemaVersion) +
                     "): upgrade gpuqd or restore a backup",
                 ErrorCode::kFailedPrecondition};
  if (v < 0) return not_ours(path, "schema_version is " + *version);
  return v;
}

}  // namespace gpuq::storage
