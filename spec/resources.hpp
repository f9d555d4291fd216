#pragma once
// Resource vectors in integer base units: GPU in milli-GPU, CPU in millicores, memory in bytes,
// anything else as an integer count. A fixed small number of resource slots keeps the hot path
// free of allocation; the first three slots are always gpu, cpu and memory.
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuq {

using Quantity = std::int64_t;
using ResourceId = std::uint8_t;

inline constexpr std::size_t kMaxResources = 8;
inline constexpr ResourceId kGpu = 0;
inline constexpr ResourceId kCpu = 1;
inline constexpr ResourceId kMemory = 2;
inline constexpr Quantity kMilliPerGpu = 1000;
// The largest quantity a quota, a node or a job may state (2^52 base units: 4 PiB of memory,
// 4.5 trillion GPUs). Sums over thousands of queues, nodes or pods then stay far from overflow.
inline constexpr Quantity kMaxQuantity = Quantity{1} << 52;

// A pod takes either a share of one GPU (1..999 milli) or whole GPUs: 1500m per pod is not a
// request any node could serve.
inline bool is_valid_gpu_request(Quantity milli_per_pod) {
  return milli_per_pod <= kMilliPerGpu || milli_per_pod % kMilliPerGpu == 0;
}

struct ResourceVec {
  std::array<Quantity, kMaxResources> v{};

  Quantity& operator[](ResourceId r) { return v[r]; }
  Quantity operator[](ResourceId r) const { return v[r]; }

  ResourceVec& operator+=(const ResourceVec& o) {
    for (std::size_t i = 0; i < kMaxResources; ++i) v[i] += o.v[i];
    return *this;
  }
  ResourceVec& operator-=(const ResourceVec& o) {
    for (std::size_t i = 0; i < kMaxResources; ++i) v[i] -= o.v[i];
    return *this;
  }
  friend ResourceVec operator+(ResourceVec a, const ResourceVec& b) { return a += b; }
  friend ResourceVec operator-(ResourceVec a, const ResourceVec& b) { return a -= b; }
  friend ResourceVec operator*(ResourceVec a, std::int64_t k) {
    for (auto& x : a.v) x *= k;
    return a;
  }
  friend bool operator==(const ResourceVec&, const ResourceVec&) = default;

  // True when every component of *this is <= the same component of o.
  bool fits_in(const ResourceVec& o) const {
    for (std::size_t i = 0; i < kMaxResources; ++i)
      if (v[i] > o.v[i]) return false;
    return true;
  }
  bool is_zero() const {
    for (auto x : v)
      if (x != 0) return false;
    return true;
  }
};

// Maps resource names to slots. gpu, cpu and memory are always present; other names (e.g.
// "rdma/hca") are given the next free slot on first use. Names are only ever appended, into
// fixed slots, and published by the count: threads may intern and read at once (gpuqd reads
// requests into specs on gRPC's threads while its store thread encodes a batch); interning
// takes a lock, reading does not.
class ResourceNames {
 public:
  ResourceNames() : names_{"gpu", "cpu", "memory"}, size_(3) {}
  ResourceNames(const ResourceNames& o) { *this = o; }
  ResourceNames& operator=(const ResourceNames& o) {
    if (this == &o) return *this;
    const std::uint32_t n = o.size_.load(std::memory_order_acquire);
    for (std::uint32_t i = 0; i < n; ++i) names_[i] = o.names_[i];
    size_.store(n, std::memory_order_release);
    return *this;
  }

  std::optional<ResourceId> find(std::string_view name) const {
    const std::uint32_t n = size_.load(std::memory_order_acquire);
    for (std::uint32_t i = 0; i < n; ++i)
      if (names_[i] == name) return static_cast<ResourceId>(i);
    return std::nullopt;
  }
  // nullopt when all kMaxResources slots are taken.
  std::optional<ResourceId> intern(std::string_view name) {
    if (auto id = find(name)) return id;
    std::lock_guard lock(intern_mu_);
    if (auto id = find(name)) return id;  // interned by another thread meanwhile
    const std::uint32_t n = size_.load(std::memory_order_relaxed);
    if (n == kMaxResources) return std::nullopt;
    names_[n] = std::string(name);
    size_.store(n + 1, std::memory_order_release);
    return static_cast<ResourceId>(n);
  }
  const std::string& name(ResourceId r) const { return names_[r]; }
  std::size_t size() const { return size_.load(std::memory_order_acquire); }

 private:
  std::array<std::string, kMaxResources> names_;
  std::atomic<std::uint32_t> size_{0};
  std::mutex intern_mu_;  // not copied: each copy interns on its own
};

}  // namespace gpuq
