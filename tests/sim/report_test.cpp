// report.html: the document itself (self-contained, escaped, the data round-trips), then the
// real thing: headless Chromium loads it, runs its script and we read the drawn DOM back.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "sim/report.hpp"

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kHostile = "</script><b>bold</b>";

json::object stats(double scale) {
  return {{"mean", 1.5 * scale},
          {"p50", 0.0},
          {"p95", 40 * scale},
          {"p99", 900 * scale},
          {"max", 4000 * scale}};
}

json::object queue(const std::string& name, int jobs, double scale) {
  json::array cdf;
  if (jobs > 0)
    cdf = {json::array{0, 0.4}, json::array{30, 0.6}, json::array{300 * scale, 0.8},
           json::array{3600 * scale, 0.95}, json::array{20000 * scale, 1.0}};
  return {{"name", name},
          {"jobs", jobs},
          {"finished", jobs},
          {"wait", stats(scale)},
          {"completion", stats(10 * scale)},
          {"preemptions", jobs / 10},
          {"gpu_hours_used", jobs * 0.5},
          {"gpu_hours_lost", jobs * 0.01},
          {"entitlement", 0.5},
          {"share", 0.4},
          {"share_vs_entitlement", 0.8},
          {"wait_cdf", cdf}};
}

// A summary as sim/replay.hpp writes it: `points` timeline samples 10 minutes apart.
json::value summary(const std::string& label, const std::vector<std::string>& names, int points,
                    double scale = 1) {
  json::array t, capacity, alloc, frag;
  json::object gpu, pending;
  for (const std::string& q : names) gpu[q] = json::array(), pending[q] = json::array();
  for (int i = 0; i < points; ++i) {
    t.push_back(i * 600);
    capacity.push_back(80 * scale);
    alloc.push_back(0.8), frag.push_back(0.05);
    for (std::size_t k = 0; k < names.size(); ++k) {
      gpu[names[k]].as_array().push_back(scale * static_cast<double>((i * (k + 3)) % 25));
      pending[names[k]].as_array().push_back(static_cast<int>((i + 7 * k) % 13));
    }
  }
  json::array queues;
  for (std::size_t k = 0; k < names.size(); ++k)
    queues.push_back(
        queue(names[k], k + 1 == names.size() ? 0 : 100 * static_cast<int>(k + 1), scale));
  json::object overall = queue("", 1000, scale);
  overall.erase("name"), overall.erase("wait_cdf");
  overall["unfinished"] = 0;
  overall["gpu_utilization_mean"] = 0.8, overall["alloc_ratio_mean"] = 0.85;
  overall["fragmentation_mean"] = 0.02, overall["jain_index"] = 0.97;
  overall["makespan"] = points * 600;
  return json::object{{"variant", label},
                      {"policy", "pack"},
                      {"queues_file", "a.yaml"},
                      {"cluster", {{"nodes", 10}, {"gpus", 80}}},
                      {"jobs", 1000},
                      {"events", 2000},
                      {"wall_seconds", 0.5},
                      {"events_per_second", 4000.0 * scale},
                      {"overall", overall},
                      {"queues", queues},
                      {"timeline",
                       {{"t", t},
                        {"capacity_gpu", capacity},
                        {"gpu_by_queue", gpu},
                        {"pending_by_queue", pending},
                        {"alloc_ratio", alloc},
                        {"fragmentation", frag}}}};
}

std::vector<json::value> two_variants() {
  return {summary("pack + a.yaml", {"research", "prod", "batch"}, 50),
          summary("spread + a.yaml", {"prod", kHostile, "idle"}, 50)};
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1))
    ++n;
  return n;
}

struct Output {
  std::string out;
  int exit_code = -1;  // -1: did not run or did not exit normally
};

Output run(const std::string& command) {
  Output r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, n);
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

// The DOM after Chromium ran the page's script, from a private temp dir removed afterwards.
std::string rendered_dom(const std::string& html) {
  std::string chromium = run("command -v chromium 2>/dev/null").out;
  while (!chromium.empty() && (chromium.back() == '\n' || chromium.back() == '\r'))
    chromium.pop_back();
  if (chromium.empty())
    FAIL(
        "chromium is not on PATH; scripts/deps.sh installs it (the report test needs a real "
        "browser)");
  std::string pattern = (fs::temp_directory_path() / "gpuq-report-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  const fs::path dir = pattern;
  std::ofstream(dir / "report.html") << html;
  const Output dom = run("timeout 60 '" + chromium +
                         "' --headless --no-sandbox --disable-gpu --disable-dev-shm-usage"
                         " --no-first-run --virtual-time-budget=5000 --user-data-dir='" +
                         (dir / "profile").string() + "' --dump-dom 'file://" +
                         (dir / "report.html").string() + "' 2>/dev/null");
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  CHECK_MESSAGE(dom.exit_code == 0, "chromium exited " << dom.exit_code << " (124: timed out)");
  return dom.out;
}

// The drawn page: from <body> to the embedded data (the scripts' own text mentions "<svg").
std::string drawn(const std::string& dom) {
  const auto from = dom.find("<body");
  if (from == std::string::npos) return {};
  return dom.substr(from, dom.find("id=\"gpuq-data\"") - from);
}

std::string attribute(const std::string& dom, const std::string& name) {
  const std::string key = name + "=\"";
  const auto body = dom.find("<body");
  const auto at = body == std::string::npos ? body : dom.find(key, body);
  if (at == std::string::npos) return "(no " + name + ")";
  const auto from = at + key.size();
  return dom.substr(from, dom.find('"', from) - from);
}

}  // namespace

TEST_CASE("the report is one self-contained document") {
  const std::string html = gpuq::sim::render_report(two_variants(), "gpuq sim run");
  CHECK(html.starts_with("<!DOCTYPE html>"));
  for (const char* outside : {"http://", "https://", "src=", "<link", "@import", "url("})
    CHECK_MESSAGE(html.find(outside) == std::string::npos, "found " << outside);
  CHECK(count(html, "<script") == 2);
  CHECK(count(html, "</script>") == 2);
}

TEST_CASE("the embedded data parses back to the summaries") {
  const auto summaries = two_variants();
  const std::string html = gpuq::sim::render_report(summaries, "t");
  const std::string open = "<script type=\"application/json\" id=\"gpuq-data\">";
  const auto from = html.find(open);
  REQUIRE(from != std::string::npos);
  const auto begin = from + open.size();
  const json::value data = json::parse(html.substr(begin, html.find("</script>", begin) - begin));
  CHECK(data.at("summaries") == json::value_from(summaries));
  CHECK(data.at("colors").as_object().size() == 5);  // research prod batch hostile idle
  CHECK(data.at("colors").at("prod").as_string() ==
        "#f28e2b");  // one color per queue in every variant
}

TEST_CASE("names from the summaries cannot inject markup") {
  const std::string html = gpuq::sim::render_report(two_variants(), "<i>title</i>");
  CHECK(html.find("<b>bold") == std::string::npos);
  CHECK(html.find("<i>title") == std::string::npos);
  CHECK(html.find("&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;") != std::string::npos);  // queue table
  CHECK(html.find("\\u003c/script\\u003e\\u003cb\\u003e") != std::string::npos);    // data
  CHECK(html.find("<title>&lt;i&gt;title&lt;/i&gt;</title>") != std::string::npos);
}

TEST_CASE("the tables hold a row per variant and per queue, formatted") {
  const std::string html = gpuq::sim::render_report(two_variants(), "t");
  CHECK(count(html, "<table") == 3);
  CHECK(html.find(">pack + a.yaml</a>") != std::string::npos);
  CHECK(html.find(">spread + a.yaml</a>") != std::string::npos);
  CHECK(html.find("<td class=\"n\">1,000</td>") != std::string::npos);  // jobs
  CHECK(html.find(">15.0 min</td>") != std::string::npos);              // wait p99: 900 s
  CHECK(html.find("<td class=\"n\">4,000</td>") != std::string::npos);  // events/s
  CHECK(count(html, "<tr><th scope=\"row\"><span class=\"sw\"") == 6);
}

TEST_CASE("a report needs at least one summary") {
  CHECK_THROWS_AS(gpuq::sim::render_report({}, "t"), std::invalid_argument);
}

TEST_CASE("chromium draws every chart of every variant") {
  const std::string dom = drawn(rendered_dom(gpuq::sim::render_report(two_variants(), "run")));
  INFO("page: " << dom.substr(0, dom.find("</h1>") + 200));
  CHECK(attribute(dom, "data-rendered") == "ok");
  CHECK(attribute(dom, "data-charts") == "6");
  CHECK(count(dom, "<svg") == 6);
  // Per variant: 3 stacked areas + capacity, 3 pending lines, a CDF per queue with jobs (2).
  CHECK(count(dom, "class=\"series\"") == 2 * (4 + 3 + 2));
  CHECK(dom.find("&lt;/script&gt;&lt;b&gt;bold") != std::string::npos);  // in the legend
  CHECK(dom.find("time (h)") != std::string::npos);
}

TEST_CASE("chromium draws a lone variant with no timeline, idle queues and huge numbers") {
  std::vector<json::value> one = {summary("empty", {"a", "b"}, 0, 1e18)};
  one[0].as_object()["queues"].as_array()[0].as_object()["wait_cdf"] = json::array();
  std::vector<json::value> huge = {summary("huge", {"a"}, 3, 1e18)};
  const std::string empty_dom = drawn(rendered_dom(gpuq::sim::render_report(one, "empty")));
  CHECK(attribute(empty_dom, "data-rendered") == "ok");
  CHECK(attribute(empty_dom, "data-charts") == "3");
  CHECK(count(empty_dom, "no timeline samples") == 2);
  CHECK(count(empty_dom, "no waits recorded") == 1);
  const std::string huge_dom = drawn(rendered_dom(gpuq::sim::render_report(huge, "huge")));
  CHECK(attribute(huge_dom, "data-rendered") == "ok");
  CHECK(attribute(huge_dom, "data-charts") == "3");
  CHECK(count(huge_dom, "NaN") == 0);
  CHECK(count(huge_dom, "class=\"series\"") == 2 + 1 + 0);  // "a" is the last queue: no jobs
}
