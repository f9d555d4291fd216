// `gpuq apply -f` of Kueue's objects without a server: what parse_apply_file makes of them, the
// warnings, the refusal of a mixed file, and --dry-run (which sends nothing).
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "cli/cli.hpp"
#include "cli/requests.hpp"
#include "spec/error.hpp"

namespace kueue_apply_test {

std::string example(const std::string& name) { return std::string(GPUQ_KUEUE_EXAMPLES) + "/" + name; }

TEST_CASE("apply -f: Kueue objects become queue requests, with the warnings") {
  const std::string text =
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n"
      "  namespaceSelector: {matchLabels: {team: a}}\n  cohort: c\n  resourceGroups:\n"
      "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: h100\n      resources:\n"
      "      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 2}\n";
  std::vector<std::string> warnings;
  const auto items = gpuq::cli::parse_apply_file(text, "k.yaml", &warnings);
  REQUIRE(items.size() == 1);
  REQUIRE(items[0].queue);
  CHECK(items[0].queue->name() == "q");
  CHECK(items[0].queue->cohort() == "c");
  REQUIRE(items[0].queue->quotas_size() == 1);
  CHECK(items[0].queue->quotas(0).flavor() == "h100");
  CHECK(warnings == std::vector<std::string>{"k.yaml:5:22: ClusterQueue q: spec.namespaceSelector is "
                                             "ignored: gpuq queues are not bound to namespaces"});

  try {
    (void)gpuq::cli::parse_apply_file(text + "---\nqueues: [{name: x}]\n", "k.yaml", &warnings);
    FAIL("accepted");
  } catch (const gpuq::spec::SpecError& e) {
    CHECK(std::string(e.what()) ==
          "k.yaml:14:1: a gpuq document (queues:, nodes: or kind: Queue|Node) in a file of Kubernetes "
          "objects (apiVersion:); apply the two from separate files");
  }
}

TEST_CASE("apply --dry-run prints the queues and warnings and sends nothing") {
  std::ostringstream out, err;
  // No gpuqd listens there: a dry run never calls it.
  const int rc = gpuq::cli::run_cli({"--server", "unix:/nonexistent/gpuqd.sock", "apply", "--dry-run", "-f",
                                     example("single-clusterqueue-setup.yaml")},
                                    out, err);
  INFO(err.str());
  CHECK(rc == 0);
  CHECK(out.str().find("# queue/cluster-queue (dry run: not applied)\n") == 0);
  CHECK(out.str().find("default-flavor") != std::string::npos);
  CHECK(err.str().find("LocalQueue default/user-queue is ignored") != std::string::npos);
}

TEST_CASE("apply --dry-run -o objects: Kueue's objects become gpuq's Queue objects, which apply -f reads back") {
  std::ostringstream out, err;
  const int rc = gpuq::cli::run_cli({"--server", "unix:/nonexistent/gpuqd.sock", "apply", "--dry-run", "-o", "objects",
                                     "-f", example("single-clusterqueue-setup.yaml")},
                                    out, err);
  INFO(err.str());
  CHECK(rc == 0);
  CHECK(out.str().find("apiVersion: gpuq.io/v1alpha1\nkind: Queue\nmetadata:\n  name: \"cluster-queue\"\n") == 0);
  CHECK(out.str().find("flavor: \"default-flavor\"") != std::string::npos);
  // What it wrote is a file gpuq apply (and kubectl) takes: the same queue request.
  std::vector<std::string> warnings;
  const auto items = gpuq::cli::parse_apply_file(out.str(), "objects.yaml", &warnings);
  REQUIRE(items.size() == 1);
  REQUIRE(items[0].queue);
  CHECK(items[0].queue->name() == "cluster-queue");
  CHECK(warnings.empty());
  // Without --dry-run it refuses: it applies nothing.
  std::ostringstream out2, err2;
  CHECK(gpuq::cli::run_cli({"--server", "unix:/nonexistent/gpuqd.sock", "apply", "-o", "objects", "-f",
                            example("single-clusterqueue-setup.yaml")},
                           out2, err2) == 2);
  CHECK(err2.str().find("add --dry-run") != std::string::npos);
}

}  // namespace kueue_apply_test
