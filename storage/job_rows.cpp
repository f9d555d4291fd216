#include "storage/job_rows.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <optional>
#include <thread>

#include "storage/codec.hpp"

namespace gpuq::storage {
namespace {

constexpr std::size_t kRowsPerChunk = 2048;
constexpr std::size_t kParallelFrom = 20'000;  // below this a thread costs more than it saves

// Rows copied out of SQLite: the texts of all rows back to back in one buffer.
struct Chunk {
  std::size_t first = 0;  // index of the first row in the result
  std::string bytes;
  std::vector<std::array<std::int64_t, kJobIntColumns>> ints;
  std::vector<std::array<std::uint32_t, kJobTextColumns + 1>> offsets;

  void add(const Stmt& s) {
    ints.emplace_back();
    offsets.emplace_back();
    for (int c = 0; c < kJobIntColumns; ++c) ints.back()[static_cast<std::size_t>(c)] = s.int64(c);
    for (int c = 0; c < kJobTextColumns; ++c) {
      offsets.back()[static_cast<std::size_t>(c)] = static_cast<std::uint32_t>(bytes.size());
      bytes.append(s.text(kJobIntColumns + c));
    }
    offsets.back()[kJobTextColumns] = static_cast<std::uint32_t>(bytes.size());
  }
  RowView row(std::size_t i) const {
    RowView v;
    v.ints = ints[i];
    for (std::size_t c = 0; c < kJobTextColumns; ++c)
      v.texts[c] = std::string_view(bytes).substr(offsets[i][c], offsets[i][c + 1] - offsets[i][c]);
    return v;
  }
};

// Chunks flow from the stepping thread to the decoders; the first error wins.
class ChunkQueue {
 public:
  void push(std::unique_ptr<Chunk> c) {
    {
      std::lock_guard lock(mu_);
      chunks_.push_back(std::move(c));
    }
    cv_.notify_one();
  }
  void close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  // nullptr when closed and drained.
  std::unique_ptr<Chunk> pop(bool wait) {
    std::unique_lock lock(mu_);
    if (wait) cv_.wait(lock, [&] { return closed_ || !chunks_.empty(); });
    if (chunks_.empty()) return nullptr;
    auto c = std::move(chunks_.front());
    chunks_.pop_front();
    return c;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Chunk>> chunks_;
  bool closed_ = false;
};

struct FirstError {
  std::mutex mu;
  std::optional<Error> error;
  std::atomic<bool> set{false};
  void record(Error e) {
    std::lock_guard lock(mu);
    if (!error) error = std::move(e);
    set = true;
  }
};

void decode_chunk(const Chunk& c, std::vector<JobRecord>& out, ResourceInterner& names,
                  FirstError& err) {
  for (std::size_t i = 0; i < c.ints.size() && !err.set; ++i)
    if (auto r = decode_job(c.row(i), out[c.first + i], names); !r)
      err.record(Error{r.error(), r.code()});
}

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
  std::vector<JobRecord> out;
  int rc = SQLITE_OK;
  if (expected < kParallelFrom) {
    out.reserve(expected);
    ResourceInterner interner(names, names_mu);
    while ((rc = s.step()) == SQLITE_ROW) {
      if (auto r = decode_job(RowView::of(s), out.emplace_back(), interner); !r)
        return Error{r.error(), r.code()};
    }
    if (rc != SQLITE_DONE) return failed();
    return out;
  }
  // Sized once up front (the caller counted in the same read transaction); decoders write
  // disjoint slots, so `out` itself needs no lock.
  out.resize(expected);
  ChunkQueue queue;
  FirstError err;
  std::thread helper([&] {
    ResourceInterner interner(names, names_mu);
    while (auto c = queue.pop(true)) decode_chunk(*c, out, interner, err);
  });
  std::size_t rows = 0;
  auto chunk = std::make_unique<Chunk>();
  while (!err.set && (rc = s.step()) == SQLITE_ROW) {
    if (rows == expected) {
      err.record(Error{"more unfinished jobs than counted", ErrorCode::kUnavailable});
      break;
    }
    chunk->add(s);
    if (++rows % kRowsPerChunk == 0) {
      queue.push(std::move(chunk));
      chunk = std::make_unique<Chunk>();
      chunk->first = rows;
    }
  }
  if (!chunk->ints.empty()) queue.push(std::move(chunk));
  queue.close();
  {
    // This thread decodes too once SQLite is done.
    ResourceInterner interner(names, names_mu);
    while (auto c = queue.pop(false)) decode_chunk(*c, out, interner, err);
  }
  helper.join();
  if (err.error) return std::move(*err.error);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return failed();
  out.resize(rows);
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
