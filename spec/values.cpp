#include "spec/values.hpp"

#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>

#include "spec/quantity.hpp"

namespace gpuq::spec {

namespace {

// The digits of a number's text; YAML allows a leading "+", which from_chars does not.
std::string_view numeric_text(std::string_view v) {
  if (v.size() > 1 && v[0] == '+' && v[1] != '-' && v[1] != '+') v.remove_prefix(1);
  return v;
}

}  // namespace

std::int64_t int_value(std::string_view text, const Path& at) {
  const std::string_view s = numeric_text(text);
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range && end == s.data() + s.size())
    fail(at, quoted(text) + " is out of the 64-bit integer range");
  if (ec != std::errc() || end != s.data() + s.size() || s.empty())
    fail(at, quoted(text) + " is not an integer");
  return v;
}

std::int32_t int32_value(std::string_view text, const Path& at) {
  const std::int64_t v = int_value(text, at);
  if (v < INT32_MIN || v > INT32_MAX)
    fail(at, quoted(text) + " is out of the 32-bit integer range (" + std::to_string(INT32_MIN) +
                 ".." + std::to_string(INT32_MAX) + ")");
  return static_cast<std::int32_t>(v);
}

double number_value(std::string_view text, const Path& at) {
  const std::string_view s = numeric_text(text);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(v))
    fail(at, quoted(text) + " is not a number; use a decimal such as 1, 0.5, 2.5e-1");
  return v;
}

bool bool_value(std::string_view text, const Path& at) {
  if (text == "true") return true;
  if (text == "false") return false;
  fail(at, quoted(text) + " is not allowed; use true or false");
}

Quantity quantity_value(std::string_view text, ResourceId r, const Path& at) {
  auto q = parse_quantity(text, scale_of(r));
  if (!q) {
    // A fraction of a resource that counts whole units ("100m" of memory): say which units.
    if (scale_of(r) == UnitScale::kUnit && parse_quantity(text, UnitScale::kMilli))
      fail(at, q.error() +
                   "; this resource counts whole units (bytes for memory), e.g. 2, 1.5Gi, 16Gi");
    fail(at, q.error());
  }
  return *q;
}

ResourceId resource_value(std::string_view name, ResourceNames& names, const Path& at) {
  if (name.empty()) fail(at, "\"\" is not a resource name; use a name such as gpu, cpu, memory");
  auto r = names.intern(name);
  if (!r)
    fail(at, "too many distinct resources (at most " + std::to_string(kMaxResources) + "); " +
                 quoted(name) + " does not fit");
  return *r;
}

ResourceId known_resource_value(std::string_view name, const ResourceNames& names, const Path& at) {
  if (name.empty()) fail(at, "\"\" is not a resource name; use a name such as gpu, cpu, memory");
  if (auto r = names.find(name)) return *r;
  std::string known;
  for (std::size_t i = 0; i < names.size(); ++i)
    known += (known.empty() ? "" : ", ") + names.name(static_cast<ResourceId>(i));
  fail(at, quoted(name) + " is not a resource of any queue or node; the resources are " + known);
}

std::int32_t priority_value(std::string_view text, const PriorityClasses& classes, const Path& at) {
  if (auto it = classes.by_name.find(std::string(text)); it != classes.by_name.end())
    return it->second;
  if (!text.empty() && std::isalpha(static_cast<unsigned char>(text[0]))) {
    std::string names;
    for (const auto& [name, value] : classes.by_name)
      names += (names.empty() ? "" : ", ") + name + " (" + std::to_string(value) + ")";
    fail(at, quoted(text) + " is neither an integer nor a priority class; the classes are " +
                 (names.empty() ? std::string("(none)") : names));
  }
  return int32_value(text, at);
}

}  // namespace gpuq::spec
