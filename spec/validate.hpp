#pragma once
// The checks every spec passes, whatever front end made it: ranges, names and their character
// sets, cross-field rules, and the limits of spec/limits.hpp. Each throws SpecError naming the
// field's path (under `at`), the value and what is allowed. They read typed values, so a YAML
// file, an API request and a Kubernetes pod are refused in the same words.
//
// Names (queues, cohorts, nodes, flavors, priority classes, resources' and labels' name
// segments) are 1 to 253 characters of letters, digits, '-', '_' and '.', beginning with a
// letter or a digit, with no ".." (so a name is never a path: no '/', no control characters).
// Job ids keep the same set and are at most 63 characters; owners may also hold '@' and begin
// with '_'. Label keys and values follow Kubernetes (spec/limits.hpp).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "spec/error.hpp"
#include "spec/types.hpp"

namespace gpuq::spec {

// A list over its limit ("lists 9 pod sets; at most 8 are allowed") or a map, or what a command
// holds ("has 5000 arguments; ..."): the words every front end uses, also when it refuses the
// size before reading the entries.
enum class Counted { kListed, kHeld };
void check_count(std::size_t n, std::size_t limit, std::string_view things, const Path& at,
                 Counted how = Counted::kListed);

void check_name(std::string_view name, const Path& at);
void check_job_id(std::string_view id, const Path& at);
void check_label_key(std::string_view key, const Path& at);
void check_label_value(std::string_view value, const Path& at);  // empty is allowed
void check_labels(const std::map<std::string, std::string>& labels, Path& at);

// Node constraints (validate_constraints.cpp), each at `at`: the YAML reader checks a
// requirement, toleration or taint where it read it (either affinity shape), validate() the
// whole set of a pod set with the paths of the list shape (affinity[0][1].values).
void check_node_selector(const std::map<std::string, std::string>& selector, Path& at);
void check_requirement(const NodeRequirement& r, Path& at);
void check_toleration(const Toleration& t, Path& at);
void check_taint(const Taint& t, Path& at);
// nodeSelector, affinity and tolerations, under `at` (a pod set).
void validate(const NodeConstraints& c, Path& at);
// A node's taints (`at` is the list): each checked, a (key, effect) pair at most once.
void check_taints(const std::vector<Taint>& taints, Path& at);

// `names` spells resources in paths ("quotas[0].resources.gpu.nominal").
void validate(const QueueSpec& q, Path& at, const ResourceNames& names);
void validate(const NodeSpec& n, Path& at, const ResourceNames& names);
// An empty id is allowed (gpuqd assigns one); a front end that needs one checks that itself.
void validate(const JobSpec& j, Path& at, const ResourceNames& names);
void validate(const RunSpec& r, Path& at);
// url: http://, at most 2048 bytes, no spaces or control characters; on: known events, once each.
void validate(const NotifySpec& n, Path& at);
void validate(const PriorityClasses& c, Path& at);
void validate(const SchedulingPolicy& p, Path& at);

}  // namespace gpuq::spec
