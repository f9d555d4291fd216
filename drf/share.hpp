#pragma once
// Dominant-share arithmetic (Ghodsi et al., NSDI 2011), pure and allocation-free.
#include <cstdint>
#include <limits>
#include <span>

namespace gpuq::drf {

inline constexpr double kInfiniteShare = std::numeric_limits<double>::infinity();

// max_r amount[r] / total[r] / weight. A resource with total 0 counts only when amount > 0, and
// then makes the share infinite (asking for what does not exist is the worst possible share).
// Each ratio is one correctly rounded division of exact integers, so equal fractions compare
// equal (the DRF ties of the paper's examples stay ties).
inline double dominant_share(std::span<const std::int64_t> amount,
                             std::span<const std::int64_t> total, double weight) {
  double best = 0;
  for (std::size_t r = 0; r < amount.size(); ++r) {
    if (amount[r] <= 0) continue;
    if (total[r] <= 0) return kInfiniteShare;
    double s = static_cast<double>(amount[r]) / static_cast<double>(total[r]);
    if (s > best) best = s;
  }
  return weight == 1.0 ? best : best / weight;
}

// Kueue's borrowing share for one flavor-resource: max(0, usage - nominal) / lendable.
inline double borrowed_ratio(std::int64_t usage, std::int64_t nominal, std::int64_t lendable) {
  std::int64_t borrowed = usage - nominal;
  if (borrowed <= 0) return 0;
  if (lendable <= 0) return kInfiniteShare;
  return static_cast<double>(borrowed) / static_cast<double>(lendable);
}

}  // namespace gpuq::drf
