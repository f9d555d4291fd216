#pragma once
// The values of queue, node and job specs from their text, without YAML: the scenario/apply
// reader (sim/spec_yaml.hpp) and the gRPC request parser (api/from_proto.hpp) share them, so a
// value means the same and is refused with the same words wherever it comes from. Each throws
// SpecError naming `path`, the value and what is allowed.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "scheduler/engine.hpp"

namespace gpuq::sim {

class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void spec_fail(const std::string& path, const std::string& why);

// "\"text\"": how a scalar value is shown in an error.
std::string quoted(std::string_view text);

// The digits of a number's text; YAML allows a leading "+", which from_chars does not.
std::string_view numeric_text(const std::string& text);
std::int64_t int_value(const std::string& text, const std::string& path);
std::int32_t int32_value(const std::string& text, const std::string& path);
// A Kubernetes quantity in resource r's base units ("2", "500m", "16Gi").
Quantity quantity_value(const std::string& text, const std::string& path, ResourceId r);
// The id of a resource name (interned); `parent` is the path of the map that names it.
ResourceId resource_value(const std::string& name, const std::string& parent, ResourceNames& names);
// An integer or the name of a priority class.
std::int32_t priority_value(const std::string& text, const std::string& path, const PriorityClasses& classes);

// The bounds a job's numbers must keep (the same for every source).
void check_pod_count(std::int64_t count, const std::string& shown, const std::string& path);
void check_max_runtime(std::int64_t seconds, const std::string& shown, const std::string& path);
void check_grace_period(std::int64_t seconds, const std::string& shown, const std::string& path);

}  // namespace gpuq::sim
