// `gpuq usage` against a real gpuqd (none binder: admitted jobs run at once, victims stop at
// once): a preempted and requeued job's two admissions, outcomes, costs from the config's
// prices, every output format, pages, a restart on the same state file, anonymous callers.
// The expected GPU time is computed from the events gpuqd wrote into its state file.
#include <sqlite3.h>

#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cli_run.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;
namespace json = boost::json;

namespace {

struct Change {
  std::int64_t at = 0;
  int from = -1;  // -1: the submission
  int to = 0;     // storage codes: 0 Pending, 1 Admitted, 2 Running, 3 Preempting, 4.. finished
};

// A job's events as gpuqd stored them, read through a connection of the test's own.
std::vector<Change> changes_of(const fs::path& state, const std::string& job) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(state.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(
              db, "SELECT at, from_state, to_state FROM events WHERE job = ?1 ORDER BY seq", -1, &s,
              nullptr) == SQLITE_OK);
  sqlite3_bind_text(s, 1, job.c_str(), -1, SQLITE_TRANSIENT);
  std::vector<Change> out;
  while (sqlite3_step(s) == SQLITE_ROW)
    out.push_back({sqlite3_column_int64(s, 0),
                   sqlite3_column_type(s, 1) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 1),
                   sqlite3_column_int(s, 2)});
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

// Milli-GPU-seconds held before `until` (and of it, lost: attempts that went Preempting ->
// Pending), from the events alone: the test's own reading of what usage must say.
std::pair<std::int64_t, std::int64_t> held_from_events(const std::vector<Change>& events,
                                                       std::int64_t milli, std::int64_t until) {
  std::int64_t held = 0, lost = 0, start = -1;
  for (const Change& c : events) {
    const bool holds = c.to >= 1 && c.to <= 3;
    if (holds && start < 0) start = c.at;
    if (!holds && start >= 0) {
      held += (c.at - start) * milli;
      if (c.from == 3 && c.to == 0) lost += (c.at - start) * milli;
      start = -1;
    }
  }
  if (start >= 0) held += (until - start) * milli;
  return {held, lost};
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void sleep_past_a_second() { std::this_thread::sleep_for(std::chrono::milliseconds(1100)); }

const json::value& row_with(const json::value& usage, const std::string& key) {
  for (const auto& row : usage.at("rows").as_array())
    if (str(row.at("key")) == key) return row;
  FAIL("no row " << key << " in " << json::serialize(usage));
  throw std::logic_error("unreachable");
}

std::int64_t int_of(const json::value& v) {
  return std::stoll(str(v));
}  // int64 is a string in JSON

Run run_at(const std::string& server, std::vector<std::string> args) {
  args.insert(args.begin(), {"--server", server});
  std::ostringstream out, err;
  Run r;
  r.rc = gpuq::cli::run_cli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

const std::string kPricedConfig = std::string(kConfig) + "prices: {h100: 2.5}\ncurrency: USD\n";

}  // namespace

TEST_CASE(
    "usage: a preempted job's two admissions from the events, outcomes, costs; every format; the "
    "same after a restart") {
  TempDir dir;
  const fs::path state = dir.path / "state.db";
  std::string by_job_json, by_queue_json, by_queue_table;
  std::int64_t until = 0;
  {
    Daemon d(dir.path, true, kPricedConfig);
    for (std::vector<std::string> args :
         {std::vector<std::string>{"--id", "m1", "-q", "research", "--gpus", "2"},
          std::vector<std::string>{"--id", "m2", "-q", "prod", "--gpus", "2"},
          std::vector<std::string>{"--id", "m3", "-q", "research", "--gpus", "8"}}) {
      args.insert(args.begin(), "submit");
      args.insert(args.end(), {"--", "true"});
      REQUIRE(gpuq_cmd(d, args).rc == 0);
    }
    sleep_past_a_second();  // m3 holds its GPUs for at least a second before it is preempted
    // research holds 10 (2 borrowed from prod's idle 6); hi takes m3's place, which waits again.
    REQUIRE(gpuq_cmd(d, {"submit", "--id", "hi", "-q", "research", "--gpus", "8", "--priority",
                         "10", "--", "true"})
                .rc == 0);
    sleep_past_a_second();
    REQUIRE(gpuq_cmd(d, {"cancel", "hi"}).rc == 0);  // m3 runs again
    sleep_past_a_second();
    REQUIRE(gpuq_cmd(d, {"cancel", "m1"}).rc == 0);
    sleep_past_a_second();
    until = unix_now();  // every event above is before it

    const std::string U = std::to_string(until);
    Run r = gpuq_cmd(d, {"usage", "--by", "job", "--since", "0", "--until", U, "-o", "json"});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    by_job_json = r.out;
    const json::value jobs = parse_json(r.out);
    CHECK(str(jobs.at("by")) == "USAGE_BY_JOB");
    CHECK(str(jobs.at("currency")) == "USD");
    CHECK(str(jobs.at("until")) == U);
    CHECK(jobs.at("rows").as_array().size() == 4);
    const auto [m3_held, m3_lost] = held_from_events(changes_of(state, "m3"), 8000, until);
    REQUIRE(m3_lost >= 8000);  // it ran a second or more before it was preempted
    const json::value& m3 = row_with(jobs, "m3");
    CHECK(int_of(m3.at("gpu_milli_seconds")) == m3_held);
    CHECK(int_of(m3.at("lost_gpu_milli_seconds")) == m3_lost);
    CHECK(m3_held > m3_lost);  // and again after
    CHECK(str(m3.at("state")) == "JOB_STATE_RUNNING");
    CHECK(str(m3.at("queue")) == "research");
    CHECK(str(m3.at("flavor")) == "h100");
    CHECK(int_of(m3.at("unfinished")) == 1);
    CHECK(m3.at("cost").as_double() == doctest::Approx(m3.at("gpu_hours").as_double() * 2.5));
    for (const char* id : {"m1", "hi", "m2"}) {
      const json::value& row = row_with(jobs, id);
      const auto [held, lost] =
          held_from_events(changes_of(state, id), id == std::string("hi") ? 8000 : 2000, until);
      CHECK_MESSAGE(int_of(row.at("gpu_milli_seconds")) == held, id);
      CHECK(lost == 0);
      CHECK(int_of(row.at("lost_gpu_milli_seconds")) == 0);
      CHECK(int_of(row.at("cancelled")) == (id == std::string("m2") ? 0 : 1));
    }

    r = gpuq_cmd(d,
                 {"usage", "--since", "0", "--until", U, "-o", "json"});  // by queue, the default
    REQUIRE(r.rc == 0);
    by_queue_json = r.out;
    const json::value queues = parse_json(r.out);
    REQUIRE(queues.at("rows").as_array().size() == 2);
    const json::value& research = row_with(queues, "research");
    std::int64_t research_held = 0;
    for (const char* id : {"m1", "m3", "hi"})
      research_held += int_of(row_with(jobs, id).at("gpu_milli_seconds"));
    CHECK(int_of(research.at("gpu_milli_seconds")) == research_held);
    CHECK(int_of(research.at("lost_gpu_milli_seconds")) == m3_lost);
    CHECK(int_of(research.at("cancelled")) == 2);
    CHECK(int_of(research.at("unfinished")) == 1);
    CHECK(int_of(research.at("waited")) == 3);
    CHECK(research.as_object().contains("wait_p90_seconds"));
    CHECK(int_of(row_with(queues, "prod").at("unfinished")) == 1);

    // The table: 80 columns, counts as succeeded/failed/cancelled/unfinished, the cost column in
    // the config's currency, a total.
    r = gpuq_cmd(d, {"usage", "--since", "0", "--until", U});
    REQUIRE(r.rc == 0);
    by_queue_table = r.out;
    const auto lines = lines_of(r.out);
    REQUIRE(lines.size() == 5);
    CHECK(lines[1].find("QUEUE") == 0);
    CHECK(lines[1].find("GPU-HOURS  LOST  JOBS S/F/C/U  WAIT P50/P90  COST(USD)") !=
          std::string::npos);
    CHECK(row_of(r.out, "research").find(" 0/0/2/1 ") != std::string::npos);
    CHECK(row_of(r.out, "prod").find(" 0/0/0/1 ") != std::string::npos);
    CHECK(row_of(r.out, "TOTAL").find(" 0/0/2/2 ") != std::string::npos);
    for (const auto& l : lines) CHECK(l.size() <= 80);
    r = gpuq_cmd(d, {"usage", "--since", "0", "--until", U, "-o", "wide"});
    CHECK(lines_of(r.out).at(1).find(
              "SUCCEEDED  FAILED  CANCELLED  UNFINISHED  WAITED  WAIT-P50  WAIT-P90") !=
          std::string::npos);

    // CSV: a header row, one row per queue, the cost with its currency.
    r = gpuq_cmd(d, {"usage", "--since", "0", "--until", U, "-o", "csv"});
    REQUIRE(r.rc == 0);
    const auto csv = lines_of(r.out);
    REQUIRE(csv.size() == 3);
    CHECK(csv[0] ==
          "queue,gpu_hours,gpu_hours_lost,succeeded,failed,cancelled,unfinished,waited,wait_p50_"
          "seconds,"
          "wait_p90_seconds,cost,currency,gpu_util_percent");
    CHECK(csv[1].rfind("prod,", 0) == 0);
    CHECK(csv[2].rfind("research,", 0) == 0);
    CHECK(csv[2].find(",0,0,2,1,3,") != std::string::npos);
    CHECK(csv[2].substr(csv[2].size() - 5) == ",USD,");  // never sampled: no gpu_util_percent

    // One row a page: gpuq follows every page to the same answer.
    r = gpuq_cmd(d, {"usage", "--by", "job", "--since", "0", "--until", U, "-o", "json",
                     "--page-size", "1"});
    REQUIRE(r.rc == 0);
    CHECK(r.out == by_job_json);

    // By user: everything is this process's user's (root through the socket).
    r = gpuq_cmd(d, {"usage", "--by", "user", "--since", "0", "--until", U, "-o", "json"});
    REQUIRE(r.rc == 0);
    const json::value users = parse_json(r.out);
    REQUIRE(users.at("rows").as_array().size() == 1);
    CHECK(int_of(users.at("rows").at(0).at("cancelled")) == 2);

    // An anonymous TCP caller sees the queue totals (queue summaries), not users' or jobs' rows.
    r = run_at(d.tcp(), {"usage", "--since", "0", "--until", U, "-o", "json"});
    CHECK_MESSAGE(r.rc == 0, r.err);
    CHECK(r.out == by_queue_json);
    r = run_at(d.tcp(), {"usage", "--by", "job"});
    CHECK(r.rc == 1);
    CHECK_MESSAGE(r.err.find("to see the usage of users or jobs, use gpuqd's Unix socket") !=
                      std::string::npos,
                  r.err);
    CHECK(r.err.find("(UNAUTHENTICATED)") != std::string::npos);
  }
  // gpuqd stops and starts again on the same state file: everything comes from it.
  Daemon d(dir.path, true, kPricedConfig);
  const std::string U = std::to_string(until);
  Run r = gpuq_cmd(d, {"usage", "--by", "job", "--since", "0", "--until", U, "-o", "json"});
  REQUIRE(r.rc == 0);
  CHECK(r.out == by_job_json);
  CHECK(gpuq_cmd(d, {"usage", "--since", "0", "--until", U, "-o", "json"}).out == by_queue_json);
  CHECK(gpuq_cmd(d, {"usage", "--since", "0", "--until", U}).out == by_queue_table);
}

TEST_CASE(
    "usage without prices shows no cost; --from/--to still work; a period in the past is empty") {
  TempDir dir;
  Daemon d(dir.path);
  REQUIRE(gpuq_cmd(d, {"submit", "-q", "research", "--gpus", "1", "--", "true"}).rc == 0);
  Run r = gpuq_cmd(d, {"usage", "--from", "100", "--to", "2024-01-01", "-o", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json::value v = parse_json(r.out);
  CHECK(str(v.at("since")) == "100");
  CHECK(str(v.at("until")) == "1704067200");
  CHECK(v.at("rows").as_array().empty());
  CHECK(str(v.at("currency")).empty());
  r = gpuq_cmd(d, {"usage", "--since", "1h", "-o", "json"});
  REQUIRE(r.rc == 0);
  const json::value now = parse_json(r.out);
  REQUIRE(now.at("rows").as_array().size() == 1);
  CHECK_FALSE(now.at("rows").at(0).as_object().contains("cost"));
  r = gpuq_cmd(d, {"usage", "--since", "1h"});
  CHECK(lines_of(r.out).at(1).find("COST") == std::string::npos);
  // The period must start before it ends; gpuqd says so too when now is before --since.
  r = gpuq_cmd(d, {"usage", "--since", std::to_string(unix_now() + 86400)});
  CHECK(r.rc == 2);
  CHECK(r.err.find("is after --until (now)") != std::string::npos);
}
