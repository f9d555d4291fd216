#include "sim/trace.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

#include "spec/quantity.hpp"
#include "sim/csv.hpp"
#include "spec/validate.hpp"

namespace gpuq::sim {
namespace {

namespace fs = std::filesystem;
using csv::ColumnSpec;
using csv::CsvReader;
using csv::kNone;
using csv::shown;

constexpr std::int64_t kMaxSeconds = kMaxQuantity;
constexpr std::int64_t kMaxPods = 100000;  // the scenario format's limit on a pod set

const char* const kFormats = "formats: native, openb, philly, tiresias";
constexpr std::string_view kGpuAllowed =
    "per pod, a share of one GPU, \"1m\"..\"999m\" or \"0.5\", or whole GPUs: \"1\", \"2\", ...";

// One pod is a pod set "main"; more are one gang "worker", all placed or none.
std::vector<PodSet> pods_of(std::int64_t count, const ResourceVec& per_pod) {
  PodSet s;
  s.name = count == 1 ? "main" : "worker";
  s.count = static_cast<std::int32_t>(count);
  s.per_pod = per_pod;
  return {s};
}

// Whole GPUs only: the Philly and Tiresias traces ask for nothing else.
ResourceVec gpus_only(Quantity milli) {
  ResourceVec r;
  r[kGpu] = milli;
  return r;
}

const std::string& job_id(const TraceJob& j) { return j.id; }

void stable_sort_by_submit(std::vector<TraceJob>& jobs) {
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
}

// ---- native ---------------------------------------------------------------------------------

bool given(const CsvReader& row, std::size_t col) {
  return col != kNone && !row.field(col).empty();
}

// A Kubernetes quantity in 0..kMaxQuantity base units; 0 when the column is absent or empty.
Quantity quantity(const CsvReader& row, std::size_t col, UnitScale scale,
                  std::string_view allowed) {
  if (!given(row, col)) return 0;
  const std::string_view v = row.field(col);
  const Result<Quantity> q = parse_quantity(v, scale);
  const char* problem = !q                  ? " is not a quantity"
                        : *q < 0            ? " is negative"
                        : *q > kMaxQuantity ? " is too large"
                                            : nullptr;
  if (problem) row.fail(col, shown(v) + problem + " (allowed: " + std::string(allowed) + ")");
  return *q;
}

std::vector<TraceJob> parse_native(const std::string& text, const std::string& label,
                                   const TraceReadOptions& options, TraceReadReport* report) {
  static constexpr std::array<ColumnSpec, 11> kColumns{{{"id", false},
                                                        {"submit", true},
                                                        {"queue", true},
                                                        {"priority", false},
                                                        {"pods", false},
                                                        {"gpu", false},
                                                        {"cpu", false},
                                                        {"memory", false},
                                                        {"duration", true},
                                                        {"max_runtime", false},
                                                        {"checkpoint", false}}};
  CsvReader in(text, label);
  const auto c = in.header(kColumns);
  const auto row_job = [&c](const CsvReader& row) {
    TraceJob j;
    j.id = given(row, c[0]) ? std::string(row.field(c[0])) : "job-" + std::to_string(row.line());
    j.submit = row.count(c[1], kMaxSeconds, "seconds");
    try {  // the queue is named as every front end names one (spec/validate.hpp)
      spec::check_name(row.field(c[2]), spec::Path());
    } catch (const spec::SpecError& e) {
      row.fail(c[2], e.reason());
    }
    j.tenant = std::string(row.field(c[2]));
    if (given(row, c[3]))
      j.priority = static_cast<std::int32_t>(row.integer(c[3], INT32_MIN, INT32_MAX, ""));
    const std::int64_t pods = given(row, c[4]) ? row.integer(c[4], 1, kMaxPods, "pods") : 1;
    const Quantity gpu = quantity(row, c[5], UnitScale::kMilli, kGpuAllowed);
    if (!is_valid_gpu_request(gpu))
      row.fail(c[5], shown(row.field(c[5])) +
                         " is not a GPU request (allowed: " + std::string(kGpuAllowed) + ")");
    const Quantity cpu =
        quantity(row, c[6], UnitScale::kMilli, "cores per pod, e.g. \"2\", \"500m\", \"0.25\"");
    const Quantity memory =
        quantity(row, c[7], UnitScale::kUnit, "bytes per pod, e.g. \"16Gi\", \"512Mi\", \"1e9\"");
    j.duration = row.integer(c[8], 1, kMaxSeconds, "seconds");
    if (given(row, c[9])) j.max_runtime = row.integer(c[9], 1, kMaxSeconds, "seconds");
    if (given(row, c[10])) j.checkpoint_interval = row.count(c[10], kMaxSeconds, "seconds");
    ResourceVec per_pod;
    per_pod[kGpu] = gpu;
    per_pod[kCpu] = cpu;
    per_pod[kMemory] = memory;
    j.pod_sets = pods_of(pods, per_pod);
    return j;
  };
  return csv::read_rows<TraceJob>(in, c[0], options, report, row_job, job_id);
}

// ---- openb ----------------------------------------------------------------------------------

constexpr std::array<ColumnSpec, 2> kOpenbTimes{
    {{"creation_time", false}, {"deletion_time", false}}};
constexpr std::array<std::string_view, 2> kOpenbTimeUse{"for the pod's submit time",
                                                        "for when the pod ended"};

// The pods among `missing` (names) lack a time the replay needs. They are found again in the
// text for their line and column (openb.cpp keeps no line per pod; this pass runs only when some
// pod lacks a time): the first throws, or with skip_bad_rows each is counted.
void refuse_untimed(const std::string& text, const std::string& label,
                    std::unordered_set<std::string_view> missing, const TraceReadOptions& options,
                    TraceReadReport& counts) {
  CsvReader in(text, label);
  const auto c =
      in.header(std::array<ColumnSpec, 3>{{{"name", true}, kOpenbTimes[0], kOpenbTimes[1]}});
  while (!missing.empty() && in.next_line()) {
    try {
      in.split_row();
    } catch (const TraceError&) {
      continue;  // a malformed row: parse_openb_pods has refused it already
    }
    if (missing.erase(in.field(c[0])) == 0) continue;
    const std::size_t t = csv::is_absent(in.field(c[1])) ? 1 : 2;
    try {
      in.fail(c[t], shown(in.field(c[t])) + " is needed by gpuq sim run " +
                        std::string(kOpenbTimeUse[t - 1]) + " (allowed: whole seconds >= 0)");
    } catch (const TraceError& e) {
      if (!options.skip_bad_rows) throw;
      csv::note_skipped(counts, e.what());
    }
  }
}

std::vector<TraceJob> parse_openb(const std::string& text, const std::string& label,
                                  const TraceReadOptions& options, TraceReadReport* report) {
  {  // A list without the times (multigpu20) cannot be replayed at all: say so at once.
    CsvReader head(text, label);
    const auto t = head.header(kOpenbTimes);
    for (std::size_t i = 0; i < t.size(); ++i)
      if (t[i] == kNone)
        head.fail_header(kOpenbTimes[i].name,
                         "is missing; gpuq sim run needs it " + std::string(kOpenbTimeUse[i]));
  }
  TraceReadReport counts;
  const std::vector<OpenbPod> pods = parse_openb_pods(text, label, options, &counts);
  std::vector<TraceJob> jobs;
  jobs.reserve(pods.size());
  std::unordered_set<std::string_view> untimed;
  for (const OpenbPod& p : pods) {
    if (!p.creation_time || !p.deletion_time) {
      untimed.insert(p.name);
      continue;
    }
    TraceJob j;
    j.id = p.name;
    j.tenant = p.qos;
    j.submit = *p.creation_time;
    // A pod that was never scheduled ran (or waited) from creation to deletion.
    j.duration = std::max<Time>(1, *p.deletion_time - p.scheduled_time.value_or(*p.creation_time));
    j.pod_sets = pods_of(1, p.resources());
    j.pod_sets.front().where = p.where();  // gpu_spec: the GPU models it accepts
    jobs.push_back(std::move(j));
  }
  if (!untimed.empty()) refuse_untimed(text, label, std::move(untimed), options, counts);
  if (report) *report = std::move(counts);
  return jobs;
}

// ---- philly ---------------------------------------------------------------------------------

// Steps per second of each Gavel job type on V100s, for 1, 2, 4 and 8 GPUs (0: not measured),
// the "null" (running alone) entries of the "v100" section of Gavel's
// scheduler/oracle_throughputs_v2.json (github.com/stanford-futuredata/gavel), the file its Philly
// sweeps (scripts/sweeps/run_throughput_vs_latency_msr_trace.py) read by default.
struct JobTypeRates {
  std::string_view job_type;
  std::array<double, 4> steps_per_second;  // 1, 2, 4, 8 GPUs
};
constexpr std::array<JobTypeRates, 26> kV100Rates{{
    {"A3C", {7.17577, 0, 0, 0}},
    {"CycleGAN", {4.42609, 0, 0, 0}},
    {"LM (batch size 10)", {81.6516, 163.129, 121.478, 615.093}},
    {"LM (batch size 20)", {64.7425, 132.174, 110.997, 497.295}},
    {"LM (batch size 40)", {45.2374, 91.5927, 96.0312, 359.307}},
    {"LM (batch size 5)", {109.167, 185.724, 126.716, 698.773}},
    {"LM (batch size 80)", {28.24, 58.0915, 74.8073, 231.176}},
    {"Recommendation (batch size 1024)", {13.2826, 0, 0, 0}},
    {"Recommendation (batch size 2048)", {7.46963, 0, 0, 0}},
    {"Recommendation (batch size 4096)", {3.90605, 0, 0, 0}},
    {"Recommendation (batch size 512)", {23.3176, 0, 0, 0}},
    {"Recommendation (batch size 8192)", {2.84151, 0, 0, 0}},
    {"ResNet-18 (batch size 128)", {17.9949, 23.9854, 69.9505, 162.092}},
    {"ResNet-18 (batch size 16)", {32.3534, 100.142, 123.854, 382.597}},
    {"ResNet-18 (batch size 256)", {10.3003, 15.8828, 27.7821, 81.5066}},
    {"ResNet-18 (batch size 32)", {29.9472, 94.2489, 114.733, 340.038}},
    {"ResNet-18 (batch size 64)", {24.0932, 74.1359, 95.5881, 255.829}},
    {"ResNet-50 (batch size 128)", {2.49677, 4.22301, 7.02929, 10.2932}},
    {"ResNet-50 (batch size 16)", {11.3961, 13.8598, 23.1956, 27.7991}},
    {"ResNet-50 (batch size 32)", {7.78726, 10.8346, 13.7632, 24.0674}},
    {"ResNet-50 (batch size 64)", {4.39477, 7.92205, 9.45195, 17.3032}},
    {"Transformer (batch size 128)", {5.44611, 10.0692, 14.1745, 30.8835}},
    {"Transformer (batch size 16)", {11.0641, 14.1538, 20.085, 71.6517}},
    {"Transformer (batch size 256)", {1.59514, 2.88524, 4.76305, 9.71702}},
    {"Transformer (batch size 32)", {10.6209, 13.328, 22.8225, 63.9777}},
    {"Transformer (batch size 64)", {8.61776, 15.8765, 19.6596, 49.6507}},
}};

const JobTypeRates& job_type_rates(const CsvReader& row, std::size_t col) {
  for (const JobTypeRates& r : kV100Rates)
    if (r.job_type == row.field(col)) return r;
  std::string allowed;
  for (const JobTypeRates& r : kV100Rates)
    allowed += (allowed.empty() ? "" : ", ") + shown(r.job_type);
  row.fail(col,
           shown(row.field(col)) + " is not a job type Gavel measured (allowed: " + allowed + ")");
}

// Gavel's generator wrote total_steps = rate(job_type, scale_factor) * duration, with the rate
// measured at that scale; so duration = total_steps / rate. Where Gavel measured no rate for the
// scale (more than 8 GPUs, 3, 5..7, or a type it never ran on several GPUs), the rate of the
// largest measured scale below it grows linearly with the GPUs.
Time philly_duration(const JobTypeRates& r, std::int64_t steps, std::int64_t gpus) {
  std::size_t measured = 0;  // index into 1, 2, 4, 8 GPUs
  for (std::size_t i = 1; i < r.steps_per_second.size(); ++i)
    if (r.steps_per_second[i] > 0 && (std::int64_t{1} << i) <= gpus) measured = i;
  const double rate = r.steps_per_second[measured] * static_cast<double>(gpus) /
                      static_cast<double>(std::int64_t{1} << measured);
  const double seconds = std::ceil(static_cast<double>(steps) / rate);
  return std::clamp<Time>(static_cast<Time>(std::min(seconds, 1e18)), 1, kMaxSeconds);
}

// Fractional seconds ("6.000000"), rounded to the nearest whole second.
Time arrival_seconds(const CsvReader& row, std::size_t col) {
  const std::string_view v = row.field(col);
  double x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  const char* problem = ec != std::errc() || end != v.data() + v.size() || !std::isfinite(x)
                            ? " is not a number"
                        : x < 0                                ? " is negative"
                        : x > static_cast<double>(kMaxSeconds) ? " is too large"
                                                               : nullptr;
  if (problem)
    row.fail(col,
             shown(v) + problem + " (allowed: seconds from the trace's start, e.g. \"6.000000\")");
  return static_cast<Time>(std::llround(x));
}

std::vector<TraceJob> parse_philly(const std::string& text, const std::string& label,
                                   const TraceReadOptions& options, TraceReadReport* report) {
  const std::string vc = fs::path(label).stem().string();
  CsvReader in(text, label, {.separator = '\t', .quotes = false});
  in.name_columns({"job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps",
                   "arrival_time_s", "scale_factor"});
  const auto row_job = [&vc](const CsvReader& row) {
    const JobTypeRates& rates = job_type_rates(row, 0);
    const std::int64_t steps = row.count(4, kMaxQuantity, "steps");
    TraceJob j;
    j.submit = arrival_seconds(row, 5);
    const std::int64_t gpus = row.integer(6, 1, kMaxPods, "GPUs, one pod each");
    j.id = vc + "-" + std::to_string(row.line());
    j.tenant = vc;
    j.duration = philly_duration(rates, steps, gpus);
    j.pod_sets = pods_of(gpus, gpus_only(kMilliPerGpu));
    return j;
  };
  return csv::read_rows<TraceJob>(in, kNone, options, report, row_job, job_id);
}

std::vector<std::string> philly_files(const std::string& folder) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.path().extension() == ".trace" && e.is_regular_file(ec))
      files.push_back(e.path().string());
  if (ec) throw TraceError(folder + ": cannot list: " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

// ---- tiresias -------------------------------------------------------------------------------

std::vector<TraceJob> parse_tiresias(const std::string& text, const std::string& label,
                                     const TraceReadOptions& options, TraceReadReport* report) {
  static constexpr std::array<ColumnSpec, 4> kColumns{
      {{"job_id", true}, {"num_gpu", true}, {"submit_time", true}, {"duration", true}}};
  CsvReader in(text, label);
  const auto c = in.header(kColumns);
  const auto row_job = [&c](const CsvReader& row) {
    TraceJob j;
    j.id = std::string(row.field(c[0]));
    const std::int64_t gpus = row.integer(c[1], 1, kMaxPods, "GPUs, one pod each");
    j.submit = row.count(c[2], kMaxSeconds, "seconds");
    j.duration = row.integer(c[3], 1, kMaxSeconds, "seconds");
    j.pod_sets = pods_of(gpus, gpus_only(kMilliPerGpu));
    return j;
  };
  return csv::read_rows<TraceJob>(in, c[0], options, report, row_job, job_id);
}

// ---- format detection -----------------------------------------------------------------------

TraceFormat format_of_first_line(std::string line, const std::string& path) {
  if (line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);
  if (line.ends_with('\r')) line.pop_back();
  try {
    CsvReader head(line, path);
    head.header(std::array<ColumnSpec, 0>{});
    const auto has = [&head](std::string_view name) {
      return head.find_column(name, false) != kNone;
    };
    if (has("num_gpu") && has("submit_time")) return TraceFormat::kTiresias;
    if (has("num_gpu") && has("gpu_milli")) return TraceFormat::kOpenb;
    if (has("submit") && has("queue") && has("duration")) return TraceFormat::kNative;
  } catch (const TraceError&) {
    // Not a CSV header (a quote out of place, a name twice): perhaps philly's text.
  }
  if (std::count(line.begin(), line.end(), '\t') == 6) return TraceFormat::kPhilly;
  throw TraceError(path + ": cannot tell the trace format from its first line " + shown(line) +
                   ": native has the columns submit, queue and duration; openb num_gpu and "
                   "gpu_milli; tiresias num_gpu and submit_time; philly is 7 tab-separated fields "
                   "and no header (" +
                   kFormats + ")");
}

std::vector<TraceJob> parse_unsorted(const std::string& text, const std::string& label,
                                     TraceFormat format, const TraceReadOptions& options,
                                     TraceReadReport* report) {
  switch (format) {
    case TraceFormat::kNative:
      return parse_native(text, label, options, report);
    case TraceFormat::kOpenb:
      return parse_openb(text, label, options, report);
    case TraceFormat::kPhilly:
      return parse_philly(text, label, options, report);
    case TraceFormat::kTiresias:
      return parse_tiresias(text, label, options, report);
  }
  throw std::invalid_argument("unknown trace format");
}

std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char ch : s) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

const char* to_string(TraceFormat f) {
  switch (f) {
    case TraceFormat::kNative:
      return "native";
    case TraceFormat::kOpenb:
      return "openb";
    case TraceFormat::kPhilly:
      return "philly";
    case TraceFormat::kTiresias:
      return "tiresias";
  }
  return "?";
}

std::optional<TraceFormat> trace_format_named(const std::string& name) {
  for (const TraceFormat f :
       {TraceFormat::kNative, TraceFormat::kOpenb, TraceFormat::kPhilly, TraceFormat::kTiresias})
    if (name == to_string(f)) return f;
  return std::nullopt;
}

TraceFormat detect_trace_format(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (philly_files(path).empty())
      throw TraceError(path +
                       ": a folder with no *.trace file (a folder is read only as philly, "
                       "Gavel's per-VC *.trace files)");
    return TraceFormat::kPhilly;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  std::string line;
  std::getline(f, line);
  return format_of_first_line(std::move(line), path);
}

std::vector<TraceJob> read_trace(const std::string& path, TraceFormat format,
                                 const TraceReadOptions& options, TraceReadReport* report) {
  std::error_code ec;
  if (format != TraceFormat::kPhilly || !fs::is_directory(path, ec))
    return parse_trace(csv::read_file(path), path, format, options, report);
  const std::vector<std::string> files = philly_files(path);
  if (files.empty()) throw TraceError(path + ": a folder with no *.trace file");
  std::vector<TraceJob> jobs;
  TraceReadReport total;
  for (const std::string& file : files) {
    TraceReadReport one;
    std::vector<TraceJob> more = parse_philly(csv::read_file(file), file, options, &one);
    jobs.insert(jobs.end(), std::make_move_iterator(more.begin()),
                std::make_move_iterator(more.end()));
    total.rows += one.rows;
    total.skipped += one.skipped;
    for (std::string& m : one.first_errors)
      if (total.first_errors.size() < csv::kKeptErrors) total.first_errors.push_back(std::move(m));
  }
  stable_sort_by_submit(jobs);
  if (report) *report = std::move(total);
  return jobs;
}

std::vector<TraceJob> parse_trace(const std::string& text, const std::string& label,
                                  TraceFormat format, const TraceReadOptions& options,
                                  TraceReadReport* report) {
  std::vector<TraceJob> jobs = parse_unsorted(text, label, format, options, report);
  stable_sort_by_submit(jobs);
  return jobs;
}

std::vector<NodeSpec> read_tiresias_cluster(const std::string& path, const std::string& flavor) {
  static constexpr std::array<ColumnSpec, 5> kColumns{{{"num_switch", true},
                                                       {"num_node_p_switch", true},
                                                       {"num_gpu_p_node", true},
                                                       {"num_cpu_p_node", true},
                                                       {"mem_p_node", true}}};
  constexpr std::int64_t kMaxNodes = 100000;
  const std::string text = csv::read_file(path);
  CsvReader in(text, path);
  const auto c = in.header(kColumns);
  if (!in.next_line()) throw TraceError(path + ": no cluster row under the header (allowed: one)");
  in.split_row();
  const std::int64_t switches = in.integer(c[0], 1, kMaxNodes, "switches");
  const std::int64_t per_switch = in.integer(c[1], 1, kMaxNodes, "nodes per switch");
  if (switches * per_switch > kMaxNodes)
    in.fail_line(std::to_string(switches * per_switch) + " nodes (allowed: at most " +
                 std::to_string(kMaxNodes) + ")");
  const std::int64_t gpus = in.count(c[2], 255, "GPUs per node");
  const std::int64_t cores = in.count(c[3], kMaxQuantity / 1000, "cores per node");
  const std::int64_t gib = in.count(c[4], kMaxQuantity >> 30, "GiB per node");
  if (in.next_line()) in.fail_line("a second cluster row (allowed: one)");
  std::vector<NodeSpec> nodes;
  nodes.reserve(static_cast<std::size_t>(switches * per_switch));
  for (std::int64_t s = 0; s < switches; ++s) {
    const std::string sw = "s" + std::to_string(s);
    for (std::int64_t n = 0; n < per_switch; ++n) {
      NodeSpec node;
      node.name = sw;
      node.name.append("-n").append(std::to_string(n));
      node.flavor = flavor;
      node.capacity[kGpu] = gpus * kMilliPerGpu;
      node.capacity[kCpu] = cores * 1000;
      node.capacity[kMemory] = gib << 30;
      node.labels["switch"] = sw;
      nodes.push_back(std::move(node));
    }
  }
  return nodes;
}

std::optional<QueueRule> queue_rule_named(const std::string& name) {
  if (name == "trace") return QueueRule::kTrace;
  if (name == "round-robin") return QueueRule::kRoundRobin;
  if (name == "hash") return QueueRule::kHash;
  return std::nullopt;
}

void assign_queues(std::vector<TraceJob>& jobs, QueueRule rule,
                   const std::vector<std::string>& queues) {
  if (rule == QueueRule::kTrace) {
    for (TraceJob& j : jobs) {
      if (j.tenant.empty())
        throw std::invalid_argument("job \"" + j.id +
                                    "\" has no tenant in the trace to take its queue from; use "
                                    "--assign round-robin or --assign hash to spread the jobs "
                                    "over queues");
      j.queue = j.tenant;
    }
    return;
  }
  if (queues.empty())
    throw std::invalid_argument(std::string("--assign ") +
                                (rule == QueueRule::kHash ? "hash" : "round-robin") +
                                " needs at least one queue to assign jobs to");
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const std::size_t k =
        rule == QueueRule::kHash ? fnv1a64(jobs[i].id) % queues.size() : i % queues.size();
    jobs[i].queue = queues[k];
  }
}

}  // namespace gpuq::sim
