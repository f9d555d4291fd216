#include "sim/scenario.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <map>
#include <vector>

#include "scheduler/engine.hpp"
#include "spec/yaml_read.hpp"

namespace gpuq::sim {
namespace {

namespace json = boost::json;
using spec::Path;
using spec::SpecError;
using YamlNode = spec::yaml::Node;

struct Layout {
  Time now = 0;
  EngineConfig config;
  PriorityClasses classes;
};

// "a, b, c", or `none` when there are no names.
std::string join(const std::vector<std::string>& names, const std::string& none) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? none : out;
}

std::string counted(std::size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

Layout read_layout(YamlNode root, Path& at) {
  Layout l;
  if (YamlNode now = root.find("now")) {
    Path::Key k(at, "now");
    l.now = spec::int_of(now, at);
  }
  static_cast<SchedulingPolicy&>(l.config) = spec::read_policy(root, at);
  l.config.quota_only = !root.find("nodes");
  if (YamlNode classes = root.find("priorityClasses")) {
    Path::Key k(at, "priorityClasses");
    l.classes = spec::read_priority_classes(classes, at);
  }
  return l;
}

// A list, or nothing (an absent or empty key).
YamlNode list_or_empty(YamlNode root, const char* key, Path& at) {
  const YamlNode n = root.find(key);
  if (n && !n.is_list() && !n.is_null()) {
    Path::Key k(at, key);
    spec::fail_at(n, at, "expected a list, got " + n.shown());
  }
  return n;
}

constexpr std::string_view kRunningKeys[] = {"admittedAt", "nodes", "flavor"};

// Loads a scenario's state into an engine, section by section, checking cross references
// (queues, nodes, flavors, job ids) first so that errors name the field that is wrong.
class StateLoader {
 public:
  StateLoader(Engine& engine, Time now, const PriorityClasses& classes)
      : engine_(engine), now_(now), classes_(classes) {}

  void load(YamlNode root, Path& at, json::array& rejected) {
    load_queues(list_or_empty(root, "queues", at), at);
    load_nodes(list_or_empty(root, "nodes", at), at);
    load_running(list_or_empty(root, "running", at), at);
    load_pending(list_or_empty(root, "pending", at), at, rejected);
  }

 private:
  void add_flavor(const std::string& f) {
    if (std::find(flavors_.begin(), flavors_.end(), f) == flavors_.end()) flavors_.push_back(f);
  }

  void check_queue(YamlNode n, const Path& at, const QueueName& name) const {
    if (!engine_.queue_index(name))
      spec::fail_at(n, at, "\"" + name.value + "\" is not a queue; the queues are " + join(queue_names_, "(none)"));
  }

  void check_id(YamlNode job, Path& at, const JobId& id) {
    Path::Key k(at, "id");
    auto [it, fresh] = job_at_.emplace(id.value, at.str());
    if (!fresh)
      spec::fail_at(job.find("id"), at, "\"" + id.value + "\" is listed twice; also at " + it->second);
  }

  void load_queues(YamlNode queues, Path& at) {
    Path::Key k(at, "queues");
    if (queues.size() == 0) {
      QueueSpec def;  // no queues: one default queue with the whole cluster as its limit
      def.name = QueueName("default");
      (void)engine_.apply_queue(def);
      queue_names_.push_back(def.name.value);
    }
    static constexpr std::string_view kHistory[] = {"usageHistory"};
    for (std::size_t i = 0; i < queues.size(); ++i) {
      Path::Index qi(at, i);
      const YamlNode n = queues.item(i);
      QueueSpec q = spec::read_queue(n, at, engine_.resource_names(), kHistory);
      if (engine_.queue_index(q.name)) {
        Path::Key nk(at, "name");
        spec::fail_at(n.find("name"), at, "\"" + q.name.value + "\" is listed twice");
      }
      if (auto r = engine_.apply_queue(q); !r) spec::fail_at(n, at, r.error());
      if (YamlNode history = n.find("usageHistory")) load_history(history, at, q.name);
      queue_names_.push_back(q.name.value);
      for (const FlavorQuota& fq : q.quotas) add_flavor(fq.flavor);
    }
  }

  void load_history(YamlNode history, Path& at, const QueueName& q) {
    Path::Key k(at, "usageHistory");
    if (!engine_.config().usage_half_life)
      spec::fail_at(history, at, "needs fairSharing.usageHalfLife, the half-life it decays with");
    ResourceVec average = spec::resources_of(history, at, engine_.resource_names());
    for (std::size_t r = 0; r < engine_.resource_names().size(); ++r)
      if (average[static_cast<ResourceId>(r)] < 0)
        spec::fail_at(history, at, "a resource's usage is negative; it must be >= 0");
    if (auto r = engine_.set_usage_history(q, average, now_); !r) spec::fail_at(history, at, r.error());
  }

  void load_nodes(YamlNode nodes, Path& at) {
    Path::Key k(at, "nodes");
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      Path::Index ni(at, i);
      const YamlNode y = nodes.item(i);
      NodeSpec n = spec::read_node(y, at, engine_.resource_names());
      if (!node_flavor_.emplace(n.name, n.flavor).second) {
        Path::Key nk(at, "name");
        spec::fail_at(y.find("name"), at, "\"" + n.name + "\" is listed twice");
      }
      if (n.dedicated_to) {
        Path::Key dk(at, "dedicatedTo");
        check_queue(y.find("dedicatedTo"), at, *n.dedicated_to);
      }
      if (auto r = engine_.upsert_node(n, now_); !r) spec::fail_at(y, at, r.error());
      node_names_.push_back(n.name);
      add_flavor(n.flavor);
    }
  }

  RunningPlacement read_placement(YamlNode job, Path& at) const {
    RunningPlacement where;
    where.admitted_at = now_;
    if (YamlNode a = job.find("admittedAt")) {
      Path::Key k(at, "admittedAt");
      where.admitted_at = spec::int_of(a, at);
      if (where.admitted_at > now_)
        spec::fail_at(a, at, a.shown() + " is after now (" + std::to_string(now_) +
                                 "); a running job was admitted at or before now");
    }
    if (YamlNode f = job.find("flavor")) {
      Path::Key k(at, "flavor");
      where.flavor = spec::string_of(f, at);
    }
    if (YamlNode nodes = job.find("nodes")) {
      Path::Key k(at, "nodes");
      spec::expect_list(nodes, at);
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        Path::Index ni(at, i);
        where.nodes.push_back(spec::string_of(nodes.item(i), at));
      }
    }
    return where;
  }

  void load_running(YamlNode running, Path& at) {
    Path::Key k(at, "running");
    spec::JobKeys keys;
    keys.classes = &classes_;
    keys.also = kRunningKeys;
    for (std::size_t i = 0; i < running.size(); ++i) {
      Path::Index ri(at, i);
      const YamlNode y = running.item(i);
      JobSpec j = spec::read_job(y, at, engine_.resource_names(), keys).job;
      RunningPlacement where = read_placement(y, at);
      check_id(y, at, j.id);
      {
        Path::Key qk(at, "queue");
        check_queue(y.find("queue"), at, j.queue);
      }
      check_running(y, at, j, where);
      if (auto r = engine_.restore_running(std::move(j), where, now_); !r) spec::fail_at(y, at, r.error());
    }
  }

  // What the engine would only report without a field path, checked here with one.
  void check_running(YamlNode y, Path& at, const JobSpec& j, const RunningPlacement& where) const {
    if (j.submitted_at > where.admitted_at) {
      Path::Key k(at, "submittedAt");
      spec::fail_at(y.find("submittedAt"), at,
                    "\"" + std::to_string(j.submitted_at) + "\" is after admittedAt (" +
                        std::to_string(where.admitted_at) + "); a job is submitted before it is admitted");
    }
    for (std::size_t k = 0; k < j.pod_sets.size(); ++k) {
      // Pending jobs asking for this are rejected by the engine; a running one cannot exist.
      if (!is_valid_gpu_request(j.pod_sets[k].per_pod[kGpu])) {
        Path::Key pk(at, "pods");
        Path::Index pi(at, k);
        Path::Key rk(at, "resources");
        Path::Key gk(at, "gpu");
        const YamlNode gpu = y.find("pods").item(k).find("resources").find("gpu");
        spec::fail_at(gpu, at,
                      gpu.shown() + " is not allowed; a pod takes either a share of one GPU (below 1) or whole GPUs");
      }
    }
    if (where.flavor && std::find(flavors_.begin(), flavors_.end(), *where.flavor) == flavors_.end()) {
      Path::Key k(at, "flavor");
      spec::fail_at(y.find("flavor"), at,
                    "\"" + *where.flavor + "\" is not a flavor; the flavors are " +
                        join(flavors_, "(none: no quota or node names one)"));
    }
    check_running_nodes(y, at, j, where);
  }

  void check_running_nodes(YamlNode y, Path& at, const JobSpec& j, const RunningPlacement& where) const {
    const std::string job_path = at.str();
    {
      Path::Key nk(at, "nodes");
      const YamlNode nodes = y.find("nodes");
      for (std::size_t k = 0; k < where.nodes.size(); ++k) {
        Path::Index ni(at, k);
        auto it = node_flavor_.find(where.nodes[k]);
        if (it == node_flavor_.end())
          spec::fail_at(nodes.item(k), at,
                        "\"" + where.nodes[k] + "\" is not a node; " +
                            (node_names_.empty() ? std::string("the scenario has no nodes")
                                                 : "the nodes are " + join(node_names_, "")));
        const std::string& first = node_flavor_.at(where.nodes.front());
        if (it->second != first)
          spec::fail_at(nodes.item(k), at,
                        "node " + it->first + " is of flavor " + it->second + ", but node " + where.nodes.front() +
                            " (nodes[0]) is of flavor " + first + "; a job's pods share one flavor");
      }
      if (where.nodes.empty()) return;
      std::size_t pods = 0;
      for (const PodSet& s : j.pod_sets) pods += static_cast<std::size_t>(s.count);
      if (where.nodes.size() != pods)
        spec::fail_at(nodes, at,
                      "lists " + counted(where.nodes.size(), "node") + " for " + counted(pods, "pod") +
                          "; give one node per pod");
    }
    const std::string& f = node_flavor_.at(where.nodes.front());
    if (where.flavor && *where.flavor != f) {
      Path::Key fk(at, "flavor");
      spec::fail_at(y.find("flavor"), at,
                    "\"" + *where.flavor + "\" does not match " + job_path + ".nodes[0]: node " +
                        where.nodes.front() + " is of flavor " + f);
    }
  }

  void load_pending(YamlNode pending, Path& at, json::array& rejected) {
    Path::Key k(at, "pending");
    spec::JobKeys keys;
    keys.classes = &classes_;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      Path::Index pi(at, i);
      const YamlNode y = pending.item(i);
      if (y.is_map())
        for (std::string_view key : kRunningKeys)
          if (YamlNode v = y.find(key)) {
            Path::Key kk(at, key);
            spec::fail_at(v, at, "only running jobs have admittedAt, nodes and flavor; move the job to running");
          }
      JobSpec j = spec::read_job(y, at, engine_.resource_names(), keys).job;
      check_id(y, at, j.id);
      std::string id = j.id.value;
      if (auto r = engine_.submit(std::move(j), now_); !r) {
        if (r.code() != ErrorCode::kRejected) spec::fail_at(y, at, r.error());
        rejected.push_back(json::object{{"job", id}, {"reason", r.error()}});
      }
    }
  }

  Engine& engine_;
  Time now_;
  const PriorityClasses& classes_;
  std::vector<std::string> queue_names_;  // in the order listed
  std::vector<std::string> flavors_;      // named by a quota or a node, first seen first
  std::map<std::string, std::string> node_flavor_;  // node name -> flavor
  std::vector<std::string> node_names_;             // in the order listed
  std::map<std::string, std::string> job_at_;       // job id -> path of its id
};

json::object admission_json(const Admission& a, bool with_pods) {
  json::object o{{"job", a.job.value}, {"queue", a.queue.value}};
  if (!a.flavor.empty()) o["flavor"] = a.flavor;
  if (with_pods) {
    json::array pods;
    for (const PodPlacement& p : a.pods) {
      json::object po{{"node", p.node}};
      json::array gpus;
      for (int g : p.gpus) gpus.push_back(g);
      po["gpus"] = std::move(gpus);
      if (p.gpu_milli > 0 && p.gpu_milli < kMilliPerGpu) po["gpuMilli"] = p.gpu_milli;
      pods.push_back(std::move(po));
    }
    o["pods"] = std::move(pods);
  }
  return o;
}

}  // namespace

json::value run_scenario(const std::string& yaml_text, const std::string& file_label) {
  const spec::yaml::Document doc = spec::parse_document(yaml_text, file_label);
  return spec::read_document(doc, file_label, [&]() -> json::value {
    const YamlNode root = doc.root();
    Path at;
    if (!root.is_map())
      throw SpecError("the file must be a YAML map with keys such as queues, nodes, pending", root.mark());
    spec::for_each_key(root, at,
                       {"now", "fairSharing", "topology", "placement", "nodeReservation", "priorityClasses", "queues", "nodes",
                        "running", "pending"},
                       [](std::string_view, YamlNode) {});
    Layout layout = read_layout(root, at);
    Engine engine(layout.config);
    json::array rejected;
    StateLoader(engine, layout.now, layout.classes).load(root, at, rejected);

    json::array admitted;
    json::array preempted;
    for (const Decision& d : engine.schedule(layout.now)) {
      if (const auto* a = std::get_if<Admission>(&d))
        admitted.push_back(admission_json(*a, !layout.config.quota_only));
      else if (const auto* p = std::get_if<Preemption>(&d))
        preempted.push_back(json::object{{"job", p->job.value},
                                         {"queue", p->queue.value},
                                         {"by", p->by.value},
                                         {"reason", to_string(p->reason)}});
    }
    json::array pending;
    for (const Job* j : engine.pending_in_submission_order())
      pending.push_back(json::object{{"job", j->spec.id.value}, {"reason", engine.pending_reason(*j)}});
    return json::object{{"admitted", std::move(admitted)},
                        {"preempted", std::move(preempted)},
                        {"pending", std::move(pending)},
                        {"rejected", std::move(rejected)}};
  });
}

namespace {
// A number as people write it: doubles in their shortest exact decimal form ("0.953947", not
// Boost's "9.53947E-1"); everything else as Boost.JSON serializes it.
void scalar(std::string& out, const json::value& v) {
  if (!v.is_double() || !std::isfinite(v.get_double())) {
    out += json::serialize(v);
    return;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v.get_double());
  out.append(buf, r.ptr);
}

void compact(std::string& out, const json::value& v) {
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& kv : v.get_object()) {
      if (!first) out += ',';
      first = false;
      out += json::serialize(json::value(kv.key()));
      out += ':';
      compact(out, kv.value());
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    bool first = true;
    for (const auto& item : v.get_array()) {
      if (!first) out += ',';
      first = false;
      compact(out, item);
    }
    out += ']';
  } else {
    scalar(out, v);
  }
}

void pretty(std::string& out, const json::value& v, int indent) {
  const std::string pad(indent, ' ');
  if (v.is_object()) {
    const auto& o = v.get_object();
    if (o.empty()) { out += "{}"; return; }
    // Small flat objects stay on one line, so a decision reads as one line.
    bool flat = o.size() <= 6;
    for (const auto& kv : o) flat = flat && !kv.value().is_object() && !(kv.value().is_array() && !kv.value().get_array().empty() && kv.value().get_array()[0].is_object());
    out += flat ? "{" : "{\n";
    bool first = true;
    for (const auto& kv : o) {
      if (!first) out += flat ? ", " : ",\n";
      first = false;
      if (!flat) out += pad + "  ";
      out += json::serialize(json::value(kv.key())) + ": ";
      pretty(out, kv.value(), indent + 2);
    }
    out += flat ? "}" : "\n" + pad + "}";
  } else if (v.is_array()) {
    const auto& a = v.get_array();
    if (a.empty()) { out += "[]"; return; }
    bool scalars = !a[0].is_object() && !a[0].is_array();
    if (scalars) {
      out += '[';
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i) out += ',';
        scalar(out, a[i]);
      }
      out += ']';
      return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < a.size(); ++i) {
      out += pad + "  ";
      pretty(out, a[i], indent + 2);
      out += i + 1 < a.size() ? ",\n" : "\n";
    }
    out += pad + "]";
  } else {
    scalar(out, v);
  }
}
}  // namespace

std::string to_compact_json(const json::value& v) {
  std::string out;
  compact(out, v);
  return out;
}

std::string to_pretty_json(const json::value& v) {
  std::string out;
  pretty(out, v, 0);
  out += "\n";
  return out;
}

}  // namespace gpuq::sim
