#pragma once
// /metrics: Prometheus text format, read from the engine thread.
#include <string>

#include "daemon/loop.hpp"

namespace gpuq::daemon {

std::string render_metrics(Loop& loop);

}  // namespace gpuq::daemon
