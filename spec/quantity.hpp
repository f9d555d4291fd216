#pragma once
// Kubernetes quantity notation ("2", "500m", "16Gi", "1.5", "1e3") to exact integer base units.
#include <string>
#include <string_view>

#include "spec/resources.hpp"
#include "spec/result.hpp"

namespace gpuq {

// How a resource's base unit relates to the notation: gpu and cpu are counted in thousandths
// ("1" = 1000, "500m" = 500); memory and other resources in whole units ("1Ki" = 1024).
enum class UnitScale { kMilli, kUnit };

inline UnitScale scale_of(ResourceId r) {
  return (r == kGpu || r == kCpu) ? UnitScale::kMilli : UnitScale::kUnit;
}

// Parses text into base units. The result must be an exact integer (no rounding): "0.0005" cpu
// or "0.5" bytes are errors. Negative values parse; callers decide whether they are allowed.
Result<Quantity> parse_quantity(std::string_view text, UnitScale scale);

// Formats base units back into the shortest exact notation ("500m", "2", "16Gi").
std::string format_quantity(Quantity q, UnitScale scale);
// As resource r is written: gpu 2000 -> "2", 500 -> "500m"; cpu 4000 -> "4", 250 -> "250m";
// memory 64 GiB -> "64Gi" (an exact multiple of Ki/Mi/Gi/Ti/Pi/Ei, else bytes); other resources
// as an integer count. parse_quantity(format_quantity(q, r), scale_of(r)) == q for every q.
std::string format_quantity(Quantity q, ResourceId r);

}  // namespace gpuq
