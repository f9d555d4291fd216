#include "binder/kubernetes/objects.hpp"

#include <algorithm>
#include <charconv>

#include <boost/json.hpp>

#include "spec/enums.hpp"
#include "spec/error.hpp"
#include "spec/quantity.hpp"
#include "spec/values.hpp"

namespace gpuq::binder::k8s {

namespace json = boost::json;
using spec::Path;

namespace {

const json::object* object_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr ? v->if_object() : nullptr;
}

const json::array* array_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr ? v->if_array() : nullptr;
}

std::string string_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::map<std::string, std::string> string_map(const json::object* o) {
  std::map<std::string, std::string> out;
  if (o == nullptr) return out;
  for (const auto& kv : *o)
    if (kv.value().is_string()) out.emplace(std::string(kv.key()), std::string(kv.value().get_string()));
  return out;
}

// A quantity the API wrote (a string, or a bare number in hand-made JSON).
std::string quantity_text(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  if (v.is_double()) return json::serialize(v);
  return {};
}

// cpu, memory and nvidia.com/gpu of a {resource: quantity} map into base units; others ignored.
ResourceVec resources_of(const json::object* m, Path& at) {
  ResourceVec v;
  if (m == nullptr) return v;
  for (const auto& kv : *m) {
    const std::string_view name = kv.key();
    Path::Key k(at, name);
    const std::string text = quantity_text(kv.value());
    if (name == "cpu") {
      v[kCpu] = spec::quantity_value(text, kCpu, at);
    } else if (name == "memory") {
      v[kMemory] = spec::quantity_value(text, kMemory, at);
    } else if (name == kGpuResource) {
      auto n = parse_quantity(text, UnitScale::kUnit);
      if (!n || *n < 0) spec::fail(at, spec::quoted(text) + " is not a whole number of GPUs");
      v[kGpu] = *n * kMilliPerGpu;
    }
  }
  return v;
}

// A container's request: its requests, each missing one defaulting to its limit.
ResourceVec container_request(const json::object& c, Path& at) {
  const json::object* res = object_at(c, "resources");
  if (res == nullptr) return {};
  Path::Key r(at, "resources");
  ResourceVec req, lim;
  {
    Path::Key k(at, "requests");
    req = resources_of(object_at(*res, "requests"), at);
  }
  {
    Path::Key k(at, "limits");
    lim = resources_of(object_at(*res, "limits"), at);
  }
  const json::object* asked = object_at(*res, "requests");
  for (ResourceId i : {kGpu, kCpu, kMemory}) {
    static constexpr const char* kNames[] = {kGpuResource, "cpu", "memory"};
    if (asked == nullptr || !asked->contains(kNames[i])) req[i] = lim[i];
  }
  return req;
}

ResourceVec max_of(const ResourceVec& a, const ResourceVec& b) {
  ResourceVec out;
  for (std::size_t i = 0; i < kMaxResources; ++i) out.v[i] = std::max(a.v[i], b.v[i]);
  return out;
}

// kube-scheduler's effective request (k8s.io/component-helpers resource.PodRequests): the
// containers' sum, raised by restartable (sidecar) init containers, against the largest
// init-phase total; plus the overhead.
ResourceVec effective_request(const json::object& spec, Path& at) {
  ResourceVec containers, init_peak, sidecars;
  if (const json::array* cs = array_at(spec, "containers")) {
    Path::Key k(at, "containers");
    for (std::size_t i = 0; i < cs->size(); ++i) {
      Path::Index ix(at, i);
      if (const json::object* c = (*cs)[i].if_object()) containers += container_request(*c, at);
    }
  }
  if (const json::array* ics = array_at(spec, "initContainers")) {
    Path::Key k(at, "initContainers");
    for (std::size_t i = 0; i < ics->size(); ++i) {
      Path::Index ix(at, i);
      const json::object* c = (*ics)[i].if_object();
      if (c == nullptr) continue;
      const ResourceVec r = container_request(*c, at);
      if (string_at(*c, "restartPolicy") == "Always") {  // a sidecar runs beside the containers
        containers += r;
        sidecars += r;
        init_peak = max_of(init_peak, sidecars);
      } else {
        init_peak = max_of(init_peak, sidecars + r);
      }
    }
  }
  ResourceVec out = max_of(containers, init_peak);
  Path::Key k(at, "overhead");
  out += resources_of(object_at(spec, "overhead"), at);
  return out;
}

template <class E>
E enum_at(const json::object& o, std::string_view key, E fallback, Path& at) {
  const std::string word = string_at(o, key);
  if (word.empty()) return fallback;
  Path::Key k(at, key);
  return spec::enum_value<E>(word, at);
}

std::vector<NodeRequirement> requirements(const json::array* exprs, Path& at) {
  std::vector<NodeRequirement> out;
  if (exprs == nullptr) return out;
  Path::Key k(at, "matchExpressions");
  for (std::size_t i = 0; i < exprs->size(); ++i) {
    const json::object* o = (*exprs)[i].if_object();
    if (o == nullptr) continue;
    Path::Index ix(at, i);
    NodeRequirement r{string_at(*o, "key"), enum_at(*o, "operator", LabelOperator::kIn, at), {}};
    if (const json::array* vs = array_at(*o, "values"))
      for (const json::value& v : *vs)
        if (v.is_string()) r.values.emplace_back(v.get_string());
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::vector<NodeRequirement>> required_affinity(const json::object& spec, Path& at) {
  std::vector<std::vector<NodeRequirement>> terms;
  const json::object* aff = object_at(spec, "affinity");
  const json::object* na = aff != nullptr ? object_at(*aff, "nodeAffinity") : nullptr;
  const json::object* req = na != nullptr ? object_at(*na, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
  const json::array* ts = req != nullptr ? array_at(*req, "nodeSelectorTerms") : nullptr;
  if (ts == nullptr) return terms;
  Path::Key k(at, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
  for (std::size_t i = 0; i < ts->size(); ++i) {
    Path::Index ix(at, i);
    if (const json::object* o = (*ts)[i].if_object()) terms.push_back(requirements(array_at(*o, "matchExpressions"), at));
  }
  return terms;
}

bool as_int(const std::string& s, std::int64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

template <class F>
auto reading(const std::string& what, F&& f) -> Result<decltype(f())> {
  try {
    return f();
  } catch (const spec::SpecError& e) {
    return Error{what + ": " + e.what(), ErrorCode::kInvalidArgument};
  }
}

}  // namespace

Result<PodInfo> read_pod(const json::object& pod) {
  const json::object* meta = object_at(pod, "metadata");
  PodInfo p;
  if (meta != nullptr) {
    p.ns = string_at(*meta, "namespace");
    p.name = string_at(*meta, "name");
    p.uid = string_at(*meta, "uid");
    p.resource_version = string_at(*meta, "resourceVersion");
    p.created = string_at(*meta, "creationTimestamp");
    p.terminating = meta->contains("deletionTimestamp") && !(*meta).at("deletionTimestamp").is_null();
    p.labels = string_map(object_at(*meta, "labels"));
    p.annotations = string_map(object_at(*meta, "annotations"));
  }
  return reading("pod " + p.ns + "/" + p.name, [&]() -> PodInfo {
    const json::object* spec = object_at(pod, "spec");
    if (spec == nullptr) spec::fail(Path(), "spec: is missing");
    Path at("spec");
    p.scheduler = string_at(*spec, "schedulerName");
    p.node = string_at(*spec, "nodeName");
    if (const json::value* prio = spec->if_contains("priority"); prio != nullptr && prio->is_int64())
      p.priority = static_cast<std::int32_t>(std::clamp<std::int64_t>(prio->get_int64(), INT32_MIN, INT32_MAX));
    if (const json::value* g = spec->if_contains("terminationGracePeriodSeconds"); g != nullptr && g->is_int64())
      p.grace_seconds = g->get_int64();
    p.request = effective_request(*spec, at);
    if (auto it = p.annotations.find(kGpuMilliAnnotation); it != p.annotations.end() && p.request[kGpu] == 0) {
      Path meta_at("metadata");
      Path::Key a(meta_at, "annotations");
      Path::Key k(meta_at, kGpuMilliAnnotation);
      const std::int64_t milli = spec::int_value(it->second, meta_at);
      if (milli < 1 || milli > kMilliPerGpu)
        spec::fail(meta_at, spec::quoted(it->second) + " must be 1..1000 (thousandths of one GPU)");
      p.request[kGpu] = milli;
    }
    p.where = constraints_at(*spec, at);
    if (const json::object* status = object_at(pod, "status")) {
      p.phase = string_at(*status, "phase");
      p.status_reason = string_at(*status, "reason");
      // The first container that ended with a code other than 0 (else the first that ended):
      // what a submitted job's exit code is.
      if (const json::array* cs = array_at(*status, "containerStatuses"))
        for (const json::value& c : *cs) {
          const json::object* state = c.is_object() ? object_at(c.get_object(), "state") : nullptr;
          const json::object* done = state ? object_at(*state, "terminated") : nullptr;
          const json::value* code = done ? done->if_contains("exitCode") : nullptr;
          if (code == nullptr || !code->is_int64()) continue;
          if (!p.exit_code || (*p.exit_code == 0 && code->get_int64() != 0)) {
            p.exit_code = static_cast<int>(std::clamp<std::int64_t>(code->get_int64(), INT32_MIN, INT32_MAX));
            p.exit_reason = string_at(*done, "reason");
          }
        }
    }
    if (p.phase.empty()) p.phase = "Pending";
    return p;
  });
}

NodeConstraints constraints_at(const json::object& spec, Path& at) {
  NodeConstraints where;
  where.node_selector = string_map(object_at(spec, "nodeSelector"));
  where.affinity = required_affinity(spec, at);
  if (const json::array* tols = array_at(spec, "tolerations")) {
    Path::Key k(at, "tolerations");
    for (std::size_t i = 0; i < tols->size(); ++i)
      if (const json::object* o = (*tols)[i].if_object()) {
        Path::Index ix(at, i);
        Toleration tol{string_at(*o, "key"), string_at(*o, "operator") == "Exists", string_at(*o, "value"), std::nullopt};
        if (!string_at(*o, "effect").empty()) tol.effect = enum_at(*o, "effect", TaintEffect::kNoSchedule, at);
        where.tolerations.push_back(std::move(tol));
      }
  }
  return where;
}

Result<NodeInfo> read_node(const json::object& node) {
  NodeInfo n;
  const json::object* meta = object_at(node, "metadata");
  if (meta != nullptr) {
    n.name = string_at(*meta, "name");
    n.resource_version = string_at(*meta, "resourceVersion");
    n.labels = string_map(object_at(*meta, "labels"));
  }
  return reading("node " + n.name, [&]() -> NodeInfo {
    if (const json::object* spec = object_at(node, "spec")) {
      if (const json::value* u = spec->if_contains("unschedulable"); u != nullptr && u->is_bool())
        n.unschedulable = u->get_bool();
      if (const json::array* ts = array_at(*spec, "taints")) {
        Path at("spec");
        Path::Key k(at, "taints");
        for (std::size_t i = 0; i < ts->size(); ++i)
          if (const json::object* o = (*ts)[i].if_object()) {
            Path::Index ix(at, i);
            n.taints.push_back({string_at(*o, "key"), string_at(*o, "value"),
                                enum_at(*o, "effect", TaintEffect::kNoSchedule, at)});
          }
      }
    }
    if (const json::object* status = object_at(node, "status")) {
      Path at("status");
      Path::Key k(at, "allocatable");
      const json::object* alloc = object_at(*status, "allocatable");
      n.allocatable = resources_of(alloc, at);
      if (alloc != nullptr)
        if (const json::value* pods = alloc->if_contains("pods")) {
          std::int64_t v = 0;
          if (as_int(quantity_text(*pods), v)) n.max_pods = v;
        }
      if (const json::array* conds = array_at(*status, "conditions"))
        for (const json::value& c : *conds)
          if (const json::object* o = c.if_object(); o != nullptr && string_at(*o, "type") == "Ready")
            n.ready = string_at(*o, "status") == "True";
    }
    return n;
  });
}

std::string annotation_of(const json::object& obj, const std::string& key) {
  const json::value* meta = obj.if_contains("metadata");
  const json::value* ann = meta && meta->is_object() ? meta->get_object().if_contains("annotations") : nullptr;
  const json::value* v = ann && ann->is_object() ? ann->get_object().if_contains(key) : nullptr;
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

}  // namespace gpuq::binder::k8s
