// The audit log through a real gpuqd and the real CLI (docs/tasks/tenants-and-security.md, Audit): every call that
// changes or tries to change the state is recorded with who, from where, what and the result;
// only admins read it; `--user` and `--since` filter it. As root, with `nobody` through setpriv.
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "cli/requests.hpp"
#include "tests/integration/cli_as.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;
namespace json = boost::json;

namespace {

// `gpuq admin audit -o json ARGS` as root: the entries, newest first.
json::array audit_entries(const Daemon& d, std::vector<std::string> args = {}) {
  args.insert(args.begin(), {"admin", "audit", "-o", "json"});
  const CliRun r = gpuq_me(d, args);
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const json::value v = json::parse(r.out);
  return v.as_object().at("entries").as_array();
}

bool has(const json::array& entries, const std::string& user, const std::string& action, const std::string& target,
         const std::string& result_prefix) {
  for (const auto& e : entries) {
    const auto& o = e.as_object();
    if (o.at("user").as_string() == user && o.at("action").as_string() == action &&
        o.at("target").as_string() == target && std::string(o.at("result").as_string()).rfind(result_prefix, 0) == 0)
      return true;
  }
  return false;
}

}  // namespace

TEST_CASE("audit: changes and refusals are recorded with who, what and the result; only admins read them") {
  TempDir dir;
  ::chmod(dir.path.c_str(), 0755);
  Daemon d(dir.path);
  CliRun r = gpuq_me(d, {"submit", "--queue", "research", "--gpus", "1", "--", "true"});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string mine = submitted_job(r);
  REQUIRE(gpuq_me(d, {"nodes", "cordon", "n0"}).rc == 0);
  REQUIRE(gpuq_me(d, {"queues", "delete", "no-such-queue"}).rc != 0);
  REQUIRE(gpuq_me(d, {"admin", "backup", (dir.path / "copy.db").string()}).rc == 0);
  const std::string me = gpuq::cli::current_user();

  json::array all = audit_entries(d);
  CHECK(has(all, me, "submit", mine, "OK"));
  CHECK(has(all, me, "node.cordon", "n0", "OK"));
  CHECK(has(all, me, "queue.delete", "no-such-queue", "NOT_FOUND: queue \"no-such-queue\" does not exist"));
  CHECK(has(all, me, "backup.start", "", "OK"));
  REQUIRE(all.size() >= 4);
  // Newest first, with where each call came from.
  CHECK(all[0].as_object().at("action").as_string() == "backup.start");
  CHECK(std::string(all[0].as_object().at("origin").as_string()).rfind("unix:uid=", 0) == 0);
  CHECK(audit_entries(d, {"--limit", "1"}).size() == 1);
  CHECK(audit_entries(d, {"--since", "-1h"}).size() == all.size());
  CHECK(audit_entries(d, {"--since", std::to_string(std::time(nullptr) + 3600)}).empty());
  // The table shows the same.
  r = gpuq_me(d, {"admin", "audit", "-o", "wide"});
  CHECK_MESSAGE(r.out.find("node.cordon") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("ORIGIN") != std::string::npos, r.out);

  if (::geteuid() != 0) {
    MESSAGE("not root: the calls as nobody (setpriv) are skipped; CI runs as root");
    return;
  }
  const std::string nobody = setpriv_as("nobody", "nogroup");
  r = gpuq_as(d, nobody, "submit --queue research --gpus 1 -- true", 0, "/tmp");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string theirs = submitted_job(r);
  CHECK(gpuq_as(d, nobody, "cancel " + mine).rc != 0);
  CHECK(gpuq_as(d, nobody, "nodes uncordon n0").rc != 0);
  r = gpuq_as(d, nobody, "admin audit");
  CHECK(r.rc != 0);
  CHECK_MESSAGE(r.out.find("user nobody may not read the audit log: only gpuqd's admins may") != std::string::npos,
                r.out);

  json::array theirs_only = audit_entries(d, {"--user", "nobody"});
  CHECK(has(theirs_only, "nobody", "submit", theirs, "OK"));
  CHECK(has(theirs_only, "nobody", "cancel", mine, "PERMISSION_DENIED: user nobody may not cancel job " + mine));
  CHECK(has(theirs_only, "nobody", "node.uncordon", "n0", "PERMISSION_DENIED: user nobody may not uncordon node n0"));
  for (const auto& e : theirs_only) CHECK(e.as_object().at("user").as_string() == "nobody");
}
