#include "storage/backup.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "storage/sqlite_db.hpp"

namespace gpuq::storage {
namespace {

constexpr int kPagesPerStep = 1024;  // ~4 MiB at the default page size
constexpr int kBackupBusyTimeoutMs = 5000;
constexpr int kMaxBusyRetries = 1000;

Error backup_error(const std::string& dest, const std::string& why) {
  return {"backup to " + dest + ": " + why, ErrorCode::kUnavailable};
}

// fsync of the directory so the rename itself is durable.
void sync_dir_of(const std::string& path) {
  auto dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

struct FinishBackup {
  void operator()(sqlite3_backup* b) const { sqlite3_backup_finish(b); }
};

}  // namespace

Result<void> backup_file(const std::string& src_path, const std::string& dest) {
  std::error_code ec;
  if (std::filesystem::equivalent(src_path, dest, ec))
    return Error{"backup to " + dest + ": that is the state file itself",
                 ErrorCode::kInvalidArgument};
  SqliteError e;
  Db src = Db::open(src_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, e);
  if (!src) return backup_error(dest, "cannot open " + src_path + ": " + e.message);
  sqlite3_busy_timeout(src.get(), kBackupBusyTimeoutMs);
  // The snapshot: a read transaction that stays open across all steps, so the copy never restarts
  // when the engine commits in between, and all of it is the same committed state.
  if (auto err = src.exec("BEGIN DEFERRED; SELECT count(*) FROM meta;"))
    return backup_error(dest, "cannot read " + src_path + ": " + err->message);

  const std::string partial = dest + ".partial";
  std::filesystem::remove(partial, ec);
  (void)make_private(partial);  // a copy is as private as the state file
  Result<void> result;
  {
    Db dst = Db::open(partial, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, e);
    if (!dst) return backup_error(dest, "cannot create " + partial + ": " + e.message);
    std::unique_ptr<sqlite3_backup, FinishBackup> b(
        sqlite3_backup_init(dst.get(), "main", src.get(), "main"));
    if (!b) return backup_error(dest, dst.last_error().message);
    int rc = SQLITE_OK;
    for (int busy = 0; busy < kMaxBusyRetries;) {
      rc = sqlite3_backup_step(b.get(), kPagesPerStep);
      if (rc == SQLITE_DONE) break;
      if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
        ++busy;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      } else if (rc != SQLITE_OK) {
        break;
      }
    }
    const int finish_rc = sqlite3_backup_finish(b.release());
    if (rc != SQLITE_DONE || finish_rc != SQLITE_OK)
      result = backup_error(dest, std::string("copy failed: ") +
                                      sqlite3_errstr(rc != SQLITE_DONE ? rc : finish_rc));
  }
  src.exec("COMMIT");
  if (!result) {
    std::filesystem::remove(partial, ec);
    return result;
  }
  std::filesystem::rename(partial, dest, ec);
  if (ec) {
    std::filesystem::remove(partial, ec);
    return backup_error(dest, "cannot rename " + partial + ": " + ec.message());
  }
  sync_dir_of(dest);
  return Ok();
}

}  // namespace gpuq::storage
