#include "tests/kubefake/pods.hpp"

#include <chrono>

#include "tests/kubefake/meta.hpp"
#include "tests/kubefake/quantity.hpp"
#include "tests/kubefake/resources.hpp"
#include "tests/kubefake/status.hpp"

namespace gpuq::kubefake {

namespace {

const GroupResource kPods{"", "pods"};
const GroupResource kBinding{"", "pods/binding"};

void set_default(json::object& o, std::string_view key, json::value v) {
  if (!o.contains(key)) o[key] = std::move(v);
}

[[noreturn]] void pod_invalid(const json::object& pod, const std::string& field, const char* reason,
                              const std::string& detail) {
  throw invalid("Pod", kPods, string_at(pod, {"metadata", "name"}), field, reason, detail);
}

// Extended resources (a '/' in the name, like nvidia.com/gpu) cannot be overcommitted: the real
// server requires requests == limits for them and defaults every missing request to its limit.
void default_and_check_resources(const json::object& pod, json::object& c, const std::string& at) {
  json::object& res = child(c, "resources");
  // Made before taking pointers into `res`: adding a key may move its values.
  if (res.contains("limits") && res["limits"].is_object()) child(res, "requests");
  json::object* limits = res.contains("limits") ? res["limits"].if_object() : nullptr;
  json::object* requests = res.contains("requests") ? res["requests"].if_object() : nullptr;
  for (json::object* m : {limits, requests}) {
    if (m == nullptr) continue;
    for (auto& kv : *m) {
      // Numbers are quantities too; stored as strings, as the real server writes them back.
      if (kv.value().is_number()) kv.value() = quantity_text(kv.value());
      if (!parse_milli(kv.value())) {
        pod_invalid(pod,
                    at + ".resources." + (m == limits ? "limits" : "requests") + "[" +
                        std::string(kv.key()) + "]",
                    "FieldValueInvalid",
                    "Invalid value: \"" + to_string(kv.value()) +
                        "\": quantities must match the regular expression "
                        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
      }
    }
  }
  if (limits != nullptr && requests != nullptr) {
    for (const auto& kv : *limits) set_default(*requests, kv.key(), kv.value());
  }
  if (requests == nullptr) return;
  for (const auto& kv : *requests) {
    std::string_view name = kv.key();
    if (name.find('/') == std::string_view::npos || name.rfind("kubernetes.io/", 0) == 0) continue;
    const json::value* lim = limits == nullptr ? nullptr : limits->if_contains(name);
    if (lim == nullptr) {
      pod_invalid(pod, at + ".resources.limits", "FieldValueRequired",
                  "Required value: Limit must be set for non overcommitable resources");
    }
    if (parse_milli(*lim) != parse_milli(kv.value())) {
      pod_invalid(pod, at + ".resources.requests", "FieldValueInvalid",
                  "Invalid value: \"" + to_string(kv.value()) + "\": must be equal to " +
                      std::string(name) + " limit of " + to_string(*lim));
    }
  }
}

void prepare_containers(json::object& pod, json::object& spec, const char* list) {
  json::value* v = spec.if_contains(list);
  if (v == nullptr) return;
  if (!v->is_array())
    pod_invalid(pod, std::string("spec.") + list, "FieldValueInvalid",
                "Invalid value: must be a list");
  std::size_t i = 0;
  for (json::value& cv : v->get_array()) {
    std::string at = std::string("spec.") + list + "[" + std::to_string(i++) + "]";
    if (!cv.is_object())
      pod_invalid(pod, at, "FieldValueInvalid", "Invalid value: must be an object");
    json::object& c = cv.get_object();
    if (string_at(c, {"name"}).empty())
      pod_invalid(pod, at + ".name", "FieldValueRequired", "Required value");
    std::string image = string_at(c, {"image"});
    if (image.empty()) pod_invalid(pod, at + ".image", "FieldValueRequired", "Required value");
    std::string tail = image.substr(image.rfind('/') == std::string::npos ? 0 : image.rfind('/'));
    bool latest = tail.find('@') == std::string::npos &&
                  (tail.find(':') == std::string::npos || tail.ends_with(":latest"));
    set_default(c, "imagePullPolicy", latest ? "Always" : "IfNotPresent");
    set_default(c, "terminationMessagePath", "/dev/termination-log");
    set_default(c, "terminationMessagePolicy", "File");
    default_and_check_resources(pod, c, at);
  }
}

std::string qos_class(const json::object& spec) {
  bool any = false;
  bool guaranteed = true;
  const json::value* cs = spec.if_contains("containers");
  if (cs == nullptr || !cs->is_array()) return "BestEffort";
  for (const json::value& cv : cs->get_array()) {
    if (!cv.is_object()) continue;
    const json::object& c = cv.get_object();
    for (const char* r : {"cpu", "memory"}) {
      std::string req = string_at(c, {"resources", "requests", r});
      std::string lim = string_at(c, {"resources", "limits", r});
      any = any || !req.empty() || !lim.empty();
      if (lim.empty() || parse_milli(req) != parse_milli(lim)) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

json::array default_tolerations() {
  json::array t;
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    t.push_back(json::object{
        {"key", key}, {"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", 300}});
  }
  return t;
}

void add_amounts(Amounts& into, const json::object* list, bool take_max) {
  if (list == nullptr) return;
  for (const auto& kv : *list) {
    auto v = parse_milli(kv.value());
    if (!v) continue;
    std::int64_t& slot = into[std::string(kv.key())];
    slot = take_max ? std::max(slot, *v) : slot + *v;
  }
}

}  // namespace

void prepare_pod_create(json::object& pod) {
  json::object& spec = child(pod, "spec");
  const json::value* cs = spec.if_contains("containers");
  if (cs == nullptr || !cs->is_array() || cs->get_array().empty()) {
    pod_invalid(pod, "spec.containers", "FieldValueRequired", "Required value");
  }
  prepare_containers(pod, spec, "containers");
  prepare_containers(pod, spec, "initContainers");
  set_default(spec, "restartPolicy", "Always");
  set_default(spec, "terminationGracePeriodSeconds", 30);
  set_default(spec, "dnsPolicy", "ClusterFirst");
  set_default(spec, "securityContext", json::object());
  set_default(spec, "schedulerName", "default-scheduler");
  set_default(spec, "enableServiceLinks", true);
  set_default(spec, "priority", 0);
  set_default(spec, "preemptionPolicy", "PreemptLowerPriority");
  set_default(spec, "serviceAccountName", "default");
  set_default(spec, "serviceAccount", json::string(string_at(spec, {"serviceAccountName"})));
  // The DefaultTolerationSeconds admission plugin's tolerations, which every pod gets.
  json::value& tol = spec["tolerations"];
  if (!tol.is_array()) tol = json::array();
  for (const json::value& t : default_tolerations()) {
    bool has = false;
    for (const json::value& e : tol.get_array()) {
      has = has || (e.is_object() &&
                    string_at(e.get_object(), {"key"}) == string_at(t.get_object(), {"key"}));
    }
    if (!has) tol.get_array().push_back(t);
  }
  std::string qos = qos_class(spec);  // before adding to `pod`, which may move `spec`
  pod["status"] = json::object{{"phase", "Pending"}, {"qosClass", qos}};
}

void check_pod_update(const json::object& old_pod, const json::object& new_pod) {
  // Blank out what may change (images, activeDeadlineSeconds, tolerations,
  // terminationGracePeriodSeconds, schedulingGates); anything else that differs is refused.
  auto mutable_blanked = [](const json::object& pod) {
    const json::object* s = object_at(pod, {"spec"});
    json::object spec = s == nullptr ? json::object() : *s;
    for (const char* k : {"activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds",
                          "schedulingGates"}) {
      spec.erase(k);
    }
    for (const char* list : {"containers", "initContainers"}) {
      if (json::value* v = spec.if_contains(list); v != nullptr && v->is_array()) {
        for (json::value& c : v->get_array()) {
          if (c.is_object()) c.get_object().erase("image");
        }
      }
    }
    return spec;
  };
  if (mutable_blanked(old_pod) != mutable_blanked(new_pod)) {
    pod_invalid(
        new_pod, "spec", "FieldValueForbidden",
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
        "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
        "(allow it to be set to 1 if it was previously negative)");
  }
}

Amounts pod_requests(const json::object& pod) {
  Amounts sum;
  Amounts init;
  auto each = [&](const char* list, Amounts& into, bool take_max) {
    const json::value* v = value_at(pod, {"spec", list});
    if (v == nullptr || !v->is_array()) return;
    for (const json::value& c : v->get_array()) {
      if (c.is_object())
        add_amounts(into, object_at(c.get_object(), {"resources", "requests"}), take_max);
    }
  };
  each("containers", sum, false);
  each("initContainers", init, true);
  for (const auto& [name, v] : init) sum[name] = std::max(sum[name], v);
  add_amounts(sum, object_at(pod, {"spec", "overhead"}), false);
  sum["pods"] = 1000;
  return sum;
}

std::string pod_phase(const json::object& pod) { return string_at(pod, {"status", "phase"}); }

bool pod_terminal(const json::object& pod) {
  std::string p = pod_phase(pod);
  return p == "Succeeded" || p == "Failed";
}

bool pod_ready(const json::object& pod) { return condition_true(pod, "Ready"); }

void set_condition(json::object& status, const std::string& type, const std::string& value,
                   const std::string& reason, const std::string& message) {
  json::value& cs = status["conditions"];
  if (!cs.is_array()) cs = json::array();
  json::object c{{"type", type},
                 {"status", value},
                 {"lastProbeTime", nullptr},
                 {"lastTransitionTime", now_rfc3339()}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  for (json::value& e : cs.get_array()) {
    if (e.is_object() && string_at(e.get_object(), {"type"}) == type) {
      if (string_at(e.get_object(), {"status"}) == value) {
        c["lastTransitionTime"] = e.get_object()["lastTransitionTime"];
      }
      e = std::move(c);
      return;
    }
  }
  cs.get_array().push_back(std::move(c));
}

ObjectPtr bind_pod(Store::Txn& txn, const ObjectKey& key, const json::object& binding) {
  std::string name = string_at(binding, {"metadata", "name"});
  if (name != key.name) throw bad_request("name in URL does not match name in Binding object");
  std::string kind = string_at(binding, {"target", "kind"});
  std::string node = string_at(binding, {"target", "name"});
  GroupResource br{"", "bindings"};
  if (!kind.empty() && kind != "Node") {
    throw invalid("Binding", br, name, "target.kind", "FieldValueInvalid",
                  "Invalid value: \"" + kind + "\": must be empty or 'Node'");
  }
  if (node.empty())
    throw invalid("Binding", br, name, "target.name", "FieldValueRequired", "Required value");
  ObjectPtr pod = txn.get("pods", key);
  if (!pod) throw not_found(kPods, key.name);
  std::string uid = string_at(binding, {"metadata", "uid"});
  if (!uid.empty() && uid != string_at(*pod, {"metadata", "uid"})) {
    throw conflict(kPods, key.name,
                   "Precondition failed: UID in precondition: " + uid +
                       ", UID in object meta: " + string_at(*pod, {"metadata", "uid"}));
  }
  if (value_at(*pod, {"metadata", "deletionTimestamp"}) != nullptr) {
    throw conflict(kBinding, key.name,
                   "pod " + key.name + " is being deleted, cannot be assigned to a host");
  }
  if (std::string bound = string_at(*pod, {"spec", "nodeName"}); !bound.empty()) {
    throw conflict(kBinding, key.name,
                   "pod " + key.name + " is already assigned to node \"" + bound + "\"");
  }
  if (const json::value* g = value_at(*pod, {"spec", "schedulingGates"});
      g != nullptr && g->is_array() && !g->get_array().empty()) {
    throw conflict(kBinding, key.name, "pod " + key.name + " has non-empty .spec.schedulingGates");
  }
  json::object next = *pod;
  child(next, "spec")["nodeName"] = node;
  if (const json::object* ann = object_at(binding, {"metadata", "annotations"})) {
    json::object& to = child(child(next, "metadata"), "annotations");
    for (const auto& kv : *ann) to[kv.key()] = kv.value();
  }
  set_condition(child(next, "status"), "PodScheduled", "True");
  return txn.put("pods", std::move(next));
}

PodDeletion delete_pod(Store::Txn& txn, const ObjectPtr& pod, std::optional<std::int64_t> grace) {
  std::int64_t period = grace.value_or(int_at(*pod, {"spec", "terminationGracePeriodSeconds"}, 30));
  if (string_at(*pod, {"spec", "nodeName"}).empty() || pod_terminal(*pod)) period = 0;
  if (period < 0) period = 1;
  const json::value* finalizers = value_at(*pod, {"metadata", "finalizers"});
  bool finalized =
      finalizers != nullptr && finalizers->is_array() && !finalizers->get_array().empty();
  bool deleting = value_at(*pod, {"metadata", "deletionTimestamp"}) != nullptr;
  std::int64_t current = int_at(*pod, {"metadata", "deletionGracePeriodSeconds"}, 0);
  // A second delete may only shorten the grace period.
  if (deleting && period >= current) return {pod, false};
  if (period == 0 && !finalized) {
    return {txn.erase("pods", {string_at(*pod, {"metadata", "namespace"}),
                               string_at(*pod, {"metadata", "name"})}),
            true};
  }
  json::object next = *pod;
  json::object& meta = child(next, "metadata");
  meta["deletionTimestamp"] =
      rfc3339(std::chrono::system_clock::now() + std::chrono::seconds(period));
  meta["deletionGracePeriodSeconds"] = period;
  return {txn.put("pods", std::move(next)), false};
}

}  // namespace gpuq::kubefake
