// Who may do what, through gpuqd's Unix socket (README: Security), with real accounts: the test
// runs as root (as CI does) and runs the real gpuq command line as `nobody` with setpriv. Where
// the test is not root it says so and checks only what root's own calls show.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/requests.hpp"
#include "tests/integration/daemon_process.hpp"

using namespace gpuq::test;
namespace json = boost::json;

namespace {

struct Run {
  int rc = 0;
  std::string out;  // stdout and stderr
};

// The gpuq binary as `nobody` through the socket (stopped after `seconds`, if given).
Run as_nobody(const Daemon& d, const std::string& args, int seconds = 0) {
  const std::string cmd = (seconds > 0 ? "timeout " + std::to_string(seconds) + " " : std::string()) +
                          "setpriv --reuid=nobody --regid=nogroup --clear-groups " + std::string(GPUQ_CLI_PATH) +
                          " --server unix:" + d.socket() + " " + args + " 2>&1";
  Run r;
  FILE* f = ::popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) r.out.append(buf, n);
  const int status = ::pclose(f);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// This process (root) through the socket.
Run as_me(const Daemon& d, std::vector<std::string> args) {
  args.insert(args.begin(), {"--server", "unix:" + d.socket()});
  std::ostringstream out, err;
  Run r;
  r.rc = gpuq::cli::run_cli(args, out, err);
  r.out = out.str() + err.str();
  return r;
}

std::string submitted_id(const Run& r) {
  const auto end = r.out.find(" submitted (");
  REQUIRE_MESSAGE((r.out.rfind("job/", 0) == 0 && end != std::string::npos), r.out);
  return r.out.substr(4, end - 4);
}

std::string owner_of(const Daemon& d, const std::string& id) {
  const Run r = as_me(d, {"show", id, "-o", "json"});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  return std::string(json::parse(r.out).at("spec").at("owner").as_string());
}

}  // namespace

TEST_CASE("through the socket a job is its submitter's and seen by it alone, and only admins change queues, nodes and others' jobs") {
  TempDir dir;
  ::chmod(dir.path.c_str(), 0755);  // nobody reaches the socket inside
  Daemon d(dir.path);
  REQUIRE(d.socket() == (dir.path / "state.sock").string());
  struct stat st {};
  REQUIRE(::stat(d.socket().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0666);

  // The state file and its WAL hold every job's command and environment: gpuqd's alone.
  for (const char* f : {"state.db", "state.db-wal", "state.db-shm"}) {
    REQUIRE(::stat((dir.path / f).c_str(), &st) == 0);
    CHECK_MESSAGE((st.st_mode & 0777) == 0600, f);
  }
  const std::string mine = submitted_id(as_me(d, {"submit", "--queue", "research", "--gpus", "1", "--", "true"}));
  CHECK(owner_of(d, mine) == gpuq::cli::current_user());
  if (::getuid() != 0) {
    MESSAGE("not root: the calls as nobody (setpriv) are skipped; CI runs as root");
    return;
  }
  CHECK(owner_of(d, mine) == "root");

  // nobody submits: the job is nobody's, whatever its $USER says.
  Run r = as_nobody(d, "submit --queue research --gpus 1 -- true");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string theirs = submitted_id(r);
  CHECK(owner_of(d, theirs) == "nobody");

  // nobody sees its own jobs, not root's: not in its list, not by id, not their output.
  r = as_nobody(d, "ls -o json");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find(theirs) != std::string::npos);
  CHECK(r.out.find("\"" + mine + "\"") == std::string::npos);
  CHECK(as_me(d, {"ls", "-o", "json"}).out.find("\"" + mine + "\"") != std::string::npos);  // an admin sees all
  const std::string details = "a job's details are its owner's and gpuqd's admins' (root)";
  r = as_nobody(d, "show " + mine);
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user nobody may not see job " + mine + " of user root: " + details) != std::string::npos, r.out);
  r = as_nobody(d, "logs " + mine);
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user nobody may not see job " + mine + " of user root: " + details) != std::string::npos, r.out);
  // Its watch replays and streams its own jobs' events only.
  r = as_nobody(d, "watch --from 0", 3);
  CHECK_MESSAGE(r.out.find(theirs) != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find(mine + " ") == std::string::npos, r.out);
  r = as_nobody(d, "ls --owner root");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user nobody may not see the jobs of user root: " + details) != std::string::npos, r.out);

  const std::string admins = "only gpuqd's admins may (root; admins: in gpuqd's config)";
  r = as_nobody(d, "submit --queue research --gpus 1 --owner root -- true");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user nobody may not submit a job owned by root: a job is its submitter's; --owner is for "
                           "gpuqd's admins (root)") != std::string::npos, r.out);
  r = as_nobody(d, "cancel " + mine);
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user nobody may not cancel job " + mine + " of user root: only its owner or gpuqd's admins may (root)") !=
                    std::string::npos, r.out);
  r = as_nobody(d, "queues delete prod");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user nobody may not delete queue prod: " + admins) != std::string::npos, r.out);
  r = as_nobody(d, "nodes cordon n0");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user nobody may not cordon node n0: " + admins) != std::string::npos, r.out);
  std::filesystem::create_directory(dir.path / "open");
  ::chmod((dir.path / "open").c_str(), 0777);  // where nobody may write its copy, were it allowed one
  r = as_nobody(d, "admin backup " + (dir.path / "open" / "copy.db").string());
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user nobody may not take a backup: " + admins) != std::string::npos, r.out);
  CHECK_FALSE(std::filesystem::exists(dir.path / "open" / "copy.db"));
  std::ofstream(dir.path / "q.yaml") << "queues:\n  - name: mine\n    quotas: [{flavor: h100, resources: {gpu: {nominal: 1}}}]\n";
  ::chmod((dir.path / "q.yaml").c_str(), 0644);
  r = as_nobody(d, "apply -f " + (dir.path / "q.yaml").string());
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user nobody may not apply queue mine: " + admins) != std::string::npos, r.out);

  // What each may do: nobody cancels its own job; root (an admin) anyone's and the cluster's.
  r = as_nobody(d, "cancel " + theirs);
  CHECK_MESSAGE(r.rc == 0, r.out);
  CHECK(as_me(d, {"cancel", mine}).rc == 0);
  CHECK(as_me(d, {"nodes", "cordon", "n0"}).rc == 0);
  CHECK(as_me(d, {"apply", "-f", (dir.path / "q.yaml").string()}).rc == 0);
  REQUIRE(as_me(d, {"admin", "backup", (dir.path / "copy.db").string()}).rc == 0);
  REQUIRE(::stat((dir.path / "copy.db").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("over TCP a caller is anonymous: queue summaries only; insecure: true trusts it; no other address without it") {
  TempDir dir;
  Daemon d(dir.path);
  auto over_tcp = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", d.tcp()});
    std::ostringstream out, err;
    Run r;
    r.rc = gpuq::cli::run_cli(args, out, err);
    r.out = out.str() + err.str();
    return r;
  };
  Run r = over_tcp({"queues"});
  CHECK_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("research") != std::string::npos);
  const std::string unknown = "gpuqd does not know who calls from ipv4:127.0.0.1:";
  const std::string use_socket = "use gpuqd's Unix socket (gpuq --server unix:" + d.socket() + ", or GPUQ_SERVER)";
  for (const auto& [args, action] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"ls"}, "see jobs"},
           {{"submit", "--queue", "research", "--gpus", "1", "--", "true"}, "submit a job"},
           {{"nodes"}, "see nodes"},
           {{"nodes", "cordon", "n0"}, "cordon node n0"},
           {{"cancel", "no-such-job"}, "cancel a job"},
           {{"queues", "delete", "prod"}, "delete queue prod"},
           {{"watch", "--from", "0"}, "watch jobs"}}) {
    r = over_tcp(args);
    CHECK(r.rc != 0);
    CHECK_MESSAGE(r.out.find(unknown) != std::string::npos, r.out);
    CHECK_MESSAGE(r.out.find("to " + action + ", " + use_socket) != std::string::npos, r.out);
  }
  d.stop(SIGTERM);

  // insecure: true: every TCP caller is trusted, as before gpuqd knew its callers.
  TempDir open_dir;
  Daemon trusting(open_dir.path, true, std::string("insecure: true\n") + kConfig);
  std::ostringstream out, err;
  CHECK(gpuq::cli::run_cli({"--server", trusting.tcp(), "submit", "--queue", "research", "--gpus", "1", "--", "true"},
                           out, err) == 0);
  trusting.stop(SIGTERM);

  // Not on loopback without insecure: true: gpuqd does not start.
  TempDir other;
  GpuqdChild c = start_gpuqd(GPUQD_PATH, {"--state-file", (other.path / "s.db").string(), "--grpc", "0.0.0.0:0", "--http",
                                          "127.0.0.1:0"},
                             other.path / "out", other.path / "err", std::chrono::seconds(10));
  CHECK(c.address.empty());
  CHECK(slurp(other.path / "err").find("gpuqd: grpc: 0.0.0.0:0 is not a loopback address, and gpuqd has no TLS yet") !=
        std::string::npos);
}
