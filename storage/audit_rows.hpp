#pragma once
// The audit log's rows (table audit, schema 4): a batch's records appended, old ones pruned,
// pages read newest first (docs/tasks/tenants-and-security.md, Audit).
#include <functional>
#include <string>
#include <vector>

#include "storage/sqlite_db.hpp"
#include "storage/store.hpp"

namespace gpuq::storage {

inline constexpr const char* kPutAudit =
    "INSERT INTO audit(at, user, origin, action, target, result) VALUES(?1, ?2, ?3, ?4, ?5, ?6)";
inline constexpr const char* kPruneAudit = "DELETE FROM audit WHERE at < ?1";
// `put` is kPutAudit, `prune` kPruneAudit; records go in order (their seq is the table's).
Result<void> write_audit_rows(Stmt& put, Stmt& prune, const Batch& batch, const std::function<Error()>& failed);

// Newest first: ?1 user ('' any), ?2 since, ?3 before seq (0: from the newest), ?4 limit.
inline constexpr const char* kAuditPage =
    "SELECT seq, at, user, origin, action, target, result FROM audit "
    "WHERE (?1 = '' OR user = ?1) AND at >= ?2 AND (?3 = 0 OR seq < ?3) ORDER BY seq DESC LIMIT ?4";
Result<std::vector<AuditRecord>> read_audit_rows(Stmt& page, const AuditFilter& filter,
                                                 const std::function<Error()>& failed);

}  // namespace gpuq::storage
