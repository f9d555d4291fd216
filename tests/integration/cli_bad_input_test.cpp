// Bad input and hard cases through the real command line and a real gpuqd (issue [3/6]): an
// unknown queue, a watch position out of range, jobs as large as the limits allow, a job that
// ignores SIGTERM, a watch whose daemon dies, logs of a job that never ran.
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/cli_run.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;

TEST_CASE("an unknown queue in ls, and a watch position out of range, are refused by name") {
  TempDir dir;
  Daemon d(dir.path);
  const Run ls = gpuq_cmd(d, {"ls", "--queue", "nosuch"});
  CHECK(ls.rc != 0);
  CHECK_MESSAGE(ls.err.find("queue \"nosuch\" does not exist (NOT_FOUND)") != std::string::npos, ls.err);
  CHECK(gpuq_cmd(d, {"ls", "--queue", "research"}).rc == 0);
  const Run far = gpuq_cmd(d, {"watch", "--from", "9223372036854775808"});
  CHECK(far.rc != 0);
  CHECK_MESSAGE(far.err.find("from_seq: 9223372036854775808 is not allowed; use 0 to 9223372036854775807 "
                             "(INVALID_ARGUMENT)") != std::string::npos,
                far.err);
}

TEST_CASE("jobs as large as the limits allow still list in full: pages are bounded in bytes") {
  TempDir dir;
  Daemon d(dir.path);
  // Each job at the spec layer's limits (spec/limits.hpp): a 253-byte name, a 256 KiB command
  // and a 256 KiB environment, about 512 KiB a job; 12 of them are 6 MiB, over the 4 MiB a
  // gRPC client takes in one reply.
  const std::string name(253, 'n');
  const std::string arg1(131071, 'a'), arg2(131066, 'b');        // with "true": 262144 bytes
  const std::string env1 = "A=" + std::string(131069, 'x');       // 262144 bytes with B's
  const std::string env2 = "B=" + std::string(131069, 'y');
  constexpr int kJobs = 12;
  std::set<std::string> ids;
  for (int i = 0; i < kJobs; ++i) {
    const std::string id = "big" + std::to_string(i);
    const Run r = gpuq_cmd(d, {"submit", "-q", "research", "--gpus", "1", "--id", id, "--name", name, "--env", env1,
                               "--env", env2, "--", "true", arg1, arg2});
    REQUIRE_MESSAGE(r.rc == 0, r.err.substr(0, 300));
    ids.insert(id);
  }
  CHECK(listed_ids(gpuq_cmd(d, {"ls", "--all", "-o", "json"})) == ids);
  const Run table = gpuq_cmd(d, {"ls", "--all"});
  CHECK(table.rc == 0);
  CHECK(lines_of(table.out).size() == kJobs + 1);  // the header and every job

  // One byte over a limit is refused, naming the field, the size and the limit.
  Run r = gpuq_cmd(d, {"submit", "-q", "research", "--gpus", "1", "--name", std::string(254, 'n'), "--", "true"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.err.find("spec.name: ") != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find("is 254 bytes long; at most 253 are allowed") != std::string::npos, r.err);
  r = gpuq_cmd(d, {"submit", "-q", "research", "--gpus", "1", "--", "true", arg1, arg2 + "b"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.err.find("spec.command: is 262145 bytes in all; at most 262144 are allowed") != std::string::npos,
                r.err);
}

TEST_CASE("nodes as large as the limits allow still list in full: Queues and Nodes page by size too") {
  TempDir dir;
  Daemon d(dir.path);
  // 12 nodes with 1024 labels of about 380 bytes each: about 390 KiB a node, 4.7 MB in all.
  const std::string prefix = std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
                             std::string(60, 'd');  // 252 bytes, a DNS subdomain
  std::set<std::string> names{"n0", "n1"};  // the config's
  for (int i = 0; i < 12; ++i) {
    gpuq::v1::ApplyNodeRequest req;
    auto& spec = *req.mutable_spec();
    spec.set_name("big" + std::to_string(100 + i));
    spec.set_flavor("h100");
    (*spec.mutable_capacity())["gpu"] = "8";
    for (int l = 0; l < 1024; ++l) {
      std::string key = std::to_string(10000 + l);
      (*spec.mutable_labels())[prefix + "/" + key + std::string(63 - key.size(), 'k')] = std::string(63, 'v');
    }
    grpc::ClientContext ctx;
    gpuq::v1::ApplyNodeResponse resp;
    const grpc::Status st = d.nodes->Apply(&ctx, req, &resp);
    REQUIRE_MESSAGE(st.ok(), st.error_message().substr(0, 300));
    names.insert(spec.name());
  }
  {  // One reply holds what fits in 2 MiB and says where the next begins.
    grpc::ClientContext ctx;
    gpuq::v1::ListNodesResponse page;
    REQUIRE(d.nodes->List(&ctx, gpuq::v1::ListNodesRequest{}, &page).ok());
    CHECK(page.nodes_size() < 14);
    CHECK(page.ByteSizeLong() <= 2u << 20);
    CHECK(page.next_page_token() == page.nodes(page.nodes_size() - 1).spec().name());
  }
  const Run r = gpuq_cmd(d, {"nodes", "-o", "json"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  std::set<std::string> listed;
  const boost::json::value v = parse_json(r.out);
  for (const auto& n : v.at("nodes").as_array()) listed.insert(str(n.at("spec").at("name")));
  CHECK(listed == names);
  CHECK(v.at("nodes").as_array().size() == names.size());  // none twice
  const Run table = gpuq_cmd(d, {"nodes"});
  CHECK(table.rc == 0);
  CHECK(lines_of(table.out).size() == names.size() + 1);
  // The queue summaries are paged the same way (the config's two fit in one page).
  CHECK(names_of(d, "queues", "queues") == std::set<std::string>{"prod", "research"});
}

TEST_CASE("cancel --force kills a job that ignores SIGTERM now; ls shows it Stopping until then") {
  TempDir dir;
  Daemon d(dir.path, true, local_executor_config(dir.path));  // 4 GPUs
  // Ignores SIGTERM, and has a grace period far longer than the test waits.
  Run r = gpuq_cmd(d, {"submit", "-q", "q", "--gpus", "1", "--id", "stubborn", "--grace-period", "3600", "--", "sh",
                       "-c", "trap '' TERM; echo ready; sleep 1000"});
  REQUIRE(r.rc == 0);
  const auto wait_for = [&](auto done) {
    for (int i = 0; i < 300 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return done();
  };
  REQUIRE(wait_for([&] { return gpuq_cmd(d, {"logs", "stubborn"}).out == "ready\n"; }));  // the trap is set

  r = gpuq_cmd(d, {"cancel", "stubborn"});
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(r.out == "job/stubborn cancelled (Stopping)\n");
  // Still holding its GPU: listed with the unfinished jobs, as Stopping.
  r = gpuq_cmd(d, {"ls"});
  CHECK(row_of(r.out, "stubborn").find(" Stopping ") != std::string::npos);
  r = gpuq_cmd(d, {"show", "stubborn", "-o", "json"});
  CHECK(parse_json(r.out).at("stopping").as_bool());
  CHECK(str(parse_json(r.out).at("state")) == "JOB_STATE_CANCELLED");
  // A second cancel without --force changes nothing; with it, the job is killed now.
  CHECK(gpuq_cmd(d, {"cancel", "stubborn"}).rc == 1);
  r = gpuq_cmd(d, {"cancel", "--force", "stubborn"});
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(wait_for([&] { return !parse_json(gpuq_cmd(d, {"show", "stubborn", "-o", "json"}).out).at("stopping").as_bool(); }));
  CHECK(row_of(gpuq_cmd(d, {"ls"}).out, "stubborn").empty());

  // --force on a running job: killed at once, without the grace period.
  r = gpuq_cmd(d, {"submit", "-q", "q", "--gpus", "1", "--id", "stubborn2", "--grace-period", "3600", "--", "sh",
                   "-c", "trap '' TERM; echo ready; sleep 1000"});
  REQUIRE(r.rc == 0);
  REQUIRE(wait_for([&] { return gpuq_cmd(d, {"logs", "stubborn2"}).out == "ready\n"; }));
  r = gpuq_cmd(d, {"cancel", "--force", "stubborn2"});
  CHECK(r.rc == 0);
  CHECK(wait_for([&] { return !parse_json(gpuq_cmd(d, {"show", "stubborn2", "-o", "json"}).out).at("stopping").as_bool(); }));
  r = gpuq_cmd(d, {"show", "stubborn2", "-o", "json"});
  CHECK(str(parse_json(r.out).at("state")) == "JOB_STATE_CANCELLED");
}

TEST_CASE("watch says why it ended and exits 1 when gpuqd dies under it") {
  TempDir dir;
  Daemon d(dir.path);
  REQUIRE(gpuq_cmd(d, {"submit", "-q", "research", "--id", "k1", "--gpus", "1", "--", "true"}).rc == 0);
  Watch w(d, {});
  REQUIRE(w.wait_lines(3));  // Pending, Admitted, Running
  CHECK(w.finish(SIGKILL) == 1);
  INFO(w.err());
  CHECK(w.err().rfind("gpuq: the watch ended: the connection to gpuqd broke (", 0) == 0);
  CHECK(w.err().find("; gpuq watch --from 3 resumes after the last event shown\n") != std::string::npos);
}

TEST_CASE("gpuq logs of a job that has not started says so") {
  TempDir dir;
  Daemon d(dir.path, true, local_executor_config(dir.path));  // 4 GPUs
  REQUIRE(gpuq_cmd(d, {"submit", "-q", "q", "--gpus", "4", "--id", "big", "--", "sleep", "100"}).rc == 0);
  REQUIRE(gpuq_cmd(d, {"submit", "-q", "q", "--gpus", "1", "--id", "waits", "--", "true"}).rc == 0);
  const Run r = gpuq_cmd(d, {"logs", "waits"});
  CHECK(r.rc == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "gpuq: job \"waits\" has not started yet (Pending); its output shows once it runs (gpuq logs -f "
                 "waits waits for it; gpuq show waits says why it waits) (FAILED_PRECONDITION)\n");
  REQUIRE(gpuq_cmd(d, {"cancel", "waits"}).rc == 0);
  const Run ended = gpuq_cmd(d, {"logs", "waits"});
  CHECK(ended.rc == 1);
  CHECK(ended.err == "gpuq: job \"waits\" ended (Cancelled) with no output from pod 0; it never started there "
                     "(FAILED_PRECONDITION)\n");
  CHECK(gpuq_cmd(d, {"cancel", "--force", "big"}).rc == 0);
}
