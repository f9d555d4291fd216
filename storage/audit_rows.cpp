#include "storage/audit_rows.hpp"

namespace gpuq::storage {

Result<void> write_audit_rows(Stmt& put, Stmt& prune, const Batch& batch, const std::function<Error()>& failed) {
  if (batch.audit_prune_before > 0) {
    Stmt::Reset r(prune);
    prune.bind(1, batch.audit_prune_before);
    if (prune.step() != SQLITE_DONE) return failed();
  }
  for (const AuditRecord& a : batch.audit) {
    Stmt::Reset r(put);
    put.bind(1, a.at);
    put.bind(2, a.user);
    put.bind(3, a.origin);
    put.bind(4, a.action);
    put.bind(5, a.target);
    put.bind(6, a.result);
    if (put.step() != SQLITE_DONE) return failed();
  }
  return Ok();
}

Result<std::vector<AuditRecord>> read_audit_rows(Stmt& page, const AuditFilter& filter,
                                                 const std::function<Error()>& failed) {
  Stmt::Reset r(page);
  page.bind(1, filter.user);
  page.bind(2, filter.since);
  page.bind(3, static_cast<std::int64_t>(filter.before_seq));
  page.bind(4, static_cast<std::int64_t>(filter.limit == 0 ? 100 : filter.limit));
  std::vector<AuditRecord> out;
  const int rc = page.each_row([&](const Stmt& row) {
    AuditRecord& a = out.emplace_back();
    a.seq = static_cast<std::uint64_t>(row.int64(0));
    a.at = row.int64(1);
    a.user = row.text(2);
    a.origin = row.text(3);
    a.action = row.text(4);
    a.target = row.text(5);
    a.result = row.text(6);
  });
  if (rc != SQLITE_DONE) return failed();
  return out;
}

}  // namespace gpuq::storage
