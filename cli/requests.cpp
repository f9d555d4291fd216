#include "cli/requests.hpp"

#include <pwd.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <system_error>

#include "api/to_proto.hpp"
#include "scheduler/quantity.hpp"
#include "sim/spec_yaml.hpp"

namespace gpuq::cli {

namespace {

Quantity flag_quantity(const std::string& text, const char* flag, ResourceId r) {
  auto q = parse_quantity(text, scale_of(r));
  if (!q) throw UsageError(std::string(flag) + " \"" + text + "\": " + q.error());
  if (*q < 0) throw UsageError(std::string(flag) + " \"" + text + "\" must be >= 0");
  return *q;
}

std::optional<std::int64_t> to_int(const std::string& s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The current directory; UsageError when it cannot be had (e.g. it was removed).
std::filesystem::path current_dir(const std::string& what) {
  std::error_code ec;
  std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec)
    throw UsageError("cannot get the current directory for " + what + ": " + ec.message() +
                     "; give an absolute --workdir");
  return cwd;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

}  // namespace

v1::SubmitJobRequest submit_request_from_flags(const SubmitFlags& f) {
  if (f.queue.empty()) throw UsageError("--queue is required (or give a job file with -f)");
  if (f.replicas < 1)
    throw UsageError("--replicas " + std::to_string(f.replicas) + " must be >= 1");
  JobSpec spec;
  spec.id = JobId(f.id);
  spec.queue = QueueName(f.queue);
  spec.name = f.name;
  spec.owner = f.owner;
  PodSet pods;
  pods.name = "main";
  pods.count = f.replicas;
  if (!f.gpus.empty()) {
    pods.per_pod[kGpu] = flag_quantity(f.gpus, "--gpus", kGpu);
    if (!is_valid_gpu_request(pods.per_pod[kGpu]))
      throw UsageError("--gpus \"" + f.gpus +
                       "\": a pod takes a share of one GPU (below 1) or whole GPUs");
  }
  if (!f.cpu.empty()) pods.per_pod[kCpu] = flag_quantity(f.cpu, "--cpu", kCpu);
  if (!f.memory.empty()) pods.per_pod[kMemory] = flag_quantity(f.memory, "--memory", kMemory);
  spec.pod_sets.push_back(pods);
  spec.flavors = f.flavors;
  if (f.max_runtime < 0) throw UsageError("--max-runtime must be >= 0 seconds");
  if (f.max_runtime > 0) spec.max_runtime = f.max_runtime;
  spec.preemptible = f.preemptible.value_or(true);
  if (f.grace_period && *f.grace_period < 0) throw UsageError("--grace-period must be >= 0");
  spec.grace_period = f.grace_period.value_or(30);
  spec.exclusive = f.exclusive;

  v1::SubmitJobRequest req;
  *req.mutable_spec() = api::to_proto(spec, ResourceNames{});
  v1::JobSpec& out = *req.mutable_spec();
  out.set_priority(f.priority);  // as typed: the server resolves class names
  if (!f.preemptible) out.clear_preemptible();
  if (!f.grace_period) out.clear_grace_period_seconds();
  for (const std::string& kv : f.env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--env \"" + kv + "\": expected NAME=VALUE");
    (*out.mutable_env())[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (f.workdir.empty()) {
    if (!f.command.empty()) out.set_working_dir(current_dir("the working directory").string());
  } else if (std::filesystem::path(f.workdir).is_relative()) {
    out.set_working_dir((current_dir("--workdir \"" + f.workdir + "\"") / f.workdir).string());
  } else {
    out.set_working_dir(f.workdir);
  }
  for (const std::string& c : f.command) out.add_command(c);
  return req;
}

v1::LogsRequest logs_request(const std::string& id, std::int32_t pod, bool follow) {
  if (pod < 0) throw UsageError("--pod " + std::to_string(pod) + " must be >= 0");
  v1::LogsRequest req;
  req.set_id(id);
  req.set_pod(pod);
  req.set_follow(follow);
  return req;
}

v1::SubmitJobRequest submit_request_from_yaml(const std::string& text, const std::string& file,
                                              const std::string& default_owner) {
  YAML::Node node;
  try {
    node = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw sim::SpecError(file + ": " + e.what());
  }
  const std::string path = file + ": job";
  sim::require_map(node, path);
  sim::check_keys(
      node, path,
      {"id", "queue", "name", "owner", "priority", "pods", "flavors", "preemptible", "exclusive",
       "maxRuntime", "gracePeriod", "onNodeLoss", "command", "env", "workingDir"});
  // parse_job validates the shared keys (and names the field on error); it needs an id and an
  // integer priority, so give it placeholders and send the user's text instead.
  YAML::Node core = YAML::Clone(node);
  for (const char* key : {"onNodeLoss", "command", "env", "workingDir", "priority"})
    core.remove(key);
  if (!core["id"]) core["id"] = "placeholder";
  ResourceNames names;
  JobSpec spec = sim::parse_job(core, path, names, PriorityClasses{});
  if (!node["id"]) spec.id = JobId();
  if (spec.owner.empty()) spec.owner = default_owner;
  if (const auto& l = node["onNodeLoss"])
    spec.on_node_loss = sim::read_enum<NodeLossPolicy>(
        l, path + ".onNodeLoss",
        {{"Requeue", NodeLossPolicy::kRequeue}, {"Fail", NodeLossPolicy::kFail}});

  v1::SubmitJobRequest req;
  v1::JobSpec& out = *req.mutable_spec();
  out = api::to_proto(spec, names);
  out.set_priority(node["priority"] ? sim::read_string(node["priority"], path + ".priority") : "");
  if (!node["preemptible"]) out.clear_preemptible();
  if (!node["gracePeriod"]) out.clear_grace_period_seconds();
  if (const auto& c = node["command"]) {
    if (c.IsScalar()) {
      out.add_command(sim::read_string(c, path + ".command"));
    } else {
      sim::require_list(c, path + ".command");
      for (std::size_t i = 0; i < c.size(); ++i)
        out.add_command(sim::read_string(c[i], path + ".command[" + std::to_string(i) + "]"));
    }
  }
  if (const auto& env = node["env"]) {
    sim::require_map(env, path + ".env");
    for (const auto& kv : env) {
      const std::string k = kv.first.Scalar();
      if (k.empty()) throw sim::SpecError(path + ".env: a variable name is empty");
      (*out.mutable_env())[k] = sim::read_string(kv.second, path + ".env." + k);
    }
  }
  if (const auto& w = node["workingDir"])
    out.set_working_dir(sim::read_string(w, path + ".workingDir"));
  return req;
}

std::vector<std::string> split_yaml_documents(const std::string& text) {
  std::vector<std::string> docs;
  std::string current;
  bool has_content = false;
  auto flush = [&] {
    if (has_content) docs.push_back(current);
    current.clear();
    has_content = false;
  };
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (t == "---" && line.rfind("---", 0) == 0) {
      flush();
      continue;
    }
    if (t == "..." && line.rfind("...", 0) == 0) continue;  // end-of-document marker
    if (!t.empty() && t[0] != '#') has_content = true;
    current += line;
    current += '\n';
  }
  flush();
  return docs;
}

namespace {

void add_queue(const YAML::Node& n, const std::string& path, std::vector<ApplyItem>& out) {
  sim::require_map(n, path);
  // usageHistory is a scenario's snapshot of the past, not part of a queue's spec.
  if (n["usageHistory"])
    throw sim::SpecError(path + ".usageHistory: is only for scenario files; remove it");
  ResourceNames names;
  QueueSpec q = sim::parse_queue(n, path, names);
  out.push_back({api::to_proto(q, names), std::nullopt});
}

void add_node(const YAML::Node& n, const std::string& path, std::vector<ApplyItem>& out) {
  ResourceNames names;
  NodeSpec s = sim::parse_node(n, path, names);
  out.push_back({std::nullopt, api::to_proto(s, names)});
}

}  // namespace

std::vector<ApplyItem> parse_apply_file(const std::string& text, const std::string& file) {
  std::vector<ApplyItem> items;
  const auto docs = split_yaml_documents(text);
  if (docs.empty()) throw sim::SpecError(file + ": has no documents; expected queues: or nodes:");
  for (std::size_t d = 0; d < docs.size(); ++d) {
    const std::string where =
        file + (docs.size() > 1 ? ": document " + std::to_string(d + 1) : std::string()) + ": ";
    YAML::Node doc;
    try {
      doc = YAML::Load(docs[d]);
    } catch (const YAML::Exception& e) {
      throw sim::SpecError(where + e.what());
    }
    sim::require_map(doc, where + "document");
    if (doc["kind"]) {
      const std::string kind = sim::read_string(doc["kind"], where + "kind");
      YAML::Node spec = YAML::Clone(doc);
      spec.remove("kind");
      if (kind == "Queue")
        add_queue(spec, where + "queue", items);
      else if (kind == "Node")
        add_node(spec, where + "node", items);
      else
        throw sim::SpecError(where + "kind: \"" + kind + "\" is not allowed; use Queue or Node");
      continue;
    }
    sim::check_keys(doc, where + "document", {"queues", "nodes"});
    if (!doc["queues"] && !doc["nodes"])
      throw sim::SpecError(where + "document: expected queues:, nodes: or kind:");
    if (const auto& qs = doc["queues"]) {
      sim::require_list(qs, where + "queues");
      for (std::size_t i = 0; i < qs.size(); ++i)
        add_queue(qs[i], where + "queues[" + std::to_string(i) + "]", items);
    }
    if (const auto& ns = doc["nodes"]) {
      sim::require_list(ns, where + "nodes");
      for (std::size_t i = 0; i < ns.size(); ++i)
        add_node(ns[i], where + "nodes[" + std::to_string(i) + "]", items);
    }
  }
  return items;
}

std::int64_t parse_time_arg(const std::string& text, std::int64_t now) {
  if (text.empty()) return 0;
  if (auto v = to_int(text); v && *v >= 0) return *v;
  if (text.size() >= 3 && text[0] == '-') {
    auto n = to_int(text.substr(1, text.size() - 2));
    std::int64_t unit = 0;
    switch (text.back()) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      case 'w':
        unit = 7 * 86400;
        break;
      default:
        break;
    }
    if (n && *n >= 0 && unit > 0 && *n <= 100LL * 365 * 86400 / unit) return now - *n * unit;
  }
  if (text.size() == 10 && text[4] == '-' && text[7] == '-') {
    auto y = to_int(text.substr(0, 4));
    auto m = to_int(text.substr(5, 2));
    auto d = to_int(text.substr(8, 2));
    if (y && m && d && *y >= 1970 && *m >= 1 && *m <= 12 && *d >= 1 && *d <= 31) {
      std::tm tm{};
      tm.tm_year = static_cast<int>(*y - 1900);
      tm.tm_mon = static_cast<int>(*m - 1);
      tm.tm_mday = static_cast<int>(*d);
      const std::int64_t t = timegm(&tm);
      // timegm normalizes 2024-02-31 to March; refuse dates that do not exist.
      if (tm.tm_mday == *d && tm.tm_mon == *m - 1) return t;
    }
  }
  throw UsageError("time \"" + text +
                   "\": expected Unix seconds, a relative time such as -7d, -24h, -30m, or a "
                   "date YYYY-MM-DD (UTC)");
}

std::string resolve_server(const std::string& flag, const char* env) {
  if (!flag.empty()) return flag;
  if (env != nullptr && *env != '\0') return env;
  return kDefaultServer;
}

std::string current_user() {
  if (const char* u = std::getenv("USER"); u != nullptr && *u != '\0') return u;
  if (const passwd* pw = getpwuid(getuid()); pw != nullptr && pw->pw_name != nullptr)
    return pw->pw_name;
  return "unknown";
}

}  // namespace gpuq::cli
