#pragma once
// A trace or cluster file the simulator could not read: "PATH:LINE: what is wrong". Its own
// header: the command line catches it without the trace readers' types.
#include <stdexcept>

namespace gpuq::sim {

struct TraceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace gpuq::sim
