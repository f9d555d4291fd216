#include "storage/history_rows.hpp"

#include "storage/codec.hpp"

namespace gpuq::storage {

Result<void> write_history_rows(Stmt& put, const std::vector<HistoryRecord>& history,
                                const std::function<Error(const std::string&)>& failed) {
  for (const auto& h : history) {
    if (auto bad = bad_history_value(h))
      return Error{"commit: usage history of queue " + h.queue + ": " + *bad +
                       "; an average must be a finite number >= 0; nothing was written",
                   ErrorCode::kInvalidArgument};
    Stmt::Reset r(put);
    put.bind(1, h.queue);
    put.bind(2, h.at);
    put.bind(3, encode_history(h));
    if (put.step() != SQLITE_DONE) return failed(h.queue);
  }
  return Ok();
}

Result<void> read_history_rows(Stmt& all, const std::string& path, Loaded& out,
                               const std::function<Error()>& failed) {
  Stmt::Reset r(all);
  int rc;
  while ((rc = all.step()) == SQLITE_ROW) {
    HistoryRecord h;
    h.queue = all.text(0);
    h.at = all.int64(1);
    auto average = decode_history(all.text(2), h.queue);
    if (!average) {
      out.history_skipped.push_back("state file " + path + ": " + average.error());
      continue;
    }
    h.average = std::move(average).value();
    out.history.push_back(std::move(h));
  }
  if (rc != SQLITE_DONE) return failed();
  return Ok();
}

}  // namespace gpuq::storage
