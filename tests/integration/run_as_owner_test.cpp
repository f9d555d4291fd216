// The local executor run by gpuqd as root runs each job as its owner (docs/tasks/tenants-and-security.md): its uid,
// gid and groups, HOME/USER from its passwd entry, no new privileges, a working directory it may
// enter, and a log only it (and gpuqd) may read. Real accounts: `nobody`, `daemon`, and one the
// test makes with useradd in a group of its own (removed at the end). Skipped unless root.
#include <sys/stat.h>
#include <unistd.h>

#include "tests/integration/cli_as.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;

namespace {

// An account of the test's own, in a supplementary group of its own; removed at the end.
struct TestAccount {
  std::string user = "gpuq-t-alice", group = "gpuq-t-team";
  bool made = false;
  TestAccount() {
    shell("userdel " + user + "; groupdel " + group);  // left by an interrupted run
    made = shell("groupadd " + group).rc == 0 &&
           shell("useradd --no-create-home --no-user-group --gid users --groups " + group + " --shell /bin/sh " + user)
                   .rc == 0;
  }
  ~TestAccount() { shell("userdel " + user + "; groupdel " + group); }
};

std::string log_of(const Daemon& d, const std::string& how, const std::string& id) {
  const CliRun r = gpuq_as(d, how, "logs " + id);
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  return r.out;
}

}  // namespace

TEST_CASE("local executor as root: each job runs as its owner, with its groups, and its log is its own") {
  if (::geteuid() != 0) {
    MESSAGE("not root: running jobs as their owners needs root; CI runs as root");
    return;
  }
  TestAccount alice;
  REQUIRE_MESSAGE(alice.made, "useradd/groupadd failed");
  TempDir dir;
  ::chmod(dir.path.c_str(), 0755);
  Daemon d(dir.path, true, local_executor_config(dir.path));
  const std::string nobody = setpriv_as("nobody", "nogroup");
  const std::string as_alice = setpriv_as(alice.user, "users", true);
  const std::string as_daemon = setpriv_as("daemon", "daemon");

  // nobody's job: nobody's uid and gid, its passwd entry, no new privileges, no write to /etc.
  CliRun r = gpuq_as(d, nobody,
                     "submit --queue q --gpus 1 --workdir /tmp -- sh -c 'echo uid=$(id -u) gid=$(id -g) "
                     "user=$USER logname=$LOGNAME home=$HOME; grep NoNewPrivs /proc/self/status; "
                     "touch /etc/gpuq-owner-test 2>/dev/null && echo wrote-etc || echo cannot-write-etc'");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string job = submitted_job(r);
  CHECK(wait_ended(d, job) == "JOB_STATE_SUCCEEDED");
  const std::string out = log_of(d, nobody, job);
  CHECK_MESSAGE(out.find("uid=65534 gid=65534 user=nobody logname=nobody home=/nonexistent") != std::string::npos, out);
  CHECK_MESSAGE(out.find("NoNewPrivs:\t1") != std::string::npos, out);
  CHECK_MESSAGE(out.find("cannot-write-etc") != std::string::npos, out);
  CHECK_FALSE(fs::exists("/etc/gpuq-owner-test"));

  // Its log file is nobody's, mode 0600, in a folder of gpuqd's (nobody cannot swap the file).
  const fs::path log = dir.path / "logs" / job / "pod-0.log";
  struct stat st {};
  REQUIRE(::stat(log.c_str(), &st) == 0);
  CHECK(st.st_uid == 65534u);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat(log.parent_path().c_str(), &st) == 0);
  CHECK(st.st_uid == 0u);
  CHECK((st.st_mode & 0022) == 0);

  // Another user reads it neither through gpuqd nor from the file.
  r = gpuq_as(d, as_daemon, "logs " + job);
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user daemon may not see job " + job + " of user nobody") != std::string::npos, r.out);
  r = shell(as_daemon + "cat " + log.string());
  CHECK(r.rc != 0);
  CHECK(r.out.find("uid=65534") == std::string::npos);

  // alice's job has her supplementary group (initgroups) and primary group.
  r = gpuq_as(d, as_alice, "submit --queue q --gpus 1 --workdir /tmp -- sh -c 'echo groups=$(id -Gn) user=$(id -un)'");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string hers = submitted_job(r);
  CHECK(wait_ended(d, hers) == "JOB_STATE_SUCCEEDED");
  const std::string her_out = log_of(d, as_alice, hers);
  CHECK_MESSAGE(her_out.find("user=" + alice.user) != std::string::npos, her_out);
  CHECK_MESSAGE(her_out.find(alice.group) != std::string::npos, her_out);
  CHECK_MESSAGE(her_out.find("users") != std::string::npos, her_out);

  // A working directory its owner may not enter fails the job, saying so.
  r = gpuq_as(d, nobody, "submit --queue q --gpus 1 --workdir /root -- true");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string denied = submitted_job(r);
  CHECK(wait_ended(d, denied) == "JOB_STATE_FAILED");
  const std::string reason = std::string(shown_job(d, denied).at("reason").as_string());
  CHECK_MESSAGE(reason.find("working directory \"/root\" (as user nobody): Permission denied") != std::string::npos,
                reason);

  // A caller with no passwd entry cannot submit: the executor could run its job as no one.
  r = gpuq_as(d, "setpriv --reuid=54321 --regid=54321 --clear-groups ",
              "submit --queue q --gpus 1 --workdir /tmp -- true");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("PERMISSION_DENIED") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("spec.owner: user \"uid:54321\" has no account on this machine (no passwd entry)") !=
                    std::string::npos,
                r.out);

  // root's own jobs still run as root, with gpuqd's environment.
  r = gpuq_me(d, {"submit", "--queue", "q", "--gpus", "1", "--workdir", "/tmp", "--", "sh", "-c", "id -u"});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string mine = submitted_job(r);
  CHECK(wait_ended(d, mine) == "JOB_STATE_SUCCEEDED");
  CHECK(gpuq_me(d, {"logs", mine}).out.find("0\n") != std::string::npos);
}
