// The checks on node constraints (nodeSelector, required node affinity, tolerations) and on
// node taints, with Kubernetes' rules (its API server's validation of the same fields) and the
// limits of spec/limits.hpp.
#include <charconv>
#include <cstdint>

#include "spec/enums.hpp"
#include "spec/limits.hpp"
#include "spec/validate.hpp"

namespace gpuq::spec {
namespace {

bool is_integer(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

std::string values_word(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " value" : " values");
}

}  // namespace

void check_requirement(const NodeRequirement& r, Path& at) {
  {
    Path::Key k(at, "key");
    check_label_key(r.key, at);
  }
  Path::Key k(at, "values");
  check_count(r.values.size(), limits::kRequirementValues, "values", at);
  const char* op = to_string(r.op);
  switch (r.op) {
    case LabelOperator::kIn:
    case LabelOperator::kNotIn:
      if (r.values.empty())
        fail(at, std::string("is empty; operator ") + op + " needs at least one value");
      for (std::size_t i = 0; i < r.values.size(); ++i) {
        Path::Index vi(at, i);
        check_label_value(r.values[i], at);
      }
      return;
    case LabelOperator::kExists:
    case LabelOperator::kDoesNotExist:
      if (!r.values.empty())
        fail(at, "lists " + values_word(r.values.size()) + "; operator " + op +
                     " takes none (it looks at the key only)");
      return;
    case LabelOperator::kGt:
    case LabelOperator::kLt:
      if (r.values.size() != 1)
        fail(at, "lists " + values_word(r.values.size()) + "; operator " + op +
                     " takes exactly one, an integer");
      if (!is_integer(r.values[0])) {
        Path::Index vi(at, 0);
        fail(at, quoted(r.values[0]) + " is not an integer; operator " + op +
                     " compares the label's value as a 64-bit integer, e.g. \"4\"");
      }
      return;
  }
}

void check_toleration(const Toleration& t, Path& at) {
  if (t.key.empty()) {
    if (!t.exists) {
      Path::Key k(at, "operator");
      fail(
          at,
          "is Equal with an empty key; a toleration of every taint has no key and operator Exists");
    }
  } else {
    Path::Key k(at, "key");
    check_label_key(t.key, at);
  }
  Path::Key k(at, "value");
  if (t.exists && !t.value.empty())
    fail(at, quoted(t.value) +
                 ": a toleration with operator Exists takes no value (it tolerates every value)");
  check_label_value(t.value, at);
}

void check_taint(const Taint& t, Path& at) {
  {
    Path::Key k(at, "key");
    if (t.key.empty()) fail(at, "is empty; a taint needs a key such as nvidia.com/gpu");
    check_label_key(t.key, at);
  }
  Path::Key k(at, "value");
  check_label_value(t.value, at);
}

void check_taints(const std::vector<Taint>& taints, Path& at) {
  check_count(taints.size(), limits::kTaints, "taints", at);
  for (std::size_t i = 0; i < taints.size(); ++i) {
    Path::Index ti(at, i);
    check_taint(taints[i], at);
    // As Kubernetes: one taint per (key, effect), so removing one never leaves a twin behind.
    for (std::size_t j = 0; j < i; ++j)
      if (taints[j].key == taints[i].key && taints[j].effect == taints[i].effect)
        fail(at, "key " + quoted(taints[i].key) + " with effect " + to_string(taints[i].effect) +
                     " is listed twice (taints[" + std::to_string(j) +
                     "]); give each key and effect once");
  }
}

void check_node_selector(const std::map<std::string, std::string>& selector, Path& at) {
  check_count(selector.size(), limits::kNodeSelector, "pairs", at, Counted::kHeld);
  for (const auto& [key, value] : selector) {
    Path::Key k(at, key);
    check_label_key(key, at);
    check_label_value(value, at);
  }
}

void validate(const NodeConstraints& c, Path& at) {
  {
    Path::Key k(at, "nodeSelector");
    check_node_selector(c.node_selector, at);
  }
  {
    Path::Key k(at, "affinity");
    check_count(c.affinity.size(), limits::kAffinityTerms, "terms", at);
    for (std::size_t i = 0; i < c.affinity.size(); ++i) {
      Path::Index ti(at, i);
      check_count(c.affinity[i].size(), limits::kTermRequirements, "requirements", at);
      for (std::size_t j = 0; j < c.affinity[i].size(); ++j) {
        Path::Index ri(at, j);
        check_requirement(c.affinity[i][j], at);
      }
    }
  }
  Path::Key k(at, "tolerations");
  check_count(c.tolerations.size(), limits::kTolerations, "tolerations", at);
  for (std::size_t i = 0; i < c.tolerations.size(); ++i) {
    Path::Index ti(at, i);
    check_toleration(c.tolerations[i], at);
  }
}

}  // namespace gpuq::spec
