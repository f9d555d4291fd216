// The crash test: clients stream submissions and cancels while gpuqd is killed with SIGKILL at
// random moments. After each restart on the same state file: every acknowledged job is there
// exactly once, no acknowledged cancel is undone, no node is over capacity, and no job was lost
// in the restore. GPUQ_CRASH_ROUNDS sets the rounds (default 20).
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/daemon_process.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;

namespace {

int rounds() {
  const char* env = std::getenv("GPUQ_CRASH_ROUNDS");
  return env ? std::atoi(env) : 20;
}

struct Acked {
  std::mutex mu;
  std::set<std::string> submitted;
  std::set<std::string> cancelled;
};

void client(Daemon& d, int worker, int round, std::atomic<bool>& stop, Acked& acked) {
  std::mt19937 rng(static_cast<unsigned>(round * 100 + worker));
  std::vector<std::string> mine;
  for (int i = 0; !stop; ++i) {
    const std::string id = "r" + std::to_string(round) + "-w" + std::to_string(worker) + "-" + std::to_string(i);
    if (!mine.empty() && rng() % 4 == 0) {
      const std::string victim = mine[rng() % mine.size()];
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      v1::CancelJobRequest r;
      r.set_id(victim);
      v1::CancelJobResponse resp;
      if (d.jobs->Cancel(&ctx, r, &resp).ok()) {
        std::lock_guard lock(acked.mu);
        acked.cancelled.insert(victim);
      }
      continue;
    }
    v1::SubmitJobRequest r;
    r.mutable_spec()->set_id(id);
    r.mutable_spec()->set_queue(rng() % 2 ? "research" : "prod");
    auto* p = r.mutable_spec()->add_pod_sets();
    (*p->mutable_resources())["gpu"] = std::to_string(1 + rng() % 4);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::SubmitJobResponse resp;
    if (d.jobs->Submit(&ctx, r, &resp).ok()) {
      std::lock_guard lock(acked.mu);
      acked.submitted.insert(id);
      mine.push_back(id);
    } else if (ctx.deadline() < std::chrono::system_clock::now()) {
      break;
    }
  }
}

std::map<std::string, v1::Job> list_all(Daemon& d, int* count) {
  std::map<std::string, v1::Job> out;
  *count = 0;
  std::string token;
  do {
    grpc::ClientContext ctx;
    v1::ListJobsRequest r;
    r.set_page_size(1000);
    r.set_page_token(token);
    v1::ListJobsResponse resp;
    auto s = d.jobs->List(&ctx, r, &resp);
    REQUIRE_MESSAGE(s.ok(), s.error_message());
    for (const auto& j : resp.jobs()) {
      ++*count;
      out[j.spec().id()] = j;
    }
    token = resp.next_page_token();
  } while (!token.empty());
  return out;
}

}  // namespace

TEST_CASE("gpuqd killed with SIGKILL at random moments loses no acknowledged job or cancel") {
  TempDir dir;
  Acked acked;
  std::mt19937 rng(7);
  const int n = rounds();
  for (int round = 0; round < n; ++round) {
    CAPTURE(round);
    Daemon d(dir.path);
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int w = 0; w < 4; ++w)
      workers.emplace_back([&, w] { client(d, w, round, stop, acked); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 300));
    d.stop(SIGKILL);
    stop = true;
    for (auto& t : workers) t.join();

    Daemon after(dir.path);
    int count = 0;
    auto jobs = list_all(after, &count);
    CHECK(count == static_cast<int>(jobs.size()));  // no id twice
    std::lock_guard lock(acked.mu);
    for (const auto& id : acked.submitted) {
      CAPTURE(id);
      auto it = jobs.find(id);
      REQUIRE(it != jobs.end());
      CHECK(it->second.state() != v1::JOB_STATE_FAILED);
    }
    for (const auto& id : acked.cancelled) {
      CAPTURE(id);
      CHECK(jobs.at(id).state() == v1::JOB_STATE_CANCELLED);
    }
    grpc::ClientContext ctx;
    v1::ListNodesResponse nodes;
    REQUIRE(after.nodes->List(&ctx, v1::ListNodesRequest{}, &nodes).ok());
    for (const auto& node : nodes.nodes()) {
      CAPTURE(node.spec().name());
      for (const auto& [r, used] : node.used()) CHECK(used <= node.capacity().at(r));
    }
    MESSAGE("round " << round << ": " << acked.submitted.size() << " acknowledged submits, "
                     << acked.cancelled.size() << " acknowledged cancels so far");
  }
}
