// The real command line against a real gpuqd: what a user types, what they see, and what the
// daemon then holds (checked through the command line too).
#include <boost/json.hpp>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cli_run.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;
namespace json = boost::json;

TEST_CASE("gpuq against gpuqd: submit, ls, show, queues, nodes, apply, cancel, usage, backup") {
  TempDir dir;
  Daemon d(dir.path);
  auto r = gpuq_cmd(d, {"submit", "--queue", "research", "--gpus", "2", "--name", "train", "--id", "t1",
                        "--", "python", "train.py"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("t1") != std::string::npos);

  r = gpuq_cmd(d, {"ls"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("t1") != std::string::npos);
  CHECK(r.out.find("Running") != std::string::npos);

  r = gpuq_cmd(d, {"show", "t1", "-o", "json"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("\"python\"") != std::string::npos);
  CHECK(r.out.find("JOB_STATE_RUNNING") != std::string::npos);

  r = gpuq_cmd(d, {"queues"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("research") != std::string::npos);
  CHECK(r.out.find("prod") != std::string::npos);
  r = gpuq_cmd(d, {"queues", "research"});  // one queue, all of it
  REQUIRE(r.rc == 0);
  CHECK_MESSAGE(r.out.find("Name:        research\n") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("  h100 gpu: nominal 8, used 2, borrowed 0\n") != std::string::npos, r.out);

  const fs::path file = dir.path / "more.yaml";
  std::ofstream(file) << "queues:\n  - name: extra\n    cohort: lab\n    quotas:\n      - flavor: h100\n"
                         "        resources: {gpu: {nominal: 2}}\n---\nnodes:\n"
                         "  - {name: n9, flavor: h100, capacity: {gpu: 4, cpu: 64, memory: 256Gi}}\n";
  r = gpuq_cmd(d, {"apply", "-f", file.string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  r = gpuq_cmd(d, {"nodes"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("n9") != std::string::npos);

  r = gpuq_cmd(d, {"nodes", "cordon", "n9"});
  CHECK(r.rc == 0);

  // A server-side error: the message and a non-zero exit.
  r = gpuq_cmd(d, {"submit", "--queue", "nosuch", "--gpus", "1", "--", "true"});
  CHECK(r.rc == 1);
  CHECK(r.err.find("nosuch") != std::string::npos);

  r = gpuq_cmd(d, {"cancel", "t1", "missing"});
  CHECK(r.rc == 1);
  CHECK(r.err.find("missing") != std::string::npos);
  r = gpuq_cmd(d, {"show", "t1", "-o", "json"});
  CHECK(r.out.find("JOB_STATE_CANCELLED") != std::string::npos);

  r = gpuq_cmd(d, {"usage"});
  CHECK(r.rc == 0);

  const fs::path copy = dir.path / "copy.db";
  r = gpuq_cmd(d, {"admin", "backup", copy.string()});
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(fs::file_size(copy) > 0);
}

TEST_CASE("explain: a waiting job's order, quota and nodes; a running one's state; JSON; a missing job") {
  TempDir dir;
  Daemon d(dir.path);
  // research (nominal 8, cohort lab with prod's 8) runs 8 + 6 GPUs on the two 8-GPU nodes; w
  // asks 4 more, which the cohort has (2 left) neither in quota nor on the nodes.
  for (const char* g : {"8", "6"}) REQUIRE(gpuq_cmd(d, {"submit", "--queue", "research", "--gpus", g, "--", "true"}).rc == 0);
  auto r = gpuq_cmd(d, {"submit", "--queue", "research", "--gpus", "4", "--id", "w", "--priority", "low", "--", "true"});
  REQUIRE(r.rc == 0);
  r = gpuq_cmd(d, {"explain", "w"});
  INFO(r.out, r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("Job w in queue research: Pending\n") != std::string::npos);
  CHECK(r.out.find("Why: needs 4 gpu of flavor h100 but cohort lab has only 2 gpu left for queue research") != std::string::npos);
  CHECK(r.out.find("Queue order: 1st of 1 pending in queue research") != std::string::npos);
  CHECK(r.out.find("Cycle order: its queue would be offered 1st of 1 queue with pending jobs") != std::string::npos);
  CHECK(r.out.find("  within nominal  no (it would borrow)") != std::string::npos);
  CHECK(r.out.find("  priority        -100 (low)") != std::string::npos);
  // Quota: asks 4, nominal 8, uses 14, borrows 6, no limits, may add 2, at most 16, pool 14 of 16.
  CHECK(r.out.find("  h100    gpu       4     8        14    6         -             -           2        16       lab: 14 of 16 drawn")
        != std::string::npos);
  // Nodes: 2 GPUs free on one node, both stranded for a 4-GPU pod.
  CHECK(r.out.find("  h100    2      2     0              2          2 GPUs        2 (100%)  1 pod, 4 GPU per pod") !=
        std::string::npos);

  r = gpuq_cmd(d, {"explain", "w", "-o", "json"});
  REQUIRE(r.rc == 0);
  const json::value v = json::parse(r.out);
  CHECK(v.at("explanation").at("queue_position").as_int64() == 1);
  CHECK(v.at("explanation").at("quota").at(0).at("used").as_string() == "14000");
  CHECK(v.at("job").at("spec").at("id").as_string() == "w");

  r = gpuq_cmd(d, {"explain", "j1"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("Why: Running") != std::string::npos);
  CHECK(r.out.find("Quota:") == std::string::npos);  // what holds a waiting job only

  r = gpuq_cmd(d, {"explain", "nope"});
  CHECK(r.rc == 1);
  CHECK(r.err.find("job \"nope\" does not exist (NOT_FOUND)") != std::string::npos);
}

TEST_CASE("ls --start and show: a pending job's estimated start; --expected-runtime reaches gpuqd") {
  TempDir dir;
  Daemon d(dir.path, true, std::string(kConfig) + "estimateInterval: 1s\n");
  for (const char* id : {"a", "b"})
    REQUIRE(gpuq_cmd(d, {"submit", "-q", "research", "--gpus", "8", "--max-runtime", "3600", "--id", id, "--", "true"}).rc == 0);
  auto r = gpuq_cmd(d, {"submit", "-q", "research", "--gpus", "8", "--expected-runtime", "600", "--id", "w", "--", "true"});
  REQUIRE(r.rc == 0);
  json::value w;
  for (int i = 0; i < 100; ++i) {
    w = json::parse(gpuq_cmd(d, {"show", "w", "-o", "json"}).out);
    if (w.at("estimate_computed_at").as_string() != "0") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(w.at("spec").at("expected_runtime_seconds").as_string() == "600");
  const auto a_at = std::stoll(std::string(json::parse(gpuq_cmd(d, {"show", "a", "-o", "json"}).out).at("admitted_at").as_string()));
  CHECK(std::stoll(std::string(w.at("estimated_start").as_string())) == a_at + 3600);
  r = gpuq_cmd(d, {"ls", "--start"});
  INFO(r.out);
  CHECK(r.out.rfind("ID  QUEUE     STATE    START   GPU", 0) == 0);
  CHECK(r.out.find("w   research  Pending  in ") != std::string::npos);
  CHECK(r.out.find("a   research  Running  -  ") != std::string::npos);
  r = gpuq_cmd(d, {"show", "w"});
  CHECK(r.out.find("Est. start:  ") != std::string::npos);
  r = gpuq_cmd(d, {"submit", "-q", "research", "--gpus", "1", "--expected-runtime", "-5", "--", "true"});
  CHECK(r.rc != 0);
  CHECK(r.err.find("\"-5\" is not a duration") != std::string::npos);
}

TEST_CASE("submit: the flags reach gpuqd as typed; a taken --id is ALREADY_EXISTS; -f job.yaml") {
  TempDir dir;
  Daemon d(dir.path);
  auto r = gpuq_cmd(d, {"submit", "-q", "research", "--gpus", "0.5", "--replicas", "2", "--owner",
                        "al", "--preemptible=false", "--", "python", "-c", "print(1)"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const std::string id = submitted_id(r);
  CHECK(r.out == "job/" + id + " submitted (Running)\n");  // the none binder: it fits, it runs

  // What gpuqd holds, not what the command line meant to send.
  r = gpuq_cmd(d, {"show", id, "-o", "json"});
  REQUIRE(r.rc == 0);
  const json::value job = parse_json(r.out);
  const json::value& spec = job.at("spec");
  CHECK(str(spec.at("queue")) == "research");
  CHECK(str(spec.at("pod_sets").at(0).at("resources").at("gpu")) == "500m");
  CHECK(spec.at("pod_sets").at(0).at("count").to_number<int>() == 2);
  CHECK(str(spec.at("owner")) == "al");
  CHECK(spec.at("preemptible").as_bool() == false);
  CHECK(spec.at("command") == json::array{"python", "-c", "print(1)"});

  r = gpuq_cmd(d, {"submit", "-q", "research", "--id", "taken", "--gpus", "1", "--", "true"});
  REQUIRE(r.rc == 0);
  CHECK(r.out == "job/taken submitted (Running)\n");
  r = gpuq_cmd(d, {"submit", "-q", "research", "--id", "taken", "--gpus", "1", "--", "true"});
  CHECK(r.rc == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "gpuq: spec.id: job \"taken\" already exists (ALREADY_EXISTS)\n");

  // A priority class by name (gpuqd's config lists none, so the defaults: critical = 1000).
  const fs::path file = dir.path / "job.yaml";
  std::ofstream(file) << "queue: research\npriority: critical\npods: [{resources: {gpu: 1}}]\n"
                         "command: [sleep, '1']\n";
  r = gpuq_cmd(d, {"submit", "-f", file.string(), "-o", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json::value filed = parse_json(r.out);
  CHECK(str(filed.at("spec").at("priority")) == "critical");
  CHECK(filed.at("priority").to_number<int>() == 1000);
  CHECK(str(filed.at("state")) == "JOB_STATE_RUNNING");
  CHECK(filed.at("spec").at("command") == json::array{"sleep", "1"});
}

TEST_CASE("node constraints through gpuqd: taints, selectors, tolerations, kept on restart") {
  TempDir dir;
  std::string waiting, tolerant;
  {
    Daemon d(dir.path);
    const fs::path file = dir.path / "nodes.yaml";
    std::ofstream(file)
        << "nodes:\n  - {name: n2, flavor: h100, capacity: {gpu: 8}, labels: {zone: z2},\n"
           "     taints: [{key: gpu, value: broken, effect: NoSchedule}]}\n";
    auto r = gpuq_cmd(d, {"apply", "-f", file.string()});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    r = gpuq_cmd(
        d, {"submit", "-q", "research", "--gpus", "1", "--node-selector", "zone=z2", "--", "true"});
    REQUIRE(r.rc == 0);
    waiting = submitted_id(r);
    CHECK(r.out == "job/" + waiting + " submitted (Pending)\n");
    r = gpuq_cmd(d, {"submit", "-q", "research", "--gpus", "1", "--node-selector", "zone=z2",
                     "--toleration", "gpu=broken:NoSchedule", "--", "true"});
    REQUIRE(r.rc == 0);
    tolerant = submitted_id(r);
    CHECK(r.out == "job/" + tolerant + " submitted (Running)\n");
  }
  Daemon d(dir.path);  // the same state file: what was applied and submitted is kept
  auto r = gpuq_cmd(d, {"show", waiting, "-o", "json"});
  REQUIRE(r.rc == 0);
  json::value job = parse_json(r.out);
  CHECK(str(job.at("spec").at("pod_sets").at(0).at("node_selector").at("zone")) == "z2");
  CHECK(str(job.at("reason")) ==
        "0/3 nodes of flavor h100 are available: 2 do not match the pod set's node selector or "
        "affinity, 1 has a taint it does not tolerate (gpu=broken:NoSchedule); no preemption its "
        "queue allows would make room");
  r = gpuq_cmd(d, {"show", tolerant, "-o", "json"});
  REQUIRE(r.rc == 0);
  job = parse_json(r.out);
  CHECK(str(job.at("placement").at(0).at("node")) == "n2");
  const json::value& toleration = job.at("spec").at("pod_sets").at(0).at("tolerations").at(0);
  CHECK(str(toleration.at("key")) == "gpu");
  CHECK(str(toleration.at("operator")) == "Equal");
  CHECK(str(toleration.at("value")) == "broken");
  CHECK(str(toleration.at("effect")) == "NoSchedule");
  r = gpuq_cmd(d, {"nodes", "-o", "json"});
  REQUIRE(r.rc == 0);
  bool seen = false;
  const json::value nodes = parse_json(r.out);
  for (const auto& n : nodes.at("nodes").as_array())
    if (str(n.at("spec").at("name")) == "n2") {
      seen = true;
      CHECK(str(n.at("spec").at("taints").at(0).at("effect")) == "NoSchedule");
    }
  CHECK(seen);
  r = gpuq_cmd(d, {"show", tolerant});
  CHECK(r.out.find("    node selector: zone=z2\n    tolerates:     gpu=broken:NoSchedule\n") !=
        std::string::npos);
}

TEST_CASE("ls follows pages, hides finished jobs unless --all, stops at --limit, --state") {
  TempDir dir;
  Daemon d(dir.path);
  // A queue of 1 GPU without a cohort: one job runs, the others stay Pending.
  const fs::path file = dir.path / "paged.yaml";
  std::ofstream(file) << "queues:\n  - name: paged\n    quotas:\n      - flavor: h100\n"
                         "        resources: {gpu: {nominal: 1}}\n";
  auto r = gpuq_cmd(d, {"apply", "-f", file.string()});
  REQUIRE(r.rc == 0);

  // gpuqd gives at most 1000 jobs a page (and the command line asks for that many), so more
  // than 1000 are needed for a second page. Submitted from a few threads: gpuqd commits the
  // requests that arrive together in one write.
  constexpr int kJobs = 1100, kThreads = 8;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = t; i < kJobs; i += kThreads)
        if (gpuq_cmd(d, {"submit", "-q", "paged", "--gpus", "1", "--id", "p" + std::to_string(i),
                         "--", "true"})
                .rc != 0)
          ++failures;
    });
  for (auto& t : threads) t.join();
  REQUIRE(failures == 0);
  std::set<std::string> all;
  for (int i = 0; i < kJobs; ++i) all.insert("p" + std::to_string(i));

  const std::vector<std::string> cancelled = {"p10", "p500", "p1050"};
  r = gpuq_cmd(d, {"cancel", "p10", "p500", "p1050"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out ==
        "job/p10 cancelled (Cancelled)\njob/p500 cancelled (Cancelled)\n"
        "job/p1050 cancelled (Cancelled)\n");
  std::set<std::string> unfinished = all;
  for (const auto& id : cancelled) unfinished.erase(id);

  // Default: unfinished jobs only, every page.
  CHECK(listed_ids(gpuq_cmd(d, {"ls", "-o", "json"})) == unfinished);
  // --all: the cancelled ones too.
  CHECK(listed_ids(gpuq_cmd(d, {"ls", "--all", "-o", "json"})) == all);
  // --finished: those alone, read from the state file (gpuqd's engine no longer holds them), and
  // each still shown whole.
  CHECK(listed_ids(gpuq_cmd(d, {"ls", "--finished", "-o", "json"})) ==
        std::set<std::string>(cancelled.begin(), cancelled.end()));
  r = gpuq_cmd(d, {"show", "p500"});
  CHECK(r.rc == 0);
  CHECK(r.out.find("Cancelled") != std::string::npos);
  r = gpuq_cmd(d, {"ls", "--finished", "--all"});
  CHECK(r.rc != 0);
  CHECK(r.err.find("excludes") != std::string::npos);
  // --limit across a page boundary: 1000, then 50 of the next page.
  CHECK(
      listed_ids(gpuq_cmd(d, {"ls", "--all", "--queue", "paged", "--limit", "1050", "-o", "json"}))
          .size() == 1050);
  CHECK(listed_ids(gpuq_cmd(d, {"ls", "--queue", "research", "-o", "json"})).empty());

  r = gpuq_cmd(d, {"ls", "--limit", "120"});
  REQUIRE(r.rc == 0);
  auto lines = lines_of(r.out);
  CHECK(lines.size() == 121);  // header + 120
  CHECK(lines.at(0).rfind("ID", 0) == 0);

  // --state: what it names, from every page.
  r = gpuq_cmd(d, {"ls", "--state", "failed", "--state", "Cancelled"});
  REQUIRE(r.rc == 0);
  lines = lines_of(r.out);
  REQUIRE(lines.size() == 1 + cancelled.size());
  for (std::size_t i = 1; i < lines.size(); ++i)
    CHECK(lines[i].find("Cancelled") != std::string::npos);
  CHECK(listed_ids(gpuq_cmd(d, {"ls", "--state", "cancelled", "-o", "json"})) ==
        std::set<std::string>(cancelled.begin(), cancelled.end()));
  CHECK(listed_ids(gpuq_cmd(d, {"ls", "--state", "running", "-o", "json"})).size() == 1);
  CHECK(listed_ids(gpuq_cmd(d, {"ls", "--state", "pending", "-o", "json"})).size() ==
        unfinished.size() - 1);
}

TEST_CASE("cancel tries every id and exits 1 when any failed") {
  TempDir dir;
  Daemon d(dir.path);
  for (const char* id : {"a", "b", "c"})
    REQUIRE(gpuq_cmd(d, {"submit", "-q", "research", "--id", id, "--gpus", "1", "--", "true"}).rc ==
            0);

  auto r = gpuq_cmd(d, {"cancel", "a", "missing", "b"});
  CHECK(r.rc == 1);
  CHECK(r.out == "job/a cancelled (Cancelled)\njob/b cancelled (Cancelled)\n");
  CHECK(r.err == "gpuq: job \"missing\" does not exist (NOT_FOUND)\n");
  for (const char* id : {"a", "b"}) {
    r = gpuq_cmd(d, {"show", id, "-o", "json"});
    REQUIRE(r.rc == 0);
    CHECK(str(parse_json(r.out).at("state")) == "JOB_STATE_CANCELLED");
  }
  r = gpuq_cmd(d, {"show", "c", "-o", "json"});
  CHECK(str(parse_json(r.out).at("state")) == "JOB_STATE_RUNNING");

  r = gpuq_cmd(d, {"cancel", "c"});
  CHECK(r.rc == 0);
  CHECK(r.out == "job/c cancelled (Cancelled)\n");
  CHECK(r.err.empty());
  // Once more: gpuqd says it already ended.
  r = gpuq_cmd(d, {"cancel", "a"});
  CHECK(r.rc == 1);
  CHECK(r.err == "gpuq: job \"a\" already ended (Cancelled) (FAILED_PRECONDITION)\n");
}

TEST_CASE("apply: in file order; gpuqd's refusal stops it; a bad document applies nothing") {
  TempDir dir;
  Daemon d(dir.path);
  const fs::path file = dir.path / "apply.yaml";
  // The node is dedicated to the queue before it (queues come before nodes within a document):
  // gpuqd takes it only if that queue is already there.
  std::ofstream(file) << "queues:\n  - name: a\nnodes:\n"
                         "  - {name: n5, flavor: h100, capacity: {gpu: 8}, dedicatedTo: a}\n"
                         "---\nkind: Queue\nname: b\n";
  auto r = gpuq_cmd(d, {"apply", "-f", file.string()});
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(r.out == "queue/a applied\nnode/n5 applied\nqueue/b applied\n");
  CHECK(names_of(d, "queues", "queues") == std::set<std::string>{"a", "b", "prod", "research"});
  CHECK(names_of(d, "nodes", "nodes") == std::set<std::string>{"n0", "n1", "n5"});

  // The second object names a queue that does not exist: the file's syntax is fine, gpuqd
  // refuses it, and nothing after it is sent.
  std::ofstream(file) << "queues:\n  - name: c\nnodes:\n"
                         "  - {name: n6, flavor: h100, capacity: {gpu: 8}, dedicatedTo: nosuch}\n"
                         "---\nkind: Queue\nname: d\n";
  r = gpuq_cmd(d, {"apply", "-f", file.string()});
  CHECK(r.rc == 1);
  CHECK(r.out == "queue/c applied\n");
  CHECK(r.err.find("gpuq: node/n6 not applied\n") == 0);
  CHECK(r.err.find("dedicatedTo names queue \"nosuch\", which does not exist (INVALID_ARGUMENT)") !=
        std::string::npos);
  CHECK(names_of(d, "queues", "queues") ==
        std::set<std::string>{"a", "b", "c", "prod", "research"});
  CHECK(names_of(d, "nodes", "nodes") == std::set<std::string>{"n0", "n1", "n5"});

  // A mistake in the second document: the whole file is checked before anything is sent.
  std::ofstream(file) << "queues:\n  - name: e\n---\nqueues:\n  - name: f\n    weight: -1\n";
  r = gpuq_cmd(d, {"apply", "-f", file.string()});
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("apply.yaml:6:13: queues[0].weight: \"-1\" must be 0 (borrowers last)") != std::string::npos);
  CHECK(names_of(d, "queues", "queues") ==
        std::set<std::string>{"a", "b", "c", "prod", "research"});
}

TEST_CASE("queues table, nodes cordon, usage with --from/--to/--queue, admin backup") {
  TempDir dir;
  Daemon d(dir.path);
  auto r =
      gpuq_cmd(d, {"submit", "-q", "research", "--gpus", "0.5", "--replicas", "3", "--", "true"});
  REQUIRE(r.rc == 0);
  REQUIRE(gpuq_cmd(d, {"submit", "-q", "prod", "--gpus", "2", "--", "true"}).rc == 0);

  r = gpuq_cmd(d, {"queues"});
  REQUIRE(r.rc == 0);
  CHECK(lines_of(r.out).at(0).find("GPU NOMINAL/USED/BORROWED") != std::string::npos);
  const std::string research = row_of(r.out, "research");
  CHECK(research.find(" lab ") != std::string::npos);
  CHECK(research.find(" 8/1.5/0 ") != std::string::npos);
  CHECK(row_of(r.out, "prod").find(" 8/2/0 ") != std::string::npos);

  r = gpuq_cmd(d, {"nodes", "cordon", "n1"});
  CHECK(r.rc == 0);
  CHECK(r.out == "node/n1 cordoned (Cordoned)\n");
  r = gpuq_cmd(d, {"nodes"});
  CHECK(row_of(r.out, "n1").find("Cordoned") != std::string::npos);
  CHECK(row_of(r.out, "n0").find("Ready") != std::string::npos);
  r = gpuq_cmd(d, {"nodes", "cordon", "n7"});
  CHECK(r.rc == 1);
  CHECK(r.err == "gpuq: node \"n7\" does not exist (NOT_FOUND)\n");

  // --from/--to (aliases of --since/--until) as gpuqd took them: Unix seconds and a date
  // (midnight UTC).
  r = gpuq_cmd(
      d, {"usage", "--from", "100", "--to", "2024-01-01", "--queue", "research", "-o", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json::value period = parse_json(r.out);
  CHECK(str(period.at("since")) == "100");
  CHECK(str(period.at("until")) == "1704067200");
  CHECK(period.at("rows").as_array().empty());  // nothing ran in 2023

  // A period that ends in the future: running jobs count up to now.
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  r = gpuq_cmd(
      d, {"usage", "--from", "-1h", "--to", std::to_string(now + 3600), "--queue", "research"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("GPU-HOURS") != std::string::npos);
  CHECK(row_of(r.out, "research").find(" 0/0/0/1 ") != std::string::npos);  // one job (3 pods), unfinished
  CHECK(row_of(r.out, "prod").empty());  // --queue research
  CHECK(row_of(r.out, "TOTAL").find(" 0/0/0/1 ") != std::string::npos);

  const fs::path dest = dir.path / "backup" / "state.db";
  fs::create_directories(dest.parent_path());
  r = gpuq_cmd(d, {"admin", "backup", dest.string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto size = fs::file_size(dest);
  CHECK(size > 0);
  CHECK(r.out == "wrote " + std::to_string(size) + " bytes to " + dest.string() + "\n");
  CHECK_FALSE(fs::exists(dest.string() + ".tmp"));
  std::string magic(16, '\0');
  std::ifstream(dest, std::ios::binary).read(magic.data(), 16);
  CHECK(magic == std::string("SQLite format 3\0", 16));
}

// An array's members' events are kept in its row (storage::ArrayRows): a watch sees them live,
// in a replay and filtered, each once and in seq order, as any other job's.
TEST_CASE("watch: an array's members' events, live and replayed, in order") {
  TempDir dir;
  Daemon d(dir.path);
  auto hold = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"submit", "-q", "research", "--gpus", "1", "--hold"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "true"});
    REQUIRE(gpuq_cmd(d, args).rc == 0);
  };
  hold({"--id", "h1"});
  Watch live(d, {});
  REQUIRE(live.wait_lines(2));  // h1's events shown: the watch is registered, what follows comes live
  hold({"--id", "a", "--array", "0-2"});
  hold({"--id", "h2"});
  const std::vector<std::string> jobs{"h1", "h1", "a_0", "a_0", "a_1", "a_1", "a_2", "a_2", "h2", "h2"};
  REQUIRE(live.wait_lines(jobs.size()));
  Watch replay(d, {});
  Watch one(d, {"--job", "a_1"});
  REQUIRE(replay.wait_lines(jobs.size()));
  REQUIRE(one.wait_lines(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // nothing more is coming
  for (const Watch* w : {&live, &replay}) {
    const auto lines = lines_of(w->out());
    REQUIRE(lines.size() == jobs.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
      CAPTURE(lines[i]);
      CHECK(lines[i].rfind(std::to_string(i + 1) + " ", 0) == 0);
      CHECK(lines[i].find(" job/" + jobs[i] + " queue/research ") != std::string::npos);
      CHECK(lines[i].ends_with(i % 2 == 0 ? "submitted -> Pending" : "Pending -> Pending: held at submission"));
    }
  }
  const auto lines = lines_of(one.out());
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].rfind("5 ", 0) == 0);
  CHECK(lines[1].rfind("6 ", 0) == 0);
}

TEST_CASE("watch prints the events after --from of the --queue until gpuqd ends the stream") {
  TempDir dir;
  Daemon d(dir.path);
  for (auto [id, queue] : {std::pair{"w1", "research"}, {"w2", "prod"}, {"w3", "research"}})
    REQUIRE(gpuq_cmd(d, {"submit", "-q", queue, "--id", id, "--gpus", "1", "--", "true"}).rc == 0);

  // Every event from the start, one JSON object a line. A submit's reply comes once its events
  // are written, so all of them are history by now: Pending, Admitted, Running for each job.
  Watch all(d, {"-o", "json"});
  REQUIRE(all.wait_lines(9));
  struct Event {
    std::uint64_t seq;
    std::string job, queue, to;
  };
  std::vector<Event> events;
  for (const std::string& l : lines_of(all.out())) {
    const json::value e = parse_json(l);
    events.push_back(
        {std::stoull(str(e.at("seq"))), str(e.at("job_id")), str(e.at("queue")), str(e.at("to"))});
  }
  REQUIRE(events.size() == 9);
  CHECK(events.front().seq == 1);
  CHECK(events.front().job == "w1");
  CHECK(events.front().to == "JOB_STATE_PENDING");
  std::uint64_t last_w1 = 0;
  std::vector<std::uint64_t> want;  // research's events after w1's
  for (const Event& e : events) {
    if (e.job == "w1")
      last_w1 = e.seq;
    else if (e.queue == "research")
      want.push_back(e.seq);
  }
  REQUIRE(want.size() == 3);

  Watch after(d, {"--from", std::to_string(last_w1), "--queue", "research"});
  REQUIRE(after.wait_lines(want.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // nothing more is coming
  // gpuqd stopped: each watch says why it ended, where to resume, and exits 1.
  CHECK(after.finish() == 1);
  CHECK(all.finish() == 1);
  CHECK(after.err() == "gpuq: the watch ended: gpuqd is stopping; gpuq watch --from " + std::to_string(want.back()) +
                           " resumes after the last event shown\n");
  const auto lines = lines_of(after.out());
  REQUIRE(lines.size() == want.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    CHECK(lines[i].rfind(std::to_string(want[i]) + " ", 0) == 0);
    CHECK(lines[i].find(" job/w3 queue/research ") != std::string::npos);
  }
  CHECK(lines[0].find(" submitted -> Pending") != std::string::npos);
  CHECK(lines[2].find(" Admitted -> Running") != std::string::npos);
}

TEST_CASE("gpuq logs prints a job's output with the local executor, and follows it with -f") {
  TempDir dir;
  const std::string config = "binder: local\nlocal: {nvidiaSmi: \"\", gpus: 2, logDir: " + (dir.path / "logs").string() +
                             ", runDir: " + (dir.path / "run").string() +
                             "}\nqueues:\n  - name: q\n    quotas:\n      - flavor: default\n"
                             "        resources: {gpu: {nominal: 2}}\n";
  Daemon d(dir.path, true, config);
  const Run sub = gpuq_cmd(d, {"submit", "-q", "q", "--gpus", "1", "--", "sh", "-c",
                               "echo first; sleep 1; echo \"second in $PWD on $CUDA_VISIBLE_DEVICES\""});
  REQUIRE(sub.rc == 0);
  const std::string id = submitted_id(sub);
  const Run follow = gpuq_cmd(d, {"logs", id, "-f"});  // returns once the job has ended
  CHECK(follow.rc == 0);
  CHECK(follow.out == "first\nsecond in " + std::filesystem::current_path().string() + " on 0\n");
  const Run again = gpuq_cmd(d, {"logs", id, "--pod", "0"});
  CHECK(again.out == follow.out);
  const Run bad = gpuq_cmd(d, {"logs", id, "--pod", "3"});
  CHECK(bad.rc != 0);
  CHECK(bad.err.find("pod: 3 is not a pod of job") != std::string::npos);
}
