// Migrating from Kueue with the real gpuq binary against real gpuqds: `gpuq apply -f` of the Kueue
// documentation's examples (tests/spec/kueue/), `gpuq queues export --format kueue`, and that
// export applied to a second, fresh gpuqd gives the same `gpuq queues -o json`.
#include <fstream>
#include <string>

#include "tests/integration/cli_as.hpp"
#include "tests/integration/cli_run.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;

namespace kueue_migration_test {

std::string example(const std::string& name) { return std::string(GPUQ_KUEUE_EXAMPLES) + "/" + name; }

// The binary through the daemon's socket; stdout to `out`, stderr to `err` (files).
int gpuq_bin(const Daemon& d, const std::string& args, const fs::path& out, const fs::path& err) {
  return shell("( " + std::string(GPUQ_CLI_PATH) + " --server unix:" + d.socket() + " " + args + " > " +
               out.string() + " 2> " + err.string() + " )")
      .rc;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("kueue migration: apply the docs' examples, export them, apply the export to a fresh gpuqd") {
  TempDir dir;
  fs::create_directories(dir.path / "a");
  fs::create_directories(dir.path / "b");
  Daemon first(dir.path / "a", false);
  const fs::path out = dir.path / "out", err = dir.path / "err";

  // A dry run prints the queues as gpuqd's API would get them, and applies nothing.
  REQUIRE(gpuq_bin(first, "apply --dry-run -f " + example("cohort-borrowing.yaml"), out, err) == 0);
  CHECK_MESSAGE(read(out).find("# queue/team-a-cq (dry run: not applied)\n") == 0, read(out));
  REQUIRE(gpuq_bin(first, "queues -o json", out, err) == 0);
  CHECK(parse_json(read(out)).at("queues").as_array().empty());

  for (const char* f : {"single-clusterqueue-setup.yaml", "cohort-borrowing.yaml", "resource-groups.yaml",
                        "preemption.yaml"}) {
    INFO(f);
    REQUIRE_MESSAGE(gpuq_bin(first, std::string("apply -f ") + example(f), out, err) == 0, read(err));
  }
  CHECK(read(out).find("queue/team-a-cq applied\n") == 0);  // preemption.yaml's
  const std::string warned = read(err);
  CHECK_MESSAGE(warned.find("gpuq: warning: " + example("preemption.yaml") +
                            ":11:5: ClusterQueue team-a-cq: spec.namespaceSelector is ignored: gpuq "
                            "queues are not bound to namespaces\n") != std::string::npos,
                warned);

  REQUIRE(gpuq_bin(first, "queues -o json", out, err) == 0);
  const std::string before = read(out);
  const auto queues = parse_json(before).at("queues").as_array();
  REQUIRE(queues.size() == 3);  // cluster-queue, team-a-cq, team-b-cq
  CHECK(str(queues[1].at("spec").at("name")) == "team-a-cq");
  CHECK(str(queues[1].at("spec").at("cohort")) == "team-ab");
  CHECK(str(queues[1].at("spec").at("queueing_strategy")) == "StrictFIFO");

  const fs::path exported = dir.path / "export.yaml";
  REQUIRE_MESSAGE(gpuq_bin(first, "queues export --format kueue", exported, err) == 0, read(err));
  CHECK_MESSAGE(read(err).empty(), read(err));
  CHECK(read(exported).find("kind: ClusterQueue") != std::string::npos);

  Daemon second(dir.path / "b", false);
  REQUIRE_MESSAGE(gpuq_bin(second, "apply -f " + exported.string(), out, err) == 0, read(err));
  REQUIRE(gpuq_bin(second, "queues -o json", out, err) == 0);
  // As JSON values: the order of a map's keys in protobuf's JSON is not fixed.
  CHECK(parse_json(read(out)) == parse_json(before));

  // gpuq's own documents and Kubernetes objects are not mixed in one file.
  const fs::path mixed = dir.path / "mixed.yaml";
  std::ofstream(mixed) << read(exported) << "---\nkind: Queue\nname: q\n";
  CHECK(gpuq_bin(second, "apply -f " + mixed.string(), out, err) == 2);
  CHECK_MESSAGE(read(err).find("a gpuq document (queues:, nodes: or kind: Queue|Node) in a file of "
                               "Kubernetes objects") != std::string::npos,
                read(err));
}

}  // namespace kueue_migration_test
