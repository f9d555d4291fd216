#pragma once
// A spec's values from their text, for every front end (the YAML reader and the API's request
// parser), so that a value means the same and is refused with the same words wherever it comes
// from. Each throws SpecError naming the path, the value and what is allowed. Range rules (>= 0,
// limits, names) are spec/validate.hpp's, on the typed values.
#include <cstdint>
#include <string>
#include <string_view>

#include "spec/enums.hpp"
#include "spec/error.hpp"
#include "spec/resources.hpp"
#include "spec/types.hpp"

namespace gpuq::spec {

std::int64_t int_value(std::string_view text, const Path& at);
std::int32_t int32_value(std::string_view text, const Path& at);
// A finite decimal ("1", "0.5", "2.5e-1").
double number_value(std::string_view text, const Path& at);
bool bool_value(std::string_view text, const Path& at);
// A Kubernetes quantity in resource r's base units ("2", "500m", "16Gi"); negative values parse
// (validate() refuses them where they are not allowed).
Quantity quantity_value(std::string_view text, ResourceId r, const Path& at);
// The slot of a resource name, interned into `names`; `at` is the resource's path.
ResourceId resource_value(std::string_view name, ResourceNames& names, const Path& at);
// The slot of a resource name that a queue or node already brought (a job's request: a name that
// nothing offers could never be admitted, and interning it would take one of the few slots for
// good, so it is refused and nothing is left behind).
ResourceId known_resource_value(std::string_view name, const ResourceNames& names, const Path& at);
// An integer, or the name of one of `classes`.
std::int32_t priority_value(std::string_view text, const PriorityClasses& classes, const Path& at);

// One of E's names (spec/enums.hpp); the error lists them.
template <class E>
E enum_value(std::string_view text, const Path& at) {
  if (auto v = enum_from<E>(text)) return *v;
  std::string names;
  for (std::string_view w : enum_words<E>()) names += (names.empty() ? "" : ", ") + std::string(w);
  fail(at, quoted(text) + " is not allowed; use one of " + names);
}

}  // namespace gpuq::spec
