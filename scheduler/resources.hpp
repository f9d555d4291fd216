#pragma once
// Resource vectors in integer base units: GPU in milli-GPU, CPU in millicores, memory in bytes,
// anything else as an integer count. A fixed small number of resource slots keeps the hot path
// free of allocation; the first three slots are always gpu, cpu and memory.
#include <array>
#include <cstdint>
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
// "rdma/hca") are given the next free slot on first use.
class ResourceNames {
 public:
  ResourceNames() : names_{"gpu", "cpu", "memory"} {}

  std::optional<ResourceId> find(std::string_view name) const {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return static_cast<ResourceId>(i);
    return std::nullopt;
  }
  // nullopt when all kMaxResources slots are taken.
  std::optional<ResourceId> intern(std::string_view name) {
    if (auto id = find(name)) return id;
    if (names_.size() == kMaxResources) return std::nullopt;
    names_.emplace_back(name);
    return static_cast<ResourceId>(names_.size() - 1);
  }
  const std::string& name(ResourceId r) const { return names_[r]; }
  std::size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
};

}  // namespace gpuq
