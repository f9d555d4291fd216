#include "tests/kubefake/registry.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "tests/kubefake/meta.hpp"
#include "tests/kubefake/patch.hpp"
#include "tests/kubefake/pods.hpp"
#include "tests/kubefake/status.hpp"

namespace gpuq::kubefake {

namespace {

std::string rv_of(const json::object& o) { return string_at(o, {"metadata", "resourceVersion"}); }

ObjectKey key_of(const json::object& o) {
  return {string_at(o, {"metadata", "namespace"}), string_at(o, {"metadata", "name"})};
}

// A body of another kind or group version is refused as the real decoder refuses it; a body
// without kind and apiVersion takes the URL's.
void check_type(const ResourceType& type, json::object& object) {
  std::string kind = string_at(object, {"kind"});
  std::string version = string_at(object, {"apiVersion"});
  if (!version.empty() && version != type.api_version()) {
    throw bad_request("the API version in the data (" + version +
                      ") does not match the expected API version (" + type.api_version() + ")");
  }
  if (!kind.empty() && kind != type.kind) {
    throw bad_request(kind + " in version \"" + type.version + "\" cannot be handled as a " +
                      type.kind + ": the body is a " + kind);
  }
  object["kind"] = type.kind;
  object["apiVersion"] = type.api_version();
}

// RFC 1123: subdomains (most names) or labels (namespaces).
void check_name(const ResourceType& type, const std::string& name) {
  bool label = type.name == "namespaces";
  auto alnum = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c));
  };
  bool ok = !name.empty() && name.size() <= (label ? 63u : 253u) && alnum(name.front()) &&
            alnum(name.back()) && std::all_of(name.begin(), name.end(), [&](char c) {
              return alnum(c) || c == '-' || (!label && c == '.');
            });
  if (ok) return;
  std::string what =
      label ? "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
              "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
              "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            : "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
              "'-' or '.', and must start and end with an alphanumeric character (e.g. "
              "'example.com', regex used for validation is "
              "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  throw invalid(type.kind, type.group_resource(), name, "metadata.name", "FieldValueInvalid",
                "Invalid value: \"" + name + "\": " + what);
}

void prepare_namespace(json::object& ns) {
  std::string name = string_at(ns, {"metadata", "name"});
  child(child(ns, "metadata"), "labels")["kubernetes.io/metadata.name"] = name;
  child(ns, "spec")["finalizers"] = json::array{"kubernetes"};
  ns["status"] = json::object{{"phase", "Active"}};
}

std::string unique_name(Store::Txn& txn, const ResourceType& type, const std::string& ns,
                        const std::string& prefix) {
  for (;;) {
    std::string name = prefix + random_suffix(5);
    if (!txn.get(type.name, {ns, name})) return name;
  }
}

void prepare_metadata(Store::Txn& txn, const ResourceType& type, const std::string& ns,
                      json::object& object) {
  json::object& meta = child(object, "metadata");
  if (type.namespaced) {
    std::string body_ns = string_at(meta, {"namespace"});
    if (!body_ns.empty() && body_ns != ns) {
      throw bad_request(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    if (!txn.get("namespaces", {"", ns})) throw not_found({"", "namespaces"}, ns);
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  std::string name = string_at(meta, {"name"});
  if (name.empty()) {
    std::string prefix = string_at(meta, {"generateName"});
    if (prefix.empty()) {
      throw invalid(type.kind, type.group_resource(), "", "metadata.name", "FieldValueRequired",
                    "Required value: name or generateName is required");
    }
    name = unique_name(txn, type, type.namespaced ? ns : "", prefix);
    meta["name"] = name;
  }
  check_name(type, name);
  for (const char* k : {"resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                        "selfLink", "managedFields"}) {
    meta.erase(k);
  }
  meta["uid"] = new_uid();
  meta["creationTimestamp"] = now_rfc3339();
  if (type.name == "poddisruptionbudgets") {
    meta["generation"] = 1;
  } else {
    meta.erase("generation");
  }
}

json::object empty_budget_status() {
  return json::object{
      {"disruptionsAllowed", 0}, {"currentHealthy", 0}, {"desiredHealthy", 0}, {"expectedPods", 0}};
}

// What an update keeps from the stored object whatever the body says.
void keep_server_fields(const json::object& old, json::object& next) {
  json::object& meta = child(next, "metadata");
  for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "generation", "namespace", "name"}) {
    if (const json::value* v = value_at(old, {"metadata", k})) {
      meta[k] = *v;
    } else {
      meta.erase(k);
    }
  }
}

void check_update_key(const ResourceType& type, const ObjectKey& key, const json::object& object) {
  std::string name = string_at(object, {"metadata", "name"});
  if (name != key.name) {
    throw bad_request("the name of the object (" + name + ") does not match the name on the URL (" +
                      key.name + ")");
  }
  std::string ns = string_at(object, {"metadata", "namespace"});
  if (type.namespaced && !ns.empty() && ns != key.ns) {
    throw bad_request(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
}

json::value apply_patch(const ResourceType& type, std::string_view content_type,
                        const json::value& current, const json::value& patch) {
  std::string_view ct = content_type.substr(0, content_type.find(';'));
  while (!ct.empty() && ct.back() == ' ') ct.remove_suffix(1);
  if (ct == "application/merge-patch+json") return merge_patch(current, patch);
  if (ct == "application/strategic-merge-patch+json")
    return strategic_merge_patch(current, patch, type.name);
  if (ct == "application/json-patch+json") return json_patch(current, patch);
  // Server-side apply (application/apply-patch+yaml) is not implemented: refused as an unknown
  // patch type so a client that needs it fails loudly.
  throw unsupported_media_type(
      "application/json-patch+json, application/merge-patch+json, "
      "application/strategic-merge-patch+json");
}

ApiError forbidden_delete_namespace(const std::string& name) {
  ApiError e = forbidden("", "delete", {"", "namespaces"}, "", "", name);
  e.message = "namespaces \"" + name + "\" is forbidden: this namespace may not be deleted";
  return e;
}

Deletion delete_namespace(Store::Txn& txn, const ObjectPtr& ns) {
  std::string name = string_at(*ns, {"metadata", "name"});
  if (name == "default" || name == "kube-system" || name == "kube-public") {
    throw forbidden_delete_namespace(name);
  }
  // The namespace controller's work, done at once: everything in it goes, then the namespace.
  for (const ResourceType& t : all_resources()) {
    if (!t.namespaced) continue;
    for (const ObjectPtr& o : txn.list(t.name, name)) txn.erase(t.name, key_of(*o));
  }
  return {txn.erase("namespaces", {"", name}), true};
}

}  // namespace

DeleteOptions parse_delete_options(std::string_view body, std::string_view grace_query) {
  DeleteOptions o;
  if (!grace_query.empty()) {
    std::int64_t g = 0;
    auto [p, ec] = std::from_chars(grace_query.data(), grace_query.data() + grace_query.size(), g);
    if (ec != std::errc() || p != grace_query.data() + grace_query.size()) {
      throw bad_request("invalid gracePeriodSeconds: " + std::string(grace_query));
    }
    o.grace_period = g;
  }
  if (body.empty()) return o;
  boost::system::error_code ec;
  json::value v = json::parse(json::string_view(body.data(), body.size()), ec);
  if (ec || !v.is_object())
    throw bad_request("invalid DeleteOptions body: " +
                      (ec ? ec.message() : std::string("not an object")));
  const json::object& d = v.get_object();
  if (const json::value* g = d.if_contains("gracePeriodSeconds"); g != nullptr && !g->is_null()) {
    o.grace_period = int_at(d, {"gracePeriodSeconds"}, 0);
  }
  o.uid = string_at(d, {"preconditions", "uid"});
  o.resource_version = string_at(d, {"preconditions", "resourceVersion"});
  return o;
}

// The Priority admission plugin: a pod's spec.priority (and preemptionPolicy) come from its
// priorityClassName (the two built-in system classes, or a PriorityClass), else from the class
// marked globalDefault, else 0; a pod that gives a priority of its own that differs is refused,
// and so is one naming a class that does not exist.
void admit_priority(Store::Txn& txn, json::object& pod) {
  json::object& spec = child(pod, "spec");
  std::string name = string_at(spec, {"priorityClassName"});
  std::int64_t value = 0;
  std::string policy = "PreemptLowerPriority";
  const GroupResource pods{"", "pods"};
  const std::string pod_name = string_at(pod, {"metadata", "name"});
  if (name == "system-node-critical" || name == "system-cluster-critical") {
    value = name == "system-node-critical" ? 2000001000 : 2000000000;
  } else if (!name.empty()) {
    ObjectPtr pc = txn.get("priorityclasses", {"", name});
    if (!pc) throw admission_forbidden(pods, pod_name, "no PriorityClass with name " + name + " was found");
    value = int_at(*pc, {"value"}, 0);
    if (std::string p = string_at(*pc, {"preemptionPolicy"}); !p.empty()) policy = p;
  } else {
    for (const ObjectPtr& pc : txn.list("priorityclasses", ""))
      if (const json::value* d = value_at(*pc, {"globalDefault"}); d != nullptr && d->is_bool() && d->get_bool()) {
        name = string_at(*pc, {"metadata", "name"});
        value = int_at(*pc, {"value"}, 0);
        if (std::string p = string_at(*pc, {"preemptionPolicy"}); !p.empty()) policy = p;
      }
  }
  if (const json::value* given = spec.if_contains("priority"); given != nullptr && given->is_int64() && given->get_int64() != value)
    throw admission_forbidden(pods, pod_name,
                              "the integer value of priority (" + std::to_string(given->get_int64()) +
                                  ") must not be provided in pod spec; priority admission controller computed " +
                                  std::to_string(value) + " from the given PriorityClass name");
  if (!name.empty()) spec["priorityClassName"] = name;
  spec["priority"] = value;
  spec["preemptionPolicy"] = policy;
}

ObjectPtr create_object(Store::Txn& txn, const ResourceType& type, const std::string& ns,
                        json::object object) {
  check_type(type, object);
  prepare_metadata(txn, type, ns, object);
  ObjectKey key = key_of(object);
  if (txn.get(type.name, key)) throw already_exists(type.group_resource(), key.name);
  if (type.name == "pods") {
    admit_priority(txn, object);
    prepare_pod_create(object);
  }
  if (type.name == "namespaces") prepare_namespace(object);
  if (type.name == "poddisruptionbudgets") object["status"] = empty_budget_status();
  return txn.put(type.name, ordered(std::move(object)));
}

ObjectPtr write_object(Store::Txn& txn, const ResourceType& type, const ObjectPtr& old,
                       json::object next) {
  child(next, "metadata")["resourceVersion"] = rv_of(*old);
  if (next == *old) return old;  // a no-op write makes no new resourceVersion and no event
  const json::value* fin = value_at(next, {"metadata", "finalizers"});
  bool finalized = fin != nullptr && fin->is_array() && !fin->get_array().empty();
  if (value_at(next, {"metadata", "deletionTimestamp"}) != nullptr && !finalized &&
      value_at(*old, {"metadata", "deletionGracePeriodSeconds"}) != nullptr &&
      int_at(*old, {"metadata", "deletionGracePeriodSeconds"}, 1) == 0) {
    return txn.erase(type.name, key_of(*old));  // the last finalizer of a deleted object went
  }
  return txn.put(type.name, std::move(next));
}

ObjectPtr update_object(Store::Txn& txn, const ResourceType& type, const ObjectKey& key,
                        json::object object, bool status) {
  check_type(type, object);
  check_update_key(type, key, object);
  ObjectPtr old = txn.get(type.name, key);
  if (!old) {
    // Events may be created by PUT (AllowCreateOnUpdate); nothing else the fake serves may.
    if (type.name == "events" && !status)
      return create_object(txn, type, key.ns, std::move(object));
    throw not_found(type.group_resource(), key.name);
  }
  std::string rv = rv_of(object);
  if (!rv.empty() && rv != rv_of(*old)) throw stale_conflict(type.group_resource(), key.name);
  json::object next;
  if (status) {
    next = *old;
    const json::value* s = object.if_contains("status");
    next["status"] = s == nullptr ? json::value(json::object()) : *s;
  } else {
    next = std::move(object);
    if (type.has_status) {
      const json::value* s = old->if_contains("status");
      if (s != nullptr) {
        next["status"] = *s;
      } else {
        next.erase("status");
      }
    }
  }
  keep_server_fields(*old, next);
  if (type.name == "pods" && !status) check_pod_update(*old, next);
  if (type.name == "poddisruptionbudgets" && !status) {
    const json::value* was = old->if_contains("spec");
    const json::value* now = next.if_contains("spec");
    if ((was == nullptr) != (now == nullptr) || (was != nullptr && *was != *now)) {
      child(next, "metadata")["generation"] = int_at(*old, {"metadata", "generation"}, 1) + 1;
    }
  }
  return write_object(txn, type, old, ordered(std::move(next)));
}

ObjectPtr patch_object(Store::Txn& txn, const ResourceType& type, const ObjectKey& key,
                       std::string_view content_type, const json::value& patch, bool status) {
  ObjectPtr old = txn.get(type.name, key);
  if (!old) throw not_found(type.group_resource(), key.name);
  json::value patched = apply_patch(type, content_type, *old, patch);
  if (!patched.is_object()) throw bad_request("the patched object is not a JSON object");
  return update_object(txn, type, key, std::move(patched.get_object()), status);
}

Deletion delete_object(Store::Txn& txn, const ResourceType& type, const ObjectKey& key,
                       const DeleteOptions& options) {
  ObjectPtr old = txn.get(type.name, key);
  if (!old) throw not_found(type.group_resource(), key.name);
  std::string uid = string_at(*old, {"metadata", "uid"});
  if (!options.uid.empty() && options.uid != uid) {
    throw conflict(type.group_resource(), key.name,
                   "Precondition failed: UID in precondition: " + options.uid +
                       ", UID in object meta: " + uid);
  }
  if (!options.resource_version.empty() && options.resource_version != rv_of(*old)) {
    throw conflict(
        type.group_resource(), key.name,
        "Precondition failed: ResourceVersion in precondition: " + options.resource_version +
            ", ResourceVersion in object meta: " + rv_of(*old));
  }
  if (type.name == "pods") {
    PodDeletion d = delete_pod(txn, old, options.grace_period);
    return {d.pod, d.gone};
  }
  if (type.name == "namespaces") return delete_namespace(txn, old);
  const json::value* fin = value_at(*old, {"metadata", "finalizers"});
  if (fin != nullptr && fin->is_array() && !fin->get_array().empty()) {
    if (value_at(*old, {"metadata", "deletionTimestamp"}) != nullptr) return {old, false};
    json::object next = *old;
    child(next, "metadata")["deletionTimestamp"] = now_rfc3339();
    child(next, "metadata")["deletionGracePeriodSeconds"] = 0;
    return {txn.put(type.name, std::move(next)), false};
  }
  return {txn.erase(type.name, key), true};
}

}  // namespace gpuq::kubefake
