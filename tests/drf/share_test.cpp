#include <doctest/doctest.h>

#include <array>
#include <cstdint>

#include "drf/share.hpp"

using gpuq::drf::borrowed_permille;
using gpuq::drf::Share;
using gpuq::drf::weighted;
using gpuq::drf::dominant_share;
using gpuq::drf::kInfiniteShare;

TEST_CASE("dominant share is the largest usage/capacity ratio over the weight") {
  std::array<std::int64_t, 2> cap{9000, 18};
  std::array<std::int64_t, 2> a{3000, 12};  // 3 of the paper's A tasks: <3 CPU, 12 GB>
  CHECK(dominant_share(a, cap, 1.0) == doctest::Approx(12.0 / 18.0));
  CHECK(dominant_share(a, cap, 2.0) == doctest::Approx(6.0 / 18.0));
}

TEST_CASE("equal fractions give equal shares exactly, so DRF ties stay ties") {
  std::array<std::int64_t, 2> cap{100, 10000};
  std::array<std::int64_t, 2> a{40, 6000};  // 60% memory
  std::array<std::int64_t, 2> b{60, 1000};  // 60% cpu
  CHECK(dominant_share(a, cap, 1.0) == dominant_share(b, cap, 1.0));
}

TEST_CASE("asking for a resource the cluster does not have is an infinite share") {
  std::array<std::int64_t, 2> cap{100, 0};
  std::array<std::int64_t, 2> none{0, 0};
  std::array<std::int64_t, 2> some{0, 1};
  CHECK(dominant_share(none, cap, 1.0) == 0.0);
  CHECK(dominant_share(some, cap, 1.0) == kInfiniteShare);
}

TEST_CASE("Kueue's per-mille ratio, exactly as Kueue computes it") {
  CHECK(borrowed_permille(2, 10) == 200.0);
  CHECK(borrowed_permille(1, 3) == 1.0 * 1000.0 / 3.0);
  // Equal fractions are equal, so Kueue's ties stay ties.
  CHECK(borrowed_permille(2, 12) == borrowed_permille(1, 6));
}

TEST_CASE("shares order as Kueue's CompareDRS: weight 0 while borrowing is above everything") {
  CHECK(weighted(0, 0) == Share{});         // weight 0, not borrowing: 0
  CHECK(weighted(0, 2) == Share{});
  CHECK(weighted(300, 2) == Share{false, 150});
  CHECK(weighted(300, 1) == Share{false, 300});
  const Share inf_small = weighted(1, 0), inf_big = weighted(2, 0);
  CHECK(inf_small.infinite);
  CHECK(inf_small > weighted(1e12, 1));     // above any finite share
  CHECK(inf_big > inf_small);               // two of them: by the unweighted ratio
  CHECK(weighted(100, 1) < weighted(300, 2));
  CHECK(weighted(100, 1).plus(5) == Share{false, 105});
  CHECK(inf_small.plus(5) == inf_small);    // history does not make infinite more or less
}
