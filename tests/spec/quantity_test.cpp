#include <doctest/doctest.h>

#include "spec/quantity.hpp"

using namespace gpuq;

namespace {
gpuq::Quantity milli(const char* s) { return parse_quantity(s, UnitScale::kMilli).value(); }
gpuq::Quantity unit(const char* s) { return parse_quantity(s, UnitScale::kUnit).value(); }
std::string milli_error(const char* s) { return parse_quantity(s, UnitScale::kMilli).error(); }
std::string unit_error(const char* s) { return parse_quantity(s, UnitScale::kUnit).error(); }
}  // namespace

TEST_CASE("GPU and CPU quantities are exact thousandths") {
  CHECK(milli("2") == 2000);
  CHECK(milli("500m") == 500);
  CHECK(milli("0.5") == 500);
  CHECK(milli("1.5") == 1500);
  CHECK(milli(".25") == 250);
  CHECK(milli("1e3") == 1000000);
  CHECK(milli("2E-3") == 2);
  CHECK(milli("0") == 0);
  CHECK(milli(" 3 ") == 3000);
  CHECK(milli("0.001") == 1);
  CHECK(milli("1000000u") == 1000);
  CHECK(milli("-2") == -2000);
}

TEST_CASE("memory quantities are exact bytes with binary and decimal suffixes") {
  CHECK(unit("16Gi") == 16LL << 30);
  CHECK(unit("1.5Gi") == 3LL << 29);
  CHECK(unit("2Ti") == 2LL << 40);
  CHECK(unit("1k") == 1000);
  CHECK(unit("1M") == 1000000);
  CHECK(unit("1E") == 1000000000000000000LL);  // a lone E is exa, not an exponent
  CHECK(unit("128974848") == 128974848);
  CHECK(unit("129e6") == 129000000);
  CHECK(unit("123Mi") == 123LL << 20);
}

TEST_CASE("anything inexact or malformed is an error that quotes the text") {
  CHECK(milli_error("0.0001").find("finer than the smallest unit") != std::string::npos);
  CHECK(unit_error("100m").find("not a whole number") != std::string::npos);
  CHECK(unit_error("0.5").find("\"0.5\"") != std::string::npos);
  CHECK(milli_error("abc").find("not a number") != std::string::npos);
  CHECK(milli_error("").find("empty") != std::string::npos);
  CHECK(milli_error("1.5x").find("unknown suffix \"x\"") != std::string::npos);
  CHECK(milli_error("1Gb").find("unknown suffix") != std::string::npos);
  CHECK(unit_error("100Ei").find("too large") != std::string::npos);
  CHECK(milli_error("9300000000000000").find("too large") != std::string::npos);
  CHECK(milli_error("1e").find("unknown suffix") != std::string::npos);
  CHECK(milli_error("1234567890123456789").find("18 significant digits") != std::string::npos);
}

TEST_CASE("format gives back the shortest exact notation") {
  using gpuq::format_quantity;
  CHECK(format_quantity(500, UnitScale::kMilli) == "500m");
  CHECK(format_quantity(16000, UnitScale::kMilli) == "16");
  CHECK(format_quantity(16LL << 30, UnitScale::kUnit) == "16Gi");
  CHECK(format_quantity(1000, UnitScale::kUnit) == "1000");
  CHECK(format_quantity(0, UnitScale::kUnit) == "0");
  for (const char* s : {"500m", "2", "1500m"})
    CHECK(format_quantity(milli(s), UnitScale::kMilli) == s);
}

TEST_CASE("format_quantity is exact Kubernetes notation that parses back to the same value") {
  ResourceNames names;
  const auto other = *names.intern("rdma/hca");
  CHECK(format_quantity(2000, kGpu) == "2");
  CHECK(format_quantity(500, kGpu) == "500m");
  CHECK(format_quantity(4000, kCpu) == "4");
  CHECK(format_quantity(250, kCpu) == "250m");
  CHECK(format_quantity(Quantity{64} << 30, kMemory) == "64Gi");
  CHECK(format_quantity(1536, kMemory) == "1536");  // 1.5Ki: not exact in Ki, so bytes
  CHECK(format_quantity(1000, kMemory) == "1000");
  CHECK(format_quantity(2048, other) == "2048");
  const Quantity values[] = {0,
                             1,
                             7,
                             250,
                             500,
                             999,
                             1000,
                             1500,
                             2000,
                             4096,
                             1536,
                             Quantity{3} << 20,
                             (Quantity{1} << 40) + 1,
                             kMaxQuantity};
  for (ResourceId r : {kGpu, kCpu, kMemory, other})
    for (Quantity q : values) {
      const std::string text = format_quantity(q, r);
      auto back = parse_quantity(text, scale_of(r));
      INFO(text);
      REQUIRE(back.ok());
      CHECK(*back == q);
    }
}
