#include "daemon/config.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "sim/scenario.hpp"
#include "sim/spec_yaml.hpp"

namespace gpuq::daemon {

namespace {

binder::LocalConfig read_local(const YAML::Node& node) {
  sim::require_map(node, "local");
  sim::check_keys(node, "local",
                  {"node", "flavor", "labels", "nvidiaSmi", "gpus", "model", "reserve", "logDir", "runDir", "shim"});
  binder::LocalConfig l;
  if (node["node"]) l.node = sim::read_string(node["node"], "local.node");
  if (node["flavor"]) l.flavor = sim::read_string(node["flavor"], "local.flavor");
  if (l.flavor.empty()) throw sim::SpecError("local.flavor: is empty; name the node's flavor");
  if (const auto& labels = node["labels"]) l.labels = sim::read_labels(labels, "local.labels");
  if (node["nvidiaSmi"]) l.nvidia_smi = sim::read_string(node["nvidiaSmi"], "local.nvidiaSmi");
  if (node["gpus"]) {
    const auto n = sim::read_int(node["gpus"], "local.gpus");
    if (n < 0 || n > 255)
      throw sim::SpecError("local.gpus: " + std::to_string(n) + " is not allowed; use 0 to 255");
    l.gpus = static_cast<int>(n);
  }
  if (node["model"]) l.model = sim::read_string(node["model"], "local.model");
  if (const auto& reserve = node["reserve"]) {
    sim::require_map(reserve, "local.reserve");
    sim::check_keys(reserve, "local.reserve", {"cpu", "memory"});
    if (reserve["cpu"]) l.reserve_cpu = sim::read_quantity(reserve["cpu"], "local.reserve.cpu", kCpu);
    if (reserve["memory"]) l.reserve_memory = sim::read_quantity(reserve["memory"], "local.reserve.memory", kMemory);
  }
  if (node["logDir"]) l.log_dir = sim::read_string(node["logDir"], "local.logDir");
  if (node["runDir"]) l.run_dir = sim::read_string(node["runDir"], "local.runDir");
  if (node["shim"]) l.shim = sim::read_string(node["shim"], "local.shim");
  return l;
}

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& label) {
  Config c;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root || root.IsNull()) return c;
    sim::require_map(root, "config");
    sim::check_keys(root, "config",
                    {"grpc", "http", "stateFile", "binder", "local", "placement", "topology", "fairSharing",
                     "priorityClasses", "maxRequestBytes", "queues", "nodes"});
    if (root["grpc"]) c.grpc_address = sim::read_string(root["grpc"], "grpc");
    if (root["http"]) c.http_address = sim::read_string(root["http"], "http");
    if (root["stateFile"]) c.core.state_file = sim::read_string(root["stateFile"], "stateFile");
    if (root["binder"]) {
      c.binder = sim::read_string(root["binder"], "binder");
      if (c.binder != "none" && c.binder != "local")
        throw sim::SpecError("binder: \"" + c.binder +
                             "\" is not available in this build; use none or local (kubernetes comes later)");
    }
    if (root["local"]) {
      if (c.binder != "local") throw sim::SpecError("local: is only for binder: local (binder is " + c.binder + ")");
      c.local = read_local(root["local"]);
    }
    if (c.binder == "local" && root["nodes"])
      throw sim::SpecError("nodes: binder: local runs jobs on this machine, which is its one node (see local:); "
                           "remove nodes");
    if (root["maxRequestBytes"]) {
      auto n = sim::read_int(root["maxRequestBytes"], "maxRequestBytes");
      if (n < 1024 || n > (64 << 20))
        throw sim::SpecError("maxRequestBytes: " + std::to_string(n) + " is not allowed; use 1024 to 67108864");
      c.max_request_bytes = static_cast<int>(n);
    }
    auto settings = sim::read_engine_settings(root);
    c.core.engine = settings.config;
    c.core.priority_classes = settings.classes;
    if (root["queues"]) {
      sim::require_list(root["queues"], "queues");
      c.queues = root["queues"];
    }
    if (root["nodes"]) {
      sim::require_list(root["nodes"], "nodes");
      c.nodes = root["nodes"];
    }
    ResourceNames scratch;
    (void)specs_at_start(c, scratch);  // every error now, before anything starts
  } catch (const sim::SpecError& e) {
    throw std::runtime_error(label + ": " + e.what());
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(label + ": not valid YAML: " + e.what());
  }
  return c;
}

StartSpecs specs_at_start(const Config& c, ResourceNames& names) {
  StartSpecs s;
  if (c.queues)
    for (std::size_t i = 0; i < c.queues.size(); ++i)
      s.queues.push_back(sim::parse_queue(c.queues[i], "queues[" + std::to_string(i) + "]", names));
  if (c.nodes)
    for (std::size_t i = 0; i < c.nodes.size(); ++i)
      s.nodes.push_back(sim::parse_node(c.nodes[i], "nodes[" + std::to_string(i) + "]", names));
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
  NodeSpec node = binder::local_node(l, inventory.value());
  spdlog::info("event=local_executor node={} gpus={} source={} model=\"{}\" cpu_milli={} memory_bytes={} logs={}",
               node.name, inventory.value().gpus.size(), inventory.value().source,
               inventory.value().gpus.empty() ? "" : inventory.value().gpus.front().name, inventory.value().cpu,
               inventory.value().memory, l.log_dir.string());
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
