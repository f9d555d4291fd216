// job_memory: what gpuqd keeps per pending job, by part (issue [5/7]; bench/HISTORY.md "Under 1,000
// bytes a pending job"). The same jobs as daemon_bench's restart run (bench/restart_job.hpp), held
// the way gpuqd holds them after a restart: in the engine (scheduler/engine.hpp's Job, its spec's
// heap, the engine's indexes), in the Core (daemon/core.hpp's packed_: each pending job's record
// packed into a string, by id) and in the start-time estimates (daemon/estimates.hpp: an entry per
// engine slot). Each part is measured as the bytes glibc's allocator has handed out (mallinfo2:
// uordblks + hblkhd) before and after it is built, so it is exact for this process's heap and
// leaves out what RSS adds (freed memory not given back, pages touched). One thread: everything is
// in the main arena, which mallinfo2 reports.
//
//   build/bench/job_memory --jobs 1000000
#include <malloc.h>

#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/restart_job.hpp"
#include "daemon/estimates.hpp"
#include "daemon/packed_jobs.hpp"
#include "scheduler/engine.hpp"
#include "storage/codec.hpp"
#include "storage/store.hpp"

namespace {

using namespace gpuq;

long in_use() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<long>(m.uordblks + m.hblkhd);
}

struct Row {
  const char* part;
  double bytes;  // per job
  const char* what;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"job_memory: bytes per pending job, by part"};
  long jobs = 1'000'000;
  app.add_option("--jobs", jobs, "pending jobs")->check(CLI::Range(1L, 20'000'000L));
  CLI11_PARSE(app, argc, argv);
  const auto n = static_cast<double>(jobs);
  std::vector<Row> rows;

  // The records, as the store's load hands them to the Core (kept, for the parts below).
  std::vector<storage::JobRecord> loaded;
  loaded.reserve(static_cast<std::size_t>(jobs));
  for (long i = 0; i < jobs; ++i) loaded.push_back(bench::restart_job(i));

  // The engine, with daemon_bench's queue and nodes.
  Engine engine;
  QueueSpec q;
  q.name = QueueName("team");
  FlavorQuota fq;
  fq.flavor = "h100";
  fq.resources.emplace_back(kGpu, ResourceQuota{64'000, {}, {}});
  q.quotas.push_back(fq);
  if (auto r = engine.apply_queue(q); !r) return std::fprintf(stderr, "%s\n", r.error().c_str()), 1;
  for (int k = 0; k < 2; ++k) {
    NodeSpec node;
    node.name = "n" + std::to_string(k);
    node.flavor = "h100";
    node.capacity[kGpu] = 8000;
    node.capacity[kCpu] = 128'000;
    if (auto r = engine.upsert_node(node, 0); !r) return std::fprintf(stderr, "%s\n", r.error().c_str()), 1;
  }
  long before = in_use();
  engine.reserve_jobs(static_cast<std::size_t>(jobs));
  const long slots = in_use() - before;
  before = in_use();
  for (const storage::JobRecord& r : loaded)
    if (auto s = engine.submit(r.spec, 0); !s) return std::fprintf(stderr, "%s\n", s.error().c_str()), 1;
  (void)engine.take_events();
  const long engine_jobs = in_use() - before;
  {  // the specs' own heap (pod sets, strings past the small-string buffer), measured apart
    before = in_use();
    std::vector<JobSpec> specs;
    specs.reserve(static_cast<std::size_t>(jobs));
    const long vec = in_use() - before;
    for (const storage::JobRecord& r : loaded) specs.push_back(r.spec);
    const double heap = static_cast<double>(in_use() - before - vec) / n;
    rows.push_back({"engine: Job slots", static_cast<double>(slots) / n,
                    "scheduler/engine.hpp Job (sizeof), the jobs_ vector reserved at start"});
    rows.push_back({"engine: the spec's heap", heap, "JobSpec's pod sets and long strings"});
    rows.push_back({"engine: indexes", static_cast<double>(engine_jobs) / n - heap,
                    "the queue's order and by request (a set node each), counts"});
  }
  // The engine's first cycle (waits recorded, nothing more admitted than fits).
  before = in_use();
  (void)engine.schedule(0);
  (void)engine.take_events();
  rows.push_back({"engine: after a cycle", static_cast<double>(in_use() - before) / n,
                  "what the first schedule() adds"});

  // The Core's pending records at rest (daemon/core.hpp packed_: storage::pack_job's string by id).
  {
    ResourceNames names;
    before = in_use();
    daemon::PackedJobs packed;
    packed.reserve(static_cast<std::size_t>(jobs));
    const long table = in_use() - before;
    long text = 0;
    for (const storage::JobRecord& r : loaded) {
      const std::string p = storage::pack_job(r, names);
      text += static_cast<long>(p.size());
      packed.put(r.spec.id.value, p);
    }
    const long all = in_use() - before;
    rows.push_back({"Core: the packed record", static_cast<double>(all - table) / n,
                    "storage::pack_job's text and the id, one allocation (daemon/packed_jobs.hpp)"});
    rows.push_back({"Core: the table", static_cast<double>(table) / n,
                    "an open-addressing set of pointers by id, reserved at start"});
    std::printf("packed record: %.0f bytes of text on average\n", static_cast<double>(text) / n);
  }
  std::printf("a whole JobRecord, as a job the turn touches holds it: %zu bytes and its heap\n",
              sizeof(storage::JobRecord));

  // The start-time estimates (daemon/estimates.hpp): a slot's order and start, by engine slot.
  before = in_use();
  {
    std::vector<daemon::Estimates::Slot> by_slot(engine.job_slots());
    rows.push_back({"estimates", static_cast<double>(in_use() - before) / n,
                    "daemon/estimates.hpp: each pending job's last estimate, by its engine slot"});
  }

  double total = 0;
  std::printf("%ld pending jobs; sizeof: Job %zu, JobSpec %zu, PodSet %zu, WaitReason %zu, JobRecord %zu\n",
              jobs, sizeof(Job), sizeof(JobSpec), sizeof(PodSet), sizeof(WaitReason), sizeof(storage::JobRecord));
  std::printf("| part | bytes per job | what |\n|---|---|---|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %.0f | %s |\n", r.part, r.bytes, r.what);
    total += r.bytes;
  }
  std::printf("| total | %.0f | |\n", total);
  return 0;
}
