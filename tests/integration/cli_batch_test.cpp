// Arrays, dependencies, retries, singletons and updates through the real gpuq binary and a real
// gpuqd running jobs as real processes (the local executor, 4 virtual GPUs): a throttle is never
// exceeded, a chain runs in order, a broken dependency fails its chain with the reason, a retried
// job's attempts show, and a SIGKILL of gpuqd in the middle of an array and a chain loses nothing
// and runs nothing twice.
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "tests/integration/cli_as.hpp"
#include "tests/integration/cli_run.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;

namespace cli_batch_test {

struct Cluster {
  TempDir dir;
  fs::path work = dir.path / "work";
  std::string config;
  std::optional<Daemon> d;
  explicit Cluster(const std::string& extra_queue_keys = "") {
    fs::create_directories(work);
    config = local_executor_config(dir.path) + extra_queue_keys;
    d.emplace(dir.path, true, config);
  }
  void restart_after_kill() {
    d->stop(SIGKILL);
    d.reset();
    d.emplace(dir.path, true, config);
  }
  CliRun gpuq(const std::string& args) const {
    return shell("cd '" + work.string() + "' && " + std::string(GPUQ_CLI_PATH) + " --server unix:" + d->socket() + " " +
                 args);
  }
  void script(const std::string& name, const std::string& text) const { std::ofstream(work / name) << text; }
  std::string read(const std::string& name) const {
    std::ifstream in(work / name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string state(const std::string& id) const { return std::string(shown_job(*d, id).at("state").as_string()); }
};

// Each member marks itself running in a directory, records how many are marked, and unmarks.
const char* kCounting =
    "#!/bin/sh\n"
    "touch running/$GPUQ_ARRAY_INDEX\n"
    "ls running | wc -l >> counts\n"
    "echo $GPUQ_ARRAY_ID $GPUQ_ARRAY_INDEX >> ran\n"
    "sleep 0.6\n"
    "rm running/$GPUQ_ARRAY_INDEX\n";

int max_count(const std::string& counts) {
  int most = 0;
  std::istringstream in(counts);
  for (int n; in >> n;) most = std::max(most, n);
  return most;
}

TEST_CASE("an array: one submit, GPUQ_ARRAY_INDEX, its throttle never exceeded, folded in ls, cancelled whole") {
  Cluster c;
  fs::create_directories(c.work / "running");
  c.script("member.sh", kCounting);
  // Six one-GPU members on four GPUs, at most two at once.
  CliRun r = c.gpuq("submit -q q --gpus 1 --array 0-5%2 member.sh");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string array = r.out.substr(6, r.out.find(' ') - 6);  // "array/j1 submitted: j1_[0-5] (...)"
  CHECK_MESSAGE(r.out.starts_with("array/" + array + " submitted: " + array + "_[0-5] ("), r.out);
  for (int i = 0; i < 6; ++i) CHECK(wait_ended(*c.d, array + "_" + std::to_string(i)) == "JOB_STATE_SUCCEEDED");
  CHECK(max_count(c.read("counts")) == 2);
  std::string ran = c.read("ran");
  for (int i = 0; i < 6; ++i) CHECK(ran.find(array + " " + std::to_string(i) + "\n") != std::string::npos);
  const auto member = shown_job(*c.d, array + "_3");
  CHECK(member.at("array_id").as_string() == array);
  CHECK(member.at("array_index").as_int64() == 3);
  CHECK(c.gpuq("show " + array + "_3").out.find("Array:       " + array + ", index 3\n") != std::string::npos);

  // Members that cannot run yet fold into one row; the array's id cancels them all.
  r = c.gpuq("submit -q q --gpus 4 -- sleep 30");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string blocker = submitted_job(r);
  r = c.gpuq("submit -q q --gpus 4 --array 1,3,5-7 -- true");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string waiting = r.out.substr(6, r.out.find(' ') - 6);
  const CliRun ls = c.gpuq("ls");
  CHECK_MESSAGE(!row_of(ls.out, waiting + "_[1,3,5-7]").empty(), ls.out);
  CHECK(row_of(ls.out, waiting + "_1").empty());
  CHECK_MESSAGE(!row_of(c.gpuq("ls -r").out, waiting + "_5").empty(), c.gpuq("ls -r").out);
  r = c.gpuq("cancel " + waiting);
  CHECK_MESSAGE(r.rc == 0, r.out);
  for (const char* i : {"_1", "_3", "_5", "_6", "_7"}) CHECK(c.state(waiting + i) == "JOB_STATE_CANCELLED");
  CHECK(c.state(blocker) == "JOB_STATE_RUNNING");
  CHECK(c.gpuq("cancel " + blocker).rc == 0);

  // Bad arrays are refused before anything is sent, naming the flag.
  r = c.gpuq("submit -q q --gpus 1 --array 5-2 -- true");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("--array \"5-2\": the range 5-2 ends before it begins") != std::string::npos, r.out);
  r = c.gpuq("submit -q q --gpus 1 --array 0-100000 -- true");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("at most 100000 are allowed") != std::string::npos, r.out);

  // A member's id taken by any job, finished (on disk only) or not, refuses the whole array, naming
  // the member; a job whose id merely sorts among the members' (grid_10 between grid_0 and grid_3)
  // does not.
  for (const char* id : {"grid_10", "grid_2"}) {
    r = c.gpuq(std::string("submit -q q --gpus 1 --id ") + id + " -- true");
    REQUIRE_MESSAGE(r.rc == 0, r.out);
    CHECK(wait_ended(*c.d, id) == "JOB_STATE_SUCCEEDED");
  }
  r = c.gpuq("submit -q q --gpus 1 --hold --id held_1 -- true");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  r = c.gpuq("submit -q q --gpus 1 --hold --id grid --array 0-3 -- true");
  CHECK(r.rc == 1);
  CHECK(r.out == "gpuq: spec.id: job \"grid_2\" already exists (array grid's member 2) (ALREADY_EXISTS)\n");
  r = c.gpuq("submit -q q --gpus 1 --hold --id held --array 0-3 -- true");
  CHECK(r.rc == 1);
  CHECK(r.out == "gpuq: spec.id: job \"held_1\" already exists (array held's member 1) (ALREADY_EXISTS)\n");
  CHECK(c.gpuq("show held_0").rc != 0);  // nothing of a refused array is kept
  r = c.gpuq("submit -q q --gpus 1 --hold --id grid --array 0,1,3 -- true");
  CHECK_MESSAGE(r.rc == 0, r.out);
  CHECK_MESSAGE(r.out.starts_with("array/grid submitted: grid_[0,1,3] ("), r.out);
  CHECK(c.gpuq("cancel grid held_1").rc == 0);
}

TEST_CASE("dependencies: a chain of three runs in order; one never satisfied fails its chain, naming why") {
  Cluster c;
  c.script("step.sh", "#!/bin/sh\nsleep ${2:-0.3}\necho $1 >> order\n");
  CliRun r = c.gpuq("submit -q q --gpus 1 step.sh a 2");  // still running when b is submitted
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string a = submitted_job(r);
  r = c.gpuq("submit -q q --gpus 1 --after-ok " + a + " step.sh b");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string b = submitted_job(r);
  CHECK(shown_job(*c.d, b).at("reason").as_string() == "waiting for " + a + " to succeed (after-ok)");
  r = c.gpuq("submit -q q --gpus 1 --after-ok " + b + " step.sh c");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string cc = submitted_job(r);
  CHECK(wait_ended(*c.d, cc) == "JOB_STATE_SUCCEEDED");
  CHECK(c.read("order") == "a\nb\nc\n");

  r = c.gpuq("submit -q q --gpus 1 -- sh -c 'sleep 2; exit 3'");  // still running while the next are submitted
  const std::string bad = submitted_job(r);
  r = c.gpuq("submit -q q --gpus 1 --after-ok " + bad + " -- true");
  const std::string next = submitted_job(r);
  r = c.gpuq("submit -q q --gpus 1 --after-any " + next + " -- true");
  const std::string last = submitted_job(r);
  r = c.gpuq("submit -q q --gpus 1 --after-not-ok " + bad + " -- true");
  const std::string rescue = submitted_job(r);
  CHECK(wait_ended(*c.d, next) == "JOB_STATE_FAILED");
  CHECK(shown_job(*c.d, next).at("reason").as_string() ==
        "dependency never satisfied: after-ok " + bad + " can never be met: it ended Failed (exit code 3)");
  CHECK(wait_ended(*c.d, last) == "JOB_STATE_SUCCEEDED");  // after-any: its dependency ended
  CHECK(wait_ended(*c.d, rescue) == "JOB_STATE_SUCCEEDED");

  // Refused at submit: a dependency that ended the wrong way, one that does not exist.
  r = c.gpuq("submit -q q --gpus 1 --after-ok " + bad + " -- true");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("spec.after[0]: after-ok " + bad + " can never be met: it ended Failed (exit code 3)") !=
                    std::string::npos,
                r.out);
  r = c.gpuq("submit -q q --gpus 1 --after-ok j999 -- true");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("spec.after[0]: job \"j999\" does not exist") != std::string::npos, r.out);
}

TEST_CASE("retries: a flaky job runs until it succeeds, its retries shown; the queue's maxRetries caps them") {
  Cluster c("    maxRetries: 3\n");
  c.script("flaky.sh",
           "#!/bin/sh\n"
           "n=$(cat tries 2>/dev/null || echo 0); n=$((n+1)); echo $n > tries\n"
           "[ $n -ge 3 ]\n");
  CliRun r = c.gpuq("submit -q q --gpus 1 --retries 3 flaky.sh");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string flaky = submitted_job(r);
  CHECK(wait_ended(*c.d, flaky) == "JOB_STATE_SUCCEEDED");
  const auto job = shown_job(*c.d, flaky);
  CHECK(job.at("retries_used").as_int64() == 2);
  CHECK(job.at("attempts").as_int64() == 2);
  CHECK(c.gpuq("show " + flaky).out.find("Retries:     2 of 3 used\n") != std::string::npos);
  CHECK(c.read("tries") == "3\n");

  r = c.gpuq("submit -q q --gpus 1 --retries 1 -- sh -c 'exit 4'");
  const std::string hopeless = submitted_job(r);
  CHECK(wait_ended(*c.d, hopeless) == "JOB_STATE_FAILED");
  CHECK(shown_job(*c.d, hopeless).at("retries_used").as_int64() == 1);

  r = c.gpuq("submit -q q --gpus 1 --retries 4 -- true");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("spec.retries: the job asks 4; queue \"q\" allows at most 3 (maxRetries)") !=
                    std::string::npos,
                r.out);
}

TEST_CASE("singleton and update: one job of a name at a time; a pending job's priority and runtime change") {
  Cluster c;
  fs::create_directories(c.work / "running");
  c.script("one.sh", "#!/bin/sh\ntouch running/$1\nls running | wc -l >> counts\nsleep 0.5\nrm running/$1\n");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    CliRun r = c.gpuq("submit -q q --gpus 1 --name etl --singleton one.sh " + std::to_string(i));
    REQUIRE_MESSAGE(r.rc == 0, r.out);
    ids.push_back(submitted_job(r));
  }
  for (const auto& id : ids) CHECK(wait_ended(*c.d, id) == "JOB_STATE_SUCCEEDED");
  CHECK(max_count(c.read("counts")) == 1);

  CliRun r = c.gpuq("submit -q q --gpus 1 --hold -- true");
  const std::string held = submitted_job(r);
  r = c.gpuq("update " + held + " --priority 7 --max-runtime 600");
  CHECK_MESSAGE(r.out == "job/" + held + " updated (Held)\n", r.out);
  const auto job = shown_job(*c.d, held);
  CHECK(job.at("priority").as_int64() == 7);
  CHECK(job.at("spec").at("max_runtime_seconds") == "600");  // int64: a string in proto3 JSON
  r = c.gpuq("update " + held + " --queue nope");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("queue \"nope\" does not exist") != std::string::npos, r.out);
  r = c.gpuq("update " + held);
  CHECK(r.rc != 0);
  CHECK(c.gpuq("release " + held).rc == 0);
  CHECK(wait_ended(*c.d, held) == "JOB_STATE_SUCCEEDED");
  r = c.gpuq("update " + held + " --priority 1");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("already ended (Succeeded)") != std::string::npos, r.out);
  // Another user may not change it.
  r = c.gpuq("submit -q q --gpus 1 --hold -- true");
  const std::string mine = submitted_job(r);
  ::chmod(c.dir.path.c_str(), 0755);
  const CliRun theirs = gpuq_as(*c.d, setpriv_as("nobody", "nogroup"), "update " + mine + " --priority 100");
  CHECK(theirs.rc != 0);
  CHECK_MESSAGE(theirs.out.find("PERMISSION_DENIED") != std::string::npos, theirs.out);
}

TEST_CASE("gpuqd killed in the middle of an array and a chain: nothing lost, nothing run twice") {
  Cluster c;
  fs::create_directories(c.work / "running");
  c.script("member.sh", kCounting);
  c.script("step.sh", "#!/bin/sh\nsleep 0.5\necho $1 >> order\n");
  CliRun r = c.gpuq("submit -q q --gpus 1 --array 0-7%2 member.sh");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string array = r.out.substr(6, r.out.find(' ') - 6);
  r = c.gpuq("submit -q q --gpus 1 step.sh a");
  const std::string a = submitted_job(r);
  r = c.gpuq("submit -q q --gpus 1 --after-ok " + a + " step.sh b");
  const std::string b = submitted_job(r);
  r = c.gpuq("submit -q q --gpus 1 --after-ok " + b + " step.sh c");
  const std::string last = submitted_job(r);
  // Kill it while the first members and the chain's first step run.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.read("ran").empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c.restart_after_kill();
  for (int i = 0; i < 8; ++i) CHECK(wait_ended(*c.d, array + "_" + std::to_string(i)) == "JOB_STATE_SUCCEEDED");
  CHECK(wait_ended(*c.d, last) == "JOB_STATE_SUCCEEDED");
  CHECK(c.read("order") == "a\nb\nc\n");
  std::map<std::string, int> runs;
  std::istringstream in(c.read("ran"));
  for (std::string line; std::getline(in, line);) ++runs[line];
  CHECK(runs.size() == 8);
  for (const auto& [line, n] : runs) CHECK_MESSAGE(n == 1, line << " ran " << n << " times");
  CHECK(max_count(c.read("counts")) <= 2);
}

TEST_CASE("gpuq run: the job on a terminal attached to this one, its echo, Ctrl-C and its exit code") {
  Cluster c;
  // script(1) gives gpuq a terminal; what is piped into script is typed into it.
  const std::string gpuq = std::string(GPUQ_CLI_PATH) + " --server unix:" + c.d->socket();
  CliRun r = shell("cd '" + c.work.string() + "' && printf 'hello\\n' | script -qec \"" + gpuq +
                   " run -q q --gpus 1 -- sh -c 'tty; read x; echo got:\\$x; exit 7'\" /dev/null");
  CHECK_MESSAGE(r.rc == 7, r.out);
  CHECK_MESSAGE(r.out.find("got:hello") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("/dev/pts/") != std::string::npos, r.out);  // the job's own terminal
  CHECK_MESSAGE(r.out.find("Failed: exit code 7 (exit 7)") != std::string::npos, r.out);
  // Ctrl-C, typed once the job runs, interrupts it on its terminal; gpuq says how it ended.
  r = shell("cd '" + c.work.string() + "' && (sleep 3; printf '\\003') | script -qec \"" + gpuq +
            " run -q q --gpus 1 -- sh -c 'echo started; sleep 60'\" /dev/null");
  CHECK_MESSAGE(r.out.find("started") != std::string::npos, r.out);
  CHECK_MESSAGE(r.rc != 0, r.out);
  CHECK_MESSAGE(r.out.find("signal 2") != std::string::npos, r.out);
  // Without a terminal too (input from a pipe, ending in ^D); the job is an ordinary one.
  r = shell("cd '" + c.work.string() + "' && printf 'a\\nb\\n' | " + gpuq + " run -q q --gpus 1 -- sh -c 'cat; echo done'");
  CHECK_MESSAGE(r.rc == 0, r.out);
  CHECK_MESSAGE(r.out.find("done") != std::string::npos, r.out);
  const CliRun ls = c.gpuq("ls --all -o json");
  CHECK(ls.out.find("\"tty\": true") != std::string::npos);
  // Refused: more than one pod, and input to a job without a terminal.
  r = c.gpuq("run -q q --gpus 1 --replicas 2 -- true");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("spec.tty: a job on a terminal is one pod, not 2 pods") != std::string::npos, r.out);
}

}  // namespace cli_batch_test
