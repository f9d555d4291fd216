#pragma once
// For the trace reader tests: what a parse threw.
#include <exception>
#include <string>

#include "sim/trace_error.hpp"

namespace gpuq::sim::testing {

// The TraceError's message, or a line saying what happened instead.
template <class Parse>
std::string error_of(Parse parse) {
  try {
    (void)parse();
  } catch (const TraceError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not a TraceError) ") + e.what();
  }
  return "(accepted)";
}

}  // namespace gpuq::sim::testing
