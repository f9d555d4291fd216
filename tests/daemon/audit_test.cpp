// gpuqd's Core and the audit log (docs/tasks/tenants-and-security.md, Audit): a record is written with its turn's
// changes, long fields are cut at a character boundary, and records older than auditRetention
// are deleted (checked at most once an hour). Time is the test's (Core's `now`).
#include <doctest/doctest.h>

#include "daemon/core.hpp"
#include "tests/daemon/core_fixture.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/files.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace daemon_audit_test {

using namespace gpuq;
using namespace gpuq::daemon;
using namespace gpuq::test;

namespace {

constexpr Time kT0 = 1'700'000'000;

CoreConfig audit_config(const std::string& file, Time retention) {
  CoreConfig c = one_node_core(file);
  c.audit_retention = retention;
  return c;
}

std::unique_ptr<Core> open_audit_core(const CoreConfig& c, Time now) { return open_core(c, now); }

storage::AuditRecord call(const std::string& user, const std::string& action, const std::string& target) {
  return storage::AuditRecord{0, 0, user, "unix:uid=1000,pid=1", action, target, "OK"};
}

std::vector<std::string> targets(Core& core) {
  auto page = core.store().audit({});
  REQUIRE(page.ok());
  std::vector<std::string> out;
  for (const auto& a : *page) out.push_back(a.target);
  return out;
}

}  // namespace

TEST_CASE("audit: a record goes to disk with its turn, stamped with the turn's time") {
  TempDir dir;
  auto core = open_audit_core(audit_config((dir.path / "s.db").string(), 86400), kT0);
  Submission s;
  s.job = job("j1", "a", res(gpus(1)));
  REQUIRE(core->submit(std::move(s), kT0 + 5).ok());
  core->audit(call("alice", "submit", "j1"), kT0 + 5);
  CHECK(targets(*core).empty());  // not before its turn is written
  REQUIRE(core->end_turn(kT0 + 5).ok);
  auto page = core->store().audit({});
  REQUIRE(page.ok());
  REQUIRE(page->size() == 1);
  CHECK((*page)[0].at == kT0 + 5);
  CHECK((*page)[0].user == "alice");
  auto stored = core->store().job("j1");
  REQUIRE(stored.ok());
  CHECK(stored.value().has_value());  // the change and its record, together
}

TEST_CASE("audit: long fields are cut whole characters at a time") {
  TempDir dir;
  auto core = open_audit_core(audit_config((dir.path / "s.db").string(), 86400), kT0);
  storage::AuditRecord r = call("bob", "submit", std::string(300, 'x'));
  r.result = "INVALID_ARGUMENT: " + std::string(2000, 'a');
  std::string accents;
  for (int i = 0; i < 600; ++i) accents += "\xc3\xa9";  // é, two bytes each
  r.target = accents;
  core->audit(r, kT0);
  REQUIRE(core->end_turn(kT0).ok);
  auto page = core->store().audit({});
  REQUIRE(page.ok());
  REQUIRE(page->size() == 1);
  const std::string& t = (*page)[0].target;
  CHECK(t.size() <= 256);
  CHECK(t.size() % 2 == 1);  // é... then "...": never half an é
  CHECK(t.substr(t.size() - 3) == "...");
  CHECK((*page)[0].result.size() <= 1024);
}

TEST_CASE("audit retention: records older than it go, at most once an hour; newer ones stay") {
  TempDir dir;
  const Time day = 86400;
  auto core = open_audit_core(audit_config((dir.path / "s.db").string(), day), kT0);
  core->audit(call("alice", "cancel", "old"), kT0);
  REQUIRE(core->end_turn(kT0).ok);
  core->audit(call("alice", "cancel", "newer"), kT0 + day / 2);
  REQUIRE(core->end_turn(kT0 + day / 2).ok);
  CHECK(targets(*core) == std::vector<std::string>{"newer", "old"});
  REQUIRE(core->end_turn(kT0 + day + 10).ok);  // "old" is past the retention now
  CHECK(targets(*core) == std::vector<std::string>{"newer"});
  REQUIRE(core->end_turn(kT0 + 2 * day).ok);  // "newer" too
  CHECK(targets(*core).empty());
}

TEST_CASE("audit: a user's refusals are recorded at most 60 a minute, then say how many were left out") {
  TempDir dir;
  auto core = open_audit_core(audit_config((dir.path / "s.db").string(), 86400), kT0);
  auto refused = [](const std::string& user, int i) {
    storage::AuditRecord r = call(user, "cancel", "j" + std::to_string(i));
    r.result = "NOT_FOUND: job does not exist";
    return r;
  };
  for (int i = 0; i < 70; ++i) core->audit(refused("mallory", i), kT0);
  core->audit(refused("alice", 0), kT0);          // another user's are their own
  core->audit(call("mallory", "submit", "ok"), kT0);  // changes are always recorded
  REQUIRE(core->end_turn(kT0).ok);
  auto page = core->store().audit({"mallory", 0, 0, 1000});
  REQUIRE(page.ok());
  CHECK(page->size() == 61);  // 60 refusals and the submit
  CHECK(core->store().audit({"alice", 0, 0, 1000})->size() == 1);
  // A minute later the bucket is full again; the first refusal recorded says what was left out.
  core->audit(refused("mallory", 100), kT0 + 60);
  REQUIRE(core->end_turn(kT0 + 60).ok);
  page = core->store().audit({"mallory", 0, 0, 1});
  REQUIRE(page.ok());
  REQUIRE(page->size() == 1);
  CHECK(page->front().target == "j100");
  CHECK(page->front().result ==
        "NOT_FOUND: job does not exist (and 10 earlier refusals of mallory not recorded: over 60 a minute)");
}

}  // namespace daemon_audit_test
