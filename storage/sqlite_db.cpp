#include "storage/sqlite_db.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

namespace gpuq::storage {

std::string make_private(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);  // new and empty: SQLite makes it a database
    return "";
  }
  std::string changed;
  for (const std::string& p : {path, path + "-wal", path + "-shm"}) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 || (st.st_mode & 077) == 0) continue;
    if (::chmod(p.c_str(), st.st_mode & 0700) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      changed += (changed.empty() ? "" : ", ") + p + " was " + mode;
    }
  }
  return changed;
}

Db Db::open(const std::string& path, int flags, SqliteError& error) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db;
  db.db_.reset(raw);  // sqlite3_open_v2 may hand back a handle even on failure: it must be closed
  if (rc != SQLITE_OK) {
    error = {rc, raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)};
    db.db_.reset();
    return db;
  }
  sqlite3_extended_result_codes(raw, 0);
  error = {};
  return db;
}

std::optional<SqliteError> Db::exec(const char* sql) {
  char* msg = nullptr;
  const int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, &msg);
  if (rc == SQLITE_OK) return std::nullopt;
  SqliteError e{rc, msg != nullptr ? msg : sqlite3_errstr(rc)};
  sqlite3_free(msg);
  return e;
}

SqliteError Db::last_error() const {
  return {sqlite3_errcode(db_.get()), sqlite3_errmsg(db_.get())};
}

std::optional<SqliteError> Stmt::prepare(Db& db, const char* sql, Stmt& out) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  if (rc != SQLITE_OK) return db.last_error();
  out.stmt_.reset(raw);
  return std::nullopt;
}

}  // namespace gpuq::storage
