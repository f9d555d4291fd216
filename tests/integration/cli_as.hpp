#pragma once
// The real gpuq command line as another Unix account (setpriv), and as this process, against a
// gpuqd child's Unix socket: for the tests of who may do what (docs/tasks/tenants-and-security.md).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli.hpp"
#include "tests/integration/daemon_process.hpp"

namespace gpuq::test {

struct CliRun {
  int rc = 0;
  std::string out;  // stdout and stderr
};

// `command` through sh, its exit code and output.
inline CliRun shell(const std::string& command) {
  CliRun r;
  FILE* f = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) r.out.append(buf, n);
  const int status = ::pclose(f);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// How setpriv becomes `user`: "--reuid=nobody --regid=nogroup --clear-groups", or with the
// account's own groups "--reuid=alice --regid=users --init-groups".
inline std::string setpriv_as(const std::string& user, const std::string& group, bool init_groups = false) {
  return "setpriv --reuid=" + user + " --regid=" + group + (init_groups ? " --init-groups " : " --clear-groups ");
}

// The gpuq binaries where any account can run them: a copy of gpuq and of gpuq-full (which the
// quick gpuq runs beside itself) in a folder of their own under /tmp, made once per test process
// and removed at its end. The build's own folder may be one another account cannot enter (a
// clone in /root, mode 0700), and then nobody could start gpuq-full from there.
inline const std::string& gpuq_for_others() {
  struct Copy {
    std::filesystem::path dir;
    std::string gpuq;
    Copy() {
      namespace fs = std::filesystem;
      char tmpl[] = "/tmp/gpuq-cli-XXXXXX";
      if (::mkdtemp(tmpl) == nullptr) return;
      dir = tmpl;
      const auto rx = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                      fs::perms::others_exec;
      fs::permissions(dir, rx);
      const fs::path from = fs::path(GPUQ_CLI_PATH).parent_path();
      for (const char* name : {"gpuq", "gpuq-full"}) {
        fs::copy_file(from / name, dir / name, fs::copy_options::overwrite_existing);
        fs::permissions(dir / name, rx);
      }
      gpuq = (dir / "gpuq").string();
    }
    ~Copy() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  };
  static const Copy copy;
  REQUIRE_MESSAGE(!copy.gpuq.empty(), "cannot copy gpuq and gpuq-full to a folder under /tmp for other accounts");
  return copy.gpuq;
}

// The gpuq binary as another account (`how`: setpriv_as(...)) through gpuqd's socket, run from
// `cwd` (stopped after `seconds`, if given).
inline CliRun gpuq_as(const Daemon& d, const std::string& how, const std::string& args, int seconds = 0,
                      const std::string& cwd = "/") {
  return shell("cd " + cwd + " && " + (seconds > 0 ? "timeout " + std::to_string(seconds) + " " : std::string()) + how +
               gpuq_for_others() + " --server unix:" + d.socket() + " " + args);
}

// This process through the socket.
inline CliRun gpuq_me(const Daemon& d, std::vector<std::string> args) {
  args.insert(args.begin(), {"--server", "unix:" + d.socket()});
  std::ostringstream out, err;
  CliRun r;
  r.rc = gpuq::cli::run_cli(args, out, err);
  r.out = out.str() + err.str();
  return r;
}

inline std::string submitted_job(const CliRun& r) {
  const auto end = r.out.find(" submitted (");
  REQUIRE_MESSAGE((r.out.rfind("job/", 0) == 0 && end != std::string::npos), r.out);
  return r.out.substr(4, end - 4);
}

// The job as an admin sees it (`gpuq show -o json`).
inline boost::json::value shown_job(const Daemon& d, const std::string& id) {
  const CliRun r = gpuq_me(d, {"show", id, "-o", "json"});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  return boost::json::parse(r.out);
}

// Polls (at most 30 s) until the job has ended; its state.
inline std::string wait_ended(const Daemon& d, const std::string& id) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string state;
  while (std::chrono::steady_clock::now() < until) {
    state = std::string(shown_job(d, id).at("state").as_string());
    if (state == "JOB_STATE_SUCCEEDED" || state == "JOB_STATE_FAILED" || state == "JOB_STATE_CANCELLED") return state;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  FAIL("job " << id << " is still " << state);
  return state;
}

}  // namespace gpuq::test
