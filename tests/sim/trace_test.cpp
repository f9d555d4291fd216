// The trace readers for `gpuq sim run` (sim/trace.hpp): each format from text (values, defaults,
// every refusal with file:line:column, the column, the value and what is allowed), skipping bad
// rows, format detection, queue assignment, the Tiresias cluster, and the published traces
// themselves when they sit beside the checkout.
#include "sim/trace.hpp"
#include "tests/sim/trace_error.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

// The file's own names (tests build as unity batches: no clash with another file's).
namespace sim_trace_test {

namespace {

namespace fs = std::filesystem;
using gpuq::kCpu;
using gpuq::kGpu;
using gpuq::kMemory;
using gpuq::sim::QueueRule;
using gpuq::sim::TraceError;
using gpuq::sim::TraceFormat;
using gpuq::sim::TraceJob;
using gpuq::sim::TraceReadOptions;
using gpuq::sim::TraceReadReport;

const std::string kNativeHeader =
    "id,submit,queue,duration,gpu,cpu,memory,pods,priority,max_runtime,checkpoint\n";
const std::string kOpenbHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";
const std::string kTiresiasHeader =
    "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n";
const std::string kSkip = "(skip)";

using gpuq::sim::testing::error_of;

std::vector<TraceJob> parse(const std::string& text, TraceFormat format,
                            const std::string& label = "t.csv", TraceReadOptions options = {},
                            TraceReadReport* report = nullptr) {
  return gpuq::sim::parse_trace(text, label, format, options, report);
}
std::string parse_error(const std::string& text, TraceFormat format,
                        const std::string& label = "t.csv") {
  return error_of([&] { return parse(text, format, label); });
}

const gpuq::PodSet& only_pod_set(const TraceJob& j) {
  REQUIRE(j.pod_sets.size() == 1);
  return j.pod_sets[0];
}
std::string gpu_cpu_memory(const gpuq::ResourceVec& r) {
  return std::to_string(r[kGpu]) + " " + std::to_string(r[kCpu]) + " " + std::to_string(r[kMemory]);
}
// "ID [TENANT] @SUBMIT +DURATION POD_SET xCOUNT GPU CPU MEMORY", per pod in base units.
std::string brief(const TraceJob& j) {
  const gpuq::PodSet& s = only_pod_set(j);
  return j.id + " [" + j.tenant + "] @" + std::to_string(j.submit) + " +" +
         std::to_string(j.duration) + " " + s.name + " x" + std::to_string(s.count) + " " +
         gpu_cpu_memory(s.per_pod);
}
// "NAME FLAVOR GPU CPU MEMORY key=value..."
std::string brief(const gpuq::NodeSpec& n) {
  std::string s = n.name + " " + n.flavor + " " + gpu_cpu_memory(n.capacity);
  for (const auto& [k, v] : n.labels) s += " " + k + "=" + v;
  return s;
}

struct Bad {
  std::string text;
  std::string message;
};

// A folder of its own under the temp dir, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() /
           ("gpuq_trace_test_" + std::to_string(::getpid()) + "_" + std::to_string(++n));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

}  // namespace

// ---- native --------------------------------------------------------------------------------

TEST_CASE("trace native: columns by name in any order, values, defaults, sorted by submit") {
  const std::string text =
      "queue,submit,duration,id,gpu,cpu,memory,pods,priority,max_runtime,checkpoint\n"
      "vision,10,3600,train-1,2,4,16Gi,4,100,7200,600\n"
      "nlp,5,60,,500m,,,,,,\n"
      "nlp,10,1,last,0.25,250m,1e9,1,-7,,0\n";
  const auto jobs = parse(text, TraceFormat::kNative);
  REQUIRE(jobs.size() == 3);
  // Sorted by submit, ties in file order; no id: "job-<line>".
  CHECK(brief(jobs[0]) == "job-3 [nlp] @5 +60 main x1 500 0 0");
  CHECK(brief(jobs[1]) == "train-1 [vision] @10 +3600 worker x4 2000 4000 17179869184");
  CHECK(brief(jobs[2]) == "last [nlp] @10 +1 main x1 250 250 1000000000");
  CHECK(jobs[1].queue.empty());  // set by assign_queues
  CHECK(jobs[1].priority == 100);
  CHECK(jobs[1].max_runtime == 7200);
  CHECK(jobs[1].checkpoint_interval == 600);
  CHECK(jobs[0].priority == 0);
  CHECK_FALSE(jobs[0].max_runtime.has_value());
  CHECK(jobs[0].checkpoint_interval == 0);
  CHECK(jobs[2].priority == -7);

  // Only submit, queue and duration are required.
  const auto bare = parse("duration,queue,submit\r\n1,q.a_b-1,0\r\n", TraceFormat::kNative);
  REQUIRE(bare.size() == 1);
  CHECK(brief(bare[0]) == "job-2 [q.a_b-1] @0 +1 main x1 0 0 0");
}

TEST_CASE("trace native: every bad value is refused with file:line:column, value, allowed") {
  const std::string row = "j,0,q,60,1,1,1Gi,1,0,,\n";
  const std::string seconds = "0..4503599627370496 seconds)";
  const std::string gpu_allowed =
      "(allowed: per pod, a share of one GPU, \"1m\"..\"999m\" or \"0.5\", or whole GPUs: \"1\", "
      "\"2\", ...)";
  const std::vector<Bad> cases = {
      {"j,-1,q,60,1,1,1Gi,1,0,,\n",
       "t.csv:2:2: column \"submit\": \"-1\" is negative (allowed: " + seconds},
      {"j,1.5,q,60,1,1,1Gi,1,0,,\n",
       "t.csv:2:2: column \"submit\": \"1.5\" is not a whole number (allowed: " + seconds},
      {"j,,q,60,1,1,1Gi,1,0,,\n",
       "t.csv:2:2: column \"submit\": \"\" is not a whole number (allowed: " + seconds},
      {"j,0,a b,60,1,1,1Gi,1,0,,\n",
       "t.csv:2:3: column \"queue\": \"a b\" is not a name: it holds ' '; use letters, digits, '-', "
       "'_' and '.', beginning with a letter or a digit"},
      {"j,0,,60,1,1,1Gi,1,0,,\n", "t.csv:2:3: column \"queue\": is empty"},
      {"j,0,q,0,1,1,1Gi,1,0,,\n",
       "t.csv:2:4: column \"duration\": \"0\" is below 1 (allowed: 1..4503599627370496 seconds)"},
      {"j,0,q,1500m,1,1,1Gi,1,0,,\n",
       "t.csv:2:4: column \"duration\": \"1500m\" is not a whole number (allowed: "
       "1..4503599627370496 seconds)"},
      {"j,0,q,60,1500m,1,1Gi,1,0,,\n",
       "t.csv:2:5: column \"gpu\": \"1500m\" is not a GPU request " + gpu_allowed},
      {"j,0,q,60,abc,1,1Gi,1,0,,\n",
       "t.csv:2:5: column \"gpu\": \"abc\" is not a quantity " + gpu_allowed},
      {"j,0,q,60,-1,1,1Gi,1,0,,\n", "t.csv:2:5: column \"gpu\": \"-1\" is negative " + gpu_allowed},
      {"j,0,q,60,1,x,1Gi,1,0,,\n",
       "t.csv:2:6: column \"cpu\": \"x\" is not a quantity (allowed: cores per pod, e.g. \"2\", "
       "\"500m\", \"0.25\")"},
      {"j,0,q,60,1,1,0.5,1,0,,\n",
       "t.csv:2:7: column \"memory\": \"0.5\" is not a quantity (allowed: bytes per pod, e.g. "
       "\"16Gi\", \"512Mi\", \"1e9\")"},
      {"j,0,q,60,1,1,9Ei,1,0,,\n",
       "t.csv:2:7: column \"memory\": \"9Ei\" is not a quantity (allowed: bytes per pod, e.g. "
       "\"16Gi\", \"512Mi\", \"1e9\")"},
      {"j,0,q,60,1,1,8Pi,1,0,,\n",
       "t.csv:2:7: column \"memory\": \"8Pi\" is too large (allowed: bytes per pod, e.g. "
       "\"16Gi\", \"512Mi\", \"1e9\")"},
      {"j,0,q,60,1,1,1Gi,0,0,,\n",
       "t.csv:2:8: column \"pods\": \"0\" is below 1 (allowed: 1..100000 pods)"},
      {"j,0,q,60,1,1,1Gi,100001,0,,\n",
       "t.csv:2:8: column \"pods\": \"100001\" is above 100000 (allowed: 1..100000 pods)"},
      {"j,0,q,60,1,1,1Gi,1,high,,\n",
       "t.csv:2:9: column \"priority\": \"high\" is not a whole number (allowed: "
       "-2147483648..2147483647)"},
      {"j,0,q,60,1,1,1Gi,1,3000000000,,\n",
       "t.csv:2:9: column \"priority\": \"3000000000\" is above 2147483647 (allowed: "
       "-2147483648..2147483647)"},
      {"j,0,q,60,1,1,1Gi,1,-99999999999999999999,,\n",
       "t.csv:2:9: column \"priority\": \"-99999999999999999999\" is below -2147483648 (allowed: "
       "-2147483648..2147483647)"},
      {"j,0,q,60,1,1,1Gi,1,0,0,\n",
       "t.csv:2:10: column \"max_runtime\": \"0\" is below 1 (allowed: 1..4503599627370496 "
       "seconds)"},
      {"j,0,q,60,1,1,1Gi,1,0,,-5\n",
       "t.csv:2:11: column \"checkpoint\": \"-5\" is negative (allowed: " + seconds},
      {"j,0,q,60\n", "t.csv:2:5: column \"gpu\": missing: the row has 4 fields, the header 11"},
      {row + "k,0,q,60,1,1,1Gi,1,0,,\n" + row,
       "t.csv:4:1: column \"id\": \"j\" is a duplicate (first on line 2)"},
      // A generated id ("job-<line>") is an id like any other.
      {",0,q,60,1,1,1Gi,1,0,,\njob-2,0,q,60,1,1,1Gi,1,0,,\n",
       "t.csv:3:1: column \"id\": \"job-2\" is a duplicate (first on line 2)"},
  };
  for (const Bad& c : cases) {
    CAPTURE(c.text);
    CHECK(parse_error(kNativeHeader + c.text, TraceFormat::kNative) == c.message);
  }
  CHECK(parse_error("id,submit,duration\n", TraceFormat::kNative) ==
        "t.csv:1: column \"queue\" is missing (found: \"id\", \"submit\", \"duration\")");
  CHECK(parse_error("submit,queue,duration,queue\n", TraceFormat::kNative) ==
        "t.csv:1:4: column \"queue\" appears twice (first as column 2)");
}

TEST_CASE("trace native: skip_bad_rows skips and counts, keeping the first five messages") {
  std::string text = kNativeHeader + "ok,0,q,60,1,1,1Gi,1,0,,\n";
  for (int i = 0; i < 6; ++i) text += "bad" + std::to_string(i) + ",0,q,60,3/2,1,1Gi,1,0,,\n";
  text += "ok,0,q,60,1,1,1Gi,1,0,,\n";  // a duplicate: the first one stays
  TraceReadReport report;
  const auto jobs = parse(text, TraceFormat::kNative, "t.csv", {.skip_bad_rows = true}, &report);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].id == "ok");
  CHECK(report.rows == 8);
  CHECK(report.skipped == 7);
  REQUIRE(report.first_errors.size() == 5);
  CHECK(report.first_errors[0].starts_with("t.csv:3:5: column \"gpu\": \"3/2\" is not a quantity"));
  CHECK(report.first_errors[4].starts_with("t.csv:7:5: "));
}

// ---- openb ---------------------------------------------------------------------------------

TEST_CASE("trace openb: one pod per job, times, qos as tenant, gpu_spec as the models it accepts") {
  const std::string text = kOpenbHeader +
                           "p1,4000,1024,1,500,,LS,Running,100,1100,150\n"
                           "p2,8000,2048,2,1000,V100M16|V100M32,BE,Running,50,60,\n"
                           "p3,1000,1,0,0,,,Pending,70,70,nan\n";
  TraceReadReport report;
  const auto jobs = parse(text, TraceFormat::kOpenb, "o.csv", {}, &report);
  REQUIRE(jobs.size() == 3);
  CHECK(report.rows == 3);
  CHECK(report.skipped == 0);
  CHECK(brief(jobs[0]) == "p2 [BE] @50 +10 main x1 2000 8000 2147483648");   // never scheduled
  CHECK(brief(jobs[1]) == "p3 [] @70 +1 main x1 0 1000 1048576");            // at least one second
  CHECK(brief(jobs[2]) == "p1 [LS] @100 +950 main x1 500 4000 1073741824");  // from scheduled
  // gpu_spec: a required affinity on the node's GPU model label; none without it.
  const gpuq::NodeConstraints& where = *jobs[0].pod_sets[0].where;
  REQUIRE(where.affinity.size() == 1);
  REQUIRE(where.affinity[0].size() == 1);
  CHECK(where.affinity[0][0].key == gpuq::kGpuModelLabel);
  CHECK(where.affinity[0][0].op == gpuq::LabelOperator::kIn);
  CHECK(where.affinity[0][0].values == std::vector<std::string>{"V100M16", "V100M32"});
  CHECK(jobs[2].pod_sets[0].where->empty());
}

TEST_CASE("trace openb: a pod without its times is refused, or skipped and counted") {
  const std::string good = "ok,1,1,0,0,,LS,Running,0,5,0\n";
  CHECK(parse_error(kOpenbHeader + good + "p,1,1,0,0,,LS,Running,nan,5,\n", TraceFormat::kOpenb,
                    "o.csv") ==
        "o.csv:3:9: column \"creation_time\": \"nan\" is needed by gpuq sim run for the pod's "
        "submit time (allowed: whole seconds >= 0)");
  CHECK(parse_error(kOpenbHeader + "p,1,1,0,0,,LS,Running,3,,\n" + good, TraceFormat::kOpenb,
                    "o.csv") ==
        "o.csv:2:10: column \"deletion_time\": \"\" is needed by gpuq sim run for when the pod "
        "ended (allowed: whole seconds >= 0)");
  // Values openb.hpp refuses keep their own messages.
  CHECK(parse_error(kOpenbHeader + "p,1,1,0,7,,LS,Running,0,5,0\n", TraceFormat::kOpenb, "o.csv")
            .starts_with("o.csv:2:5: column \"gpu_milli\": \"7\" with num_gpu 0"));
  // A list without the columns cannot be replayed at all (openb_pod_list_multigpu20.csv).
  CHECK(parse_error("name,cpu_milli,memory_mib,num_gpu,gpu_milli,deletion_time\n",
                    TraceFormat::kOpenb, "o.csv") ==
        "o.csv:1: column \"creation_time\" is missing; gpuq sim run needs it for the pod's "
        "submit time (found: \"name\", \"cpu_milli\", \"memory_mib\", \"num_gpu\", "
        "\"gpu_milli\", \"deletion_time\")");
  CHECK(parse_error("name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\n",
                    TraceFormat::kOpenb, "o.csv")
            .starts_with("o.csv:1: column \"deletion_time\" is missing; gpuq sim run needs it "
                         "for when the pod ended (found: "));

  const std::string text = kOpenbHeader + good + "x,1,1,0,7,,LS,Running,0,5,0\n" +
                           "y,1,1,0,0,,LS,Running,,5,\n" + "z,1,1,1,1000,,BE,Running,9,20,10\n" +
                           "w,1,1,0,0,,LS,Running,1,nan,\n";
  TraceReadReport report;
  const auto jobs = parse(text, TraceFormat::kOpenb, "o.csv", {.skip_bad_rows = true}, &report);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].id == "ok");
  CHECK(jobs[1].id == "z");
  CHECK(report.rows == 5);
  CHECK(report.skipped == 3);
  REQUIRE(report.first_errors.size() == 3);
  CHECK(report.first_errors[0].starts_with("o.csv:3:5: "));
  CHECK(report.first_errors[1].starts_with("o.csv:4:9: column \"creation_time\": \"\" is needed"));
  CHECK(report.first_errors[2].starts_with("o.csv:6:10: column \"deletion_time\": \"nan\""));
}

// ---- philly --------------------------------------------------------------------------------

TEST_CASE("trace philly: the VC is the tenant, durations from Gavel's V100 rates") {
  const std::string text =
      "ResNet-18 (batch size 16)\tcd %s && python3 main.py\t--num_steps\t1\t32353\t6.000000\t1\n"
      "LM (batch size 5)\tcmd\t--steps\t1\t185000\t7.4\t2\n"
      "\n"
      "ResNet-50 (batch size 64)\tcmd\t-n\t0\t34606\t7.6\t16\n"
      "LM (batch size 5)\tcmd\t-n\t1\t278000\t0.2\t3\r\n"
      "A3C\tcmd\t--max-steps\t0\t28703\t100.5\t4\n"
      "CycleGAN\tcmd\t--n_steps\t1\t0\t200\t1\n";
  const auto jobs = parse(text, TraceFormat::kPhilly, "seed0/6c71a0.trace");
  REQUIRE(jobs.size() == 6);
  // Ids count lines, blank ones too; 0.2 s rounds to 0; 278000 steps at 185.724 * 3/2 steps/s:
  // linear beyond the largest measured scale (2 GPUs), rounded up.
  CHECK(brief(jobs[0]) == "6c71a0-5 [6c71a0] @0 +998 worker x3 1000 0 0");
  CHECK(brief(jobs[1]) == "6c71a0-1 [6c71a0] @6 +1000 main x1 1000 0 0");   // 32353 / 32.3534
  CHECK(brief(jobs[2]) == "6c71a0-2 [6c71a0] @7 +997 worker x2 1000 0 0");  // measured 185.724
  // 16 GPUs: twice the measured 8-GPU rate, 17.3032.
  CHECK(brief(jobs[3]) == "6c71a0-4 [6c71a0] @8 +1000 worker x16 1000 0 0");
  // A3C was measured on one GPU only: 4 x 7.17577.
  CHECK(brief(jobs[4]) == "6c71a0-6 [6c71a0] @101 +1000 worker x4 1000 0 0");
  CHECK(brief(jobs[5]) == "6c71a0-7 [6c71a0] @200 +1 main x1 1000 0 0");  // no steps
}

TEST_CASE("trace philly: refusals name the file, line, column and what is allowed") {
  const std::string label = "traces/ab12.trace";
  CHECK(parse_error("GPT\tc\t-n\t1\t10\t0\t1\n", TraceFormat::kPhilly, label)
            .starts_with("traces/ab12.trace:1:1: column \"job_type\": \"GPT\" is not a job type "
                         "Gavel measured (allowed: \"A3C\", \"CycleGAN\", \"LM (batch size 10)\""));
  CHECK(parse_error("A3C\tc\t-n\t1\t10\t0\t1\n", TraceFormat::kPhilly, label) == "(accepted)");
  const std::vector<Bad> cases = {
      {"A3C\tc\t-n\t1\t10\t0\n",
       "traces/ab12.trace:1:7: column \"scale_factor\": missing: the row has 6 fields, the "
       "format 7"},
      {"A3C\tc\t-n\t1\t10\t0\t1\t9\n",
       "traces/ab12.trace:1:8: \"9\" is an extra field: the row has 8 fields, the format 7"},
      {"A3C\tc\t-n\t1\t1e5\t0\t1\n",
       "traces/ab12.trace:1:5: column \"total_steps\": \"1e5\" is not a whole number (allowed: "
       "0..4503599627370496 steps)"},
      {"A3C\tc\t-n\t1\t10\tsoon\t1\n",
       "traces/ab12.trace:1:6: column \"arrival_time_s\": \"soon\" is not a number (allowed: "
       "seconds from the trace's start, e.g. \"6.000000\")"},
      {"A3C\tc\t-n\t1\t10\t-1.5\t1\n",
       "traces/ab12.trace:1:6: column \"arrival_time_s\": \"-1.5\" is negative (allowed: seconds "
       "from the trace's start, e.g. \"6.000000\")"},
      {"A3C\tc\t-n\t1\t10\tinf\t1\n",
       "traces/ab12.trace:1:6: column \"arrival_time_s\": \"inf\" is not a number (allowed: "
       "seconds from the trace's start, e.g. \"6.000000\")"},
      {"A3C\tc\t-n\t1\t10\t0\t0\n",
       "traces/ab12.trace:1:7: column \"scale_factor\": \"0\" is below 1 (allowed: 1..100000 "
       "GPUs, one pod each)"},
  };
  for (const Bad& c : cases) {
    CAPTURE(c.text);
    CHECK(parse_error(c.text, TraceFormat::kPhilly, label) == c.message);
  }
  TraceReadReport report;
  const auto jobs = parse("A3C\tc\t-n\t1\t10\t0\t1\nA3C\tc\n\nA3C\tc\t-n\t1\t10\t0\t1\n",
                          TraceFormat::kPhilly, label, {.skip_bad_rows = true}, &report);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[1].id == "ab12-4");
  CHECK(report.rows == 3);
  CHECK(report.skipped == 1);
  REQUIRE(report.first_errors.size() == 1);
  CHECK(report.first_errors[0].starts_with("traces/ab12.trace:2:3: column \"num_steps_arg\""));
}

// ---- tiresias ------------------------------------------------------------------------------

TEST_CASE("trace tiresias: num_gpu pods of one GPU, no tenant") {
  const auto jobs = parse(kTiresiasHeader + "0,1,30,606,vgg19,164,30\r\n1,8,0,133,vgg11,147,23\r\n",
                          TraceFormat::kTiresias);
  REQUIRE(jobs.size() == 2);
  CHECK(brief(jobs[0]) == "1 [] @0 +147 worker x8 1000 0 0");
  CHECK(brief(jobs[1]) == "0 [] @30 +164 main x1 1000 0 0");

  const std::vector<Bad> cases = {
      {"0,0,0,1,m,10,0\n",
       "t.csv:2:2: column \"num_gpu\": \"0\" is below 1 (allowed: 1..100000 GPUs, one pod each)"},
      {"0,1,0,1,m,0,0\n",
       "t.csv:2:6: column \"duration\": \"0\" is below 1 (allowed: 1..4503599627370496 seconds)"},
      {"0,1,x,1,m,1,0\n",
       "t.csv:2:3: column \"submit_time\": \"x\" is not a whole number (allowed: "
       "0..4503599627370496 seconds)"},
      {"7,1,0,1,m,1,0\n7,1,0,1,m,1,0\n",
       "t.csv:3:1: column \"job_id\": \"7\" is a duplicate (first on line 2)"},
      {",1,0,1,m,1,0\n",
       "t.csv:2:1: column \"job_id\": \"\" is empty (allowed: a name unique in the file)"},
  };
  for (const Bad& c : cases) {
    CAPTURE(c.text);
    CHECK(parse_error(kTiresiasHeader + c.text, TraceFormat::kTiresias) == c.message);
  }
  CHECK(parse_error("job_id,submit_time,duration\n", TraceFormat::kTiresias) ==
        "t.csv:1: column \"num_gpu\" is missing (found: \"job_id\", \"submit_time\", "
        "\"duration\")");
}

TEST_CASE("trace tiresias cluster: switches of nodes, labels, capacities, refusals") {
  TempDir dir;
  const std::string path =
      dir.write("c.csv",
                "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n2,3,8,64,"
                "512\n");
  const auto nodes = gpuq::sim::read_tiresias_cluster(path, "v100");
  REQUIRE(nodes.size() == 6);
  CHECK(brief(nodes[0]) == "s0-n0 v100 8000 64000 549755813888 switch=s0");
  CHECK(brief(nodes[5]) == "s1-n2 v100 8000 64000 549755813888 switch=s1");

  const std::string header =
      "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n";
  const auto error_for = [&dir](const std::string& text) {
    const std::string p = dir.write("bad.csv", text);
    return error_of([&] { return gpuq::sim::read_tiresias_cluster(p, "f"); });
  };
  const std::string bad = (dir.path / "bad.csv").string();
  CHECK(error_for(header) == bad + ": no cluster row under the header (allowed: one)");
  CHECK(error_for(header + "1,1,1,1,1\n1,1,1,1,1\n") ==
        bad + ":3: a second cluster row (allowed: one)");
  CHECK(error_for(header + "0,1,1,1,1\n") ==
        bad + ":2:1: column \"num_switch\": \"0\" is below 1 (allowed: 1..100000 switches)");
  CHECK(error_for(header + "1000,1000,1,1,1\n") ==
        bad + ":2: 1000000 nodes (allowed: at most 100000)");
  CHECK(error_for(header + "1,1,256,1,1\n") ==
        bad +
            ":2:3: column \"num_gpu_p_node\": \"256\" is too large (allowed: 0..255 GPUs per "
            "node)");
}

TEST_CASE("trace: openb nodes as engine nodes") {
  const auto specs = gpuq::sim::openb_nodes_as_specs(
      gpuq::sim::parse_openb_nodes("sn,cpu_milli,memory_mib,gpu,model\na,96000,1024,8,V100M32\n"
                                   "b,32000,2048,0,nan\n",
                                   "n.csv"),
      "gpu");
  REQUIRE(specs.size() == 2);
  CHECK(brief(specs[0]) == "a gpu 8000 96000 1073741824 gpuq.io/gpu-model=V100M32");
  CHECK(brief(specs[1]) == "b gpu 0 32000 2147483648");  // no model: no label
}

// ---- names, detection, queues --------------------------------------------------------------

TEST_CASE("trace: format and rule names") {
  for (const TraceFormat f :
       {TraceFormat::kNative, TraceFormat::kOpenb, TraceFormat::kPhilly, TraceFormat::kTiresias})
    CHECK(gpuq::sim::trace_format_named(gpuq::sim::to_string(f)) == f);
  CHECK(std::string(gpuq::sim::to_string(TraceFormat::kPhilly)) == "philly");
  CHECK_FALSE(gpuq::sim::trace_format_named("csv").has_value());
  CHECK(gpuq::sim::queue_rule_named("trace") == QueueRule::kTrace);
  CHECK(gpuq::sim::queue_rule_named("round-robin") == QueueRule::kRoundRobin);
  CHECK(gpuq::sim::queue_rule_named("hash") == QueueRule::kHash);
  CHECK_FALSE(gpuq::sim::queue_rule_named("random").has_value());
}

TEST_CASE("trace: the format is told from the first line, or the folder's *.trace files") {
  TempDir dir;
  using gpuq::sim::detect_trace_format;
  CHECK(detect_trace_format(dir.write("n.csv", "\xEF\xBB\xBFqueue,submit,duration\r\n")) ==
        TraceFormat::kNative);
  CHECK(detect_trace_format(dir.write("o.csv", kOpenbHeader)) == TraceFormat::kOpenb);
  CHECK(detect_trace_format(dir.write("t.csv", kTiresiasHeader)) == TraceFormat::kTiresias);
  CHECK(detect_trace_format(dir.write("p.trace", "A3C\t\"c\" x\t-n\t1\t10\t0\t1\n")) ==
        TraceFormat::kPhilly);
  CHECK(detect_trace_format(dir.path.string()) == TraceFormat::kPhilly);
  const std::string odd = dir.write("odd.csv", "when,who\n1,2\n");
  CHECK(error_of([&] { return detect_trace_format(odd); }) ==
        odd +
            ": cannot tell the trace format from its first line \"when,who\": native has the "
            "columns submit, queue and duration; openb num_gpu and gpu_milli; tiresias "
            "num_gpu and submit_time; philly is 7 tab-separated fields and no header (formats: "
            "native, openb, philly, tiresias)");
  const std::string empty = dir.write("empty.csv", "");
  CHECK(error_of([&] {
          return detect_trace_format(empty);
        }).starts_with(empty + ": cannot tell the trace format from its first line \"\":"));
  const std::string sub = (dir.path / "sub").string();
  fs::create_directories(sub);
  CHECK(error_of([&] { return detect_trace_format(sub); }) ==
        sub +
            ": a folder with no *.trace file (a folder is read only as philly, Gavel's per-VC "
            "*.trace files)");
  CHECK(error_of([&] {
          return detect_trace_format(sub + "/none.csv");
        }).starts_with(sub + "/none.csv: cannot open: "));
  CHECK(error_of([&] { return gpuq::sim::read_trace(sub, TraceFormat::kNative); }) ==
        sub + ": is a folder (allowed: a file)");
}

TEST_CASE("trace: a philly folder is read in name order, each file its own VC") {
  TempDir dir;
  dir.write("b.trace", "A3C\tc\t-n\t1\t10\t5\t1\nA3C\tc\t-n\t1\t10\t1\t1\n");
  dir.write("a.trace", "A3C\tc\t-n\t1\t10\t5\t1\nA3C\tc\t-n\t1\tx\t0\t1\n");
  dir.write("notes.txt", "not a trace");
  TraceReadReport report;
  const auto jobs = gpuq::sim::read_trace(dir.path.string(), TraceFormat::kPhilly,
                                          {.skip_bad_rows = true}, &report);
  std::vector<std::string> ids;
  for (const TraceJob& j : jobs) ids.push_back(j.id + "@" + j.tenant);
  CHECK(ids == std::vector<std::string>{"b-2@b", "a-1@a", "b-1@b"});
  CHECK(report.rows == 4);
  CHECK(report.skipped == 1);
  REQUIRE(report.first_errors.size() == 1);
  CHECK(report.first_errors[0].starts_with((dir.path / "a.trace").string() + ":2:5: "));
  CHECK(error_of([&] {
          return gpuq::sim::read_trace(dir.path.string(), TraceFormat::kPhilly);
        }).starts_with((dir.path / "a.trace").string() + ":2:5: column \"total_steps\""));
}

TEST_CASE("trace: assign_queues by tenant, round-robin or hash") {
  std::vector<TraceJob> jobs(4);
  const std::vector<std::string> ids = {"a", "b", "c", "d"};
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].id = ids[i];
    jobs[i].tenant = "t" + ids[i];
  }
  gpuq::sim::assign_queues(jobs, QueueRule::kTrace, {});
  CHECK(jobs[2].queue == "tc");
  gpuq::sim::assign_queues(jobs, QueueRule::kRoundRobin, {"x", "y", "z"});
  CHECK(jobs[0].queue == "x");
  CHECK(jobs[1].queue == "y");
  CHECK(jobs[2].queue == "z");
  CHECK(jobs[3].queue == "x");
  // FNV-1a 64 of the id, mod 3: a 12638187200555641996 -> 1, b -> 1, c -> 0, d -> 1.
  gpuq::sim::assign_queues(jobs, QueueRule::kHash, {"x", "y", "z"});
  CHECK(jobs[0].queue == "y");
  CHECK(jobs[1].queue == "y");
  CHECK(jobs[2].queue == "x");
  CHECK(jobs[3].queue == "y");
  std::reverse(jobs.begin(), jobs.end());  // the order does not matter to hash
  gpuq::sim::assign_queues(jobs, QueueRule::kHash, {"x", "y", "z"});
  CHECK(jobs[1].queue == "x");

  CHECK_THROWS_WITH_AS(gpuq::sim::assign_queues(jobs, QueueRule::kHash, {}),
                       "--assign hash needs at least one queue to assign jobs to",
                       std::invalid_argument);
  CHECK_THROWS_AS(gpuq::sim::assign_queues(jobs, QueueRule::kRoundRobin, {}),
                  std::invalid_argument);
  jobs[2].tenant.clear();
  CHECK_THROWS_WITH_AS(gpuq::sim::assign_queues(jobs, QueueRule::kTrace, {"x"}),
                       "job \"b\" has no tenant in the trace to take its queue from; use --assign "
                       "round-robin or --assign hash to spread the jobs over queues",
                       std::invalid_argument);
}

// ---- The published traces the project carries (data/traces; data/README.md). -------------

namespace {

const fs::path kTraces = GPUQ_TRACE_DIR;

// They are part of the checkout: one missing is a failure, never a skip.
bool have(const fs::path& p) {
  REQUIRE_MESSAGE(fs::exists(p), "no trace at " << p.string() << " (data/traces is part of the project)");
  return true;
}

}  // namespace

TEST_CASE("trace files: Gavel's Philly VCs, 15 files, 15,264 jobs") {
  const fs::path folder = kTraces / "gavel-philly-vc" / "seed0";
  if (!have(folder)) return;
  CHECK(gpuq::sim::detect_trace_format(folder.string()) == TraceFormat::kPhilly);
  CHECK(gpuq::sim::detect_trace_format((folder / "0e4a51.trace").string()) == TraceFormat::kPhilly);
  TraceReadReport report;
  const auto jobs = gpuq::sim::read_trace(folder.string(), TraceFormat::kPhilly, {}, &report);
  CHECK(jobs.size() == 15264);
  CHECK(report.rows == 15264);
  CHECK(report.skipped == 0);
  std::set<std::string> tenants, unique_ids;
  long gpus = 0, seconds = 0;
  for (const TraceJob& j : jobs) {
    tenants.insert(j.tenant);
    unique_ids.insert(j.id);
    gpus += only_pod_set(j).count;
    seconds += j.duration;
  }
  CHECK(tenants.size() == 15);
  CHECK(unique_ids.size() == jobs.size());
  CHECK(std::is_sorted(jobs.begin(), jobs.end(),
                       [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; }));
  CHECK(gpus == 42192);
  CHECK(seconds == 1806899389);  // the sum of the derived durations (see sim/README.md)
  CHECK(jobs.front().id == "0e4a51-1");
  CHECK(jobs.front().duration == 17466);  // Transformer (batch size 128), 95121 steps
  CHECK(jobs.back().id == "7f04ca-972");
  CHECK(jobs.back().submit == 10817570);
}

TEST_CASE("trace files: the Tiresias sample and its clusters") {
  const fs::path folder = kTraces / "tiresias-sample";
  if (!have(folder / "60_job.csv")) return;
  const std::string path = (folder / "60_job.csv").string();
  CHECK(gpuq::sim::detect_trace_format(path) == TraceFormat::kTiresias);
  const auto jobs = gpuq::sim::read_trace(path, TraceFormat::kTiresias);
  CHECK(jobs.size() == 60);
  long pods = 0, seconds = 0;
  for (const TraceJob& j : jobs) {
    pods += only_pod_set(j).count;
    seconds += j.duration;
    CHECK(j.tenant.empty());
  }
  CHECK(pods == 170);
  CHECK(seconds == 10705);
  CHECK(jobs.back().submit == 1779);

  const auto nodes =
      gpuq::sim::read_tiresias_cluster((folder / "cluster_spec.csv").string(), "gpu");
  CHECK(nodes.size() == 16);
  for (const auto& n : nodes) CHECK(brief(n).ends_with(" gpu 4000 128000 272730423296 switch=s0"));
  CHECK(nodes.back().name == "s0-n15");
  CHECK(gpuq::sim::read_tiresias_cluster((folder / "n32g4.csv").string(), "gpu").size() == 32);
}

TEST_CASE("trace files: the openb pod lists") {
  const fs::path folder = kTraces / "alibaba-gpu-v2023";
  if (!have(folder / "openb_pod_list_default.csv")) return;
  const std::string path = (folder / "openb_pod_list_default.csv").string();
  CHECK(gpuq::sim::detect_trace_format(path) == TraceFormat::kOpenb);
  TraceReadReport report;
  const auto jobs = gpuq::sim::read_trace(path, TraceFormat::kOpenb, {}, &report);
  CHECK(jobs.size() == 8152);  // every pod has both times
  CHECK(report.skipped == 0);
  long seconds = 0, ls = 0, one_second = 0;
  for (const TraceJob& j : jobs) {
    seconds += j.duration;
    ls += j.tenant == "LS";
    one_second += j.duration == 1;
  }
  CHECK(seconds == 210197756);
  CHECK(ls == 4647);
  CHECK(one_second == 9);  // one of them ended in the second it was scheduled: 0 becomes 1
  CHECK(jobs.back().submit == 12901761);
  CHECK(gpuq::sim::read_trace((folder / "openb_pod_list_gpushare40.csv").string(),
                              TraceFormat::kOpenb)
            .size() == 8152);
  const std::string multi = (folder / "openb_pod_list_multigpu20.csv").string();
  CHECK(error_of([&] {
          return gpuq::sim::read_trace(multi, TraceFormat::kOpenb);
        }).starts_with(multi + ":1: column \"creation_time\" is missing; gpuq sim run needs it"));
}

}  // namespace sim_trace_test
