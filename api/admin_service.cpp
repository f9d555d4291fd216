// The Admin service: a consistent copy of the state file (Backup), GPU-hours per queue and
// flavor over a period (Usage).
#include <cstdio>
#include <fstream>

#include "api/service_util.hpp"

namespace gpuq::api {

using namespace detail;

namespace {

// Backup: a consistent copy made through the store's own connection on a thread of its own (the
// engine thread keeps serving), then streamed from that file in 1 MiB chunks, one in memory at a
// time; the file is unlinked once open.
class BackupStream final : public grpc::ServerWriteReactor<v1::BackupChunk> {
 public:
  explicit BackupStream(storage::Store& store) {
    std::thread([this, &store] { produce(store); }).detach();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::CANCELLED);
      return;
    }
    next();
  }
  void OnDone() override { delete this; }

 private:
  void produce(storage::Store& store) {
    static std::atomic<std::uint64_t> counter{0};
    const auto path = std::filesystem::temp_directory_path() /
                      ("gpuq-backup-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + ".db");
    auto r = store.backup_to(path.string());
    if (!r) {
      Finish(to_status(ErrorCode::kUnavailable, "backup failed: " + r.error()));
      return;
    }
    std::error_code ec;
    total_ = std::filesystem::file_size(path, ec);
    in_.open(path, std::ios::binary);
    std::filesystem::remove(path, ec);
    if (!in_) {
      Finish(to_status(ErrorCode::kUnavailable, "backup failed: cannot read the copy " + path.string()));
      return;
    }
    next();
  }
  void next() {
    constexpr std::size_t kChunk = 1 << 20;
    std::string data(kChunk, '\0');
    in_.read(data.data(), static_cast<std::streamsize>(kChunk));
    data.resize(static_cast<std::size_t>(in_.gcount()));
    if (data.empty() && !first_) {
      Finish(grpc::Status::OK);
      return;
    }
    chunk_.Clear();
    if (first_) chunk_.set_total_bytes(total_);  // the first chunk, even of an empty copy
    first_ = false;
    chunk_.set_data(std::move(data));
    StartWrite(&chunk_);
  }

  std::ifstream in_;
  std::uint64_t total_ = 0;
  bool first_ = true;
  v1::BackupChunk chunk_;
};

class AdminService final : public v1::Admin::CallbackService {
 public:
  AdminService(Loop& loop, const Readers& readers) : loop_(loop), readers_(readers) {}

  grpc::ServerWriteReactor<v1::BackupChunk>* Backup(grpc::CallbackServerContext* ctx,
                                                    const v1::BackupRequest*) override {
    if (auto st = readers_.gate->admin_only(readers_.gate->of(*ctx), "take a backup"); !st.ok())
      return refused<v1::BackupChunk>(st);
    storage::Store* store = nullptr;
    loop_.run_sync([&](Core& c) { store = &c.store(); });
    return new BackupStream(*store);
  }

  grpc::ServerUnaryReactor* Usage(grpc::CallbackServerContext* ctx, const v1::UsageRequest* req,
                                  v1::UsageResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    in_turn(loop_, reactor, [req, resp](Core&, Time now) {
      const Time to = req->to() == 0 ? now : req->to();
      if (req->from() < 0 || to < req->from())
        return Reply::error({grpc::StatusCode::INVALID_ARGUMENT,
                             "from/to: [" + std::to_string(req->from()) + ", " + std::to_string(to) +
                                 ") is not a period; from must be >= 0 and <= to"});
      return Reply::then([req, resp, to](Core& c) {
        auto usage = c.store().usage(req->from(), to, req->queue());
        if (!usage) return to_status(ErrorCode::kUnavailable, usage.error());
        resp->set_from(req->from());
        resp->set_to(to);
        for (const auto& u : *usage) {
          auto* q = resp->add_usage();
          q->set_queue(u.queue);
          q->set_flavor(u.flavor);
          q->set_gpu_hours(u.gpu_hours);
          q->set_jobs(u.jobs);
        }
        return grpc::Status::OK;
      });
    });
    return reactor;
  }

 private:
  Loop& loop_;
  const Readers& readers_;
};

}  // namespace

std::unique_ptr<v1::Admin::CallbackService> make_admin_service(daemon::Loop& loop, const Readers& readers) {
  return std::make_unique<AdminService>(loop, readers);
}

}  // namespace gpuq::api
