// Queues as Kubernetes objects (queues.gpuq.io, deploy/kubernetes/crd-queue.yaml; README:
// "Queues as Kubernetes objects"). Every replica watches them and reports each to its Core as it
// reads (QueueSeen, QueueGone, and QueuesListed after the first list, before any pod); a spec
// that does not read, or that the Core refuses, is kept out and said in the object's status,
// the queue running on its last valid spec. The leader writes each object's status (its use,
// conditions Active and Invalid) at each status interval, only where it changed, at most
// kStatusWritesPerReport at once.
#include <cmath>
#include <cstdio>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "binder/kubernetes/kube_state.hpp"
#include "spec/quantity.hpp"
#include "spec/yaml.hpp"
#include "spec/yaml_read.hpp"

namespace gpuq::binder::k8s {

namespace json = boost::json;

namespace {

constexpr std::size_t kStatusWritesPerReport = 50;
const std::string kQueuesPath = "/apis/gpuq.io/v1alpha1/queues";

std::int64_t int_at(const json::object& o, std::string_view a, std::string_view b) {
  const json::value* v = o.if_contains(a);
  if (v == nullptr || !v->is_object()) return 0;
  const json::value* w = v->get_object().if_contains(b);
  return w != nullptr && w->is_int64() ? w->get_int64() : 0;
}

}  // namespace

bool KubernetesBinder::queue_objects() const { return s_->objects_on.load(); }

// Under mu. A spec is read (and reported) only when its generation is new: the status writes
// change the object too.
void KubernetesBinder::State::on_queue(EventType type, const json::object& obj) {
  const std::string name = object_key(obj);
  if (type == EventType::kDeleted) {
    queue_objects.erase(name);
    if (source) source(QueueGone{name});
    return;
  }
  const std::int64_t generation = int_at(obj, "metadata", "generation");
  QueueObject& q = queue_objects[name];
  if (q.generation == generation && generation != 0) return;
  q.generation = generation;
  q.refused.clear();
  try {
    spec::yaml::Document doc = spec::yaml::parse_one(json::serialize(obj));
    spec::Path at;
    QueueSpec read = spec::read_queue_object(doc.root(), at, *names);
    q.unread.clear();
    if (source) source(QueueSeen{std::move(read)});
  } catch (const spec::SpecError& e) {
    // Without the line and column: they would be of the JSON gpuqd read, not the YAML applied.
    q.unread = e.path_text().empty() ? e.reason() : e.path_text() + ": " + e.reason();
    spdlog::warn("event=queue_object_refused queue={} generation={} error=\"{}\"", name, generation, q.unread);
  }
}

void KubernetesBinder::State::queues_listed() {
  std::vector<std::string> listed;
  for (const auto& [name, q] : queue_objects) listed.push_back(name);
  if (source) source(QueuesListed{std::move(listed)});
}

void KubernetesBinder::queue_result(const std::string& name, const std::string& refusal) {
  std::lock_guard lock(s_->mu);
  auto it = s_->queue_objects.find(name);
  if (it == s_->queue_objects.end()) return;
  it->second.refused = refusal;
}

void KubernetesBinder::queue_report(std::vector<QueueReport> queues) {
  State* s = s_.get();
  std::lock_guard lock(s->mu);
  if (!s->objects_on || !s->leading || s->names == nullptr) return;
  std::map<std::string, const QueueReport*> by_name;
  for (const QueueReport& r : queues) by_name[r.name] = &r;
  std::size_t writes = 0;
  const std::string now = now_rfc3339();
  // From where the last report stopped, round the objects: when more than the cap changed, the
  // next report goes on with the others rather than the first ones again.
  std::vector<std::string> order;
  for (auto it = s->queue_objects.upper_bound(s->status_cursor); it != s->queue_objects.end(); ++it) order.push_back(it->first);
  for (auto it = s->queue_objects.begin(); it != s->queue_objects.end() && it->first <= s->status_cursor; ++it)
    order.push_back(it->first);
  for (const std::string& name : order) {
    if (writes >= kStatusWritesPerReport) break;  // the rest at the next report
    QueueObject& q = s->queue_objects.at(name);
    s->status_cursor = name;
    json::object status;
    status["observedGeneration"] = q.generation;
    const std::string why = !q.unread.empty() ? q.unread : q.refused;
    // Conditions: Active (the queue admits jobs, on its latest spec or its last valid one) and
    // Invalid (the latest spec was refused, in the words gpuq apply would use).
    struct Cond {
      std::string type, status, reason, message;
    };
    std::vector<Cond> conds;
    const QueueReport* r = by_name.count(name) > 0 ? by_name[name] : nullptr;
    if (r != nullptr && why.empty())
      conds.push_back({"Active", "True", "Applied", "gpuq admits jobs of this queue"});
    else if (r != nullptr)
      conds.push_back({"Active", "True", "LastValidSpec", "gpuq admits jobs of this queue on its last valid spec"});
    else
      conds.push_back({"Active", "False", why.empty() ? "Pending" : "Invalid",
                       why.empty() ? "not applied yet" : "no valid spec of it was applied"});
    if (!why.empty())
      conds.push_back({"Invalid", "True", q.unread.empty() ? "Refused" : "SpecInvalid", why});
    else
      conds.push_back({"Invalid", "False", "Valid", "the latest spec was applied"});
    json::array conditions;
    for (const Cond& c : conds) {
      auto& [was, at] = q.transitions[c.type];
      if (was != c.status || at.empty()) {
        was = c.status;
        at = now;
      }
      conditions.push_back(json::object{{"type", c.type},
                                        {"status", c.status},
                                        {"reason", c.reason},
                                        {"message", c.message},
                                        {"observedGeneration", q.generation},
                                        {"lastTransitionTime", at}});
    }
    status["conditions"] = std::move(conditions);
    if (r != nullptr) {
      status["pendingJobs"] = r->pending;
      status["runningJobs"] = r->running;
      if (std::isinf(r->share)) {
        status["fairShare"] = "inf";
      } else {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3f", r->share);
        status["fairShare"] = buf;
      }
      Quantity nominal = 0, used = 0, borrowed = 0, lent = 0;
      std::map<std::string, json::array> flavors;
      std::vector<std::string> order;
      for (const QueueReport::Row& row : r->rows) {
        if (row.resource == kGpu) {
          nominal += row.nominal;
          used += row.used;
          borrowed += row.borrowed;
          lent += row.lent;
        }
        if (flavors.count(row.flavor) == 0) order.push_back(row.flavor);
        flavors[row.flavor].push_back(json::object{{"name", s->names->name(row.resource)},
                                                   {"nominal", format_quantity(row.nominal, row.resource)},
                                                   {"used", format_quantity(row.used, row.resource)},
                                                   {"borrowed", format_quantity(row.borrowed, row.resource)},
                                                   {"lent", format_quantity(row.lent, row.resource)}});
      }
      status["gpus"] = json::object{{"nominal", format_quantity(nominal, kGpu)},
                                    {"used", format_quantity(used, kGpu)},
                                    {"borrowed", format_quantity(borrowed, kGpu)},
                                    {"lent", format_quantity(lent, kGpu)}};
      json::array fl;
      for (const std::string& f : order) fl.push_back(json::object{{"name", f}, {"resources", std::move(flavors[f])}});
      status["flavors"] = std::move(fl);
    }
    std::string body = json::serialize(json::object{{"status", std::move(status)}});
    if (body == q.last_written) continue;
    q.last_written = body;
    ++writes;
    s->write([s, name, body = std::move(body)] {
      Response resp = s->client->request("PATCH", kQueuesPath + "/" + name + "/status", body,
                                         "application/merge-patch+json", Retry::kSafe);
      if (!resp.ok()) {
        (*s->errors)("queue_status_failed");
        spdlog::warn("event=queue_status_failed queue={} error=\"{}\"", name, describe(resp));
        std::lock_guard again(s->mu);
        if (auto it = s->queue_objects.find(name); it != s->queue_objects.end()) it->second.last_written.clear();
      }
    });
  }
}

}  // namespace gpuq::binder::k8s
