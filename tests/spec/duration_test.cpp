// Durations in Slurm's and Kubernetes' words (spec/duration.hpp).
#include <doctest/doctest.h>

#include "spec/duration.hpp"

using namespace gpuq::spec;

TEST_CASE("durations: seconds, units, units together, and Slurm's clock forms") {
  CHECK(duration_seconds("90") == 90);
  CHECK(duration_seconds("0") == 0);
  CHECK(duration_seconds("90s") == 90);
  CHECK(duration_seconds("15m") == 900);
  CHECK(duration_seconds("2h") == 7200);
  CHECK(duration_seconds("1d") == 86400);
  CHECK(duration_seconds("1h30m") == 5400);
  CHECK(duration_seconds("2d12h") == 216000);
  CHECK(duration_seconds("1h0m30s") == 3630);
  CHECK(duration_seconds("30:00") == 1800);
  CHECK(duration_seconds("1:30:00") == 5400);
  CHECK(duration_seconds("100:00:00") == 360000);  // hours may run past a day
  CHECK(duration_seconds("1-12") == 129600);
  CHECK(duration_seconds("1-12:30") == 131400);
  CHECK(duration_seconds("1-12:00:00") == 129600);
  CHECK(duration_seconds("1-0") == 86400);
  CHECK(duration_ms("500ms", true) == 500);
  CHECK(duration_ms("1s500ms", true) == 1500);
  CHECK(duration_seconds("2000ms") == 2);
}

TEST_CASE("durations: what is refused") {
  for (const char* bad : {"", "s", "1x", "1.5h", "-5", "1h1h", "30m1h", "1:2:3:4", "1:60", "1-24", "1-1:60:00",
                          "1-", ":30", "1::0", " 90", "90 ", "1 h", "h1", "99999999999999999999", "1-1-1", "500ms",
                          "9999999999999999d"})
    CHECK_MESSAGE(!duration_seconds(bad).has_value(), std::string(bad));
  CHECK_FALSE(duration_ms("500ms").has_value());  // milliseconds only where asked for
  CHECK_FALSE(duration_seconds("1500ms").has_value());  // not whole seconds
  CHECK(std::string(kDurationForms).find("1-12:00:00") != std::string::npos);
}
