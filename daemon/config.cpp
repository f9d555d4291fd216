#include "daemon/config.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "sim/scenario.hpp"
#include "sim/spec_yaml.hpp"

namespace gpuq::daemon {

Config parse_config(const std::string& yaml_text, const std::string& label) {
  Config c;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root || root.IsNull()) return c;
    sim::require_map(root, "config");
    sim::check_keys(root, "config",
                    {"grpc", "http", "stateFile", "binder", "placement", "topology", "fairSharing",
                     "priorityClasses", "maxRequestBytes", "queues", "nodes"});
    if (root["grpc"]) c.grpc_address = sim::read_string(root["grpc"], "grpc");
    if (root["http"]) c.http_address = sim::read_string(root["http"], "http");
    if (root["stateFile"]) c.core.state_file = sim::read_string(root["stateFile"], "stateFile");
    if (root["binder"]) {
      c.binder = sim::read_string(root["binder"], "binder");
      if (c.binder != "none")
        throw sim::SpecError("binder: \"" + c.binder +
                             "\" is not available in this build; use none (local and kubernetes binders come later)");
    }
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

Config load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path);
}

}  // namespace gpuq::daemon
