#include "sim/spec_values.hpp"

#include <cctype>
#include <charconv>
#include <climits>

#include "scheduler/quantity.hpp"

namespace gpuq::sim {

void spec_fail(const std::string& path, const std::string& why) { throw SpecError(path + ": " + why); }

std::string quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  out.append(text);
  out.push_back('"');
  return out;
}

std::string_view numeric_text(const std::string& text) {
  std::string_view v = text;
  if (v.size() > 1 && v[0] == '+' && v[1] != '-' && v[1] != '+') v.remove_prefix(1);
  return v;
}

std::int64_t int_value(const std::string& text, const std::string& path) {
  const std::string_view s = numeric_text(text);
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range && end == s.data() + s.size())
    spec_fail(path, quoted(text) + " is out of the 64-bit integer range");
  if (ec != std::errc() || end != s.data() + s.size() || s.empty())
    spec_fail(path, quoted(text) + " is not an integer");
  return v;
}

std::int32_t int32_value(const std::string& text, const std::string& path) {
  const std::int64_t v = int_value(text, path);
  if (v < INT32_MIN || v > INT32_MAX)
    spec_fail(path, quoted(text) + " is out of the 32-bit integer range (" + std::to_string(INT32_MIN) +
                        ".." + std::to_string(INT32_MAX) + ")");
  return static_cast<std::int32_t>(v);
}

Quantity quantity_value(const std::string& text, const std::string& path, ResourceId r) {
  auto q = parse_quantity(text, scale_of(r));
  if (!q) {
    // A fraction of a resource that counts whole units ("100m" of memory): say which units.
    if (scale_of(r) == UnitScale::kUnit && parse_quantity(text, UnitScale::kMilli))
      spec_fail(path, q.error() + "; this resource counts whole units (bytes for memory), e.g. 2, 1.5Gi, 16Gi");
    spec_fail(path, q.error());
  }
  return *q;
}

ResourceId resource_value(const std::string& name, const std::string& parent, ResourceNames& names) {
  if (name.empty()) spec_fail(parent, "\"\" is not a resource name; use a name such as gpu, cpu, memory");
  auto r = names.intern(name);
  if (!r)
    spec_fail(parent.empty() ? name : parent + "." + name,
              "too many distinct resources (at most " + std::to_string(kMaxResources) + "); \"" + name +
                  "\" does not fit");
  return *r;
}

std::int32_t priority_value(const std::string& text, const std::string& path, const PriorityClasses& classes) {
  if (auto it = classes.by_name.find(text); it != classes.by_name.end()) return it->second;
  if (!text.empty() && std::isalpha(static_cast<unsigned char>(text[0]))) {
    std::string names;
    for (const auto& [name, value] : classes.by_name)
      names += (names.empty() ? "" : ", ") + name + " (" + std::to_string(value) + ")";
    spec_fail(path, quoted(text) + " is neither an integer nor a priority class; the classes are " +
                        (names.empty() ? std::string("(none)") : names));
  }
  return int32_value(text, path);
}

void check_pod_count(std::int64_t count, const std::string& shown, const std::string& path) {
  if (count < 1 || count > 100000) spec_fail(path, shown + " must be 1..100000");
}

void check_max_runtime(std::int64_t seconds, const std::string& shown, const std::string& path) {
  if (seconds <= 0) spec_fail(path, shown + " must be > 0 seconds");
}

void check_grace_period(std::int64_t seconds, const std::string& shown, const std::string& path) {
  if (seconds < 0) spec_fail(path, shown + " must be >= 0 seconds");
}

}  // namespace gpuq::sim
