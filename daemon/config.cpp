#include "daemon/config.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <spdlog/spdlog.h>

#include "daemon/config_read.hpp"
#include "scheduler/engine.hpp"
#include "spec/guardrails.hpp"
#include "spec/limits.hpp"
#include "spec/validate.hpp"
#include "spec/yaml_read.hpp"

namespace gpuq::daemon {

namespace {

using spec::Path;
using spec::SpecError;
using spec::yaml::Node;

// A value that is one of `words`; the error lists them.
template <class T>
T one_of(Node v, Path& at, std::initializer_list<std::pair<std::string_view, T>> words) {
  const std::string text = spec::string_of(v, at);
  std::string names;
  for (const auto& [word, value] : words) {
    if (text == word) return value;
    names += (names.empty() ? "" : ", ") + std::string(word);
  }
  spec::fail_at(v, at, spec::quoted(text) + " is not allowed; use one of " + names);
}

binder::LocalConfig read_local(Node node, Path& at) {
  binder::LocalConfig l;
  spec::for_each_key(
      node, at, {"node", "flavor", "labels", "nvidiaSmi", "gpus", "model", "reserve", "logDir", "runDir", "shim",
                  "gpuSampleInterval", "gpuIdleThreshold", "cgroups", "cgroupVersion", "cgroupRoot",
                  "maxProcessesPerPod", "cpuset"},
      [&](std::string_view key, Node v) {
        if (key == "node") {
          l.node = spec::string_of(v, at);
        } else if (key == "flavor") {
          l.flavor = spec::string_of(v, at);
          if (l.flavor.empty()) spec::fail_at(v, at, "is empty; name the node's flavor");
        } else if (key == "labels") {
          l.labels = spec::string_map_of(v, at, spec::limits::kLabels, "labels");
          spec::located(v, at, [&] { spec::check_labels(l.labels, at); });
        } else if (key == "nvidiaSmi") {
          l.nvidia_smi = spec::string_of(v, at);
        } else if (key == "gpus") {
          const auto n = spec::int_of(v, at);
          if (n < 0 || n > spec::limits::kNodeGpus)
            spec::fail_at(v, at, std::to_string(n) + " is not allowed; use 0 to " +
                                     std::to_string(spec::limits::kNodeGpus));
          l.gpus = static_cast<int>(n);
        } else if (key == "model") {
          l.model = spec::string_of(v, at);
        } else if (key == "reserve") {
          spec::for_each_key(v, at, {"cpu", "memory"}, [&](std::string_view r, Node q) {
            if (r == "cpu") l.reserve_cpu = spec::quantity_of(q, kCpu, at);
            else l.reserve_memory = spec::quantity_of(q, kMemory, at);
          });
        } else if (key == "logDir") {
          l.log_dir = spec::string_of(v, at);
        } else if (key == "runDir") {
          l.run_dir = spec::string_of(v, at);
        } else if (key == "gpuSampleInterval") {
          l.gpu_sample_interval_ms = spec::text_of(v, at, "a duration such as 30s") == "0"
                                         ? 0
                                         : millis_of(v, at, 100, 3'600'000);
        } else if (key == "gpuIdleThreshold") {
          const auto t = spec::int_of(v, at);
          if (t < 0 || t > 100) spec::fail_at(v, at, std::to_string(t) + " is not allowed; use a percentage 0 to 100");
          l.gpu_idle_threshold = static_cast<int>(t);
        } else if (key == "cgroups") {
          using Mode = binder::CgroupSettings::Mode;
          l.cgroups.mode = one_of<Mode>(v, at, {{"auto", Mode::kAuto}, {"off", Mode::kOff}, {"required", Mode::kRequired}});
        } else if (key == "cgroupVersion") {
          using Version = binder::CgroupSettings::Version;
          l.cgroups.version = one_of<Version>(v, at, {{"auto", Version::kAuto}, {"v1", Version::kV1}, {"v2", Version::kV2}});
        } else if (key == "cgroupRoot") {
          l.cgroups.root = spec::string_of(v, at);
          if (l.cgroups.root.size() > 1024 || l.cgroups.root.find("..") != std::string::npos ||
              l.cgroups.root.find('\n') != std::string::npos)
            spec::fail_at(v, at, spec::quoted(l.cgroups.root) + " is not allowed; use a cgroup path of at most 1024 "
                                 "bytes without \"..\" (absolute from the hierarchy's root, or relative to gpuqd's own cgroup)");
        } else if (key == "cpuset") {
          l.cgroups.cpuset = spec::bool_of(v, at);
        } else if (key == "maxProcessesPerPod") {
          const auto n = spec::int_of(v, at);
          if (n < 0 || n > 4'194'304)
            spec::fail_at(v, at, std::to_string(n) + " is not allowed; use 0 (no limit) to 4194304");
          l.max_processes_per_pod = n;
        } else {
          l.shim = spec::string_of(v, at);
        }
      });
  return l;
}

// admins: {users: [...], groups: [...]}: account and group names.
void read_admins(Node node, Path& at, Config& c) {
  spec::for_each_key(node, at, {"users", "groups"}, [&](std::string_view key, Node v) {
    std::vector<std::string>& out = key == "users" ? c.admin_users : c.admin_groups;
    spec::expect_list(v, at);
    for (std::size_t i = 0; i < v.size(); ++i) {
      Path::Index idx(at, i);
      std::string name = spec::string_of(v.item(i), at);
      if (name.empty() || name.size() > 64)
        spec::fail_at(v.item(i), at, spec::quoted(name) + " is not allowed; use an account or group name of 1 to 64 bytes");
      out.push_back(std::move(name));
    }
  });
}

// tls: {cert: PATH, key: PATH, clientCA: PATH}: the files are read at start (daemon/tls.cpp).
TlsFiles read_tls(Node node, Path& at) {
  TlsFiles t;
  spec::for_each_key(node, at, {"cert", "key", "clientCA"}, [&](std::string_view key, Node v) {
    std::string path = spec::string_of(v, at);
    if (path.empty()) spec::fail_at(v, at, "is empty; give the path of a PEM file");
    (key == "cert" ? t.cert : key == "key" ? t.key : t.client_ca) = std::move(path);
  });
  if (t.cert.empty() || t.key.empty())
    spec::fail_at(node, at, std::string("needs ") + (t.cert.empty() ? "cert" : "key") +
                                ": the server's PEM certificate and its key (clientCA is optional)");
  return t;
}

// notifications: {allowedUrls: [http://hooks.example/], retries: 3, retryDelay: 5s, timeout: 10s,
// queueLimit: 10000} (docs/tasks/batch.md, Notifications).
NotifyConfig read_notifications(Node node, Path& at) {
  NotifyConfig n;
  spec::for_each_key(node, at, {"allowedUrls", "retries", "retryDelay", "timeout", "queueLimit"},
                     [&](std::string_view key, Node v) {
    if (key == "allowedUrls") {
      spec::expect_list(v, at);
      for (std::size_t i = 0; i < v.size(); ++i) {
        Path::Index idx(at, i);
        std::string url = spec::string_of(v.item(i), at);
        // At least "http://host/": a bare "http://" would allow every host.
        const auto host_end = url.rfind("http://", 0) == 0 ? url.find('/', 7) : std::string::npos;
        if (host_end == std::string::npos || host_end == 7)
          spec::fail_at(v.item(i), at, spec::quoted(url) + " is not allowed; give an http://host/ prefix (with the "
                                                            "host and the slash after it)");
        n.allowed_urls.push_back(std::move(url));
      }
    } else if (key == "retries") {
      const auto r = spec::int_of(v, at);
      if (r < 0 || r > 10) spec::fail_at(v, at, spec::quoted(std::to_string(r)) + " is not allowed; use 0 to 10");
      n.retries = static_cast<int>(r);
    } else if (key == "retryDelay") {
      n.retry_delay = std::chrono::seconds(seconds_of(v, at, 1, 3600));
    } else if (key == "timeout") {
      n.timeout = std::chrono::seconds(seconds_of(v, at, 1, 600));
    } else {
      const auto l = spec::int_of(v, at);
      if (l < 1 || l > 1000000) spec::fail_at(v, at, spec::quoted(std::to_string(l)) + " is not allowed; use 1 to 1000000");
      n.queue_limit = static_cast<std::size_t>(l);
    }
  });
  return n;
}

// prices: {h100: 2.5}: per flavor (named as the queues' quotas name it), the price of one
// GPU-hour in `currency`: a finite number, 0 or more.
std::map<std::string, double> read_prices(Node node, Path& at) {
  spec::expect_map(node, at);
  std::map<std::string, double> out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string_view flavor = node.key(i).text();
    if (flavor.empty()) spec::fail_at(node.key(i), at, "has an empty key; name a flavor, e.g. h100: 2.5");
    Path::Key k(at, flavor);
    spec::located(node.key(i), at, [&] { spec::check_name(flavor, at); });
    const double price = spec::number_of(node.value(i), at);
    if (price < 0)
      spec::fail_at(node.value(i), at, spec::quoted(node.value(i).text()) +
                                           " is negative; a price per GPU-hour is a number 0 or more, e.g. 2.5");
    out[std::string(flavor)] = price;
  }
  return out;
}

// currency: "USD": what prices are in, shown beside costs: 1 to 16 bytes, no control characters.
std::string read_currency(Node node, const Path& at) {
  std::string c = spec::string_of(node, at);
  const bool controls = std::any_of(c.begin(), c.end(), [](char ch) {
    return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
  });
  if (c.empty() || c.size() > 16 || controls)
    spec::fail_at(node, at, spec::quoted(c) + " is not allowed; use 1 to 16 bytes without control characters, e.g. USD");
  return c;
}

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& label) {
  Config c;
  c.label = label;
  auto doc = std::make_shared<const spec::yaml::Document>(spec::parse_document(yaml_text, label));
  c.document = doc;
  spec::read_document(*doc, label, [&] {
    const Node root = doc->root();
    if (root.is_null()) return;
    Path at;
    spec::for_each_key(root, at,
                       {"grpc", "http", "stateFile", "binder", "local", "kubernetes", "placement", "nodeReservation", "topology", "fairSharing",
                        "priorityClasses", "maxRequestBytes", "usageCheckpointInterval", "estimateInterval", "notifications", "auditRetention", "jobRetention", "queues", "nodes",
                        "socket", "admins", "insecure", "tls", "prices", "currency"},
                       [&](std::string_view key, Node v) {
                         if (key == "grpc") {
                           c.grpc_address = spec::string_of(v, at);
                         } else if (key == "http") {
                           c.http_address = spec::string_of(v, at);
                         } else if (key == "stateFile") {
                           c.core.state_file = spec::string_of(v, at);
                         } else if (key == "binder") {
                           c.binder = spec::string_of(v, at);
                           if (c.binder != "none" && c.binder != "local" && c.binder != "kubernetes")
                             spec::fail_at(v, at, spec::quoted(c.binder) + " is not a binder; use none, local or kubernetes");
                         } else if (key == "maxRequestBytes") {
                           const auto n = spec::int_of(v, at);
                           if (n < 1024 || n > (64 << 20))
                             spec::fail_at(v, at, std::to_string(n) + " is not allowed; use 1024 to 67108864");
                           c.max_request_bytes = static_cast<int>(n);
                         } else if (key == "socket") {
                           c.socket = spec::string_of(v, at);
                         } else if (key == "insecure") {
                           c.insecure = spec::bool_of(v, at);
                         } else if (key == "notifications") {
                           c.core.notify = read_notifications(v, at);
                         } else if (key == "tls") {
                           c.tls = read_tls(v, at);
                         } else if (key == "admins") {
                           read_admins(v, at, c);
                         } else if (key == "prices") {
                           c.core.prices.per_gpu_hour = read_prices(v, at);
                         } else if (key == "currency") {
                           c.core.prices.currency = read_currency(v, at);
                         } else if (key == "auditRetention") {
                           c.core.audit_retention = seconds_of(v, at, 3600, 3650LL * 86400);
                         } else if (key == "jobRetention") {
                           // 0: finished jobs are kept for ever (Slurm's PurgeJobAfter unset).
                           c.core.job_retention = spec::text_of(v, at, "a duration such as 30d") == "0"
                                                      ? 0
                                                      : seconds_of(v, at, 3600, 3650LL * 86400);
                         } else if (key == "estimateInterval") {
                           c.estimate_interval = spec::text_of(v, at, "a duration such as 30s") == "0"
                                                     ? 0
                                                     : seconds_of(v, at, 1, 86400);
                         } else if (key == "usageCheckpointInterval") {
                           c.core.usage_checkpoint_interval = seconds_of(v, at, 1, 86400);
                         } else if (key == "priorityClasses") {
                           c.core.priority_classes = spec::read_priority_classes(v, at);
                         } else if (key == "queues") {
                           spec::expect_list(v, at);
                           c.queues = v;
                         } else if (key == "nodes") {
                           spec::expect_list(v, at);
                           c.nodes = v;
                         }
                       });
    if (Node local = root.find("local")) {
      Path::Key k(at, "local");
      if (c.binder != "local") spec::fail_at(local, at, "is only for binder: local (binder is " + c.binder + ")");
      c.local = read_local(local, at);
    }
    if (Node kube = root.find("kubernetes")) {
      Path::Key k(at, "kubernetes");
      if (c.binder != "kubernetes")
        spec::fail_at(kube, at, "is only for binder: kubernetes (binder is " + c.binder + ")");
      c.kubernetes = read_kubernetes(kube, at);
    }
    if (c.binder == "kubernetes" && c.nodes) {
      Path::Key k(at, "nodes");
      spec::fail_at(c.nodes, at, "binder: kubernetes takes its nodes from the API server; remove nodes");
    }
    if (c.binder == "local" && c.nodes) {
      Path::Key k(at, "nodes");
      spec::fail_at(c.nodes, at,
                    "binder: local runs jobs on this machine, which is its one node (see local:); remove nodes");
    }
    static_cast<SchedulingPolicy&>(c.core.engine) = spec::read_policy(root, at);
    ResourceNames scratch;
    (void)specs_at_start(c, scratch);  // every error now, before anything starts
  });
  return c;
}

Result<void> check_start_specs(const Config& c) {
  ResourceNames names;
  const StartSpecs specs = specs_at_start(c, names);
  Engine engine(c.core.engine);
  for (const QueueSpec& q : specs.queues) {
    auto r = spec::check_allowed_classes(q, c.core.priority_classes);
    if (r) r = engine.apply_queue(q);
    if (!r) return Error{"queue \"" + q.name.value + "\": " + r.error(), r.code()};
  }
  for (const NodeSpec& n : specs.nodes)
    if (auto r = engine.upsert_node(n, 0); !r) return Error{"node \"" + n.name + "\": " + r.error(), r.code()};
  return Ok();
}

StartSpecs specs_at_start(const Config& c, ResourceNames& names) {
  StartSpecs s;
  if (!c.document) return s;  // no config file
  spec::read_document(*c.document, c.label, [&] {
    Path at;
    {
      Path::Key k(at, "queues");
      for (std::size_t i = 0; i < c.queues.size(); ++i) {
        Path::Index qi(at, i);
        s.queues.push_back(spec::read_queue(c.queues.item(i), at, names));
      }
    }
    Path::Key k(at, "nodes");
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
      Path::Index ni(at, i);
      s.nodes.push_back(spec::read_node(c.nodes.item(i), at, names));
    }
  });
  return s;
}
Result<NodeSpec> prepare_local(Config& config) {
  binder::LocalConfig& l = config.local;
  std::error_code ec;
  for (auto* dir : {&l.log_dir, &l.run_dir}) {
    *dir = std::filesystem::absolute(*dir, ec);
    std::filesystem::create_directories(*dir, ec);
    if (ec || !std::filesystem::is_directory(*dir))
      return Error{"local: cannot make directory " + dir->string() + ": " + ec.message(), ErrorCode::kUnavailable};
  }
  auto inventory = binder::discover(l);
  if (!inventory) return Error{inventory.error(), inventory.code()};
  if (auto c = binder::open_cgroups(l, inventory.value()); !c) return Error{c.error(), c.code()};
  NodeSpec node = binder::local_node(l, inventory.value());
  try {  // the machine's node is a spec like any other: its name, flavor and labels are checked
    spec::Path at("local");
    spec::validate(node, at, ResourceNames{});
  } catch (const spec::SpecError& e) {
    return Error{std::string(e.what()) + " (the node gpuqd made of this machine; set local.node or local.flavor)",
                 ErrorCode::kInvalidArgument};
  }
  spdlog::info("event=local_executor node={} gpus={} source={} model=\"{}\" cpu_milli={} memory_bytes={} logs={}",
               node.name, inventory.value().gpus.size(), inventory.value().source,
               inventory.value().gpus.empty() ? "" : inventory.value().gpus.front().name, inventory.value().cpu,
               inventory.value().memory, l.log_dir.string());
  config.core.gpu_idle_threshold = l.gpu_idle_threshold;
  config.core.make_binder = [l, inv = inventory.value()](binder::Report report) -> std::unique_ptr<binder::Binder> {
    return std::make_unique<binder::LocalBinder>(l, inv, std::move(report));
  };
  return node;
}

Config load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path);
}

}  // namespace gpuq::daemon
