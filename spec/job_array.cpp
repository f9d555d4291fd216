#include "spec/job_array.hpp"

#include <algorithm>
#include <charconv>

namespace gpuq::spec {
namespace {

bool number(std::string_view s, std::int32_t& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= 0;
}

}  // namespace

Result<ArrayRange> parse_array(std::string_view text) {
  auto bad = [&](const std::string& what) {
    return Error{"\"" + std::string(text.substr(0, 64)) + (text.size() > 64 ? "...\"" : "\"") + ": " + what +
                     "; write indices and ranges as 0-99, 1,3,5-9 or 0-30:10, then %N to run at most N at once",
                 ErrorCode::kInvalidArgument};
  };
  if (text.size() > 4096) return bad("is " + std::to_string(text.size()) + " characters long; at most 4096 are allowed");
  ArrayRange out;
  std::string_view list = text;
  if (const auto pct = text.find('%'); pct != std::string_view::npos) {
    list = text.substr(0, pct);
    if (!number(text.substr(pct + 1), out.throttle) || out.throttle < 1)
      return bad("the throttle after % must be a whole number of at least 1");
  }
  if (list.empty()) return bad("names no index");
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    std::string_view item = list.substr(at, comma - at);
    at = comma + 1;
    std::int32_t step = 1;
    if (const auto colon = item.find(':'); colon != std::string_view::npos) {
      if (!number(item.substr(colon + 1), step) || step < 1) return bad("a step after : must be a whole number of at least 1");
      item = item.substr(0, colon);
    }
    std::int32_t first = 0, last = 0;
    if (const auto dash = item.find('-'); dash != std::string_view::npos) {
      if (!number(item.substr(0, dash), first) || !number(item.substr(dash + 1), last))
        return bad("\"" + std::string(item) + "\" is not a range of two whole numbers");
      if (last < first) return bad("the range " + std::string(item) + " ends before it begins");
    } else {
      if (!number(item, first)) return bad("\"" + std::string(item) + "\" is not a whole number");
      last = first;
    }
    if (last > kArrayMaxIndex) return bad("index " + std::to_string(last) + " is over " + std::to_string(kArrayMaxIndex));
    for (std::int64_t i = first; i <= last; i += step) {
      out.indices.push_back(static_cast<std::int32_t>(i));
      if (out.indices.size() > kArrayMembers)
        return bad("has more than " + std::to_string(kArrayMembers) + " members; at most " +
                   std::to_string(kArrayMembers) + " are allowed");
    }
  }
  std::sort(out.indices.begin(), out.indices.end());
  out.indices.erase(std::unique(out.indices.begin(), out.indices.end()), out.indices.end());
  return out;
}

std::string array_text(const std::vector<std::int32_t>& indices) {
  std::string out;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(indices[i]);
    if (j > i) out += '-' + std::to_string(indices[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace gpuq::spec
