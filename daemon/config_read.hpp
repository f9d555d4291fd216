#pragma once
// Durations in gpuqd's config (daemon/config.cpp, daemon/kube_config.cpp): "500ms", "15s",
// "10m", "2h", or a number of seconds. Out of [min, max] or unreadable, a SpecError names the
// field, the value and what is allowed.
#include <cstdint>

#include "spec/error.hpp"
#include "spec/yaml.hpp"

namespace gpuq::daemon {

std::int64_t millis_of(spec::yaml::Node v, const spec::Path& at, std::int64_t min, std::int64_t max);
// Whole seconds (milliseconds dropped), from min to max seconds.
std::int64_t seconds_of(spec::yaml::Node v, const spec::Path& at, std::int64_t min, std::int64_t max);

}  // namespace gpuq::daemon
