#include "spec/duration.hpp"

#include <charconv>
#include <limits>
#include <vector>

namespace gpuq::spec {

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// A decimal number of at most 18 digits, all of `t`.
std::optional<std::int64_t> number(std::string_view t) {
  if (t.empty() || t.size() > 18) return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || v < 0) return std::nullopt;
  return v;
}

std::optional<std::int64_t> add(std::optional<std::int64_t> a, std::int64_t n, std::int64_t unit) {
  if (!a || n > (kMax - *a) / unit) return std::nullopt;
  return *a + n * unit;
}

// "1:30:00", "30:00", "1-12", "1-12:30", "1-12:00:00": Slurm's forms.
std::optional<std::int64_t> clock(std::string_view t) {
  std::int64_t days = 0;
  const bool with_days = t.find('-') != std::string_view::npos;
  if (with_days) {
    const auto d = number(t.substr(0, t.find('-')));
    if (!d) return std::nullopt;
    days = *d;
    t.remove_prefix(t.find('-') + 1);
  }
  std::vector<std::int64_t> parts;
  while (true) {
    const auto colon = t.find(':');
    const auto p = number(t.substr(0, colon));
    if (!p) return std::nullopt;
    parts.push_back(*p);
    if (colon == std::string_view::npos) break;
    t.remove_prefix(colon + 1);
  }
  std::int64_t h = 0, m = 0, s = 0;
  if (with_days) {  // days-hours[:minutes[:seconds]]
    if (parts.size() > 3) return std::nullopt;
    h = parts[0];
    m = parts.size() > 1 ? parts[1] : 0;
    s = parts.size() > 2 ? parts[2] : 0;
  } else if (parts.size() == 2) {  // minutes:seconds
    m = parts[0];
    s = parts[1];
  } else if (parts.size() == 3) {  // hours:minutes:seconds
    h = parts[0];
    m = parts[1];
    s = parts[2];
  } else {
    return std::nullopt;
  }
  // Past the first field, each is within its unit (as a clock shows it).
  if ((with_days && h > 23) || (parts.size() > 1 && (m > 59 || s > 59))) return std::nullopt;
  return add(add(add(add(std::int64_t{0}, days, 86'400'000), h, 3'600'000), m, 60'000), s, 1000);
}

}  // namespace

std::optional<std::int64_t> duration_ms(std::string_view t, bool millis) {
  if (t.empty()) return std::nullopt;
  if (t.find_first_of(":-") != std::string_view::npos) return clock(t);
  if (const auto n = number(t)) return add(std::int64_t{0}, *n, 1000);  // bare seconds
  // Units, largest first: "1d12h", "1h30m", "90s", "500ms".
  std::optional<std::int64_t> total = 0;
  std::int64_t last_unit = kMax;
  while (!t.empty()) {
    std::size_t digits = 0;
    while (digits < t.size() && t[digits] >= '0' && t[digits] <= '9') ++digits;
    const auto n = number(t.substr(0, digits));
    if (!n) return std::nullopt;
    t.remove_prefix(digits);
    std::int64_t unit = 0;
    if (t.substr(0, 2) == "ms") {
      if (!millis) return std::nullopt;
      unit = 1;
      t.remove_prefix(2);
    } else if (!t.empty() && (t[0] == 'd' || t[0] == 'h' || t[0] == 'm' || t[0] == 's')) {
      unit = t[0] == 'd' ? 86'400'000 : t[0] == 'h' ? 3'600'000 : t[0] == 'm' ? 60'000 : 1000;
      t.remove_prefix(1);
    } else {
      return std::nullopt;
    }
    if (unit >= last_unit) return std::nullopt;  // "30m1h", "1h1h"
    last_unit = unit;
    total = add(total, *n, unit);
    if (!total) return std::nullopt;
  }
  return total;
}

std::optional<std::int64_t> duration_seconds(std::string_view t) {
  const auto ms = duration_ms(t, true);
  if (!ms || *ms % 1000 != 0) return std::nullopt;
  return *ms / 1000;
}

}  // namespace gpuq::spec
