// gpuq run: submit, wait until the job runs, attach this terminal (Jobs.Logs follow, Jobs.Input):
// it needs the gRPC channel, so only the whole gpuq-full has it (cli/README.md).
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <thread>

#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/requests.hpp"
#include "cli/submit_options.hpp"

namespace gpuq::cli {

namespace {

// gpuq run (docs/tasks/batch.md): the job is submitted with a terminal (spec.tty), waited for
// until it runs, and then this terminal is attached to it: its output through Jobs.Logs
// (follow), what is typed through Jobs.Input, byte for byte in raw mode, so Ctrl-C, Ctrl-Z and
// Ctrl-D act on the job's terminal as on any. Ctrl-C while it still waits cancels it. Exits with
// the job's exit code (125: cancelled), saying on stderr how it ended unless it succeeded.
std::atomic<bool> g_interrupted{false};
void on_interrupt(int) { g_interrupted = true; }

// This terminal in raw mode while it lives (when standard input is one).
class RawTerminal {
 public:
  RawTerminal() {
    if (::isatty(0) == 0 || ::tcgetattr(0, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(0, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() { restore(); }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;
  void restore() {
    if (active_) ::tcsetattr(0, TCSANOW, &saved_);
    active_ = false;
  }

 private:
  termios saved_{};
  bool active_ = false;
};

// ROWSxCOLS of this terminal, or empty when standard output is none.
std::string terminal_size() {
  winsize w{};
  if (::ioctl(1, TIOCGWINSZ, &w) != 0 || w.ws_row == 0 || w.ws_col == 0) return {};
  return std::to_string(w.ws_row) + "x" + std::to_string(w.ws_col);
}

// Polls the job until it holds its GPUs and runs (or ended); Ctrl-C cancels it.
grpc::Status wait_running(Context& ctx, v1::Jobs::Stub& stub, const std::string& id, v1::Job& job) {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  struct sigaction old {};
  ::sigaction(SIGINT, &sa, &old);
  grpc::Status st;
  while (true) {
    if (g_interrupted) {
      v1::CancelJobRequest req;
      req.set_id(id);
      v1::CancelJobResponse resp;
      auto call = ctx.call();
      st = stub.Cancel(call.get(), req, &resp);
      job = resp.job();
      break;
    }
    v1::GetJobRequest req;
    req.set_id(id);
    v1::GetJobResponse resp;
    auto call = ctx.call();
    st = stub.Get(call.get(), req, &resp);
    if (!st.ok()) break;
    job = resp.job();
    if (job.state() == v1::JOB_STATE_RUNNING || job.state() == v1::JOB_STATE_PREEMPTING || job_finished(job.state())) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::sigaction(SIGINT, &old, nullptr);
  return st;
}

int attach(Context& ctx, const std::string& id) {
  auto stub = v1::Jobs::NewStub(ctx.channel());
  v1::Job job;
  if (grpc::Status st = wait_running(ctx, *stub, id, job); !st.ok()) return ctx.fail(st);
  if (!job_finished(job.state())) {
    RawTerminal raw;
    std::atomic<bool> over{false};
    grpc::Status out_status;
    std::thread output([&] {
      v1::LogsRequest req;
      req.set_id(id);
      req.set_follow(true);
      auto call = ctx.call(/*stream_without_deadline=*/true);
      auto reader = stub->Logs(call.get(), req);
      v1::LogChunk chunk;
      while (reader->Read(&chunk)) {
        ctx.out.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
        ctx.out.flush();
      }
      out_status = reader->Finish();
      over = true;
    });
    bool input_open = true;
    while (!over) {
      pollfd p{0, POLLIN, 0};
      if (!input_open || ::poll(&p, 1, 100) <= 0) {
        if (!input_open) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      char buf[4096];
      const ssize_t n = ::read(0, buf, sizeof buf);
      v1::InputRequest req;
      req.set_id(id);
      if (n > 0) {
        req.set_data(buf, static_cast<std::size_t>(n));
      } else {
        if (n < 0 && errno == EINTR) continue;
        // Input from a file or a pipe ended: the job's terminal reads end-of-file (Ctrl-D).
        input_open = false;
        req.set_data("\x04");
      }
      // Its terminal may not be open yet (the job just started), or full: tried again for a while;
      // a job between two runs (requeued) takes none.
      for (int tries = 0; tries < 100 && !over; ++tries) {
        v1::InputResponse resp;
        auto call = ctx.call();
        const grpc::Status st = stub->Input(call.get(), req, &resp);
        if (st.error_code() != grpc::StatusCode::FAILED_PRECONDITION &&
            st.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED)
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    output.join();
    raw.restore();
    if (!out_status.ok()) return ctx.fail(out_status);
    v1::GetJobRequest req;
    req.set_id(id);
    v1::GetJobResponse resp;
    auto call = ctx.call();
    if (grpc::Status st = stub->Get(call.get(), req, &resp); !st.ok()) return ctx.fail(st);
    job = resp.job();
  }
  const int rc = wait_exit_code(job);
  if (job.state() != v1::JOB_STATE_SUCCEEDED)
    ctx.err << "job/" << id << " " << state_name(job.state())
            << (job.reason().empty() ? std::string() : ": " + escaped(job.reason())) << " (exit " << rc << ")\n";
  return rc;
}

int run_interactive(Context& ctx, CLI::App& cmd, SubmitOptions& o, const SubmitCommand& c) {
  if (c.file->count() > 0) throw UsageError("gpuq run takes the job from flags and a command after --, not -f");
  if (o.wait || o.hold || !o.flags.array.empty())
    throw UsageError("--wait, --hold and --array are gpuq submit's: gpuq run waits for its job and attaches to it");
  v1::SubmitJobRequest req = submit_request(ctx, cmd, o, c);
  req.mutable_spec()->set_tty(true);
  req.mutable_spec()->set_tty_size(terminal_size());
  auto stub = v1::Jobs::NewStub(ctx.channel());
  v1::SubmitJobResponse resp;
  auto call = ctx.call();
  if (grpc::Status st = stub->Submit(call.get(), req, &resp); !st.ok()) return ctx.fail(st);
  const std::string id = resp.job().spec().id();
  if (resp.job().state() == v1::JOB_STATE_PENDING)
    ctx.err << "job/" << id << " submitted (" << job_state(resp.job()) << "): waiting for it to start; Ctrl-C cancels it\n";
  ctx.err.flush();
  return attach(ctx, id);
}

}  // namespace

void add_run(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<SubmitOptions>();
  auto* cmd = app.add_subcommand(
      "run", "Run a command interactively: submit it, wait until it runs, attach this terminal to it (exit: its code)");
  auto c = std::make_shared<SubmitCommand>(add_submit_options(*cmd, *o));
  cmd->callback([&ctx, o, c, cmd] { ctx.action = [o, c, cmd](Context& x) { return run_interactive(x, *cmd, *o, *c); }; });
}

}  // namespace gpuq::cli
