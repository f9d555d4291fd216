#include "daemon/heap.hpp"

#include <malloc.h>

#include <chrono>

#include <spdlog/spdlog.h>

namespace gpuq::daemon {

void trim_heap(const char* after) {
  const auto t0 = std::chrono::steady_clock::now();
  const int gave = malloc_trim(0);
  spdlog::debug("event=heap_trimmed after={} returned={} seconds={:.4f}", after, gave != 0,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace gpuq::daemon
