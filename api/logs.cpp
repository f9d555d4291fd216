// Jobs.Logs. A thread per stream reads the pod's log file a chunk at a time, waiting for each
// write to go out before reading on; with follow it polls the file (every 50 ms) and the job's
// state (the store's read connection) until the job has finished and the file holds nothing
// more. Jobs.Input writes into a pod's terminal.
#include "api/logs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <variant>

#include "api/service_util.hpp"

namespace gpuq::api {

namespace {

constexpr std::size_t kChunk = 64 << 10;

// What both streams share: one chunk written at a time (the thread that reads waits for each to
// go out), a cancel seen by that thread, and the end.
class ChunkStream : public grpc::ServerWriteReactor<v1::LogChunk> {
 public:
  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    writing_ = false;
    write_failed_ = !ok;
    cv_.notify_all();
  }
  void OnCancel() override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    cancelled();
    cv_.notify_all();
  }
  void OnDone() override { delete this; }

 protected:
  virtual void cancelled() {}  // under mu_
  // Writes `data` at `offset` and waits for it to go out; false when the client is gone.
  bool write(std::int64_t offset, std::string_view data) {
    std::unique_lock lock(mu_);
    if (cancelled_) return false;
    chunk_.Clear();
    chunk_.set_offset(offset);
    chunk_.set_data(data.data(), data.size());
    writing_ = true;
    StartWrite(&chunk_);
    cv_.wait(lock, [&] { return !writing_ || cancelled_; });
    return !write_failed_ && !cancelled_;
  }
  // Waits `ms` or until the client is gone (true).
  bool wait_cancelled(int ms) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return cancelled_; });
  }
  bool gone() {
    std::lock_guard lock(mu_);
    return cancelled_ || write_failed_;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool writing_ = false, write_failed_ = false, cancelled_ = false;
  v1::LogChunk chunk_;
};

class LogStream final : public ChunkStream {
 public:
  LogStream(storage::Store& store, std::string job, std::filesystem::path path, std::int64_t offset, bool follow)
      : store_(store), job_(std::move(job)), path_(std::move(path)), offset_(offset), follow_(follow) {
    std::thread([this] { run(); }).detach();
  }

 private:
  // Whether the job will write no more: finished, or gone from the store.
  bool job_over() {
    auto rec = store_.job(job_);
    return !rec || !rec.value() || is_finished(rec.value()->state);
  }

  // Sends what the file holds past offset_; false when the client is gone.
  bool send_available() {
    std::ifstream in(path_, std::ios::binary);
    if (!in) return true;  // not started yet
    in.seekg(offset_);
    std::string data(kChunk, '\0');
    while (in.read(data.data(), static_cast<std::streamsize>(data.size())) || in.gcount() > 0) {
      const std::int64_t at = offset_;
      offset_ += in.gcount();
      if (!write(at, std::string_view(data.data(), static_cast<std::size_t>(in.gcount())))) return false;
    }
    return true;
  }

  void run() {
    while (true) {
      // Decided before reading, so that what was written up to the job's end is all read.
      const bool over = !follow_ || job_over();
      if (!send_available()) return Finish(grpc::Status::CANCELLED);
      if (over) return Finish(grpc::Status::OK);
      // 50 ms: a terminal's echo (gpuq run) comes back this way.
      if (wait_cancelled(50)) return Finish(grpc::Status::CANCELLED);
    }
  }

  storage::Store& store_;
  const std::string job_;
  const std::filesystem::path path_;
  std::int64_t offset_;
  const bool follow_;
};

// A pod's output from a binder that streams it (the Kubernetes binder: pods/log through the API
// server; Binder::stream_log), on a thread of its own. A follow of a pod that has not started
// asks again every 250 ms until it has, or the job ended without it.
class BinderLogStream final : public ChunkStream {
 public:
  BinderLogStream(storage::Store& store, const binder::Binder& binder, storage::JobRecord job, int pod,
                  std::int64_t offset, bool follow)
      : store_(store), binder_(binder), job_(std::move(job)), pod_(pod), offset_(offset), follow_(follow),
        stop_(binder.log_stop()) {
    std::thread([this] { run(); }).detach();
  }

 private:
  void cancelled() override {
    if (stop_) stop_->stop();
  }
  bool job_over() {
    auto rec = store_.job(job_.spec.id.value);
    return !rec || !rec.value() || is_finished(rec.value()->state);
  }
  void run() {
    while (true) {
      const bool over = job_over();  // before the attempt: a pod that ended meanwhile is still read
      Result<void> r = binder_.stream_log(job_, pod_, offset_, follow_,
                                          [this](std::string_view d) {
                                            const std::int64_t at = offset_;
                                            offset_ += static_cast<std::int64_t>(d.size());
                                            return write(at, d);
                                          },
                                          stop_.get());
      if (gone()) return Finish(grpc::Status::CANCELLED);
      if (r) return Finish(grpc::Status::OK);
      if (r.code() != ErrorCode::kNotFound || !follow_ || over) return Finish(to_status(r.code(), r.error()));
      if (wait_cancelled(250)) return Finish(grpc::Status::CANCELLED);
    }
  }

  storage::Store& store_;
  const binder::Binder& binder_;
  const storage::JobRecord job_;
  const int pod_;
  std::int64_t offset_;
  const bool follow_;
  std::unique_ptr<binder::Binder::LogStop> stop_;
};

// A job's record with the store and the binder, once `may` allows the caller; a status
// otherwise. The store and the binder are safe to read from this thread; only their addresses
// come from the engine thread, so the SQLite read does not hold it up.
struct Found {
  storage::Store* store = nullptr;
  const binder::Binder* binder = nullptr;
  storage::JobRecord rec;
};
std::variant<Found, grpc::Status> find_job(daemon::Loop& loop, const std::string& id,
                                           const std::function<grpc::Status(const storage::JobRecord& job)>& may) {
  Found f;
  loop.run_sync([&](daemon::Core& c) {
    f.store = &c.store();
    f.binder = &c.binder();
  });
  auto found = f.store->job(id);
  if (!found) return to_status(ErrorCode::kUnavailable, found.error());
  if (!found.value()) return to_status(ErrorCode::kNotFound, "job \"" + id + "\" does not exist");
  if (grpc::Status st = may(*found.value()); !st.ok()) return st;
  f.rec = std::move(*found.value());
  return f;
}

}  // namespace

grpc::ServerWriteReactor<v1::LogChunk>* start_log_stream(daemon::Loop& loop, const v1::LogsRequest& req,
                                                         const std::function<grpc::Status(const storage::JobRecord& job)>& may_read) {
  auto found = find_job(loop, req.id(), may_read);
  if (const auto* st = std::get_if<grpc::Status>(&found)) return detail::refused<v1::LogChunk>(*st);
  const auto& [store, binder, job] = std::get<Found>(found);
  const storage::JobRecord* rec = &job;
  const std::optional<std::filesystem::path> path = binder->log_path(JobId(req.id()), req.pod());
  if (!path && !binder->streams_logs())
    return detail::refused<v1::LogChunk>(to_status(ErrorCode::kFailedPrecondition,
                                       "gpuqd runs with binder: none, which runs no processes and keeps no logs"));
  std::int32_t pods = 0;
  for (const PodSet& s : rec->spec.pod_sets) pods += s.count;
  if (req.pod() < 0 || req.pod() >= pods)
    return detail::refused<v1::LogChunk>(to_status(ErrorCode::kInvalidArgument,
                                       "pod: " + std::to_string(req.pod()) + " is not a pod of job \"" + req.id() +
                                           "\"; use 0 to " + std::to_string(pods - 1)));
  if (req.offset() < 0)
    return detail::refused<v1::LogChunk>(to_status(ErrorCode::kInvalidArgument,
                                       "offset: " + std::to_string(req.offset()) + " is negative; use 0 or more"));
  if (!path) {  // a binder that streams its pods' output
    if (!req.follow() && !is_finished(rec->state) && rec->state != JobState::kRunning && rec->state != JobState::kPreempting)
      return detail::refused<v1::LogChunk>(to_status(
          ErrorCode::kFailedPrecondition, "job \"" + req.id() + "\" has not started yet (" + to_string(rec->state) +
                                              "); its output shows once it runs (gpuq logs -f " + req.id() +
                                              " waits for it; gpuq show " + req.id() + " says why it waits)"));
    return new BinderLogStream(*store, *binder, job, req.pod(), req.offset(), req.follow());
  }
  // No output yet because it never ran (a requeued job keeps its earlier attempts' log): say so,
  // rather than an empty reply. A follow waits for it instead.
  std::error_code ec;
  const bool started = rec->state == JobState::kRunning || rec->state == JobState::kPreempting;
  if (!started && !std::filesystem::exists(*path, ec) && !(req.follow() && !is_finished(rec->state))) {
    const std::string state = to_string(rec->state);
    if (is_finished(rec->state))
      return detail::refused<v1::LogChunk>(to_status(
          ErrorCode::kFailedPrecondition, "job \"" + req.id() + "\" ended (" + state + ") with no output from pod " +
                                              std::to_string(req.pod()) + "; it never started there"));
    return detail::refused<v1::LogChunk>(to_status(
        ErrorCode::kFailedPrecondition, "job \"" + req.id() + "\" has not started yet (" + state +
                                            "); its output shows once it runs (gpuq logs -f " + req.id() +
                                            " waits for it; gpuq show " + req.id() + " says why it waits)"));
  }
  return new LogStream(*store, req.id(), *path, req.offset(), req.follow());
}

grpc::Status send_input(daemon::Loop& loop, const v1::InputRequest& req,
                        const std::function<grpc::Status(const storage::JobRecord& job)>& may_write) {
  if (req.data().size() > kChunk)
    return to_status(ErrorCode::kInvalidArgument, "data: " + std::to_string(req.data().size()) +
                                                      " bytes; at most 65536 are sent at once");
  auto found = find_job(loop, req.id(), may_write);
  if (const auto* st = std::get_if<grpc::Status>(&found)) return *st;
  const auto& [store, binder, job] = std::get<Found>(found);
  const storage::JobRecord* rec = &job;
  if (!rec->run.tty)
    return to_status(ErrorCode::kFailedPrecondition,
                     "job \"" + req.id() + "\" has no terminal; only a job started by gpuq run takes input");
  if (auto r = binder->write_input(JobId(req.id()), req.pod(), req.data()); !r) return to_status(r.code(), r.error());
  return grpc::Status::OK;
}

}  // namespace gpuq::api
