// gpuq hold / release / submit --hold against a real gpuqd (none binder, kConfig's two 8-GPU
// nodes): a held job is listed as Held and passed over, a later job runs, released it runs
// next; the hold survives a SIGKILL of gpuqd; another user may not hold or release it.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <csignal>
#include <string>

#include "tests/integration/cli_as.hpp"
#include "tests/integration/cli_run.hpp"
#include "tests/support/files.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace integration_cli_holds_test {

using namespace gpuq::test;

namespace {

std::string state_of(const Daemon& d, const std::string& id) {
  return std::string(shown_job(d, id).at("state").as_string());
}

}  // namespace

TEST_CASE("gpuq hold and release: passed over while held, back in place when released, kept across a crash") {
  TempDir dir;
  ::chmod(dir.path.c_str(), 0755);  // nobody reaches the socket inside
  std::string held;
  {
    Daemon d(dir.path);
    const CliRun sub = gpuq_me(d, {"submit", "-q", "research", "--gpus", "8", "--replicas", "2", "--hold", "--", "true"});
    REQUIRE_MESSAGE(sub.rc == 0, sub.out);
    CHECK(sub.out.find("submitted (Held)") != std::string::npos);
    held = submitted_job(sub);
    CHECK(shown_job(d, held).at("held").as_bool());
    CHECK(state_of(d, held) == "JOB_STATE_PENDING");

    // A later job that wants the whole cluster too runs: the held one is passed over.
    const CliRun later = gpuq_me(d, {"submit", "-q", "research", "--gpus", "8", "--replicas", "2", "--", "true"});
    REQUIRE_MESSAGE(later.rc == 0, later.out);
    CHECK_MESSAGE((later.out.find("(Admitted)") != std::string::npos || later.out.find("(Running)") != std::string::npos),
                  later.out);
    const CliRun ls = gpuq_me(d, {"ls"});
    CHECK(row_of(ls.out, held).find("Held") != std::string::npos);
    const CliRun why = gpuq_me(d, {"explain", held});
    CHECK_MESSAGE(why.out.find("held: not scheduled until released (gpuq release " + held + ")") != std::string::npos,
                  why.out);

    // Another user may not release it; holding a running job is refused with its state.
    const CliRun theirs = gpuq_as(d, setpriv_as("nobody", "nogroup"), "release " + held);
    CHECK(theirs.rc != 0);
    CHECK_MESSAGE(theirs.out.find("PERMISSION_DENIED") != std::string::npos, theirs.out);
    const CliRun running = gpuq_me(d, {"hold", submitted_job(later)});
    CHECK(running.rc == 1);
    CHECK_MESSAGE(running.out.find("only a pending job can be held") != std::string::npos, running.out);
    d.stop(SIGKILL);
  }
  Daemon d(dir.path);
  CHECK(shown_job(d, held).at("held").as_bool());  // the hold is in the state file
  const CliRun rel = gpuq_me(d, {"release", held});
  REQUIRE_MESSAGE(rel.rc == 0, rel.out);
  CHECK(rel.out == "job/" + held + " released (Pending)\n");
  CHECK_FALSE(shown_job(d, held).at("held").as_bool());
  const CliRun again = gpuq_me(d, {"release", held});
  CHECK(again.rc == 1);
  CHECK_MESSAGE(again.out.find("is not held") != std::string::npos, again.out);
  // Held again and cancelled: a held job ends as any pending one.
  CHECK(gpuq_me(d, {"hold", held}).rc == 0);
  CHECK(gpuq_me(d, {"cancel", held}).rc == 0);
  CHECK(state_of(d, held) == "JOB_STATE_CANCELLED");
  CHECK(gpuq_me(d, {"hold", held}).out.find("already ended (Cancelled)") != std::string::npos);
}

}  // namespace integration_cli_holds_test
