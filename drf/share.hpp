#pragma once
// Dominant-share arithmetic (Ghodsi et al., NSDI 2011; Kueue's DominantResourceShare), pure and
// allocation-free.
#include <compare>
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

// Kueue's ratio for one resource: borrowed * 1000 / lendable, computed exactly as Kueue does
// (pkg/cache/scheduler/fair_sharing.go), so that two queues Kueue finds equal are equal here.
inline double borrowed_permille(std::int64_t borrowed, std::int64_t lendable) {
  return static_cast<double>(borrowed) * 1000.0 / static_cast<double>(lendable);
}

// A weighted share, ordered as Kueue's CompareDRS orders them: a queue of weight 0 that holds
// anything above its guarantee has an infinite share, above every finite one, and two such
// compare by their unweighted ratios; otherwise unweighted / weight. Lower is better for
// admission; higher is preempted first.
struct Share {
  bool infinite = false;
  double value = 0;  // the weighted share; for an infinite one, the unweighted ratio

  friend bool operator==(const Share&, const Share&) = default;
  friend std::partial_ordering operator<=>(const Share& a, const Share& b) {
    if (a.infinite != b.infinite) return a.infinite ? std::partial_ordering::greater
                                                    : std::partial_ordering::less;
    return a.value <=> b.value;
  }
  // A finite addition to the weighted share (gpuq's decayed usage history); an infinite share
  // stays what it is.
  Share plus(double weighted) const { return infinite ? *this : Share{false, value + weighted}; }
};

inline Share weighted(double unweighted, double weight) {
  if (unweighted == 0) return {};
  if (weight == 0) return {true, unweighted};
  return {false, weight == 1.0 ? unweighted : unweighted / weight};
}

}  // namespace gpuq::drf
