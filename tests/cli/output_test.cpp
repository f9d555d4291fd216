// What the command line prints, without a server: tables that fit 80 columns in human units,
// control characters and terminal escapes shown escaped, and JSON and YAML a script can rely on.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <grpcpp/grpcpp.h>
#include <sstream>
#include <string>

#include "cli/client.hpp"
#include "cli/format.hpp"
#include "cli/requests.hpp"
#include "spec/yaml_read.hpp"

using namespace gpuq;
using namespace gpuq::cli;

namespace {

void check_lines_fit(const std::string& text, std::size_t width = 80) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    INFO(line);
    CHECK(line.size() <= width);
  }
}

v1::Job make_job(const std::string& id, const std::string& queue, v1::JobState state,
                 const std::string& gpu, int count, const std::string& reason) {
  v1::Job j;
  j.mutable_spec()->set_id(id);
  j.mutable_spec()->set_queue(queue);
  auto* ps = j.mutable_spec()->add_pod_sets();
  ps->set_count(count);
  (*ps->mutable_resources())["gpu"] = gpu;
  j.set_state(state);
  j.set_reason(reason);
  j.set_submitted_at(1000);
  return j;
}

}  // namespace

TEST_CASE("tables fit 80 columns and show human units") {
  std::vector<v1::Job> jobs = {
      make_job(
          "a-very-long-job-identifier-that-goes-on-and-on-forever", "research-team-with-long-name",
          v1::JOB_STATE_PENDING, "500m", 3,
          "waiting for quota: queue research-team-with-long-name needs 4 more gpu in flavor h100"),
      make_job("short", "q", v1::JOB_STATE_RUNNING, "2", 4, "")};
  const std::string t = jobs_table(jobs, false, 1300);
  check_lines_fit(t);
  CHECK(t.find("ID") == 0);
  CHECK(t.find("~") != std::string::npos);
  CHECK(t.find("1.5") != std::string::npos);  // 3 pods x 500m
  CHECK(t.find("Running") != std::string::npos);
  CHECK(t.find("5m") != std::string::npos);  // 300 s old
  const std::string wide = jobs_table(jobs, true, 1300);
  CHECK(wide.find(jobs[0].spec().id()) != std::string::npos);  // wide never truncates

  v1::ListQueuesResponse qs;
  auto* q = qs.add_queues();
  q->mutable_spec()->set_name("machine-learning-research-platform-team");
  q->mutable_spec()->set_cohort("a-cohort-with-a-rather-long-name");
  for (const char* flavor : {"h100", "a100"}) {
    auto* u = q->add_usage();
    u->set_flavor(flavor);
    u->set_resource("gpu");
    u->set_nominal(8000);
    u->set_used(10500);
    u->set_borrowed(2500);
  }
  q->set_share(0.4567);
  q->set_pending(123456);
  q->set_running(7);
  const std::string qt = queues_table(qs, false);
  check_lines_fit(qt);
  CHECK(qt.find("GPU NOMINAL/USED/BORROWED") != std::string::npos);
  CHECK(qt.find("16/21/5") != std::string::npos);
  CHECK(qt.find("0.46") != std::string::npos);
  CHECK(qt.find("123456") != std::string::npos);

  v1::ListNodesResponse ns;
  auto* n = ns.add_nodes();
  n->mutable_spec()->set_name("gpu-node-with-a-very-long-hostname.cluster.example.com");
  n->mutable_spec()->set_flavor("h100-80gb-sxm5-nvlink");
  n->set_gpus(8);
  n->set_gpus_free(3);
  (*n->mutable_capacity())["cpu"] = 192000;
  (*n->mutable_used())["cpu"] = 64500;
  (*n->mutable_capacity())["memory"] = std::int64_t{2} << 40;
  (*n->mutable_used())["memory"] = std::int64_t{3} << 29;  // 1.5Gi
  const std::string nt = nodes_table(ns, false);
  check_lines_fit(nt);
  CHECK(nt.find("3/8") != std::string::npos);
  CHECK(nt.find("64.5/192") != std::string::npos);
  CHECK(nt.find("1.5Gi/2Ti") != std::string::npos);
  CHECK(nt.find("Ready") != std::string::npos);
  CHECK(nt.find("warning") == std::string::npos);
  v1::Job measured;
  CHECK(process_use_text(measured).empty());
  measured.set_cpu_seconds(12.5);
  measured.set_memory_peak_bytes(std::int64_t{3} << 29);
  CHECK(process_use_text(measured) == "Used:        CPU 12.50 s, memory peak 1.5Gi (from its cgroups)\n");
  (*n->mutable_spec()->mutable_labels())["gpuq.io/cgroups"] = "none";
  CHECK(nodes_table(ns, false).find("warning: node gpu-node-with-a-very-long-hostname.cluster.example.com has no "
                                    "cgroups: its jobs are not held to their GPUs, CPU or memory") != std::string::npos);
  n->mutable_spec()->mutable_labels()->erase("gpuq.io/cgroups");

  CHECK(human_milli(1500) == "1.5");
  CHECK(human_milli(250) == "0.25");
  CHECK(human_milli(-500) == "-0.5");
  CHECK(human_bytes(std::int64_t{64} << 30) == "64Gi");
  CHECK(human_bytes(100) == "100");
  CHECK(human_age(45) == "45s");
  CHECK(human_age(7200) == "2h");
  CHECK(human_age(3 * 86400) == "3d");
  CHECK(cli::truncate("abcdef", 4) == "abc~");

  v1::JobEvent e;
  e.set_seq(42);
  e.set_at(1'700'000'000);
  e.set_job_id("j1");
  e.set_queue("q");
  e.set_to(v1::JOB_STATE_PENDING);
  CHECK(event_line(e) == "42 2023-11-14T22:13:20Z job/j1 queue/q submitted -> Pending");
}

TEST_CASE("control characters and terminal escapes are shown escaped in tables, show and watch") {
  CHECK(escaped("plain text, ünïcode ✓") == "plain text, ünïcode ✓");
  CHECK(escaped("a\x1b[2Jb") == "a\\x1b[2Jb");
  CHECK(escaped("line\nnext\ttab\rcr\x7f") == "line\\nnext\\ttab\\rcr\\x7f");
  CHECK(escaped("c1 \xc2\x9b" "31m") == "c1 \\u009b31m");  // U+009B, CSI to some terminals
  CHECK(escaped("bad \xff\xc3") == "bad \\xff\\xc3");        // not UTF-8
  CHECK(escaped("back\\slash") == "back\\slash");

  std::vector<v1::Job> jobs = {make_job("j1", "q", v1::JOB_STATE_PENDING, "1", 1, "reason\x1b]0;owned\x07")};
  jobs[0].mutable_spec()->set_name("evil\x1b[31mname\n");
  for (const std::string& t : {jobs_table(jobs, false, 1300), jobs_table(jobs, true, 1300),
                               job_detail(jobs[0], 1300)}) {
    INFO(t);
    CHECK(t.find('\x1b') == std::string::npos);
    CHECK(t.find('\x07') == std::string::npos);
    CHECK(t.find("reason\\x1b]0;owned\\x07") != std::string::npos);
  }
  CHECK(jobs_table(jobs, true, 1300).find("evil\\x1b[31mname\\n") != std::string::npos);
  const std::string detail = job_detail(jobs[0], 1300);
  CHECK(detail.find("Name:        evil\\x1b[31mname\\n\n") != std::string::npos);
  CHECK(detail.find("Image:") == std::string::npos);  // none named
  jobs[0].mutable_spec()->set_image("nvcr.io/x:1\x1b[2J");
  CHECK(job_detail(jobs[0], 1300).find("Image:       nvcr.io/x:1\\x1b[2J\n") != std::string::npos);

  v1::ListNodesResponse ns;
  auto* n = ns.add_nodes();
  n->mutable_spec()->set_name("n0");
  (*n->mutable_spec()->mutable_labels())["k"] = "v\x1b";
  CHECK(nodes_table(ns, true).find("k=v\\x1b") != std::string::npos);

  v1::JobEvent e;
  e.set_seq(1);
  e.set_job_id("j1");
  e.set_queue("q");
  e.set_to(v1::JOB_STATE_FAILED);
  e.set_reason("exit\n\x1b[1A");
  CHECK(event_line(e).find(": exit\\n\\x1b[1A") != std::string::npos);

  // A server's message in an error is escaped too.
  std::ostringstream out, err;
  Context ctx(out, err);
  CHECK(ctx.fail(grpc::Status(grpc::StatusCode::NOT_FOUND, "job \"\x1b[2J\" does not exist")) == 1);
  CHECK(err.str() == "gpuq: job \"\\x1b[2J\" does not exist (NOT_FOUND)\n");
}


TEST_CASE("json output is protobuf's JSON with field names and every field; yaml the same data") {
  v1::ListJobsResponse r;
  *r.add_jobs() = make_job("123", "q", v1::JOB_STATE_RUNNING, "2", 1, "");
  const std::string json = to_json(r);
  CHECK(json == to_json(r));
  auto v = boost::json::parse(json);
  const auto& job = v.at("jobs").at(0);
  CHECK(job.at("state").as_string() == "JOB_STATE_RUNNING");
  CHECK(job.at("spec").at("pod_sets").at(0).at("resources").at("gpu").as_string() == "2");
  CHECK(job.at("reason").as_string() == "");            // defaults are printed
  CHECK(job.at("submitted_at").as_string() == "1000");  // int64 as a string (proto3 JSON)
  CHECK(job.at("attempts").as_int64() == 0);
  CHECK(job.at("spec").at("image").as_string() == "");  // binder kubernetes' fields are there too
  CHECK(job.at("spec").at("working_dir_implicit").as_bool() == false);
  CHECK(v.as_object().contains("next_page_token"));

  const std::string yaml = to_yaml(r);
  const auto doc = spec::yaml::parse_one(yaml);
  const auto y = doc.root().find("jobs").item(0);
  CHECK(y.find("spec").find("id").text() == "123");
  CHECK(y.find("spec").find("id").quoted());  // a string that looks like a number is quoted
  CHECK(y.find("state").text() == "JOB_STATE_RUNNING");
  CHECK(y.find("attempts").text() == "0");
  CHECK(yaml.find("placement: []") != std::string::npos);  // empty lists inline
  v1::QueueStatus q;
  q.set_share(0.4567);
  CHECK(to_yaml(q).find("share: 0.4567\n") != std::string::npos);

  CHECK(parse_state("running") == v1::JOB_STATE_RUNNING);
  CHECK(parse_state("JOB_STATE_FAILED") == v1::JOB_STATE_FAILED);
  CHECK_THROWS_AS(parse_state("sleeping"), UsageError);
  CHECK_THROWS_AS(parse_output_format("xml"), UsageError);
}

TEST_CASE("gpuq queues NAME shows the queue's quota and use, its guardrails and its roles") {
  v1::QueueStatus q;
  auto& s = *q.mutable_spec();
  s.set_name("vision");
  s.set_cohort("lab");
  s.set_max_gpus_per_job("8");
  s.set_max_runtime_seconds(86400);
  s.set_max_grace_period_seconds(30);
  s.add_allowed_priority_classes("normal");
  s.add_allowed_priority_classes("high");
  s.set_max_running_jobs_per_user(4);
  s.mutable_submitters()->add_users("alice");
  s.mutable_submitters()->add_groups("ml");
  q.set_pending(3);
  q.set_running(2);
  auto* u = q.add_usage();
  u->set_flavor("h100");
  u->set_resource("gpu");
  u->set_nominal(8000);
  u->set_used(10500);
  u->set_borrowed(2500);
  auto* m = q.add_usage();
  m->set_flavor("h100");
  m->set_resource("memory");
  m->set_nominal(std::int64_t{64} << 30);
  const std::string text = queue_detail(q);
  INFO(text);
  CHECK(text.find("Cohort:      lab\n") != std::string::npos);
  CHECK(text.find("Jobs:        3 pending, 0 admitted, 2 running, 0 preempting\n") != std::string::npos);
  CHECK(text.find("  h100 gpu: nominal 8, used 10.5, borrowed 2.5\n") != std::string::npos);
  CHECK(text.find("  h100 memory: nominal 64Gi, used 0, borrowed 0\n") != std::string::npos);
  CHECK(text.find("Limits:      maxGpusPerJob 8\n             maxRuntime 86400s (24h)\n"
                  "             maxGracePeriod 30s\n             allowedPriorityClasses normal,high\n"
                  "             maxRunningJobsPerUser 4\n") != std::string::npos);
  CHECK(text.find("Non-preemptible jobs borrow: no\n") != std::string::npos);
  CHECK(text.find("Submitters:  users alice; groups ml\n") != std::string::npos);
  CHECK(text.find("Viewers:     (none: each user sees their own jobs)\n") != std::string::npos);
  CHECK(text.find("Kubernetes:") == std::string::npos);  // none
  check_lines_fit(text);
  // Binder kubernetes: the block in the YAML keys' words, the template cut to fit.
  auto& k = *s.mutable_kubernetes();
  k.set_namespace_("ml-vision");
  k.set_default_image("nvcr.io/nvidia/pytorch:24.05-py3");
  k.add_allowed_images("nvcr.io/nvidia/");
  k.add_allowed_images("ghcr.io/lab/");
  k.set_pod_template_json(R"({"metadata":{"labels":{"team":"vision"}},"spec":{"serviceAccountName":"trainer"}})");
  const std::string kube = queue_detail(q);
  INFO(kube);
  CHECK(kube.find("Kubernetes:  namespace ml-vision\n"
                  "             defaultImage nvcr.io/nvidia/pytorch:24.05-py3\n"
                  "             allowedImages nvcr.io/nvidia/, ghcr.io/lab/\n"
                  "             podTemplate {\"metadata\":{\"labels\":{\"team\":\"vision\"}~ (81 bytes)\n") !=
        std::string::npos);
  check_lines_fit(kube);
  // No guardrails, everyone submits; an empty submitters list is admins only.
  v1::QueueStatus open;
  open.mutable_spec()->set_name("open");
  CHECK(queue_detail(open).find("Limits:      (none)\n") != std::string::npos);
  CHECK(queue_detail(open).find("Submitters:  everyone\n") != std::string::npos);
  CHECK(queue_detail(open).find("  (none: it borrows whatever its cohort lends)\n") != std::string::npos);
  open.mutable_spec()->mutable_submitters();
  CHECK(queue_detail(open).find("Submitters:  gpuqd's admins only\n") != std::string::npos);
}

TEST_CASE("usage: CSV with a header row and RFC 4180 quoting; tables within 80 columns, a total, cost only with prices") {
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("two\nlines") == "\"two\nlines\"");
  CHECK(csv_field("cr\r") == "\"cr\r\"");
  CHECK(csv_field("") == "");

  v1::UsageResponse r;
  r.set_since(0);
  r.set_until(1'700'003'600);
  r.set_by(v1::USAGE_BY_QUEUE);
  r.set_currency("US$,\"x\"");
  auto* a = r.add_rows();
  a->set_key("research");
  a->set_gpu_hours(12.5);
  a->set_gpu_hours_lost(0.25);
  a->set_succeeded(3);
  a->set_failed(1);
  a->set_unfinished(2);
  a->set_waited(4);
  a->set_wait_p50_seconds(90);
  a->set_wait_p90_seconds(7200);
  a->set_cost(31.25);
  auto* b = r.add_rows();
  b->set_key("a-queue-with-a-rather-long-name-that-does-not-fit");
  b->set_gpu_hours(1);
  b->set_cancelled(1);  // no cost: a flavor it used has no price

  const std::string csv = usage_csv(r);
  CHECK(csv ==
        "queue,gpu_hours,gpu_hours_lost,succeeded,failed,cancelled,unfinished,waited,wait_p50_seconds,"
        "wait_p90_seconds,cost,currency,gpu_util_percent\n"
        "research,12.500000,0.250000,3,1,0,2,4,90,7200,31.250000,\"US$,\"\"x\"\"\",\n"
        "a-queue-with-a-rather-long-name-that-does-not-fit,1.000000,0.000000,0,0,1,0,0,,,,,\n");

  const std::string table = usage_table(r, false);
  check_lines_fit(table);
  INFO(table);
  CHECK(table.find("From the beginning to 2023-11-14T23:13:20Z, by queue\n") == 0);
  CHECK(table.find("\nQUEUE                 GPU-HOURS  LOST  JOBS S/F/C/U  WAIT P50/P90  COST(US$,\"x\")\n") !=
        std::string::npos);
  CHECK(table.find("\nresearch              12.50      0.25  3/1/0/2       90s/2h        31.25\n") != std::string::npos);
  CHECK(table.find("\na-queue-with-a-rath~  1.00") != std::string::npos);  // the name gives way
  CHECK(table.find("TOTAL") != std::string::npos);
  CHECK(table.find("13.50      0.25  3/1/1/2       -             -") != std::string::npos);  // no cost sum
  const std::string wide = usage_table(r, true);
  CHECK(wide.find("SUCCEEDED  FAILED  CANCELLED  UNFINISHED  WAITED  WAIT-P50  WAIT-P90  COST(US$,\"x\")") !=
        std::string::npos);
  CHECK(wide.find("a-queue-with-a-rather-long-name-that-does-not-fit") != std::string::npos);

  // Without prices no row has a cost: no cost column.
  r.mutable_rows(0)->clear_cost();
  CHECK(usage_table(r, false).find("COST") == std::string::npos);

  v1::UsageResponse jobs;
  jobs.set_by(v1::USAGE_BY_JOB);
  jobs.set_until(1'700'003'600);
  auto* j = jobs.add_rows();
  j->set_key("j7");
  j->set_queue("research");
  j->set_user("alice");
  j->set_flavor("h100");
  j->set_state(v1::JOB_STATE_RUNNING);
  j->set_gpu_hours(2);
  j->set_waited(1);
  j->set_wait_p50_seconds(30);
  j->set_wait_p90_seconds(30);
  const std::string job_table = usage_table(jobs, false);
  INFO(job_table);
  CHECK(job_table.find("\nJOB    QUEUE     USER   STATE    GPU-HOURS  LOST  WAIT\n") != std::string::npos);
  CHECK(job_table.find("\nj7     research  alice  Running  2.00       0.00  30s\n") != std::string::npos);
  CHECK(job_table.find("\nTOTAL                            2.00       0.00\n") != std::string::npos);
  CHECK(usage_csv(jobs).find("job,queue,user,flavor,state,gpu_hours") == 0);
  CHECK(usage_csv(jobs).find("\nj7,research,alice,h100,Running,2.000000,") != std::string::npos);
}
