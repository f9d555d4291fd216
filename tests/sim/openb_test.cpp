// The openb trace readers (sim/openb.hpp): every refusal with its exact message (file:line:col,
// the column, the value, what is allowed), skipping bad rows, the CSV dialect (quotes, CRLF, BOM,
// blank lines), and the published Alibaba files themselves when they sit beside the checkout.
#include "sim/openb.hpp"
#include "tests/sim/trace_error.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using gpuq::sim::OpenbNode;
using gpuq::sim::OpenbPod;
using gpuq::sim::TraceError;
using gpuq::sim::TraceReadOptions;
using gpuq::sim::TraceReadReport;

const std::string kPodHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
const std::string kFullPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";
const std::string kNodeHeader = "sn,cpu_milli,memory_mib,gpu,model\n";

using gpuq::sim::testing::error_of;
std::string pod_error(const std::string& text) {
  return error_of([&] { return gpuq::sim::parse_openb_pods(text, "p.csv"); });
}
std::string node_error(const std::string& text) {
  return error_of([&] { return gpuq::sim::parse_openb_nodes(text, "n.csv"); });
}

struct Bad {
  std::string text;
  std::string message;
};

}  // namespace

TEST_CASE(
    "openb: every bad pod value is refused with file:line:column, column, value, what is allowed") {
  const std::vector<Bad> cases = {
      {kPodHeader + "a,1000,1024,1,abc\n",
       "p.csv:2:5: column \"gpu_milli\": \"abc\" is not a whole number (allowed: 0..1000 milli-GPU "
       "per GPU)"},
      {kPodHeader + "a,1.5,1024,0,0\n",
       "p.csv:2:2: column \"cpu_milli\": \"1.5\" is not a whole number (allowed: "
       "0..4503599627370496 millicores)"},
      {kPodHeader + "a,,1024,0,0\n",
       "p.csv:2:2: column \"cpu_milli\": \"\" is not a whole number (allowed: 0..4503599627370496 "
       "millicores)"},
      {kPodHeader + "a,-1,1024,0,0\n",
       "p.csv:2:2: column \"cpu_milli\": \"-1\" is negative (allowed: 0..4503599627370496 "
       "millicores)"},
      {kPodHeader + "a,1,4294967297,0,0\n",
       "p.csv:2:3: column \"memory_mib\": \"4294967297\" is too large (allowed: 0..4294967296 "
       "MiB)"},
      {kPodHeader + "a,1,99999999999999999999,0,0\n",
       "p.csv:2:3: column \"memory_mib\": \"99999999999999999999\" is too large (allowed: "
       "0..4294967296 MiB)"},
      {kPodHeader + "a,1,1,256,1000\n",
       "p.csv:2:4: column \"num_gpu\": \"256\" is too large (allowed: 0..255 GPUs)"},
      {kPodHeader + "a,1,1,1,0\n",
       "p.csv:2:5: column \"gpu_milli\": \"0\" with num_gpu 1 is outside 1..1000 (allowed: 1..1000 "
       "milli-GPU per GPU)"},
      {kPodHeader + "a,1,1,1,1001\n",
       "p.csv:2:5: column \"gpu_milli\": \"1001\" is too large (allowed: 0..1000 milli-GPU per "
       "GPU)"},
      {kPodHeader + "a,1,1,2,500\n",
       "p.csv:2:5: column \"gpu_milli\": \"500\" with num_gpu 2: a share of a GPU is only for "
       "one-GPU "
       "pods (allowed: 1000)"},
      {kPodHeader + "a,1,1,0,500\n",
       "p.csv:2:5: column \"gpu_milli\": \"500\" with num_gpu 0: a CPU-only pod takes no GPU "
       "(allowed: 0)"},
      {kPodHeader + "a,1,1,0\n",
       "p.csv:2:5: column \"gpu_milli\": missing: the row has 4 fields, the header 5"},
      {kPodHeader + "a,1,1,0,0,x\n",
       "p.csv:2:6: \"x\" is an extra field: the row has 6 fields, the header 5 (a comma inside a "
       "value "
       "needs double quotes around it)"},
      {kPodHeader + ",1,1,0,0\n",
       "p.csv:2:1: column \"name\": \"\" is empty (allowed: a name unique in the file)"},
      {kPodHeader + "a,1,1,0,0\nb,1,1,0,0\na,2,2,0,0\n",
       "p.csv:4:1: column \"name\": \"a\" is a duplicate (first on line 2)"},
      {kFullPodHeader + "a,1,1,1,1000,A||B,LS,Running,0,1,0\n",
       "p.csv:2:6: column \"gpu_spec\": \"A||B\" has an empty model name (allowed: models "
       "separated by "
       "'|', or \"nan\" or empty for any model)"},
      {kFullPodHeader + "a,1,1,1,1000,,LS,Running,0,12.0,0\n",
       "p.csv:2:10: column \"deletion_time\": \"12.0\" is not a whole number (allowed: "
       "0..4503599627370496 seconds)"},
      {kFullPodHeader + "a,1,1,1,1000,,LS,Running,-3,,\n",
       "p.csv:2:9: column \"creation_time\": \"-3\" is negative (allowed: 0..4503599627370496 "
       "seconds)"},
      {kPodHeader + "a,\"1,1,0,0\n",
       "p.csv:2:2: a quoted field has no closing quote on its line (\"\" stands for a quote inside "
       "one)"},
      {kPodHeader + "\"a\"x,1,1,0,0\n",
       "p.csv:2:1: text after a quoted field's closing quote (allowed: a comma or the line's end)"},
  };
  for (const Bad& c : cases) {
    CAPTURE(c.text);
    CHECK(pod_error(c.text) == c.message);
  }
}

TEST_CASE("openb: bad node values") {
  CHECK(node_error(kNodeHeader + "n1,1000,1024,256,A10\n") ==
        "n.csv:2:4: column \"gpu\": \"256\" is too large (allowed: 0..255 GPUs per node)");
  CHECK(node_error(kNodeHeader + "n1,1000,1024,x8,A10\n") ==
        "n.csv:2:4: column \"gpu\": \"x8\" is not a whole number (allowed: 0..255 GPUs per node)");
  CHECK(node_error(kNodeHeader + ",1000,1024,8,A10\n") ==
        "n.csv:2:1: column \"sn\": \"\" is empty (allowed: a name unique in the file)");
  CHECK(node_error(kNodeHeader + "n1,1,1,0,\nn2,1,1,0,\n\nn1,1,1,0,\n") ==
        "n.csv:5:1: column \"sn\": \"n1\" is a duplicate (first on line 2)");
  // A value too long to show whole is cut short.
  const std::string long_value(100, '7');
  CHECK(node_error(kNodeHeader + "n1," + long_value + ",1,0,\n") ==
        "n.csv:2:2: column \"cpu_milli\": \"" + std::string(60, '7') +
            "...\" is too large (allowed: 0..4503599627370496 millicores)");
}

TEST_CASE("openb: header problems name line 1 and are never skipped") {
  CHECK(pod_error("name,cpu_milli,memory_mib,num_gpu\na,1,1,0\n") ==
        "p.csv:1: column \"gpu_milli\" is missing (found: \"name\", \"cpu_milli\", \"memory_mib\", "
        "\"num_gpu\")");
  CHECK(node_error("") == "n.csv:1: column \"sn\" is missing (found: nothing)");
  CHECK(node_error("sn,cpu_milli,cpu_milli,memory_mib,gpu\n") ==
        "n.csv:1:3: column \"cpu_milli\" appears twice (first as column 2)");
  TraceReadReport report;
  CHECK_THROWS_AS(gpuq::sim::parse_openb_nodes("sn,cpu_milli,gpu\nn1,1,0\n", "n.csv",
                                               TraceReadOptions{.skip_bad_rows = true}, &report),
                  TraceError);
  // A column the reader does not use may repeat.
  CHECK(node_error("sn,cpu_milli,memory_mib,gpu,x,x\nn1,1,1,0,a,b\n") == "(accepted)");
}

TEST_CASE("openb: a good pod list, columns in any order, extra columns ignored") {
  const std::string text =
      "qos,gpu_milli,name,extra,num_gpu,memory_mib,cpu_milli,gpu_spec,creation_time,"
      "scheduled_time,deletion_time\n"
      "LS,460,p1,?,1,12288,6000,nan,427061,,12902960\n"
      "nan,1000,p2,?,8,327680,88000,V100M16|V100M32,5,nan,9\n"
      "BE,0,p3,?,0,1,4000,,,,\n";
  TraceReadReport report;
  const auto pods = gpuq::sim::parse_openb_pods(text, "p.csv", {}, &report);
  REQUIRE(pods.size() == 3);
  CHECK(report.rows == 3);
  CHECK(report.skipped == 0);
  const OpenbPod& p1 = pods[0];
  CHECK(p1.name == "p1");
  CHECK(p1.cpu_milli == 6000);
  CHECK(p1.memory_bytes == 12288LL << 20);
  CHECK(p1.num_gpu == 1);
  CHECK(p1.gpu_milli == 460);
  CHECK(p1.total_gpu_milli() == 460);
  CHECK(p1.gpu_models.empty());
  CHECK(p1.qos == "LS");
  CHECK(p1.creation_time == 427061);
  CHECK(p1.deletion_time == 12902960);
  CHECK_FALSE(p1.scheduled_time.has_value());
  const OpenbPod& p2 = pods[1];
  CHECK(p2.total_gpu_milli() == 8000);
  CHECK(p2.gpu_models == std::vector<std::string>{"V100M16", "V100M32"});
  CHECK(p2.qos.empty());
  CHECK_FALSE(p2.scheduled_time.has_value());
  const OpenbPod& p3 = pods[2];
  CHECK(p3.num_gpu == 0);
  CHECK(p3.total_gpu_milli() == 0);
  CHECK_FALSE(p3.creation_time.has_value());
  CHECK_FALSE(p3.deletion_time.has_value());
}

TEST_CASE("openb: nodes, with and without the model column") {
  const auto nodes = gpuq::sim::parse_openb_nodes(
      "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,0,nan\nn1,96000,786432,8,V100M32\n"
      "n2,32000,262144,0,\n",
      "n.csv");
  REQUIRE(nodes.size() == 3);
  CHECK(nodes[0].model.empty());
  CHECK(nodes[0].memory_bytes == 262144LL << 20);
  CHECK(nodes[1].name == "n1");
  CHECK(nodes[1].cpu_milli == 96000);
  CHECK(nodes[1].gpus == 8);
  CHECK(nodes[1].model == "V100M32");
  CHECK(nodes[2].model.empty());
  const auto bare = gpuq::sim::parse_openb_nodes("gpu,sn,memory_mib,cpu_milli\n2,m,1,3\n", "n.csv");
  REQUIRE(bare.size() == 1);
  CHECK(bare[0].gpus == 2);
  CHECK(bare[0].cpu_milli == 3);
  CHECK(bare[0].model.empty());
}

TEST_CASE("openb: quoted fields, CRLF, BOM, blank and trailing lines") {
  SUBCASE("quotes: around a field, \"\" inside, commas inside, quoted header names") {
    const std::string text =
        "\"name\",cpu_milli,memory_mib,num_gpu,gpu_milli,\"gpu_spec\"\n"
        "\"pod, \"\"one\"\"\",1,1,1,1000,\"A|B\"\n"
        "\"\",2,2,0,0,\n"
        "\"\"\"\",3,3,0,0,\"\"\n";
    CHECK(pod_error(text) ==
          "p.csv:3:1: column \"name\": \"\" is empty (allowed: a name unique in the file)");
    const auto pods = gpuq::sim::parse_openb_pods(text, "p.csv", {.skip_bad_rows = true});
    REQUIRE(pods.size() == 2);
    CHECK(pods[0].name == "pod, \"one\"");
    CHECK(pods[0].gpu_models == std::vector<std::string>{"A", "B"});
    CHECK(pods[1].name == "\"");
    CHECK(pods[1].gpu_models.empty());
  }
  SUBCASE("CRLF, a BOM, blank lines that still count, no newline at the end") {
    const std::string text = "\xEF\xBB\xBFsn,cpu_milli,memory_mib,gpu\r\nn1,1,1,1\r\n\r\nn2,2,2,2";
    const auto nodes = gpuq::sim::parse_openb_nodes(text, "n.csv");
    REQUIRE(nodes.size() == 2);
    CHECK(nodes[0].name == "n1");
    CHECK(nodes[1].gpus == 2);
    CHECK(node_error(text + "\r\nn3,x,1,1\r\n") ==
          "n.csv:5:2: column \"cpu_milli\": \"x\" is not a whole number (allowed: "
          "0..4503599627370496 millicores)");
  }
  SUBCASE("trailing empty lines are not rows") {
    TraceReadReport report;
    const auto nodes =
        gpuq::sim::parse_openb_nodes(kNodeHeader + "n1,1,1,0,\n\n\n", "n.csv", {}, &report);
    CHECK(nodes.size() == 1);
    CHECK(report.rows == 1);
    CHECK(gpuq::sim::parse_openb_nodes(kNodeHeader, "n.csv").empty());
  }
}

TEST_CASE("openb: skip_bad_rows skips and counts bad rows, keeps the first five messages") {
  std::string text = kPodHeader + "ok1,1,1,0,0\n";
  for (int i = 0; i < 7; ++i) text += "bad" + std::to_string(i) + ",1,1,0,7\n";
  text += "ok1,1,1,0,0\n";  // a duplicate: the first one stays
  text += "ok2,1,1,1,250\n";
  TraceReadReport report;
  const auto pods = gpuq::sim::parse_openb_pods(text, "p.csv", {.skip_bad_rows = true}, &report);
  REQUIRE(pods.size() == 2);
  CHECK(pods[0].name == "ok1");
  CHECK(pods[1].name == "ok2");
  CHECK(report.rows == 10);
  CHECK(report.skipped == 8);
  REQUIRE(report.first_errors.size() == 5);
  CHECK(report.first_errors[0] ==
        "p.csv:3:5: column \"gpu_milli\": \"7\" with num_gpu 0: a CPU-only pod takes no GPU "
        "(allowed: 0)");
  CHECK(report.first_errors[4].starts_with("p.csv:7:5: "));
  // Without skipping the first bad row throws.
  CHECK(pod_error(text).starts_with("p.csv:3:5: "));
}

TEST_CASE("openb: a file that cannot be read is a TraceError naming it") {
  const std::string path = "/nonexistent/openb_pods.csv";
  const std::string msg = error_of([&] { return gpuq::sim::read_openb_pods(path); });
  CHECK(msg.starts_with(path + ": cannot open: "));
}

// ---- The published traces (github.com/alibaba/clusterdata, cluster-trace-gpu-v2023). ----

namespace {

const std::filesystem::path kOpenb = std::filesystem::path(GPUQ_TRACE_DIR) / "alibaba-gpu-v2023";

bool have_traces() {
  if (std::filesystem::exists(kOpenb / "openb_pod_list_default.csv")) return true;
  MESSAGE("skipped: no openb traces at " << kOpenb.string());
  return false;
}

}  // namespace

TEST_CASE("openb traces: the node lists") {
  if (!have_traces()) return;
  const auto gpu_nodes =
      gpuq::sim::read_openb_nodes((kOpenb / "openb_node_list_gpu_node.csv").string());
  CHECK(gpu_nodes.size() == 1213);
  long gpus = 0;
  for (const OpenbNode& n : gpu_nodes) {
    gpus += n.gpus;
    CHECK(n.gpus > 0);
    CHECK_FALSE(n.model.empty());
  }
  CHECK(gpus == 6212);
  const auto all = gpuq::sim::read_openb_nodes((kOpenb / "openb_node_list_all_node.csv").string());
  CHECK(all.size() == 1523);
}

TEST_CASE("openb traces: the default pod list") {
  if (!have_traces()) return;
  const auto start = std::chrono::steady_clock::now();
  TraceReadReport report;
  const auto pods =
      gpuq::sim::read_openb_pods((kOpenb / "openb_pod_list_default.csv").string(), {}, &report);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  MESSAGE("openb_pod_list_default.csv: " << pods.size() << " pods read in " << us << " us");
  CHECK(pods.size() == 8152);
  CHECK(report.rows == 8152);
  gpuq::Quantity gpu_milli = 0;
  int cpu_only = 0, unscheduled = 0, with_models = 0;
  for (const OpenbPod& p : pods) {
    gpu_milli += p.total_gpu_milli();
    cpu_only += p.num_gpu == 0;
    unscheduled += !p.scheduled_time.has_value();
    with_models += !p.gpu_models.empty();
    CHECK(p.creation_time.has_value());
  }
  CHECK(gpu_milli == 6086800);
  CHECK(cpu_only == 1088);
  CHECK(unscheduled == 897);  // scheduled_time is empty for pods the trace never saw placed
  CHECK(with_models == 0);    // only the gpuspec files constrain models
}

TEST_CASE("openb traces: the sampled pod lists") {
  if (!have_traces()) return;
  const auto share =
      gpuq::sim::read_openb_pods((kOpenb / "openb_pod_list_gpushare40.csv").string());
  CHECK(share.size() == 8152);
  // multigpu20 has only name, cpu_milli, memory_mib, num_gpu, gpu_milli.
  const auto multi =
      gpuq::sim::read_openb_pods((kOpenb / "openb_pod_list_multigpu20.csv").string());
  CHECK(multi.size() == 8324);
  gpuq::Quantity gpu_milli = 0;
  for (const OpenbPod& p : multi) {
    gpu_milli += p.total_gpu_milli();
    CHECK_FALSE(p.creation_time.has_value());
    CHECK(p.qos.empty());
  }
  CHECK(gpu_milli == 7086800);
}
