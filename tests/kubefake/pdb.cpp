#include "tests/kubefake/pdb.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include "tests/kubefake/meta.hpp"
#include "tests/kubefake/pods.hpp"
#include "tests/kubefake/registry.hpp"
#include "tests/kubefake/selectors.hpp"
#include "tests/kubefake/status.hpp"

namespace gpuq::kubefake {

namespace {

bool deleting(const json::object& o) {
  return value_at(o, {"metadata", "deletionTimestamp"}) != nullptr;
}

bool healthy(const json::object& pod) {
  return pod_phase(pod) == "Running" && pod_ready(pod) && !deleting(pod);
}

// An IntOrString budget value against `expected` pods, percentages rounded up (as the
// controller's GetScaledValueFromIntOrPercent with roundUp).
std::int64_t scaled(const json::value& v, std::int64_t expected) {
  if (v.is_number()) return int_at(json::object{{"v", v}}, {"v"}, 0);
  std::string s = to_string(v);
  if (s.empty() || s.back() != '%') {
    std::int64_t n = 0;
    std::from_chars(s.data(), s.data() + s.size(), n);
    return n;
  }
  std::int64_t pct = 0;
  std::from_chars(s.data(), s.data() + s.size() - 1, pct);
  return (pct * expected + 99) / 100;
}

json::object budget_status(const json::object& pdb, const std::vector<ObjectPtr>& pods) {
  LabelSelector selector = LabelSelector::from_object(value_at(pdb, {"spec", "selector"}));
  const json::object* was = object_at(pdb, {"status"});
  const json::object* disrupted_was = was == nullptr ? nullptr : object_at(*was, {"disruptedPods"});
  json::object disrupted;
  std::int64_t expected = 0;
  std::int64_t current = 0;
  for (const ObjectPtr& p : pods) {
    if (!selector.matches_object(*p) || pod_terminal(*p)) continue;
    ++expected;
    std::string name = string_at(*p, {"metadata", "name"});
    // An evicted pod stays out of currentHealthy until its deletion shows (the controller's
    // DisruptedPods map).
    const json::value* mark = disrupted_was == nullptr ? nullptr : disrupted_was->if_contains(name);
    if (mark != nullptr && !deleting(*p)) {
      disrupted[name] = *mark;
      continue;
    }
    if (healthy(*p)) ++current;
  }
  std::int64_t desired = 0;
  if (const json::value* min = value_at(pdb, {"spec", "minAvailable"})) {
    desired = scaled(*min, expected);
  } else if (const json::value* max = value_at(pdb, {"spec", "maxUnavailable"})) {
    desired = std::max<std::int64_t>(0, expected - scaled(*max, expected));
  }
  std::int64_t allowed = std::max<std::int64_t>(0, current - desired);
  std::int64_t generation = int_at(pdb, {"metadata", "generation"}, 1);
  json::object st;
  st["observedGeneration"] = generation;
  if (!disrupted.empty()) st["disruptedPods"] = std::move(disrupted);
  st["disruptionsAllowed"] = allowed;
  st["currentHealthy"] = current;
  st["desiredHealthy"] = desired;
  st["expectedPods"] = expected;
  std::string cond = allowed > 0 ? "True" : "False";
  std::string since = now_rfc3339();
  if (const json::value* cs = was == nullptr ? nullptr : was->if_contains("conditions");
      cs != nullptr && cs->is_array() && !cs->get_array().empty() &&
      cs->get_array()[0].is_object() &&
      string_at(cs->get_array()[0].get_object(), {"status"}) == cond) {
    since = string_at(cs->get_array()[0].get_object(), {"lastTransitionTime"});
  }
  st["conditions"] =
      json::array{json::object{{"type", "DisruptionAllowed"},
                               {"status", cond},
                               {"reason", allowed > 0 ? "SufficientPods" : "InsufficientPods"},
                               {"message", ""},
                               {"lastTransitionTime", since},
                               {"observedGeneration", generation}}};
  return st;
}

ApiError budget_refusal(const std::string& message) {
  ApiError e =
      too_many_requests("Cannot evict pod as it would violate the pod's disruption budget.", 0);
  e.details["causes"] =
      json::array{json::object{{"reason", "DisruptionBudget"}, {"message", message}}};
  return e;
}

// The eviction subresource ignores budgets for pods that are done, not started, or already going.
bool can_ignore_budget(const json::object& pod) {
  std::string phase = pod_phase(pod);
  return phase == "Succeeded" || phase == "Failed" || phase == "Pending" || deleting(pod);
}

}  // namespace

void refresh_budgets(Store::Txn& txn) {
  std::set<std::string> namespaces;
  for (const Event& e : txn.changes()) {
    if (e.resource == "pods" || e.resource == "poddisruptionbudgets") namespaces.insert(e.key.ns);
  }
  for (const std::string& ns : namespaces) {
    std::vector<ObjectPtr> budgets = txn.list("poddisruptionbudgets", ns);
    if (budgets.empty()) continue;
    std::vector<ObjectPtr> pods = txn.list("pods", ns);
    for (const ObjectPtr& b : budgets) {
      json::object st = budget_status(*b, pods);
      const json::value* old = b->if_contains("status");
      if (old != nullptr && old->is_object() && old->get_object() == st) continue;
      json::object next = *b;
      next["status"] = std::move(st);
      txn.put("poddisruptionbudgets", std::move(next));
    }
  }
}

void evict_pod(Store::Txn& txn, const ObjectKey& key, const json::object& eviction) {
  if (string_at(eviction, {"metadata", "name"}) != key.name) {
    throw bad_request("name in URL does not match name in Eviction object");
  }
  DeleteOptions options;
  if (const json::object* d = object_at(eviction, {"deleteOptions"})) {
    options = parse_delete_options(json::serialize(*d), "");
  }
  const ResourceType& pods = resource("pods");
  ObjectPtr pod = txn.get("pods", key);
  if (!pod) throw not_found(pods.group_resource(), key.name);
  auto evict = [&] { delete_object(txn, pods, key, options); };
  if (can_ignore_budget(*pod)) return evict();
  std::vector<ObjectPtr> matching;
  for (const ObjectPtr& b : txn.list("poddisruptionbudgets", key.ns)) {
    if (LabelSelector::from_object(value_at(*b, {"spec", "selector"})).matches_object(*pod)) {
      matching.push_back(b);
    }
  }
  if (matching.empty()) return evict();
  if (matching.size() > 1) {
    throw internal_error(
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
        "support.");
  }
  const json::object& pdb = *matching.front();
  std::string name = string_at(pdb, {"metadata", "name"});
  if (int_at(pdb, {"status", "observedGeneration"}, 0) <
      int_at(pdb, {"metadata", "generation"}, 1)) {
    throw budget_refusal("The disruption budget " + name +
                         " is still being processed by the server.");
  }
  std::int64_t current = int_at(pdb, {"status", "currentHealthy"}, 0);
  std::int64_t desired = int_at(pdb, {"status", "desiredHealthy"}, 0);
  bool ready = pod_ready(*pod);
  if (!ready && string_at(pdb, {"spec", "unhealthyPodEvictionPolicy"}) == "AlwaysAllow")
    return evict();
  if (!ready && current >= desired && desired > 0) return evict();  // IfHealthyBudget
  std::int64_t allowed = int_at(pdb, {"status", "disruptionsAllowed"}, 0);
  if (allowed < 0) {
    throw forbidden("", "create", {"policy", "poddisruptionbudgets"}, "", key.ns, name);
  }
  if (allowed == 0) {
    throw budget_refusal("The disruption budget " + name + " needs " + std::to_string(desired) +
                         " healthy pods and has " + std::to_string(current) + " currently");
  }
  json::object next = pdb;
  json::object& st = child(next, "status");
  st["disruptionsAllowed"] = allowed - 1;
  child(st, "disruptedPods")[key.name] = now_rfc3339();
  txn.put("poddisruptionbudgets", std::move(next));
  evict();
}

}  // namespace gpuq::kubefake
