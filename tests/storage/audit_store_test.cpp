// The audit log table (schema 4): records appended with a batch and in its transaction, read back
// newest first with filters and paging, pruned by age.
#include "tests/storage/store_fixtures.hpp"

using namespace gpuq;
using namespace gpuq::storage;
using namespace gpuq::storage::test;

namespace {

AuditRecord record(Time at, const std::string& user, const std::string& action, const std::string& target,
                   const std::string& result = "OK") {
  return AuditRecord{0, at, user, "unix:uid=1000,pid=7", action, target, result};
}

std::vector<std::string> targets(const std::vector<AuditRecord>& page) {
  std::vector<std::string> out;
  for (const AuditRecord& a : page) out.push_back(a.target);
  return out;
}

}  // namespace

TEST_CASE("audit records: appended in order, read newest first, by user, since a time, a page at a time") {
  TempDir dir;
  ResourceNames names;
  auto store = open_ok(dir.file("s.db"), names);
  Batch b;
  b.audit = {record(100, "alice", "submit", "j1"), record(100, "bob", "cancel", "j1",
                                                            "PERMISSION_DENIED: user bob may not cancel job j1"),
             record(150, "alice", "queue.apply", "vision")};
  REQUIRE(store->commit(b).ok());
  Batch c;
  c.audit = {record(200, "", "submit", "", "UNAUTHENTICATED: gpuqd does not know who calls")};
  REQUIRE(store->commit(c).ok());

  auto all = store->audit({});
  REQUIRE(all.ok());
  REQUIRE(all->size() == 4);
  CHECK(targets(*all) == std::vector<std::string>{"", "vision", "j1", "j1"});
  CHECK((*all)[0].seq > (*all)[1].seq);
  CHECK((*all)[2].user == "bob");
  CHECK((*all)[2].result == "PERMISSION_DENIED: user bob may not cancel job j1");
  CHECK((*all)[2].origin == "unix:uid=1000,pid=7");
  CHECK((*all)[3].action == "submit");

  auto alices = store->audit({"alice", 0, 0, 100});
  REQUIRE(alices.ok());
  CHECK(targets(*alices) == std::vector<std::string>{"vision", "j1"});
  auto recent = store->audit({"", 150, 0, 100});
  REQUIRE(recent.ok());
  CHECK(recent->size() == 2);
  auto first_page = store->audit({"", 0, 0, 2});
  REQUIRE(first_page.ok());
  REQUIRE(first_page->size() == 2);
  auto next_page = store->audit({"", 0, first_page->back().seq, 2});
  REQUIRE(next_page.ok());
  CHECK(targets(*next_page) == std::vector<std::string>{"j1", "j1"});
  CHECK((*next_page)[0].user == "bob");
}

TEST_CASE("audit retention: records older than the cut go in the batch's transaction; newer stay") {
  TempDir dir;
  ResourceNames names;
  auto store = open_ok(dir.file("s.db"), names);
  Batch b;
  b.audit = {record(100, "alice", "submit", "old"), record(300, "alice", "submit", "new")};
  REQUIRE(store->commit(b).ok());
  Batch prune;
  prune.audit_prune_before = 200;
  CHECK_FALSE(prune.empty());
  REQUIRE(store->commit(prune).ok());
  auto left = store->audit({});
  REQUIRE(left.ok());
  CHECK(targets(*left) == std::vector<std::string>{"new"});
}

TEST_CASE("a batch that fails writes none of its audit records") {
  TempDir dir;
  ResourceNames names;
  auto store = open_ok(dir.file("s.db"), names);
  Batch b;
  b.audit = {record(100, "alice", "submit", "j9")};
  JobRecord bad;  // number 0: refused, and the whole batch with it
  bad.spec.id = JobId("j9");
  b.jobs.push_back(bad);
  CHECK_FALSE(store->commit(b).ok());
  auto left = store->audit({});
  REQUIRE(left.ok());
  CHECK(left->empty());
}
