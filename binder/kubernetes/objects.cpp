#include "binder/kubernetes/objects.hpp"

#include <algorithm>
#include <charconv>

#include <boost/json.hpp>

#include "spec/error.hpp"
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

std::vector<Requirement> requirements(const json::array* exprs) {
  std::vector<Requirement> out;
  if (exprs == nullptr) return out;
  for (const json::value& e : *exprs) {
    const json::object* o = e.if_object();
    if (o == nullptr) continue;
    Requirement r{string_at(*o, "key"), string_at(*o, "operator"), {}};
    if (const json::array* vs = array_at(*o, "values"))
      for (const json::value& v : *vs)
        if (v.is_string()) r.values.emplace_back(v.get_string());
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::vector<Requirement>> required_affinity(const json::object& spec) {
  std::vector<std::vector<Requirement>> terms;
  const json::object* aff = object_at(spec, "affinity");
  const json::object* na = aff != nullptr ? object_at(*aff, "nodeAffinity") : nullptr;
  const json::object* req = na != nullptr ? object_at(*na, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
  const json::array* ts = req != nullptr ? array_at(*req, "nodeSelectorTerms") : nullptr;
  if (ts == nullptr) return terms;
  for (const json::value& t : *ts)
    if (const json::object* o = t.if_object()) terms.push_back(requirements(array_at(*o, "matchExpressions")));
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

bool Requirement::matches(const std::map<std::string, std::string>& labels) const {
  const auto it = labels.find(key);
  const bool has = it != labels.end();
  auto in_values = [&] { return has && std::find(values.begin(), values.end(), it->second) != values.end(); };
  if (op == "In") return in_values();
  if (op == "NotIn") return !in_values();
  if (op == "Exists") return has;
  if (op == "DoesNotExist") return !has;
  if (op == "Gt" || op == "Lt") {
    std::int64_t have = 0, want = 0;
    if (!has || values.size() != 1 || !as_int(it->second, have) || !as_int(values[0], want)) return false;
    return op == "Gt" ? have > want : have < want;
  }
  return false;  // an operator this version does not know matches nothing
}

bool Toleration::tolerates(const Taint& t) const {
  if (!effect.empty() && effect != t.effect) return false;
  if (op == "Exists") return key.empty() || key == t.key;
  return key == t.key && value == t.value;
}

bool PodInfo::allowed_on(const std::map<std::string, std::string>& node_labels, const std::vector<Taint>& taints) const {
  for (const auto& [k, v] : node_selector) {
    auto it = node_labels.find(k);
    if (it == node_labels.end() || it->second != v) return false;
  }
  if (!affinity.empty()) {
    const bool any = std::any_of(affinity.begin(), affinity.end(), [&](const std::vector<Requirement>& term) {
      return !term.empty() && std::all_of(term.begin(), term.end(),
                                          [&](const Requirement& r) { return r.matches(node_labels); });
    });
    if (!any) return false;
  }
  for (const Taint& t : taints) {
    if (t.effect == "PreferNoSchedule") continue;  // a preference, not a rule
    if (std::none_of(tolerations.begin(), tolerations.end(), [&](const Toleration& tol) { return tol.tolerates(t); }))
      return false;
  }
  return true;
}

Result<PodInfo> read_pod(const json::object& pod) {
  const json::object* meta = object_at(pod, "metadata");
  PodInfo p;
  if (meta != nullptr) {
    p.ns = string_at(*meta, "namespace");
    p.name = string_at(*meta, "name");
    p.uid = string_at(*meta, "uid");
    p.resource_version = string_at(*meta, "resourceVersion");
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
    p.node_selector = string_map(object_at(*spec, "nodeSelector"));
    p.affinity = required_affinity(*spec);
    if (const json::array* tols = array_at(*spec, "tolerations"))
      for (const json::value& t : *tols)
        if (const json::object* o = t.if_object()) {
          Toleration tol{string_at(*o, "key"), string_at(*o, "operator"), string_at(*o, "value"), string_at(*o, "effect")};
          if (tol.op.empty()) tol.op = "Equal";
          p.tolerations.push_back(std::move(tol));
        }
    if (const json::object* status = object_at(pod, "status")) p.phase = string_at(*status, "phase");
    if (p.phase.empty()) p.phase = "Pending";
    return p;
  });
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
      if (const json::array* ts = array_at(*spec, "taints"))
        for (const json::value& t : *ts)
          if (const json::object* o = t.if_object())
            n.taints.push_back({string_at(*o, "key"), string_at(*o, "value"), string_at(*o, "effect")});
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

}  // namespace gpuq::binder::k8s
