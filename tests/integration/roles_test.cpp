// Who may do what, through gpuqd's Unix socket (docs/tasks/tenants-and-security.md), with real accounts: the test
// runs as root (as CI does) and runs the real gpuq command line as `nobody` with setpriv. Where
// the test is not root it says so and checks only what root's own calls show.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <map>

#include "cli/requests.hpp"
#include "tests/integration/cli_as.hpp"
#include "tests/support/files.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace integration_roles_test {

using namespace gpuq::test;
namespace json = boost::json;

namespace {

using Run = CliRun;

// The gpuq binary as `nobody` through the socket (stopped after `seconds`, if given).
Run as_nobody(const Daemon& d, const std::string& args, int seconds = 0) {
  return gpuq_as(d, setpriv_as("nobody", "nogroup"), args, seconds);
}

// This process (root) through the socket.
Run as_me(const Daemon& d, std::vector<std::string> args) { return gpuq_me(d, std::move(args)); }

std::string submitted_id(const Run& r) { return submitted_job(r); }

std::string owner_of(const Daemon& d, const std::string& id) {
  return std::string(shown_job(d, id).at("spec").at("owner").as_string());
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
  r = as_nobody(d, "explain " + mine);
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user nobody may not see job " + mine + " of user root: " + details) != std::string::npos, r.out);
  r = as_nobody(d, "explain " + theirs);
  CHECK_MESSAGE(r.rc == 0, r.out);
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
  CHECK(slurp(other.path / "err").find("gpuqd: grpc: 0.0.0.0:0 is not a loopback address, and gpuqd has no TLS configured") !=
        std::string::npos);
}

namespace {

// research and prod (cohort lab) as kConfig, and two queues with guardrails and roles: vision
// (1 GPU of quota, submitters root and the group ml) and open (everyone submits, nobody views).
const char* kGuardedConfig = R"(queues:
  - name: research
    cohort: lab
    quotas: [{flavor: h100, resources: {gpu: {nominal: 8}}}]
  - name: prod
    cohort: lab
    quotas: [{flavor: h100, resources: {gpu: {nominal: 8}}}]
  - name: vision
    quotas: [{flavor: h100, resources: {gpu: {nominal: 1}}}]
    maxGpusPerJob: 1
    maxPodsPerJob: 2
    maxRuntime: 3600
    maxGracePeriod: 60
    allowedPriorityClasses: [normal, high]
    maxPendingJobsPerUser: 1
    submitters: {users: [root], groups: [ml]}
  - name: open
    quotas: [{flavor: h100, resources: {gpu: {nominal: 8}}}]
    maxRunningJobsPerUser: 1
    maxSubmitsPerUserPerMinute: 3
    submitters: {users: ["*"]}
    viewers: {users: [nobody]}
nodes:
  - {name: n0, flavor: h100, capacity: {gpu: 8, cpu: 128, memory: 1Ti}}
  - {name: n1, flavor: h100, capacity: {gpu: 8, cpu: 128, memory: 1Ti}}
)";

std::size_t listed_in(const Daemon& d, const std::string& queue) {
  const Run r = as_me(d, {"ls", "--queue", queue, "--all", "-o", "json"});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const json::value v = json::parse(r.out);
  return v.as_object().contains("jobs") ? v.at("jobs").as_array().size() : 0;
}

void refused_with(const Run& r, const std::string& message) {
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find(message) != std::string::npos, r.out);
}

}  // namespace

TEST_CASE("every queue guardrail refuses through gpuq submit with its message, and a refused submit changes nothing") {
  TempDir dir;
  ::chmod(dir.path.c_str(), 0755);
  Daemon d(dir.path, true, kGuardedConfig);
  auto submit = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"submit", "--queue", "vision"});
    args.insert(args.end(), {"--", "true"});
    return as_me(d, args);
  };
  const std::string q = "queue \"vision\" ";
  refused_with(submit({"--gpus", "1", "--replicas", "2"}),
               "spec.pods: the job asks 2 GPUs; " + q + "allows at most 1 per job (maxGpusPerJob)");
  refused_with(submit({"--gpus", "100m", "--replicas", "3"}),
               "spec.pods: the job asks 3 pods; " + q + "allows at most 2 per job (maxPodsPerJob)");
  refused_with(submit({"--gpus", "1", "--max-runtime", "7200"}),
               "spec.maxRuntime: the job asks 7200 s; " + q + "allows at most 3600 s (maxRuntime)");
  refused_with(submit({"--gpus", "1", "--grace-period", "600"}),
               "spec.gracePeriod: the job asks 600 s; " + q + "allows at most 60 s (maxGracePeriod)");
  refused_with(submit({"--gpus", "1", "--priority", "critical"}),
               "spec.priority: class critical is not allowed in queue \"vision\"; name one of normal or high (its "
               "allowedPriorityClasses)");
  refused_with(submit({"--gpus", "1", "--priority", "100"}),
               "spec.priority: \"100\" is a number; " + q + "takes only priority classes");
  CHECK(listed_in(d, "vision") == 0);  // nothing of them was kept

  // Within the limits: the job gets the ceiling as its maxRuntime and the default class.
  const std::string first = submitted_id(submit({"--gpus", "1", "--grace-period", "60"}));
  const json::value job = shown_job(d, first);
  CHECK(job.at("spec").at("max_runtime_seconds") == "3600");
  CHECK(job.at("spec").at("priority") == "normal");
  // The queue's 1 GPU is taken: the next waits, and a third is one pending job too many.
  const std::string second = submitted_id(submit({"--gpus", "1"}));
  CHECK(shown_job(d, second).at("state") == "JOB_STATE_PENDING");
  refused_with(submit({"--gpus", "1"}), "user root already has 1 pending jobs in queue \"vision\", its "
                                        "maxPendingJobsPerUser (1); submit again once some are admitted");
  CHECK(listed_in(d, "vision") == 2);

  // A non-preemptible job does not borrow: research (8 GPUs nominal) is full, prod lends 8.
  REQUIRE(as_me(d, {"submit", "--queue", "research", "--gpus", "8", "--", "true"}).rc == 0);
  const std::string keep =
      submitted_id(as_me(d, {"submit", "--queue", "research", "--gpus", "1", "--preemptible", "false", "--", "true"}));
  const json::value kept = shown_job(d, keep);
  CHECK(kept.at("state") == "JOB_STATE_PENDING");
  CHECK_MESSAGE(std::string(kept.at("reason").as_string())
                        .find("it is not preemptible, so it runs only within queue research's nominal quota (its "
                              "nonPreemptibleMayBorrow is false)") != std::string::npos,
                kept.at("reason"));
  // A preemptible one borrows prod's unused quota.
  const std::string flex = submitted_id(as_me(d, {"submit", "--queue", "research", "--gpus", "1", "--", "true"}));
  CHECK(shown_job(d, flex).at("state") != "JOB_STATE_PENDING");

  if (::getuid() != 0) {
    MESSAGE("not root: the per-user limits as nobody (setpriv) are skipped; CI runs as root");
    return;
  }
  // open: nobody's second job waits for its first (maxRunningJobsPerUser 1); its fourth submit
  // within the minute is refused with the time to retry (maxSubmitsPerUserPerMinute 3).
  Run r = as_nobody(d, "submit --queue open --gpus 1 -- true");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  r = as_nobody(d, "submit --queue open --gpus 1 -- true");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const json::value held = shown_job(d, submitted_id(r));
  CHECK(held.at("state") == "JOB_STATE_PENDING");
  CHECK_MESSAGE(std::string(held.at("reason").as_string())
                        .find("user nobody has 1 admitted or running job in queue open, its maxRunningJobsPerUser (1)") !=
                    std::string::npos,
                held.at("reason"));
  REQUIRE(as_nobody(d, "submit --queue open --gpus 1 -- true").rc == 0);
  r = as_nobody(d, "submit --queue open --gpus 1 -- true");
  refused_with(r, "user nobody has used up queue \"open\"'s maxSubmitsPerUserPerMinute (3 submissions a minute); "
                  "retry in ");
  CHECK_MESSAGE(r.out.find("RESOURCE_EXHAUSTED") != std::string::npos, r.out);
  CHECK(listed_in(d, "open") == 3);
}

TEST_CASE("a queue's submitters and viewers: nobody is refused on a restricted queue, accepted on *, and a viewer sees others' jobs but not their environment") {
  TempDir dir;
  ::chmod(dir.path.c_str(), 0755);
  Daemon d(dir.path, true, std::string(kGuardedConfig) + "notifications: {allowedUrls: [\"http://127.0.0.1:9/\"]}\n");
  // A webhook URL may hold a token too: shown to its owner alone, like the environment.
  const std::string secret_job = submitted_id(
      as_me(d, {"submit", "--queue", "open", "--gpus", "1", "--env", "TOKEN=s3cret", "--notify",
                "http://127.0.0.1:9/hook?token=n0tify", "--", "true"}));
  CHECK(shown_job(d, secret_job).at("spec").at("notify").at("url") == "http://127.0.0.1:9/hook?token=n0tify");
  const std::string vision_job = submitted_id(as_me(d, {"submit", "--queue", "vision", "--gpus", "1", "--", "true"}));
  CHECK(shown_job(d, secret_job).at("spec").at("env").at("TOKEN") == "s3cret");  // its owner sees it
  if (::getuid() != 0) {
    MESSAGE("not root: the calls as nobody (setpriv) are skipped; CI runs as root");
    return;
  }
  Run r = as_nobody(d, "submit --queue vision --gpus 1 -- true");
  refused_with(r, "user nobody may not submit to queue vision: its submitters are root and the group ml "
                  "(submitters in the queue's spec), and gpuqd's admins (root)");
  CHECK_MESSAGE(r.out.find("PERMISSION_DENIED") != std::string::npos, r.out);
  CHECK(listed_in(d, "vision") == 1);
  r = as_nobody(d, "submit --queue open --gpus 1 -- true");
  CHECK_MESSAGE(r.rc == 0, r.out);
  const std::string theirs = submitted_id(r);

  // nobody views open: root's job there, by id and in the queue's listing, without its env.
  r = as_nobody(d, "show " + secret_job + " -o json");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const json::value seen = json::parse(r.out);
  CHECK(seen.at("spec").at("owner") == "root");
  CHECK(seen.at("spec").at("env").as_object().empty());
  CHECK(r.out.find("s3cret") == std::string::npos);
  CHECK(r.out.find("n0tify") == std::string::npos);
  r = as_nobody(d, "ls --queue open --all -o json");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("\"" + secret_job + "\"") != std::string::npos);
  CHECK(r.out.find("\"" + theirs + "\"") != std::string::npos);
  CHECK(r.out.find("s3cret") == std::string::npos);
  CHECK(r.out.find("n0tify") == std::string::npos);
  // Its watch of the queue streams every job's events there.
  r = as_nobody(d, "watch --queue open --from 0", 3);
  CHECK_MESSAGE(r.out.find(secret_job + " ") != std::string::npos, r.out);
  // Without the queue, a listing is its own jobs only; and it views open, not vision.
  r = as_nobody(d, "watch --from 0", 3);
  CHECK_MESSAGE(r.out.find(secret_job + " ") == std::string::npos, r.out);
  r = as_nobody(d, "ls --all -o json");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("\"" + secret_job + "\"") == std::string::npos);
  r = as_nobody(d, "show " + vision_job);
  refused_with(r, "user nobody may not see job " + vision_job + " of user root: a job's details are its owner's and "
                  "gpuqd's admins' (root)");
  r = as_nobody(d, "ls --queue vision --owner root");
  refused_with(r, "user nobody may not see the jobs of user root");
  // The logs of a job it views pass the gate (binder none keeps no logs: that is the answer).
  r = as_nobody(d, "logs " + secret_job);
  CHECK_MESSAGE(r.out.find("may not see") == std::string::npos, r.out);
  // A viewer does not change others' jobs.
  r = as_nobody(d, "cancel " + secret_job);
  refused_with(r, "user nobody may not cancel job " + secret_job + " of user root");
}

TEST_CASE("usage as nobody: queue totals for all; by user or job only its own jobs, every job of a queue it views; another user's refused") {
  TempDir dir;
  ::chmod(dir.path.c_str(), 0755);
  Daemon d(dir.path, true, kGuardedConfig);
  const std::string mine = submitted_id(as_me(d, {"submit", "--queue", "research", "--gpus", "1", "--", "true"}));
  const std::string mine_open = submitted_id(as_me(d, {"submit", "--queue", "open", "--gpus", "1", "--", "true"}));
  if (::getuid() != 0) {
    MESSAGE("not root: the calls as nobody (setpriv) are skipped; CI runs as root");
    return;
  }
  const std::string theirs = submitted_id(as_nobody(d, "submit --queue research --gpus 1 -- true"));
  auto rows = [](const Run& r) {
    REQUIRE_MESSAGE(r.rc == 0, r.out);
    std::map<std::string, std::int64_t> unfinished;
    const json::value v = json::parse(r.out);
    for (const auto& row : v.at("rows").as_array())
      unfinished[std::string(row.at("key").as_string())] = std::stoll(std::string(row.at("unfinished").as_string()));
    return unfinished;
  };
  using Rows = std::map<std::string, std::int64_t>;
  // Queue totals are queue summaries: every job counts, root's too.
  CHECK(rows(as_nobody(d, "usage -o json")) == Rows{{"open", 1}, {"research", 2}});
  // By job or user: its own jobs only.
  CHECK(rows(as_nobody(d, "usage --by job -o json")) == Rows{{theirs, 1}});
  CHECK(rows(as_nobody(d, "usage --by user -o json")) == Rows{{"nobody", 1}});
  CHECK(rows(as_nobody(d, "usage --by user --queue research -o json")) == Rows{{"nobody", 1}});
  // A queue it views: every job there.
  CHECK(rows(as_nobody(d, "usage --by job --queue open -o json")) == Rows{{mine_open, 1}});
  CHECK(rows(as_nobody(d, "usage --by user --queue open --user root -o json")) == Rows{{"root", 1}});
  // Another user's usage, elsewhere: refused, saying who may.
  const Run r = as_nobody(d, "usage --by job --user root");
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("user nobody may not see the jobs of user root: a job's details are its owner's and "
                           "gpuqd's admins' (root) (PERMISSION_DENIED)") != std::string::npos,
                r.out);
  // An admin sees everyone's.
  CHECK(rows(as_me(d, {"usage", "--by", "user", "-o", "json"})) == Rows{{"nobody", 1}, {"root", 2}});
  CHECK(rows(as_me(d, {"usage", "--by", "job", "--user", "nobody", "-o", "json"})) == Rows{{theirs, 1}});
  CHECK(mine != theirs);
}

}  // namespace integration_roles_test
