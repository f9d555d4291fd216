#pragma once
// What engine_bench and preemption_bench share: the node and pod shape, a portable random
// sequence, and the decision checksum.
#include <cstddef>
#include <cstdint>
#include <string>

#include "spec/resources.hpp"

namespace gpuq::bench {

inline constexpr Quantity kGib = Quantity{1} << 30;
inline constexpr Quantity kGpusPerNode = 8;
// Per node: 8 GPUs, 128 cores, 1 TiB. A whole-GPU pod asks 12 cores and 96 GiB per GPU, so the
// GPUs run out first and cpu and memory are checked on every placement without binding.
inline constexpr Quantity kNodeCpu = 128'000;
inline constexpr Quantity kNodeMemory = 1024 * kGib;
inline constexpr Quantity kCpuPerGpu = 12'000;
inline constexpr Quantity kMemoryPerGpu = 96 * kGib;

// A pod of gpu_milli with the cpu and memory that go with it.
inline ResourceVec pod_resources(Quantity gpu_milli) {
  ResourceVec v;
  v[kGpu] = gpu_milli;
  v[kCpu] = kCpuPerGpu * gpu_milli / 1000;
  v[kMemory] = kMemoryPerGpu * gpu_milli / 1000;
  return v;
}

// splitmix64: the same sequence on every platform and standard library (the std distributions
// are not specified bit for bit).
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

// FNV-1a over every decision: the same inputs must give the same checksum, so it shows that an
// optimisation of the engine did not change a single decision.
struct Checksum {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  void add(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
  }
  void add(const std::string& s) { add(s.data(), s.size() + 1); }
  void add(std::int64_t v) { add(&v, sizeof v); }
};

}  // namespace gpuq::bench
