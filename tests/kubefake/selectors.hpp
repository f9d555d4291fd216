#pragma once
// Label selectors (the ?labelSelector= grammar and metav1.LabelSelector objects) and field
// selectors (?fieldSelector=, with the fields each resource supports), as the API server parses
// and applies them. Bad input throws ApiError 400 with the real server's wording.
#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tests/kubefake/resources.hpp"

namespace gpuq::kubefake {

class LabelSelector {
 public:
  enum class Op { equals, not_equals, in, not_in, exists, not_exists, greater, less };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };

  LabelSelector() = default;  // matches everything
  static LabelSelector parse(std::string_view text);
  // A metav1.LabelSelector (matchLabels, matchExpressions). A null or absent selector matches
  // nothing; an empty one matches everything (policy/v1 PodDisruptionBudget semantics).
  static LabelSelector from_object(const boost::json::value* selector);

  bool matches(const boost::json::object* labels) const;
  bool matches_object(const boost::json::object& object) const;  // by its metadata.labels
  bool empty() const { return requirements_.empty() && !nothing_; }

 private:
  std::vector<Requirement> requirements_;
  bool nothing_ = false;
};

class FieldSelector {
 public:
  FieldSelector() = default;  // matches everything
  // Fields: metadata.name and metadata.namespace for every resource, and per resource what the
  // real server supports (pods: spec.nodeName, spec.schedulerName, status.phase, ...).
  static FieldSelector parse(std::string_view text, const ResourceType& type);

  bool matches(const boost::json::object& object) const;
  bool empty() const { return terms_.empty(); }
  // The value a `metadata.name=` term requires, if any (a watch on one object).
  std::string name() const;

 private:
  struct Term {
    std::string field;
    bool equal;
    std::string value;
  };
  std::vector<Term> terms_;
};

// A field's value as field selectors compare it: strings as they are, booleans as
// "true"/"false", absent as "".
std::string field_value(const boost::json::object& object, std::string_view field);

}  // namespace gpuq::kubefake
