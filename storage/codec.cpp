#include "storage/codec.hpp"

#include <array>
#include <boost/json.hpp>
#include <cmath>
#include <sstream>
#include <utility>

namespace gpuq::storage {
namespace json = boost::json;

namespace {

// One table per enum: the stored name of each value.
template <class E, std::size_t N>
using Names = std::array<std::pair<E, const char*>, N>;

constexpr Names<WithinQueuePolicy, 3> kWithinQueue{{
    {WithinQueuePolicy::kNever, "Never"},
    {WithinQueuePolicy::kLowerPriority, "LowerPriority"},
    {WithinQueuePolicy::kLowerOrNewerEqualPriority, "LowerOrNewerEqualPriority"}}};
constexpr Names<ReclaimPolicy, 3> kReclaim{{{ReclaimPolicy::kNever, "Never"},
                                            {ReclaimPolicy::kLowerPriority, "LowerPriority"},
                                            {ReclaimPolicy::kAny, "Any"}}};
constexpr Names<BorrowWithinCohortPolicy, 2> kBorrow{
    {{BorrowWithinCohortPolicy::kNever, "Never"},
     {BorrowWithinCohortPolicy::kLowerPriority, "LowerPriority"}}};
constexpr Names<QueueingStrategy, 2> kStrategy{{{QueueingStrategy::kBestEffortFIFO, "BestEffortFIFO"},
                                                {QueueingStrategy::kStrictFIFO, "StrictFIFO"}}};
constexpr Names<NodeState, 4> kNodeState{{{NodeState::kReady, "Ready"},
                                          {NodeState::kCordoned, "Cordoned"},
                                          {NodeState::kDraining, "Draining"},
                                          {NodeState::kDown, "Down"}}};

// Decoding failures are exceptions inside this file only; each decode_* turns them into a Result.
struct BadRow {
  std::string why;
};

template <class E, std::size_t N>
const char* name_of(const Names<E, N>& names, E e) {
  for (const auto& [v, n] : names)
    if (v == e) return n;
  return "?";
}
template <class E, std::size_t N>
E parse_enum(const Names<E, N>& names, const json::value& v, const char* field) {
  const auto& s = v.as_string();
  for (const auto& [e, n] : names)
    if (s == n) return e;
  throw BadRow{std::string(field) + " is \"" + std::string(s) + "\", not a known value"};
}

ResourceId intern(ResourceNames& names, std::string_view name) {
  auto id = names.intern(name);
  if (!id) throw BadRow{"resource \"" + std::string(name) + "\" does not fit: more than " +
                        std::to_string(kMaxResources) + " resource names"};
  return *id;
}

json::object encode_vec(const ResourceVec& v, const ResourceNames& names) {
  json::object o;
  for (std::size_t r = 0; r < names.size(); ++r)
    if (v.v[r] != 0) o[names.name(static_cast<ResourceId>(r))] = v.v[r];
  return o;
}
ResourceVec decode_vec(const json::object& o, ResourceNames& names) {
  ResourceVec v;
  for (const auto& [k, q] : o) v[intern(names, k)] = q.to_number<std::int64_t>();
  return v;
}

std::string str(const json::value& v) { return std::string(v.as_string()); }

template <class F>
auto guarded(std::string_view what, std::string_view text, F&& f) -> Result<decltype(f(std::declval<const json::object&>()))> {
  try {
    json::value v = json::parse(text);
    return f(v.as_object());
  } catch (const BadRow& e) {
    return Error{std::string(what) + ": " + e.why, ErrorCode::kFailedPrecondition};
  } catch (const std::exception& e) {
    return Error{std::string(what) + ": malformed stored JSON (" + e.what() + ")",
                 ErrorCode::kFailedPrecondition};
  }
}

}  // namespace

namespace {

// A queue's guardrails, roles and kubernetes block: each key only when set, so a file written
// before them reads as "no limit" (no block) and a queue without them is stored as before.
json::array string_array(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

std::vector<std::string> strings_of(const json::value& v) {
  std::vector<std::string> out;
  for (const auto& s : v.as_array()) out.push_back(str(s));
  return out;
}

json::object encode_members(const Members& m) {
  return json::object{{"users", string_array(m.users)}, {"groups", string_array(m.groups)}};
}

Members decode_members(const json::value& v) {
  const auto& o = v.as_object();
  return Members{strings_of(o.at("users")), strings_of(o.at("groups"))};
}

void encode_guardrails(const QueueSpec& q, json::object& o) {
  if (q.max_gpus_per_job) o["max_gpus_per_job"] = *q.max_gpus_per_job;
  if (q.max_pods_per_job != 0) o["max_pods_per_job"] = q.max_pods_per_job;
  if (q.max_runtime) o["max_runtime"] = *q.max_runtime;
  if (q.default_max_runtime) o["default_max_runtime"] = *q.default_max_runtime;
  if (q.runtime_estimate) o["runtime_estimate"] = *q.runtime_estimate;
  if (!q.notify.empty()) o["notify"] = json::object{{"url", q.notify.url}, {"on", string_array(q.notify.on)}};
  if (q.max_grace_period) o["max_grace_period"] = *q.max_grace_period;
  if (!q.allowed_priority_classes.empty()) o["allowed_priority_classes"] = string_array(q.allowed_priority_classes);
  if (q.non_preemptible_may_borrow) o["non_preemptible_may_borrow"] = true;
  if (q.max_running_jobs_per_user != 0) o["max_running_jobs_per_user"] = q.max_running_jobs_per_user;
  if (q.max_pending_jobs_per_user != 0) o["max_pending_jobs_per_user"] = q.max_pending_jobs_per_user;
  if (q.max_submits_per_user_per_minute != 0) o["max_submits_per_user_per_minute"] = q.max_submits_per_user_per_minute;
  if (q.idle.warn_after) o["idle_warn_after"] = *q.idle.warn_after;
  if (q.idle.cancel_after) o["idle_cancel_after"] = *q.idle.cancel_after;
  if (q.max_retries != 0) o["max_retries"] = q.max_retries;
  if (q.submitters) o["submitters"] = encode_members(*q.submitters);
  if (!q.viewers.empty()) o["viewers"] = encode_members(q.viewers);
  if (!q.kubernetes.empty()) {
    const QueueKubernetes& k = q.kubernetes;
    o["kubernetes"] = json::object{{"namespace", k.ns},
                                   {"default_image", k.default_image},
                                   {"allowed_images", string_array(k.allowed_images)},
                                   {"pod_template", k.pod_template}};  // its JSON text, as a string
  }
}

void decode_guardrails(const json::object& o, QueueSpec& q) {
  auto int64_at = [&](const char* key) -> std::optional<std::int64_t> {
    if (const auto* v = o.if_contains(key)) return v->to_number<std::int64_t>();
    return std::nullopt;
  };
  auto int32_at = [&](const char* key) {
    const auto* v = o.if_contains(key);
    return v ? v->to_number<std::int32_t>() : 0;
  };
  q.max_gpus_per_job = int64_at("max_gpus_per_job");
  q.max_pods_per_job = int32_at("max_pods_per_job");
  q.max_runtime = int64_at("max_runtime");
  q.default_max_runtime = int64_at("default_max_runtime");
  q.runtime_estimate = int64_at("runtime_estimate");
  if (const auto* v = o.if_contains("notify")) {
    q.notify.url = std::string(v->at("url").as_string());
    q.notify.on = strings_of(v->at("on"));
  }
  q.max_grace_period = int64_at("max_grace_period");
  if (const auto* v = o.if_contains("allowed_priority_classes")) q.allowed_priority_classes = strings_of(*v);
  if (const auto* v = o.if_contains("non_preemptible_may_borrow")) q.non_preemptible_may_borrow = v->as_bool();
  q.max_running_jobs_per_user = int32_at("max_running_jobs_per_user");
  q.max_pending_jobs_per_user = int32_at("max_pending_jobs_per_user");
  q.max_submits_per_user_per_minute = int32_at("max_submits_per_user_per_minute");
  q.idle.warn_after = int64_at("idle_warn_after");
  q.idle.cancel_after = int64_at("idle_cancel_after");
  q.max_retries = int32_at("max_retries");
  if (const auto* v = o.if_contains("submitters")) q.submitters = decode_members(*v);
  if (const auto* v = o.if_contains("viewers")) q.viewers = decode_members(*v);
  if (const auto* v = o.if_contains("kubernetes")) {
    const auto& k = v->as_object();
    auto text_at = [&](const char* key) { return k.if_contains(key) ? str(k.at(key)) : std::string(); };
    q.kubernetes.ns = text_at("namespace");
    q.kubernetes.default_image = text_at("default_image");
    if (const auto* a = k.if_contains("allowed_images")) q.kubernetes.allowed_images = strings_of(*a);
    q.kubernetes.pod_template = text_at("pod_template");
  }
}

}  // namespace

std::string encode_queue(const QueueSpec& q, const ResourceNames& names) {
  json::object o;
  o["name"] = q.name.value;
  o["cohort"] = q.cohort;
  o["weight"] = q.weight;
  o["strategy"] = name_of(kStrategy, q.strategy);
  json::array quotas;
  for (const auto& fq : q.quotas) {
    json::array res;
    for (const auto& [r, rq] : fq.resources) {
      json::object ro;
      ro["name"] = names.name(r);
      ro["nominal"] = rq.nominal;
      if (rq.borrowing_limit) ro["borrowing_limit"] = *rq.borrowing_limit;
      if (rq.lending_limit) ro["lending_limit"] = *rq.lending_limit;
      res.push_back(std::move(ro));
    }
    quotas.push_back(json::object{{"flavor", fq.flavor}, {"resources", std::move(res)}});
  }
  o["quotas"] = std::move(quotas);
  json::object p;
  p["within_queue"] = name_of(kWithinQueue, q.preemption.within_queue);
  p["reclaim_within_cohort"] = name_of(kReclaim, q.preemption.reclaim_within_cohort);
  p["borrow_within_cohort"] = name_of(kBorrow, q.preemption.borrow_within_cohort);
  if (q.preemption.borrow_max_priority_threshold)
    p["borrow_max_priority_threshold"] = *q.preemption.borrow_max_priority_threshold;
  p["min_runtime"] = q.preemption.min_runtime;
  o["preemption"] = std::move(p);
  if (q.max_pending_jobs != 0) o["max_pending_jobs"] = q.max_pending_jobs;
  encode_guardrails(q, o);
  return json::serialize(o);
}

Result<QueueSpec> decode_queue(std::string_view text, ResourceNames& names) {
  return guarded("stored queue", text, [&](const json::object& o) {
    QueueSpec q;
    q.name = QueueName(str(o.at("name")));
    q.cohort = str(o.at("cohort"));
    q.weight = o.at("weight").to_number<double>();
    q.strategy = parse_enum(kStrategy, o.at("strategy"), "strategy");
    for (const auto& fv : o.at("quotas").as_array()) {
      const auto& fo = fv.as_object();
      FlavorQuota fq;
      fq.flavor = str(fo.at("flavor"));
      for (const auto& rv : fo.at("resources").as_array()) {
        const auto& ro = rv.as_object();
        ResourceQuota rq;
        rq.nominal = ro.at("nominal").to_number<std::int64_t>();
        if (const auto* b = ro.if_contains("borrowing_limit")) rq.borrowing_limit = b->to_number<std::int64_t>();
        if (const auto* l = ro.if_contains("lending_limit")) rq.lending_limit = l->to_number<std::int64_t>();
        fq.resources.emplace_back(intern(names, ro.at("name").as_string()), rq);
      }
      q.quotas.push_back(std::move(fq));
    }
    const auto& p = o.at("preemption").as_object();
    q.preemption.within_queue = parse_enum(kWithinQueue, p.at("within_queue"), "within_queue");
    q.preemption.reclaim_within_cohort =
        parse_enum(kReclaim, p.at("reclaim_within_cohort"), "reclaim_within_cohort");
    q.preemption.borrow_within_cohort =
        parse_enum(kBorrow, p.at("borrow_within_cohort"), "borrow_within_cohort");
    if (const auto* t = p.if_contains("borrow_max_priority_threshold"))
      q.preemption.borrow_max_priority_threshold = t->to_number<std::int32_t>();
    q.preemption.min_runtime = p.at("min_runtime").to_number<std::int64_t>();
    if (const auto* m = o.if_contains("max_pending_jobs")) q.max_pending_jobs = m->to_number<std::int32_t>();
    decode_guardrails(o, q);
    return q;
  });
}

std::string encode_node(const NodeSpec& n, const ResourceNames& names) {
  json::object o;
  o["name"] = n.name;
  o["flavor"] = n.flavor;
  o["capacity"] = encode_vec(n.capacity, names);
  json::object labels;
  for (const auto& [k, v] : n.labels) labels[k] = v;
  o["labels"] = std::move(labels);
  o["state"] = name_of(kNodeState, n.state);
  if (n.dedicated_to) o["dedicated_to"] = n.dedicated_to->value;
  if (!n.taints.empty()) {  // absent in files written before taints: none
    json::array taints;
    for (const Taint& t : n.taints)
      taints.push_back(
          json::object{{"key", t.key}, {"value", t.value}, {"effect", to_string(t.effect)}});
    o["taints"] = std::move(taints);
  }
  return json::serialize(o);
}

Result<NodeSpec> decode_node(std::string_view text, ResourceNames& names) {
  return guarded("stored node", text, [&](const json::object& o) {
    NodeSpec n;
    n.name = str(o.at("name"));
    n.flavor = str(o.at("flavor"));
    n.capacity = decode_vec(o.at("capacity").as_object(), names);
    for (const auto& [k, v] : o.at("labels").as_object()) n.labels.emplace(std::string(k), str(v));
    n.state = parse_enum(kNodeState, o.at("state"), "state");
    if (const auto* d = o.if_contains("dedicated_to")) n.dedicated_to = QueueName(str(*d));
    if (const auto* ts = o.if_contains("taints"))
      for (const auto& tv : ts->as_array()) {
        const auto& to = tv.as_object();
        const auto effect = spec::enum_from<TaintEffect>(to.at("effect").as_string());
        if (!effect)
          throw BadRow{"taint effect \"" + str(to.at("effect")) + "\" is not a known value"};
        n.taints.push_back(Taint{str(to.at("key")), str(to.at("value")), *effect});
      }
    return n;
  });
}

std::string encode_history(const HistoryRecord& h) {
  json::object o;
  for (const auto& [name, value] : h.average) o[name] = value;
  return json::serialize(o);
}

Result<std::map<std::string, double>> decode_history(std::string_view text,
                                                     const std::string& queue) {
  const std::string what = "stored usage history of queue \"" + queue + "\"";
  return guarded(what, text, [&](const json::object& o) {
    std::map<std::string, double> average;
    for (const auto& [name, v] : o) {
      if (!v.is_number())
        throw BadRow{"average of \"" + std::string(name) + "\" is " + json::serialize(v) +
                     ", not a number"};
      average.emplace(std::string(name), v.to_number<double>());
    }
    return average;
  });
}

std::optional<std::string> bad_history_value(const HistoryRecord& h) {
  for (const auto& [name, value] : h.average)
    if (!std::isfinite(value) || value < 0) {
      std::ostringstream shown;
      shown << value;
      return name + " is " + shown.str();
    }
  return std::nullopt;
}

namespace {
std::optional<std::string> unknown_slot(const ResourceVec& v, const ResourceNames& names) {
  for (std::size_t r = names.size(); r < kMaxResources; ++r)
    if (v.v[r] != 0) return "resource slot " + std::to_string(r);
  return std::nullopt;
}
}  // namespace

std::optional<std::string> unknown_resource(const QueueSpec& q, const ResourceNames& names) {
  for (const auto& fq : q.quotas)
    for (const auto& [r, rq] : fq.resources)
      if (r >= names.size()) return "resource slot " + std::to_string(r);
  return std::nullopt;
}
std::optional<std::string> unknown_resource(const NodeSpec& n, const ResourceNames& names) {
  return unknown_slot(n.capacity, names);
}
std::optional<std::string> unknown_resource(const JobSpec& j, const ResourceNames& names) {
  for (const auto& p : j.pod_sets)
    if (auto u = unknown_slot(p.per_pod, names)) return u;
  return std::nullopt;
}

int state_code(JobState s) {
  switch (s) {
    case JobState::kPending: return 0;
    case JobState::kAdmitted: return 1;
    case JobState::kRunning: return 2;
    case JobState::kPreempting: return 3;
    case JobState::kSucceeded: return 4;
    case JobState::kFailed: return 5;
    case JobState::kCancelled: return 6;
  }
  return -1;
}

std::optional<JobState> state_from_code(std::int64_t code) {
  constexpr std::array<JobState, 7> kByCode{JobState::kPending,   JobState::kAdmitted,
                                            JobState::kRunning,   JobState::kPreempting,
                                            JobState::kSucceeded, JobState::kFailed,
                                            JobState::kCancelled};
  if (code < 0 || code >= static_cast<std::int64_t>(kByCode.size())) return std::nullopt;
  return kByCode[static_cast<std::size_t>(code)];
}

Quantity job_gpu_milli(const JobSpec& spec) {
  Quantity total = 0;
  for (const auto& p : spec.pod_sets) total += p.count * p.per_pod[kGpu];
  return total;
}

}  // namespace gpuq::storage
