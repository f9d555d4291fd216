#include <doctest/doctest.h>

#include <array>
#include <cstdint>

#include "drf/share.hpp"

using gpuq::drf::borrowed_ratio;
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

TEST_CASE("borrowed ratio counts only usage above nominal") {
  CHECK(borrowed_ratio(4, 6, 10) == 0.0);
  CHECK(borrowed_ratio(6, 6, 10) == 0.0);
  CHECK(borrowed_ratio(8, 6, 10) == doctest::Approx(0.2));
  CHECK(borrowed_ratio(8, 6, 0) == kInfiniteShare);
}
