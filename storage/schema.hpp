#pragma once
// The file's schema and how it moves forward. Version N of the schema is what the first N
// migration steps produce from an empty database: a fresh file is "version 0" and goes through
// the same path as an old one. Steps are never edited once released; a change is a new step.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "storage/sqlite_db.hpp"

namespace gpuq::storage {

// PRAGMA application_id of every gpuq state file ("gpuq" in ASCII): tells ours from any other
// SQLite file.
inline constexpr std::int32_t kApplicationId = 0x67707571;

struct Migration {
  const char* sql;  // from version i to i + 1, where i is the step's index
};

// The steps of this build: migrations().size() == kSchemaVersion.
const std::vector<Migration>& migrations();

// Applies steps[from .. to) in one IMMEDIATE transaction and records schema_version = `to` and the
// application_id in the same transaction: a failure (or a crash) leaves the file at `from`.
// `finish`, if given, runs after the steps inside their transaction (what SQL alone cannot do).
std::optional<SqliteError> migrate(Db& db, int from, int to, const std::vector<Migration>& steps,
                                   const std::function<std::optional<SqliteError>(Db&)>& finish = nullptr);

}  // namespace gpuq::storage
