#pragma once
// Kubernetes resource quantities ("500m", "2", "1Ti", "1e3", "0.5Gi") as integers, the way
// resource.Quantity's MilliValue reads them (rounded up to a whole milli-unit).
#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuq::kubefake {

// The quantity in milli-units (cpu "500m" -> 500, memory "1Ki" -> 1'024'000); nullopt when
// malformed or out of range.
std::optional<std::int64_t> parse_milli(std::string_view text);
// A quantity as JSON holds it: a string, or a number (which the real server also takes);
// "" for anything else.
std::string quantity_text(const boost::json::value& v);
// parse_milli of quantity_text.
std::optional<std::int64_t> parse_milli(const boost::json::value& v);

}  // namespace gpuq::kubefake
