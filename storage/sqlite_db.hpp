#pragma once
// Thin RAII over the SQLite C API: one connection (Db) and its prepared statements (Stmt).
// Nothing here knows gpuq's schema. Errors come back as SqliteError values with SQLite's own
// message; the store turns them into Result errors that name the file.
#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gpuq::storage {

struct SqliteError {
  int code = SQLITE_OK;  // primary result code (SQLITE_BUSY, SQLITE_NOTADB, ...)
  std::string message;
};

// The state file and its copies are gpuqd's alone (mode 0600: they hold every job's command and
// environment). A missing file is created so; an existing one (and its -wal and -shm, which
// SQLite creates with the database's mode) is made so. Returns what was changed, for a warning
// ("" when nothing was).
std::string make_private(const std::string& path);

class Db {
 public:
  Db() = default;
  // flags: SQLITE_OPEN_* ; on failure `error` says why and the Db is closed.
  static Db open(const std::string& path, int flags, SqliteError& error);

  sqlite3* get() const { return db_.get(); }
  explicit operator bool() const { return db_ != nullptr; }
  // Runs one or more statements without results.
  std::optional<SqliteError> exec(const char* sql);
  SqliteError last_error() const;

 private:
  struct Close {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  std::unique_ptr<sqlite3, Close> db_;
};

// A prepared statement, reused: bind, step, and the Reset guard puts it back for the next use.
class Stmt {
 public:
  Stmt() = default;
  static std::optional<SqliteError> prepare(Db& db, const char* sql, Stmt& out);

  sqlite3_stmt* get() const { return stmt_.get(); }

  void bind(int i, std::int64_t v) { sqlite3_bind_int64(stmt_.get(), i, v); }
  void bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_.get(), i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind_null(int i) { sqlite3_bind_null(stmt_.get(), i); }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(stmt_.get()); }
  // Steps through every row, calling row(*this) on each; SQLITE_DONE when all were read, else
  // the error code.
  template <class Row>
  int each_row(Row&& row) {
    int rc;
    while ((rc = step()) == SQLITE_ROW) row(*this);
    return rc;
  }

  std::int64_t int64(int col) const { return sqlite3_column_int64(stmt_.get(), col); }
  bool is_null(int col) const { return sqlite3_column_type(stmt_.get(), col) == SQLITE_NULL; }
  std::string_view text(int col) const {
    const auto* p = sqlite3_column_text(stmt_.get(), col);
    if (p == nullptr) return {};
    return {reinterpret_cast<const char*>(p),
            static_cast<std::size_t>(sqlite3_column_bytes(stmt_.get(), col))};
  }

  // Resets and clears bindings when it goes out of scope, so a statement left half-stepped by an
  // early return never holds a read snapshot open.
  class Reset {
   public:
    explicit Reset(Stmt& s) : s_(s) {}
    ~Reset() {
      sqlite3_reset(s_.get());
      sqlite3_clear_bindings(s_.get());
    }
    Reset(const Reset&) = delete;
    Reset& operator=(const Reset&) = delete;

   private:
    Stmt& s_;
  };

 private:
  struct Finalize {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  std::unique_ptr<sqlite3_stmt, Finalize> stmt_;
};

}  // namespace gpuq::storage
