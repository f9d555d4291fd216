// watch, logs and admin backup's copy: server streams, so they need the gRPC channel; only the
// whole gpuq-full has them (the quick gpuq runs gpuq-full for them: cli/README.md).
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/requests.hpp"

namespace gpuq::cli {

namespace {

struct WatchOptions {
  std::uint64_t from = 0;
  std::string queue, job, output = "table";
};

int run_watch(Context& ctx, const WatchOptions& o) {
  const OutputFormat f = parse_output_format(o.output);
  auto stub = v1::Jobs::NewStub(ctx.channel());
  v1::WatchJobsRequest req;
  req.set_from_seq(o.from);
  req.set_queue(o.queue);
  req.set_job_id(o.job);
  auto call = ctx.call(/*stream_without_deadline=*/true);
  auto reader = stub->Watch(call.get(), req);
  v1::JobEvent e;
  std::uint64_t last = 0;
  bool read_any = false;
  while (reader->Read(&e)) {
    read_any = true;
    last = e.seq();
    if (f == OutputFormat::kJson)
      ctx.out << to_json(e, false) << '\n';
    else
      ctx.out << event_line(e) << '\n';
    ctx.out.flush();
  }
  grpc::Status st = reader->Finish();
  // A watch runs until Ctrl-C: any other end is worth a message and a non-zero exit. A refused
  // request, or a server never reached, is reported as for any other command.
  const bool broke = st.error_code() == grpc::StatusCode::UNAVAILABLE && (read_any || !is_unreachable(st));
  if (!st.ok() && !broke) return ctx.fail(st);
  ctx.err << "gpuq: the watch ended: "
          << (st.ok() ? std::string("gpuqd closed the stream")
              : is_unreachable(st) ? "the connection to gpuqd broke (" + escaped(st.error_message()) + ")"
                                   : escaped(st.error_message()))
          << "; gpuq watch --from " << (last != 0 ? last : o.from) << " resumes after the last event shown\n";
  return 1;
}

}  // namespace

void add_watch(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<WatchOptions>();
  auto* cmd = app.add_subcommand(
      "watch", "Print job events as they happen (until Ctrl-C or the server ends the stream)");
  cmd->add_option("--from", o->from,
                  "events after this sequence number; 0 (default): all kept history");
  cmd->add_option("-q,--queue", o->queue, "only this queue");
  cmd->add_option("--job", o->job, "only this job");
  cmd->add_option("-o,--output", o->output,
                  "table (one line per event) or json (one object per line)")
      ->check(CLI::IsMember({"table", "json"}));
  cmd->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_watch(c, *o); }; });
}

namespace {

struct LogsOptions {
  std::string id;
  std::int32_t pod = 0;
  bool follow = false;
  bool all = false;
};

// Every pod of the job (--all): each line prefixed with its pod's index ("[2] "), the pods read
// one after another, or side by side with -f (a stream each, lines written whole).
int run_logs_all(Context& ctx, const LogsOptions& o) {
  v1::GetJobRequest get;
  get.set_id(o.id);
  v1::GetJobResponse job;
  if (grpc::Status st = ctx.unary("/gpuq.v1.Jobs/Get", get, job); !st.ok()) return ctx.fail(st);
  std::int32_t pods = 0;
  for (const auto& ps : job.job().spec().pod_sets()) pods += std::max(1, ps.count());
  auto stub = v1::Jobs::NewStub(ctx.channel());
  std::mutex out_mu;
  std::vector<grpc::Status> status(static_cast<std::size_t>(pods));
  auto read = [&](std::int32_t pod) {
    auto call = ctx.call(/*stream_without_deadline=*/o.follow);
    auto reader = stub->Logs(call.get(), logs_request(o.id, pod, o.follow));
    const std::string prefix = "[" + std::to_string(pod) + "] ";
    std::string pending;
    v1::LogChunk chunk;
    auto flush = [&](bool all) {
      std::size_t start = 0;
      std::lock_guard lock(out_mu);
      for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
        ctx.out << prefix << std::string_view(pending).substr(start, nl + 1 - start);
      if (all && start < pending.size()) ctx.out << prefix << pending.substr(start) << "\n", start = pending.size();
      ctx.out.flush();
      pending.erase(0, start);
    };
    while (reader->Read(&chunk)) {
      pending += chunk.data();
      flush(false);
    }
    flush(true);
    status[static_cast<std::size_t>(pod)] = reader->Finish();
  };
  if (o.follow) {
    std::vector<std::thread> readers;
    for (std::int32_t p = 0; p < pods; ++p) readers.emplace_back(read, p);
    for (auto& t : readers) t.join();
  } else {
    for (std::int32_t p = 0; p < pods; ++p) read(p);
  }
  int rc = 0;
  for (std::int32_t p = 0; p < pods; ++p)
    if (const grpc::Status& st = status[static_cast<std::size_t>(p)]; !st.ok())
      rc = ctx.fail(grpc::Status(st.error_code(), "pod " + std::to_string(p) + ": " + st.error_message()));
  return rc;
}

int run_logs(Context& ctx, const LogsOptions& o) {
  if (o.all) return run_logs_all(ctx, o);
  const v1::LogsRequest req = logs_request(o.id, o.pod, o.follow);
  auto stub = v1::Jobs::NewStub(ctx.channel());
  auto call = ctx.call(/*stream_without_deadline=*/o.follow);
  auto reader = stub->Logs(call.get(), req);
  v1::LogChunk chunk;
  while (reader->Read(&chunk)) {
    const std::string& data = chunk.data();  // raw bytes, as the pod wrote them
    ctx.out.write(data.data(), static_cast<std::streamsize>(data.size()));
    ctx.out.flush();
  }
  grpc::Status st = reader->Finish();
  return st.ok() ? 0 : ctx.fail(st);
}

}  // namespace

void add_logs(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<LogsOptions>();
  auto* cmd = app.add_subcommand(
      "logs",
      "Print a job's output (stdout and stderr of one pod); -f follows it until the job ends");
  cmd->add_option("ID", o->id, "job id")->required();
  auto* pod = cmd->add_option("--pod", o->pod, "pod index, 0 (default) .. pods-1, across the pod sets");
  cmd->add_flag("--all", o->all, "every pod of the job, each line prefixed with its pod's index ([1] ...)")->excludes(pod);
  cmd->add_flag("-f,--follow", o->follow,
                "keep printing output as it is written, until the job has finished");
  cmd->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_logs(c, *o); }; });
}

int run_backup(Context& ctx, const std::string& path) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw UsageError(tmp + ": cannot create the file");
  // The copy holds every job's command and environment: readable by its maker alone.
  std::error_code ec;
  std::filesystem::permissions(tmp, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::replace, ec);
  auto stub = v1::Admin::NewStub(ctx.channel());
  auto call = ctx.call();
  auto reader = stub->Backup(call.get(), v1::BackupRequest{});
  v1::BackupChunk chunk;
  std::uint64_t written = 0, expected = 0;
  bool first = true;
  while (reader->Read(&chunk)) {
    if (first) expected = chunk.total_bytes();
    first = false;
    out.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
    written += chunk.data().size();
  }
  grpc::Status st = reader->Finish();
  out.close();
  if (!st.ok()) {
    std::filesystem::remove(tmp, ec);
    return ctx.fail(st);
  }
  if (!out) {
    std::filesystem::remove(tmp, ec);
    ctx.err << "gpuq: " << tmp << ": write failed (disk full?)\n";
    return 1;
  }
  if (expected != 0 && written != expected) {
    std::filesystem::remove(tmp, ec);
    ctx.err << "gpuq: the backup stream ended after " << written << " of " << expected
            << " bytes; nothing written to " << path << "\n";
    return 1;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    ctx.err << "gpuq: " << path << ": " << ec.message() << "\n";
    return 1;
  }
  ctx.out << "wrote " << written << " bytes to " << path << "\n";
  return 0;
}

}  // namespace gpuq::cli
