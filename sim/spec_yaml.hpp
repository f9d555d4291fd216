#pragma once
// Queues, nodes and jobs from YAML, with the keys of the scenario format (shared/SCENARIOS.md);
// `gpuq apply` will read the same keys. Every error names the field by its path
// ("queues[0].quotas[1].resources.gpu.nominal"), the value and what is allowed.
#include <map>
#include <string>

#include <yaml-cpp/yaml.h>

#include "scheduler/engine.hpp"
#include "sim/spec_values.hpp"

namespace gpuq::sim {

QueueSpec parse_queue(const YAML::Node& node, const std::string& path, ResourceNames& names);
NodeSpec parse_node(const YAML::Node& node, const std::string& path, ResourceNames& names);
// A node's labels: a map of strings, no empty or repeated key.
std::map<std::string, std::string> read_labels(const YAML::Node& labels, const std::string& path);
JobSpec parse_job(const YAML::Node& node, const std::string& path, ResourceNames& names,
                  const PriorityClasses& classes);
// `priorityClasses: {name: integer, ...}`.
PriorityClasses parse_priority_classes(const YAML::Node& node, const std::string& path);
RunningPlacement parse_running_placement(const YAML::Node& node, const std::string& path,
                                         Time now);
// The keys a job may have; running jobs may also have admittedAt, nodes and flavor.
void check_job_keys(const YAML::Node& node, const std::string& path, bool running);

// How a value is shown in an error: "\"text\"" for a scalar, else "a list", "a map", "nothing".
std::string shown(const YAML::Node& node);
void require_map(const YAML::Node& node, const std::string& path);
void require_list(const YAML::Node& node, const std::string& path);

// Small typed readers; each throws SpecError naming `path`.
void check_keys(const YAML::Node& map, const std::string& path,
                std::initializer_list<const char*> allowed);
std::string read_string(const YAML::Node& node, const std::string& path);
std::int64_t read_int(const YAML::Node& node, const std::string& path);
double read_number(const YAML::Node& node, const std::string& path);
bool read_bool(const YAML::Node& node, const std::string& path);
Quantity read_quantity(const YAML::Node& node, const std::string& path, ResourceId r);
ResourceVec read_resources(const YAML::Node& node, const std::string& path, ResourceNames& names);

// One of the named values; the error lists them.
template <class E>
E read_enum(const YAML::Node& node, const std::string& path,
            std::initializer_list<std::pair<const char*, E>> allowed) {
  std::string v = read_string(node, path);
  std::string names;
  for (const auto& [name, value] : allowed) {
    if (v == name) return value;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw SpecError(path + ": \"" + v + "\" is not allowed; use one of " + names);
}

}  // namespace gpuq::sim
