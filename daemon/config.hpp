#pragma once
// gpuqd's configuration: one YAML file (`gpuqd --config FILE`), every key optional.
//
//   grpc: 127.0.0.1:7433          # gRPC listen address
//   http: 127.0.0.1:7434          # /metrics, /healthz, /readyz
//   stateFile: gpuqd.db           # SQLite state; relative to the working directory
//   binder: none                  # none (admitted jobs are marked running); local and kubernetes later
//   placement: pack               # pack | spread
//   topologyLevels: [zone, rack]  # node label keys, widest first
//   fairSharing: {enabled: false, preemptionStrategies: [...], usageHalfLife: 0}
//   priorityClasses: {low: -100, normal: 0, high: 100, critical: 1000}
//   maxRequestBytes: 4194304      # larger requests are refused (RESOURCE_EXHAUSTED)
//   queues: [...]                 # applied at start (scenario-format keys)
//   nodes: [...]
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "daemon/core.hpp"

namespace gpuq::daemon {

struct Config {
  std::string grpc_address = "127.0.0.1:7433";
  std::string http_address = "127.0.0.1:7434";
  std::string binder = "none";
  int max_request_bytes = 4 << 20;
  CoreConfig core;
  // Applied at start; parsed (and checked) at load, parsed again into the Core's resource
  // names by specs_at_start().
  YAML::Node queues;
  YAML::Node nodes;
};

struct StartSpecs {
  std::vector<QueueSpec> queues;
  std::vector<NodeSpec> nodes;
};
StartSpecs specs_at_start(const Config& c, ResourceNames& names);

// Throws std::runtime_error naming the file, the field and what is allowed.
Config load_config(const std::string& path);
Config parse_config(const std::string& yaml_text, const std::string& label);

}  // namespace gpuq::daemon
