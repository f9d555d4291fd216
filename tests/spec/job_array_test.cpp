// Job arrays as sbatch --array writes them (spec/job_array.hpp).
#include <doctest/doctest.h>

#include "spec/job_array.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace spec_job_array_test {

using gpuq::spec::array_text;
using gpuq::spec::parse_array;

TEST_CASE("array ranges, lists, steps and the throttle") {
  auto r = parse_array("0-3");
  REQUIRE(r.ok());
  CHECK(r.value().indices == std::vector<std::int32_t>{0, 1, 2, 3});
  CHECK(r.value().throttle == 0);
  r = parse_array("1,3,5-7%2");
  REQUIRE(r.ok());
  CHECK(r.value().indices == std::vector<std::int32_t>{1, 3, 5, 6, 7});
  CHECK(r.value().throttle == 2);
  r = parse_array("0-30:10,5,5");
  REQUIRE(r.ok());
  CHECK(r.value().indices == std::vector<std::int32_t>{0, 5, 10, 20, 30});  // sorted, once each
  CHECK(parse_array("0-99999").value().indices.size() == 100000);
  CHECK(parse_array("3999990-4000000").value().indices.size() == 11);
  CHECK(array_text({0, 1, 2, 3, 7, 9, 10}) == "0-3,7,9-10");
  CHECK(array_text({4}) == "4");
}

TEST_CASE("bad arrays are refused with the text and what is allowed") {
  const char* hint = "; write indices and ranges as 0-99, 1,3,5-9 or 0-30:10, then %N to run at most N at once";
  CHECK(parse_array("5-2").error() == std::string("\"5-2\": the range 5-2 ends before it begins") + hint);
  CHECK(parse_array("0-3%0").error() == std::string("\"0-3%0\": the throttle after % must be a whole number of at least 1") + hint);
  CHECK(parse_array("a").error() == std::string("\"a\": \"a\" is not a whole number") + hint);
  CHECK(parse_array("").error() == std::string("\"\": names no index") + hint);
  CHECK(parse_array("1,,2").error() == std::string("\"1,,2\": \"\" is not a whole number") + hint);
  CHECK(parse_array("-1").error().find("is not a range of two whole numbers") != std::string::npos);
  CHECK(parse_array("0-100000").error().find("has more than 100000 members; at most 100000 are allowed") != std::string::npos);
  CHECK(parse_array("0-4000000").error().find("at most 100000 are allowed") != std::string::npos);
  CHECK(parse_array("4000001").error().find("index 4000001 is over 4000000") != std::string::npos);
  CHECK(parse_array("0-5:0").error().find("a step after : must be a whole number of at least 1") != std::string::npos);
  CHECK(parse_array(std::string(5000, '1')).error().find("at most 4096 are allowed") != std::string::npos);
}

}  // namespace spec_job_array_test
