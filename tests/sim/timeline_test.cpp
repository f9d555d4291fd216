// The replay's timeline: sampled series (GPU utilization, fragmentation) are weighted by time, as
// the integrated ones are. Sampled at events, a run whose events crowd into its busy hours read
// "utilization 0.692 vs allocation 0.401" on a whole-GPU trace.
#include <doctest/doctest.h>

#include "sim/replay_stats.hpp"

using gpuq::sim::detail::Timeline;

TEST_CASE("a sampled series is weighted by time, not by the number of samples") {
  Timeline tl(/*series=*/1, /*sampled=*/1, /*points=*/10, /*start=*/0);
  // Busy for 10 s with many samples, then idle for 90 s with one.
  tl.add(0, 1.0);
  for (int t = 0; t < 10; ++t) {
    tl.advance(t);
    tl.sample(0, 1.0);
  }
  tl.advance(10);
  tl.add(0, -1.0);
  tl.sample(0, 0.0);
  tl.advance(100);
  CHECK(tl.sample_mean(0) == doctest::Approx(0.1));  // was 10/11 counted by samples
  CHECK(tl.total(0) / 100.0 == doctest::Approx(tl.sample_mean(0)));  // the integrated level agrees
  const Timeline::Output out = tl.finish();
  REQUIRE(!out.sampled[0].empty());
  CHECK(out.sampled[0].back() == doctest::Approx(0.0));
  // Each bucket is the sampled value's mean over the bucket's time, as the integrated level's.
  for (std::size_t i = 0; i < out.t.size(); ++i) CHECK(out.sampled[0][i] == doctest::Approx(out.series[0][i]));
}

TEST_CASE("a run with no time passed reports the value sampled") {
  Timeline tl(1, 1, 10, 50);
  tl.sample(0, 0.25);
  CHECK(tl.sample_mean(0) == doctest::Approx(0.25));
}
