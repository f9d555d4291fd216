#include "sim/run_setup.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <boost/json.hpp>

#include "sim/csv.hpp"
#include "sim/report.hpp"
#include "sim/scenario.hpp"
#include "spec/yaml_read.hpp"

namespace gpuq::sim {
namespace {

namespace fs = std::filesystem;

using spec::Path;
using spec::SpecError;
using YamlNode = spec::yaml::Node;

// A YAML file whose top level is a map; its errors name the file, the line and the column.
spec::yaml::Document load_yaml(const std::string& path, const char* what) {
  spec::yaml::Document doc = spec::parse_document(csv::read_file(path), path);
  if (!doc.root().is_map())
    throw SpecError(std::string("expected a map with ") + what + " keys, got " + doc.root().shown(),
                    doc.root().mark())
        .from_source(path);
  return doc;
}

bool is_yaml(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".yaml" || ext == ".yml";
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--cluster " + path + ": cannot open the file");
  std::string line;
  std::getline(in, line);
  return line;
}

std::vector<NodeSpec> read_yaml_cluster(const std::string& path, ResourceNames& names) {
  const spec::yaml::Document doc = load_yaml(path, "cluster");
  return spec::read_document(doc, path, [&] {
    const YamlNode nodes = doc.root().find("nodes");
    if (!nodes.is_list() || nodes.size() == 0)
      throw SpecError("nodes: is required; list the cluster's nodes (name, flavor, capacity)");
    std::vector<NodeSpec> out;
    std::set<std::string> seen;
    Path at;
    Path::Key k(at, "nodes");
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      Path::Index ni(at, i);
      out.push_back(spec::read_node(nodes.item(i), at, names));
      if (!seen.insert(out.back().name).second) {
        Path::Key nk(at, "name");
        spec::fail_at(nodes.item(i).find("name"), at, "\"" + out.back().name + "\" is listed twice");
      }
    }
    return out;
  });
}

// YAML by its extension; otherwise a CSV by its header's column names (a Tiresias spec or the
// openb node list), and YAML again when the first line is neither.
std::vector<NodeSpec> read_cluster(const RunOptions& o, ResourceNames& names) {
  if (is_yaml(o.cluster)) return read_yaml_cluster(o.cluster, names);
  std::string header = first_line(o.cluster);
  if (header.starts_with("\xEF\xBB\xBF")) header.erase(0, 3);
  if (!header.empty() && header.back() == '\r') header.pop_back();
  std::set<std::string> columns;
  std::stringstream fields(header);
  for (std::string f; std::getline(fields, f, ',');) columns.insert(f);
  if (columns.contains("num_switch")) return read_tiresias_cluster(o.cluster, o.flavor);
  if (columns.contains("sn") && columns.contains("gpu")) {
    TraceReadReport report;
    return openb_nodes_as_specs(read_openb_nodes(o.cluster, {o.skip_bad_rows}, &report), o.flavor);
  }
  try {
    return read_yaml_cluster(o.cluster, names);
  } catch (const SpecError&) {
    throw std::invalid_argument("--cluster " + o.cluster +
                                ": not a cluster file; give YAML with nodes: (the scenario keys), the "
                                "openb node list CSV (sn,cpu_milli,memory_mib,gpu,model) or a Tiresias "
                                "cluster spec CSV (num_switch,...); the first line is \"" +
                                header.substr(0, 80) + "\"");
  }
}

struct QueueConfig {
  std::string file;  // "" for the default queues
  EngineConfig config;
  bool placement_set = false;
  std::vector<QueueSpec> queues;
};

QueueConfig read_queue_file(const std::string& path, ResourceNames& names) {
  QueueConfig c;
  c.file = path;
  const spec::yaml::Document doc = load_yaml(path, "queue");
  spec::read_document(doc, path, [&] {
    const YamlNode root = doc.root();
    Path at;
    spec::for_each_key(root, at, {"queues", "fairSharing", "topology", "priorityClasses", "placement", "nodeReservation", "nodes"},
                       [](std::string_view, YamlNode) {});
    static_cast<SchedulingPolicy&>(c.config) = spec::read_policy(root, at);
    if (YamlNode classes = root.find("priorityClasses")) {  // checked; a trace's priorities are numbers
      Path::Key k(at, "priorityClasses");
      (void)spec::read_priority_classes(classes, at);
    }
    c.placement_set = static_cast<bool>(root.find("placement"));
    const YamlNode queues = root.find("queues");
    if (!queues.is_list() || queues.size() == 0)
      throw SpecError("queues: is required; list the queues (name, cohort, weight, quotas, preemption)");
    std::set<std::string> seen;
    Path::Key k(at, "queues");
    for (std::size_t i = 0; i < queues.size(); ++i) {
      Path::Index qi(at, i);
      c.queues.push_back(spec::read_queue(queues.item(i), at, names));
      if (!seen.insert(c.queues.back().name.value).second) {
        Path::Key nk(at, "name");
        spec::fail_at(queues.item(i).find("name"), at, "\"" + c.queues.back().name.value + "\" is listed twice");
      }
    }
  });
  return c;
}

// Without a queue file: one queue per tenant of the trace (or q0..qN-1 for round-robin and
// hash), no quota, weight 1: they share the cluster by DRF.
QueueConfig default_queues(const RunOptions& o, const std::vector<TraceJob>& jobs) {
  QueueConfig c;
  std::vector<std::string> names;
  if (o.assign == QueueRule::kTrace) {
    std::set<std::string> tenants;
    for (const TraceJob& j : jobs)
      if (!j.tenant.empty()) tenants.insert(j.tenant);
    names.assign(tenants.begin(), tenants.end());
  } else {
    for (std::size_t i = 0; i < o.queue_count; ++i) names.push_back("q" + std::to_string(i));
  }
  for (const std::string& n : names) {
    QueueSpec q;
    q.name = QueueName(n);
    c.queues.push_back(std::move(q));
  }
  return c;
}

std::string join_names(const std::vector<QueueSpec>& queues) {
  std::string out;
  for (const QueueSpec& q : queues) out += (out.empty() ? "" : ", ") + q.name.value;
  return out;
}

}  // namespace

PreparedRuns prepare_runs(const RunOptions& o) {
  PreparedRuns prepared;
  const TraceFormat format = o.format ? *o.format : detect_trace_format(o.trace);
  const auto trace = std::make_shared<const std::vector<TraceJob>>(
      read_trace(o.trace, format, {o.skip_bad_rows}, &prepared.trace_report));
  ResourceNames names;
  const std::vector<NodeSpec> nodes = read_cluster(o, names);
  std::vector<NodeEvent> node_events;
  if (!o.node_events.empty()) {
    node_events = read_node_events(o.node_events);
    std::set<std::string> node_names;
    for (const NodeSpec& n : nodes) node_names.insert(n.name);
    for (const NodeEvent& e : node_events)
      if (!node_names.contains(e.node))
        throw std::invalid_argument(o.node_events + ": the event at " + std::to_string(e.at) + " names node \"" +
                                    e.node + "\", which is not in the cluster " + o.cluster);
  }

  std::vector<QueueConfig> configs;
  for (const std::string& f : o.queue_files) configs.push_back(read_queue_file(f, names));
  if (configs.empty()) configs.push_back(default_queues(o, *trace));

  for (const QueueConfig& c : configs) {
    auto jobs = std::make_shared<std::vector<TraceJob>>(*trace);
    std::vector<std::string> targets;
    for (const QueueSpec& q : c.queues) targets.push_back(q.name.value);
    try {
      assign_queues(*jobs, o.assign, targets);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(o.trace + ": " + e.what());
    }
    const std::set<std::string> known(targets.begin(), targets.end());
    for (const TraceJob& j : *jobs)
      if (!known.contains(j.queue))
        throw std::invalid_argument("job " + j.id + " of the trace goes to queue \"" + j.queue + "\", which " +
                                    (c.file.empty() ? std::string("is not a queue") : c.file + " does not define") +
                                    "; the queues are " + join_names(c.queues) +
                                    " (or use --assign round-robin or --assign hash)");
    std::vector<PlacementPolicy> policies = o.policies;
    if (policies.empty()) policies.push_back(c.config.placement);
    for (PlacementPolicy p : policies) {
      ReplayInput in;
      in.label = to_string(p);
      if (o.queue_files.size() > 1) in.label += " + " + fs::path(c.file).filename().string();
      in.queues_file = c.file;
      in.config = c.config;
      in.config.placement = p;
      in.names = names;
      in.queues = c.queues;
      in.nodes = nodes;
      in.jobs = jobs;
      in.node_events = node_events;
      in.grace_period = o.grace_period;
      in.timeline_points = o.timeline_points;
      prepared.variants.push_back(std::move(in));
    }
  }
  return prepared;
}

void write_file(const std::string& path, const std::string& text) {
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) throw std::runtime_error(parent.string() + ": cannot create the folder (" + ec.message() + ")");
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(path + ": cannot write the file");
}

std::string variant_slug(const std::string& label) {
  std::string out;
  for (char c : label) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    if (keep) out += c;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  for (const char* ext : {"-yaml", "-yml"})
    if (out.ends_with(ext)) out.resize(out.size() - std::string(ext).size());
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "variant" : out;
}

std::vector<std::string> write_outputs(const std::string& dir, const std::vector<ReplayInput>& variants,
                                       const std::vector<ReplayResult>& results) {
  std::vector<std::string> written;
  auto write = [&](const fs::path& path, const std::string& text) {
    write_file(path.string(), text);
    written.push_back(path.string());
  };
  const fs::path root(dir);
  std::vector<boost::json::value> summaries;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const fs::path at = variants.size() == 1 ? root : root / variant_slug(variants[i].label);
    write(at / "jobs.csv", jobs_csv(variants[i], results[i]));
    write(at / "summary.json", to_pretty_json(results[i].summary));
    summaries.push_back(results[i].summary);
  }
  write(root / "report.html", render_report(summaries, "gpuq sim run"));
  return written;
}

std::string comparison_table(const std::vector<ReplayResult>& results) {
  std::string out;
  int width = 7;
  for (const ReplayResult& r : results)
    width = std::min(200, std::max(width, static_cast<int>(r.summary.at("variant").as_string().size())));
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %9s %9s %10s %10s %12s %7s %9s %6s\n", width, "VARIANT", "JOBS",
                "FINISHED", "WAIT_P50", "WAIT_P95", "COMPL_P50", "ALLOC", "PREEMPT", "JAIN");
  out += line;
  for (const ReplayResult& r : results) {
    const auto& s = r.summary.as_object();
    const auto& o = s.at("overall").as_object();
    auto num = [](const boost::json::value& v) { return v.to_number<double>(); };
    std::snprintf(line, sizeof line, "%-*s %9lld %9lld %9.0fs %9.0fs %11.0fs %6.1f%% %9lld %6.3f\n",
                  width, std::string(s.at("variant").as_string()).substr(0, 200).c_str(),
                  static_cast<long long>(o.at("jobs").to_number<std::int64_t>()),
                  static_cast<long long>(o.at("finished").to_number<std::int64_t>()),
                  num(o.at("wait").at("p50")), num(o.at("wait").at("p95")),
                  num(o.at("completion").at("p50")), 100.0 * num(o.at("alloc_ratio_mean")),
                  static_cast<long long>(o.at("preemptions").to_number<std::int64_t>()),
                  num(o.at("jain_index")));
    out += line;
  }
  return out;
}

}  // namespace gpuq::sim
