#pragma once
// Fixtures for the SQLite store tests: a temporary directory, full specs, field-by-field checks.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "storage/sqlite_db.hpp"
#include "storage/store.hpp"

namespace gpuq::storage::test {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gpuq-store-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::unique_ptr<Store> open_ok(const std::string& path, ResourceNames& names) {
  auto s = Store::open(path, names);
  const std::string why = s.ok() ? std::string() : s.error();
  INFO(why);
  REQUIRE(s.ok());
  return std::move(s).value();
}

// Runs SQL on a file through a connection of the test's own.
inline void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string why = err != nullptr ? err : "";
  INFO(why);
  sqlite3_free(err);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

// The first column of the first row of `sql` on a file, through a connection of the test's own.
inline std::string query_one(const std::string& path, const std::string& sql) {
  SqliteError e;
  Db db = Db::open(path, SQLITE_OPEN_READONLY, e);
  REQUIRE(db);
  Stmt s;
  REQUIRE_FALSE(Stmt::prepare(db, sql.c_str(), s));
  REQUIRE(s.step() == SQLITE_ROW);
  return std::string(s.text(0));
}

// meta.schema_version of a file.
inline std::string schema_version(const std::string& path) {
  return query_one(path, "SELECT value FROM meta WHERE key = 'schema_version'");
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline QueueSpec make_queue(ResourceNames& names) {
  QueueSpec q;
  q.name = QueueName("ml-train");
  q.cohort = "research";
  q.weight = 2.5;
  q.strategy = QueueingStrategy::kStrictFIFO;
  FlavorQuota h100{"h100", {}};
  h100.resources.push_back({kGpu, ResourceQuota{16000, 8000, std::nullopt}});
  h100.resources.push_back({kCpu, ResourceQuota{256000, std::nullopt, 64000}});
  h100.resources.push_back({*names.intern("rdma/hca"), ResourceQuota{4, 0, 2}});
  FlavorQuota a100{"a100", {{kGpu, ResourceQuota{8000, std::nullopt, std::nullopt}}}};
  q.quotas = {h100, a100};
  q.preemption.within_queue = WithinQueuePolicy::kLowerOrNewerEqualPriority;
  q.preemption.reclaim_within_cohort = ReclaimPolicy::kAny;
  q.preemption.borrow_within_cohort = BorrowWithinCohortPolicy::kLowerPriority;
  q.preemption.borrow_max_priority_threshold = 50;
  q.preemption.min_runtime = 600;
  q.max_pending_jobs = 5000;
  q.max_gpus_per_job = 2500;  // 2.5 GPUs
  q.max_pods_per_job = 64;
  q.max_runtime = 86400;
  q.default_max_runtime = 3600;
  q.max_grace_period = 0;  // set, and 0: no grace at all (not "no limit")
  q.allowed_priority_classes = {"normal", "high"};
  q.non_preemptible_may_borrow = true;
  q.max_running_jobs_per_user = 4;
  q.max_pending_jobs_per_user = 100;
  q.max_submits_per_user_per_minute = 30;
  q.max_retries = 5;
  q.submitters = Members{{"alice", "*"}, {"ml"}};
  q.viewers = Members{{}, {"ml-leads"}};
  q.kubernetes.ns = "ml-train";
  q.kubernetes.default_image = "nvcr.io/nvidia/pytorch:24.05-py3";
  q.kubernetes.allowed_images = {"nvcr.io/nvidia/", "ghcr.io/lab/"};
  q.kubernetes.pod_template = R"({"metadata":{"labels":{"team":"ml"}},"spec":{"serviceAccountName":"train",)"
                              R"("containers":[{"name":"main","env":[{"name":"Q","value":"say "hi"
"}]}]}})";
  return q;
}

inline NodeSpec make_node(ResourceNames& names) {
  NodeSpec n;
  n.name = "gpu-07";
  n.flavor = "h100";
  n.capacity[kGpu] = 8000;
  n.capacity[kCpu] = 192000;
  n.capacity[kMemory] = std::int64_t{2} << 40;
  n.capacity[*names.intern("rdma/hca")] = 4;
  n.labels = {{"rack", "r12"}, {"zone", "a"}};
  n.taints = {{"nvidia.com/gpu", "broken", TaintEffect::kNoSchedule},
              {"spot", "", TaintEffect::kPreferNoSchedule}};
  n.state = NodeState::kDraining;
  n.dedicated_to = QueueName("ml-train");
  return n;
}

inline JobRecord make_job(std::uint64_t number, const std::string& queue = "ml-train",
                   JobState state = JobState::kPending) {
  JobRecord j;
  j.number = number;
  j.spec.id = JobId("job-" + std::to_string(number));
  j.spec.queue = QueueName(queue);
  j.spec.owner = "alice";
  j.spec.name = "train-" + std::to_string(number);
  j.spec.priority = 100;
  j.spec.submitted_at = 1000 + static_cast<Time>(number);
  PodSet p;
  p.name = "worker";
  p.count = 2;
  p.per_pod[kGpu] = 1000;
  p.per_pod[kCpu] = 8000;
  j.spec.pod_sets = {p};
  j.state = state;
  return j;
}

inline JobRecord make_full_job(ResourceNames& names) {
  JobRecord j = make_job(7, "ml-train", JobState::kRunning);
  PodSet launcher;
  launcher.name = "launcher";
  launcher.count = 1;
  launcher.per_pod[kCpu] = 2000;
  launcher.per_pod[kMemory] = 4LL << 30;
  PodSet workers;
  workers.name = "workers";
  workers.count = 2;
  workers.per_pod[kGpu] = 4000;
  workers.per_pod[*names.intern("rdma/hca")] = 1;
  // The launcher has no node constraints, the workers every kind (any bytes in a value).
  workers.where.mut().node_selector = {{"zone", "a"}, {"gpuq.io/pool", "x:y;1"}};
  workers.where.mut().affinity = {
      {{"gen", LabelOperator::kGt, {"3"}}, {"rack", LabelOperator::kNotIn, {"r1", "r2"}}},
      {},
      {{"big", LabelOperator::kExists, {}}}};
  workers.where.mut().tolerations = {{"nvidia.com/gpu", false, "broken", TaintEffect::kNoSchedule},
                               {"", true, "", std::nullopt}};
  j.spec.pod_sets = {launcher, workers};
  j.spec.flavors = {"h100", "a100"};
  j.spec.max_runtime = 7200;
  j.spec.preemptible = false;
  j.spec.grace_period = 90;
  j.spec.exclusive = true;
  j.spec.on_node_loss = NodeLossPolicy::kFail;
  j.run.command = {"python", "train.py", "--lr", "3e-4"};
  j.run.env = {{"NCCL_DEBUG", "INFO"}, {"SEED", "1"}};
  j.run.working_dir = "/home/alice/proj";
  j.run.working_dir_implicit = true;
  j.run.image = "nvcr.io/nvidia/pytorch:24.05-py3";
  j.priority_text = "high";
  j.reason = "started";
  j.admitted_at = 2000;
  j.flavor = "h100";
  j.placement = {{0, "gpu-07", {}, 0}, {1, "gpu-07", {0, 1, 2, 3}, 1000}, {1, "gpu-08", {4, 5, 6, 7}, 1000}};
  j.attempts = 2;
  j.preemptions = 1;
  j.exit_code = 0;
  j.preempted_by = "job-3";
  return j;
}

inline void check_same(const ResourceVec& a, const ResourceVec& b) { CHECK(a == b); }

inline void check_same(const QueueSpec& a, const QueueSpec& b) {
  CHECK(a.name == b.name);
  CHECK(a.cohort == b.cohort);
  CHECK(a.weight == b.weight);
  CHECK(a.strategy == b.strategy);
  REQUIRE(a.quotas.size() == b.quotas.size());
  for (std::size_t i = 0; i < a.quotas.size(); ++i) {
    CHECK(a.quotas[i].flavor == b.quotas[i].flavor);
    REQUIRE(a.quotas[i].resources.size() == b.quotas[i].resources.size());
    for (std::size_t r = 0; r < a.quotas[i].resources.size(); ++r) {
      const auto& [ra, qa] = a.quotas[i].resources[r];
      const auto& [rb, qb] = b.quotas[i].resources[r];
      CHECK(ra == rb);
      CHECK(qa.nominal == qb.nominal);
      CHECK(qa.borrowing_limit == qb.borrowing_limit);
      CHECK(qa.lending_limit == qb.lending_limit);
    }
  }
  CHECK(a.preemption.within_queue == b.preemption.within_queue);
  CHECK(a.preemption.reclaim_within_cohort == b.preemption.reclaim_within_cohort);
  CHECK(a.preemption.borrow_within_cohort == b.preemption.borrow_within_cohort);
  CHECK(a.preemption.borrow_max_priority_threshold == b.preemption.borrow_max_priority_threshold);
  CHECK(a.preemption.min_runtime == b.preemption.min_runtime);
  CHECK(a.max_pending_jobs == b.max_pending_jobs);
  CHECK(a.max_gpus_per_job == b.max_gpus_per_job);
  CHECK(a.max_pods_per_job == b.max_pods_per_job);
  CHECK(a.max_runtime == b.max_runtime);
  CHECK(a.default_max_runtime == b.default_max_runtime);
  CHECK(a.max_grace_period == b.max_grace_period);
  CHECK(a.allowed_priority_classes == b.allowed_priority_classes);
  CHECK(a.non_preemptible_may_borrow == b.non_preemptible_may_borrow);
  CHECK(a.max_running_jobs_per_user == b.max_running_jobs_per_user);
  CHECK(a.max_pending_jobs_per_user == b.max_pending_jobs_per_user);
  CHECK(a.max_submits_per_user_per_minute == b.max_submits_per_user_per_minute);
  CHECK(a.max_retries == b.max_retries);
  CHECK(a.submitters == b.submitters);
  CHECK(a.viewers == b.viewers);
  CHECK(a.kubernetes == b.kubernetes);
}

inline void check_same(const NodeSpec& a, const NodeSpec& b) {
  CHECK(a.name == b.name);
  CHECK(a.flavor == b.flavor);
  check_same(a.capacity, b.capacity);
  CHECK(a.labels == b.labels);
  CHECK(a.taints == b.taints);
  CHECK(a.state == b.state);
  CHECK(a.dedicated_to == b.dedicated_to);
}

inline void check_same(const JobRecord& a, const JobRecord& b) {
  CHECK(a.number == b.number);
  CHECK(a.spec.id == b.spec.id);
  CHECK(a.spec.queue == b.spec.queue);
  CHECK(a.spec.owner == b.spec.owner);
  CHECK(a.spec.name == b.spec.name);
  CHECK(a.spec.priority == b.spec.priority);
  CHECK(a.spec.submitted_at == b.spec.submitted_at);
  REQUIRE(a.spec.pod_sets.size() == b.spec.pod_sets.size());
  for (std::size_t i = 0; i < a.spec.pod_sets.size(); ++i) {
    CHECK(a.spec.pod_sets[i].name == b.spec.pod_sets[i].name);
    CHECK(a.spec.pod_sets[i].count == b.spec.pod_sets[i].count);
    check_same(a.spec.pod_sets[i].per_pod, b.spec.pod_sets[i].per_pod);
    CHECK(a.spec.pod_sets[i].where == b.spec.pod_sets[i].where);
  }
  CHECK(a.spec.flavors == b.spec.flavors);
  CHECK(a.spec.max_runtime == b.spec.max_runtime);
  CHECK(a.spec.expected_runtime == b.spec.expected_runtime);
  CHECK(a.notify == b.notify);
  CHECK(a.spec.preemptible == b.spec.preemptible);
  CHECK(a.spec.grace_period == b.spec.grace_period);
  CHECK(a.spec.exclusive == b.spec.exclusive);
  CHECK(a.spec.on_node_loss == b.spec.on_node_loss);
  CHECK(a.run.command == b.run.command);
  CHECK(a.run.env == b.run.env);
  CHECK(a.run.working_dir == b.run.working_dir);
  CHECK(a.run.working_dir_implicit == b.run.working_dir_implicit);
  CHECK(a.run.image == b.run.image);
  CHECK(a.priority_text == b.priority_text);
  CHECK(a.state == b.state);
  CHECK(a.reason == b.reason);
  CHECK(a.admitted_at == b.admitted_at);
  CHECK(a.finished_at == b.finished_at);
  CHECK(a.flavor == b.flavor);
  REQUIRE(a.placement.size() == b.placement.size());
  for (std::size_t i = 0; i < a.placement.size(); ++i) {
    CHECK(a.placement[i].pod_set == b.placement[i].pod_set);
    CHECK(a.placement[i].node == b.placement[i].node);
    CHECK(a.placement[i].gpus == b.placement[i].gpus);
    CHECK(a.placement[i].gpu_milli == b.placement[i].gpu_milli);
  }
  CHECK(a.attempts == b.attempts);
  CHECK(a.preemptions == b.preemptions);
  CHECK(a.exit_code == b.exit_code);
  CHECK(a.preempted_by == b.preempted_by);
}

inline EventRecord make_event(std::uint64_t seq, const std::string& job, std::optional<JobState> from,
                       JobState to) {
  const bool holds = to == JobState::kAdmitted || to == JobState::kRunning || to == JobState::kPreempting;
  return {seq, static_cast<Time>(5000 + seq), job, "ml-train", from, to, "reason " + std::to_string(seq), "",
          holds ? "h100" : ""};
}

}  // namespace gpuq::storage::test
