#include "storage/job_rows.hpp"

#include <condition_variable>
#include <deque>
#include <optional>
#include <thread>

#include "storage/codec.hpp"

namespace gpuq::storage {
namespace {

constexpr std::size_t kRowsPerChunk = 2048;  // stream_all_jobs hands over this many at a time

}  // namespace

RowView RowView::of(const Stmt& s) {
  RowView v;
  for (int c = 0; c < kJobIntColumns; ++c) v.ints[static_cast<std::size_t>(c)] = s.int64(c);
  for (int c = 0; c < kJobTextColumns; ++c)
    v.texts[static_cast<std::size_t>(c)] = s.text(kJobIntColumns + c);
  return v;
}

std::optional<ResourceId> ResourceInterner::intern(std::string_view name) {
  for (const auto& [n, id] : seen_)
    if (n == name) return id;
  std::lock_guard lock(mu_);
  auto id = names_.intern(name);
  if (id) seen_.emplace_back(std::string(name), *id);
  return id;
}

Result<void> decode_job(const RowView& row, JobRecord& j, ResourceInterner& names) {
  const auto& n = row.ints;
  const auto& t = row.texts;
  j.number = static_cast<std::uint64_t>(n[0]);
  j.spec.id = JobId(std::string(t[0]));
  const auto state = state_from_code(n[1]);
  if (!state)
    return Error{"job " + j.spec.id.value + " has unknown state code " + std::to_string(n[1]),
                 ErrorCode::kFailedPrecondition};
  j.state = *state;
  j.spec.priority = static_cast<std::int32_t>(n[2]);
  j.spec.submitted_at = n[3];
  j.admitted_at = n[4];
  j.finished_at = n[5];
  j.attempts = static_cast<std::int32_t>(n[6]);
  j.preemptions = static_cast<std::int32_t>(n[7]);
  j.exit_code = static_cast<std::int32_t>(n[8]);
  j.gpu_use.samples = n[9];
  j.gpu_use.util_sum = n[10];
  j.gpu_use.memory_peak_mib = n[11];
  j.spec.queue = QueueName(std::string(t[1]));
  j.spec.owner = t[2];
  j.spec.name = t[3];
  j.priority_text = t[4];
  j.flavor = t[5];
  j.preempted_by = t[6];
  j.reason = t[7];
  return decode_job_body(t[8], j, names);
}

Result<std::vector<JobRecord>> read_all_jobs(Stmt& s, std::size_t expected, ResourceNames& names,
                                             const std::function<Error()>& failed) {
  std::mutex names_mu;
  ResourceInterner interner(names, names_mu);
  std::vector<JobRecord> out;
  out.reserve(expected);
  int rc;
  while ((rc = s.step()) == SQLITE_ROW)
    if (auto r = decode_job(RowView::of(s), out.emplace_back(), interner); !r) return Error{r.error(), r.code()};
  if (rc != SQLITE_DONE) return failed();
  return out;
}

Result<void> stream_all_jobs(Stmt& s, ResourceNames& names, const std::function<Error()>& failed,
                             const Store::JobSink& sink) {
  constexpr std::size_t kMaxReady = 32;  // chunks decoded ahead of the sink: bounds the memory
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<JobRecord>> ready;
  bool produced = false;  // the helper is done (all rows, or an error)
  bool stop = false;      // the sink failed: the helper stops
  std::optional<Error> read_error;
  std::thread helper([&] {
    std::mutex names_mu;
    ResourceInterner interner(names, names_mu);
    std::vector<JobRecord> chunk;
    chunk.reserve(kRowsPerChunk);
    auto hand_over = [&] {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return ready.size() < kMaxReady || stop; });
      if (stop) return false;
      ready.push_back(std::move(chunk));
      cv.notify_all();
      return true;
    };
    std::optional<Error> error;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      if (auto r = decode_job(RowView::of(s), chunk.emplace_back(), interner); !r) {
        error = Error{r.error(), r.code()};
        break;
      }
      if (chunk.size() == kRowsPerChunk) {
        if (!hand_over()) break;
        chunk = {};
        chunk.reserve(kRowsPerChunk);
      }
    }
    if (!error && rc != SQLITE_DONE && rc != SQLITE_ROW) error = failed();
    if (!error && !chunk.empty()) hand_over();
    std::lock_guard lock(mu);
    read_error = std::move(error);
    produced = true;
    cv.notify_all();
  });
  std::optional<Error> sink_error;
  while (true) {
    std::vector<JobRecord> chunk;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return !ready.empty() || produced; });
      if (ready.empty()) break;
      chunk = std::move(ready.front());
      ready.pop_front();
      cv.notify_all();
    }
    if (auto r = sink(chunk); !r) {
      sink_error = Error{r.error(), r.code()};
      std::lock_guard lock(mu);
      stop = true;
      cv.notify_all();
      break;
    }
  }
  helper.join();
  if (sink_error) return std::move(*sink_error);
  if (read_error) return std::move(*read_error);
  return Ok();
}

}  // namespace gpuq::storage
