// report.html: the document itself (self-contained, escaped, the data round-trips), then the
// real thing: headless Chromium loads it, runs its script and we read the drawn DOM back.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
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
// `width` > 0 sets the window's width in CSS pixels (headless Chromium keeps it at 500 or more).
std::string rendered_dom(const std::string& html, int width = 0) {
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
  const Output dom =
      run("timeout 60 '" + chromium +
          "' --headless --no-sandbox --disable-gpu --disable-dev-shm-usage"
          " --no-first-run --virtual-time-budget=5000" +
          (width > 0 ? " --window-size=" + std::to_string(width) + ",900" : "") +
          " --user-data-dir='" + (dir / "profile").string() + "' --dump-dom 'file://" +
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

// The JSON the page embeds for its script.
json::value embedded_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"gpuq-data\">";
  const auto from = html.find(open);
  REQUIRE(from != std::string::npos);
  const auto begin = from + open.size();
  return json::parse(html.substr(begin, html.find("</script>", begin) - begin));
}

// The text from `from` up to the next `to` after it; empty when `from` is absent.
std::string between(const std::string& s, const std::string& from, const std::string& to,
                    std::size_t start = 0) {
  const auto at = s.find(from, start);
  if (at == std::string::npos) return {};
  return s.substr(at, s.find(to, at) - at);
}

// ---- CIE76 color difference, for the queue colors ----

using Rgb = std::array<double, 3>;  // 0..255 each
using Lab = std::array<double, 3>;

// "#rrggbb" or "hsl(h,s%,l%)" (what the report emitted before every color became #rrggbb).
Rgb parse_color(const std::string& css) {
  if (css.size() == 7 && css[0] == '#')
    return {static_cast<double>(std::stoi(css.substr(1, 2), nullptr, 16)),
            static_cast<double>(std::stoi(css.substr(3, 2), nullptr, 16)),
            static_cast<double>(std::stoi(css.substr(5, 2), nullptr, 16))};
  double h = 0, s = 0, l = 0;
  REQUIRE_MESSAGE(std::sscanf(css.c_str(), "hsl(%lf,%lf%%,%lf%%)", &h, &s, &l) == 3,
                  "not a color: " << css);
  s /= 100, l /= 100;
  const double c = (1 - std::fabs(2 * l - 1)) * s;
  const double hp = std::fmod(h, 360) / 60;
  const double x = c * (1 - std::fabs(std::fmod(hp, 2) - 1));
  Rgb rgb = hp < 1   ? Rgb{c, x, 0}
            : hp < 2 ? Rgb{x, c, 0}
            : hp < 3 ? Rgb{0, c, x}
            : hp < 4 ? Rgb{0, x, c}
            : hp < 5 ? Rgb{x, 0, c}
                     : Rgb{c, 0, x};
  for (double& v : rgb) v = std::round((v + l - c / 2) * 255);
  return rgb;
}

// sRGB (D65) to CIELAB.
Lab to_lab(const Rgb& rgb) {
  std::array<double, 3> lin{};
  for (int i = 0; i < 3; ++i) {
    const double v = rgb[i] / 255;
    lin[i] = v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  }
  const double x = 0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2];
  const double y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  const double z = 0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2];
  const auto f = [](double t) {
    constexpr double d = 6.0 / 29;
    return t > d * d * d ? std::cbrt(t) : t / (3 * d * d) + 4.0 / 29;
  };
  const double fx = f(x / 0.95047), fy = f(y), fz = f(z / 1.08883);
  return {116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)};
}

double delta_e(const Lab& a, const Lab& b) {
  return std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
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
  const json::value data = embedded_data(gpuq::sim::render_report(summaries, "t"));
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

TEST_CASE("forty queues get forty colors no two of which look alike") {
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) names.push_back("q" + std::to_string(i));
  const json::value data =
      embedded_data(gpuq::sim::render_report({summary("many", names, 2)}, "t"));
  const json::object& colors = data.at("colors").as_object();
  REQUIRE(colors.size() == 40);
  CHECK(colors.at("q1").as_string() == "#f28e2b");  // the palette comes first, unchanged
  std::vector<std::pair<std::string, Lab>> labs;
  for (const auto& [name, color] : colors) {
    const std::string css(color.as_string());
    CHECK_MESSAGE(css.size() == 7, name << " is " << css << ", not #rrggbb");
    labs.emplace_back(name, to_lab(parse_color(css)));
  }
  // The Tableau palette's own closest pair (#76b7b2, #bab0ac) is 25.9 apart; golden-angle hues
  // came within 5.3 of each other by 40 queues.
  double closest = 1e9;
  std::string pair;
  for (std::size_t i = 0; i < labs.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (const double d = delta_e(labs[i].second, labs[j].second); d < closest)
        closest = d, pair = labs[j].first + " and " + labs[i].first;
  CHECK_MESSAGE(closest >= 15, pair << " are only " << closest << " apart (CIE76)");
}

TEST_CASE("chromium at a narrow window: the tables scroll by themselves, the page does not") {
  const std::string wide = "queue_name_with_no_place_to_break_the_line_0123456789";
  std::vector<json::value> variants = {
      summary("variant_label_with_no_place_to_break_it_either_0123456789",
              {wide + "_a", wide + "_b", "prod"}, 20, 1e9),
      summary("spread", {wide + "_a", "prod"}, 20, 1e12)};
  variants[0].as_object()["queues_file"] =
      "/a/long/path/to/a_queue_file_with_no_spaces_0123456789.yaml";
  // Measured once everything has drawn: the page's width against the window's, and against the
  // viewport's without a vertical scrollbar (clientWidth), which is what the page must fit.
  const std::string measure =
      "<script>addEventListener('load', function () {"
      " document.body.dataset.scrollWidth = document.documentElement.scrollWidth;"
      " document.body.dataset.clientWidth = document.documentElement.clientWidth;"
      " document.body.dataset.innerWidth = window.innerWidth; });</script>";
  const std::string dom =
      drawn(rendered_dom(gpuq::sim::render_report(variants, "narrow") + measure, 420));
  CHECK(attribute(dom, "data-rendered") == "ok");
  const int inner = std::atoi(attribute(dom, "data-inner-width").c_str());
  const int client = std::atoi(attribute(dom, "data-client-width").c_str());
  const int scroll = std::atoi(attribute(dom, "data-scroll-width").c_str());
  CHECK_MESSAGE((inner > 0 && inner < 700), "the window is " << inner << " px wide");
  CHECK_MESSAGE((client > 0 && client <= inner), "the viewport is " << client << " px wide");
  CHECK_MESSAGE(scroll <= client,
                "the page is " << scroll << " px wide in a " << client << " px viewport");
}

TEST_CASE("a summary without events says so instead of printing dashes") {
  json::value none = summary("none", {"a"}, 0);
  none.as_object().erase("events");
  none.as_object().erase("wall_seconds");
  json::value zero = summary("zero", {"a"}, 0);
  zero.as_object()["events"] = 0;
  const std::string html = gpuq::sim::render_report({none, zero, summary("some", {"a"}, 2)}, "t");
  for (const char* id : {"variant-0", "variant-1"}) {
    const std::string meta =
        between(html, "<p class=\"meta\">", "</p>", html.find(std::string("id=\"") + id));
    INFO(std::string(id) << ": " << meta);
    CHECK(meta.find("no events") != std::string::npos);
    CHECK(meta.find("\u2013") == std::string::npos);  // no en dash for a missing number
    CHECK(meta.find(" in ") == std::string::npos);
    CHECK(meta.find("10 nodes, 80 GPUs") != std::string::npos);
  }
  const std::string some =
      between(html, "<p class=\"meta\">", "</p>", html.find("id=\"variant-2\""));
  CHECK_MESSAGE(some.find("2,000 events in 0.5 s, makespan 20.0 min") != std::string::npos, some);
}

TEST_CASE("later variants show each queue's difference from the first variant") {
  json::value before = summary("before", {"prod", "research"}, 3);
  json::value after = summary("after", {"prod", "idle"}, 3);
  json::object& prod = after.as_object()["queues"].as_array()[0].as_object();
  prod["jobs"] = 250;                                       // 100 before
  prod["wait"].as_object()["p50"] = 150;                    // 0 s before
  prod["gpu_hours_lost"] = 0.5;                             // 1.00 before
  after.as_object()["overall"].as_object()["jobs"] = 1200;  // 1,000 before
  const std::string html = gpuq::sim::render_report({before, after}, "t");

  const std::string first = between(html, "id=\"variant-0\"", "</section>");
  const std::string second = between(html, "id=\"variant-1\"", "</section>");
  CHECK(first.find("class=\"d\"") == std::string::npos);
  const std::string row = between(second, ">prod</th>", "</tr>");
  INFO("prod: " << row);
  CHECK(row.find(">250 <span class=\"d\">+150</span></td>") != std::string::npos);
  CHECK(row.find(">2.5 min <span class=\"d\">+2.5 min</span></td>") != std::string::npos);
  CHECK(row.find(">0.50 <span class=\"d\">\u22120.50</span></td>") != std::string::npos);
  CHECK(row.find(">0.500 <span class=\"d\">\u00b10.000</span></td>") != std::string::npos);
  CHECK(between(second, ">idle</th>", "</tr>").find("class=\"d\"") == std::string::npos);

  const std::string compare = between(html, "<table class=\"compare\">", "</table>");
  CHECK(between(compare, ">before</a>", "</tr>").find("class=\"d\"") == std::string::npos);
  CHECK(between(compare, ">after</a>", "</tr>").find(">1,200 <span class=\"d\">+200</span></td>") !=
        std::string::npos);
}
