#include "sim/scenario.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>
#include <vector>
#include <yaml-cpp/eventhandler.h>

#include "sim/spec_yaml.hpp"

namespace gpuq::sim {
namespace {

namespace json = boost::json;

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

Layout read_layout(const YAML::Node& root) {
  Layout l;
  if (root["now"]) l.now = read_int(root["now"], "now");
  l.config.quota_only = !root["nodes"];
  if (const auto& fs = root["fairSharing"]) {
    require_map(fs, "fairSharing");
    check_keys(fs, "fairSharing", {"enabled", "preemptionStrategies", "usageHalfLife"});
    if (fs["enabled"]) l.config.fair_sharing.enabled = read_bool(fs["enabled"], "fairSharing.enabled");
    if (fs["usageHalfLife"]) {
      l.config.usage_half_life = read_int(fs["usageHalfLife"], "fairSharing.usageHalfLife");
      if (l.config.usage_half_life <= 0)
        throw SpecError("fairSharing.usageHalfLife: \"" + fs["usageHalfLife"].Scalar() +
                        "\" must be > 0 seconds");
    }
    if (const auto& st = fs["preemptionStrategies"]) {
      require_list(st, "fairSharing.preemptionStrategies");
      if (st.size() == 0 || st.size() > 2)
        throw SpecError("fairSharing.preemptionStrategies: lists " + std::to_string(st.size()) +
                        " strategies; list one or both of LessThanOrEqualToFinalShare, "
                        "LessThanInitialShare");
      auto& strategies = l.config.fair_sharing.strategies;
      strategies.clear();
      for (std::size_t i = 0; i < st.size(); ++i) {
        const std::string p = "fairSharing.preemptionStrategies[" + std::to_string(i) + "]";
        auto s = read_enum<FairShareStrategy>(
            st[i], p,
            {{"LessThanOrEqualToFinalShare", FairShareStrategy::kLessThanOrEqualToFinalShare},
             {"LessThanInitialShare", FairShareStrategy::kLessThanInitialShare}});
        if (std::find(strategies.begin(), strategies.end(), s) != strategies.end())
          throw SpecError(p + ": \"" + st[i].Scalar() + "\" is listed twice");
        strategies.push_back(s);
      }
    }
  }
  if (const auto& topo = root["topology"]) {
    require_map(topo, "topology");
    check_keys(topo, "topology", {"levels"});
    const auto& levels = topo["levels"];
    if (!levels)
      throw SpecError("topology.levels: is required; list node label keys, widest first");
    if (!levels.IsSequence())
      throw SpecError("topology.levels: expected a list of node label keys, got " + shown(levels));
    for (std::size_t i = 0; i < levels.size(); ++i) {
      const std::string p = "topology.levels[" + std::to_string(i) + "]";
      std::string key = read_string(levels[i], p);
      if (key.empty()) throw SpecError(p + ": is empty; name a node label key");
      for (const std::string& prev : l.config.topology_levels)
        if (prev == key) throw SpecError(p + ": \"" + key + "\" is listed twice");
      l.config.topology_levels.push_back(std::move(key));
    }
  }
  if (root["priorityClasses"]) l.classes = parse_priority_classes(root["priorityClasses"], "priorityClasses");
  if (root["placement"])
    l.config.placement = read_enum<PlacementPolicy>(
        root["placement"], "placement",
        {{"pack", PlacementPolicy::kPack}, {"spread", PlacementPolicy::kSpread}, {"frag-aware", PlacementPolicy::kFragAware}});
  return l;
}

// Whether line `line` (0-based) of `text` is indented with a tab, which YAML forbids.
bool tab_indented(const std::string& text, int line) {
  std::size_t at = 0;
  for (int i = 0; i < line && at != std::string::npos; ++i) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  for (; at < text.size() && (text[at] == ' ' || text[at] == '\t'); ++at)
    if (text[at] == '\t') return true;
  return false;
}

// Counts the documents of a YAML text that have content (a stray --- makes an empty one), up to
// a few. yaml-cpp 0.7's LoadAll can loop for ever on some malformed texts, appending empty
// documents until memory runs out, so the documents are walked with the parser directly, and
// only as far as needed to tell one from several.
std::size_t count_documents(const std::string& text) {
  class Counter : public YAML::EventHandler {
   public:
    bool content = false;
    void OnDocumentStart(const YAML::Mark&) override { content = false; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override { content = true; }
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {
      content = true;
    }
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {
      content = true;
    }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {
      content = true;
    }
    void OnMapEnd() override {}
  };
  std::istringstream in(text);
  YAML::Parser parser(in);
  Counter counter;
  std::size_t documents = 0;
  for (int step = 0; step < 16 && documents < 2 && parser.HandleNextDocument(counter); ++step)
    documents += counter.content ? 1 : 0;
  return documents;
}

const YAML::Node list_or_empty(const YAML::Node& root, const char* key) {
  const YAML::Node n = root[key];
  if (n && !n.IsSequence() && !n.IsNull())
    throw SpecError(std::string(key) + ": expected a list, got " + shown(n));
  return n;
}

// Loads a scenario's state into an engine, section by section, checking cross references
// (queues, nodes, flavors, job ids) first so that errors name the field that is wrong.
class StateLoader {
 public:
  StateLoader(Engine& engine, Time now, const PriorityClasses& classes)
      : engine_(engine), now_(now), classes_(classes) {}

  void load(const YAML::Node& root, json::array& rejected) {
    load_queues(list_or_empty(root, "queues"));
    load_nodes(list_or_empty(root, "nodes"));
    load_running(list_or_empty(root, "running"));
    load_pending(list_or_empty(root, "pending"), rejected);
  }

 private:
  void add_flavor(const std::string& f) {
    if (std::find(flavors_.begin(), flavors_.end(), f) == flavors_.end()) flavors_.push_back(f);
  }

  void check_queue(const std::string& path, const QueueName& name) const {
    if (!engine_.queue_index(name))
      throw SpecError(path + ": \"" + name.value + "\" is not a queue; the queues are " +
                      join(queue_names_, "(none)"));
  }

  void check_id(const std::string& path, const JobId& id) {
    auto [it, fresh] = job_at_.emplace(id.value, path + ".id");
    if (!fresh)
      throw SpecError(path + ".id: \"" + id.value + "\" is listed twice; also at " + it->second);
  }

  void load_queues(const YAML::Node& queues) {
    if (!queues || queues.size() == 0) {
      QueueSpec def;  // no queues: one default queue with the whole cluster as its limit
      def.name = QueueName("default");
      (void)engine_.apply_queue(def);
      queue_names_.push_back(def.name.value);
    }
    for (std::size_t i = 0; queues && i < queues.size(); ++i) {
      const std::string p = "queues[" + std::to_string(i) + "]";
      QueueSpec q = parse_queue(queues[i], p, engine_.resource_names());
      if (engine_.queue_index(q.name))
        throw SpecError(p + ".name: \"" + q.name.value + "\" is listed twice");
      if (auto r = engine_.apply_queue(q); !r) throw SpecError(p + ": " + r.error());
      if (const auto& history = queues[i]["usageHistory"]) load_history(history, p, q.name);
      queue_names_.push_back(q.name.value);
      for (const FlavorQuota& fq : q.quotas) add_flavor(fq.flavor);
    }
  }

  void load_history(const YAML::Node& history, const std::string& queue_path, const QueueName& q) {
    const std::string hp = queue_path + ".usageHistory";
    if (!engine_.config().usage_half_life)
      throw SpecError(hp + ": needs fairSharing.usageHalfLife, the half-life it decays with");
    ResourceVec average = read_resources(history, hp, engine_.resource_names());
    if (auto r = engine_.set_usage_history(q, average, now_); !r) throw SpecError(hp + ": " + r.error());
  }

  void load_nodes(const YAML::Node& nodes) {
    for (std::size_t i = 0; nodes && i < nodes.size(); ++i) {
      const std::string p = "nodes[" + std::to_string(i) + "]";
      NodeSpec n = parse_node(nodes[i], p, engine_.resource_names());
      if (!node_flavor_.emplace(n.name, n.flavor).second)
        throw SpecError(p + ".name: \"" + n.name + "\" is listed twice");
      if (n.dedicated_to) check_queue(p + ".dedicatedTo", *n.dedicated_to);
      if (auto r = engine_.upsert_node(n, now_); !r) throw SpecError(p + ": " + r.error());
      node_names_.push_back(n.name);
      add_flavor(n.flavor);
    }
  }

  void load_running(const YAML::Node& running) {
    for (std::size_t i = 0; running && i < running.size(); ++i) {
      const std::string p = "running[" + std::to_string(i) + "]";
      check_job_keys(running[i], p, /*running=*/true);
      JobSpec j = parse_job(running[i], p, engine_.resource_names(), classes_);
      RunningPlacement where = parse_running_placement(running[i], p, now_);
      check_id(p, j.id);
      check_queue(p + ".queue", j.queue);
      check_running(running[i], p, j, where);
      if (auto r = engine_.restore_running(std::move(j), where, now_); !r)
        throw SpecError(p + ": " + r.error());
    }
  }

  // What the engine would only report without a field path, checked here with one.
  void check_running(const YAML::Node& yaml, const std::string& p, const JobSpec& j,
                     const RunningPlacement& where) const {
    if (j.submitted_at > where.admitted_at)
      throw SpecError(p + ".submittedAt: \"" + std::to_string(j.submitted_at) +
                      "\" is after admittedAt (" + std::to_string(where.admitted_at) +
                      "); a job is submitted before it is admitted");
    for (std::size_t k = 0; k < j.pod_sets.size(); ++k) {
      // Pending jobs asking for this are rejected by the engine; a running one cannot exist.
      if (!is_valid_gpu_request(j.pod_sets[k].per_pod[kGpu]))
        throw SpecError(p + ".pods[" + std::to_string(k) + "].resources.gpu: \"" +
                        yaml["pods"][k]["resources"]["gpu"].Scalar() +
                        "\" is not allowed; a pod takes either a share of one GPU (below 1) or "
                        "whole GPUs");
    }
    if (where.flavor && std::find(flavors_.begin(), flavors_.end(), *where.flavor) == flavors_.end())
      throw SpecError(p + ".flavor: \"" + *where.flavor + "\" is not a flavor; the flavors are " +
                      join(flavors_, "(none: no quota or node names one)"));
    check_running_nodes(p, j, where);
  }

  void check_running_nodes(const std::string& p, const JobSpec& j,
                           const RunningPlacement& where) const {
    for (std::size_t k = 0; k < where.nodes.size(); ++k) {
      const std::string np = p + ".nodes[" + std::to_string(k) + "]";
      auto it = node_flavor_.find(where.nodes[k]);
      if (it == node_flavor_.end())
        throw SpecError(np + ": \"" + where.nodes[k] + "\" is not a node; " +
                        (node_names_.empty() ? std::string("the scenario has no nodes")
                                             : "the nodes are " + join(node_names_, "")));
      const std::string& first = node_flavor_.at(where.nodes.front());
      if (it->second != first)
        throw SpecError(np + ": node " + it->first + " is of flavor " + it->second + ", but node " +
                        where.nodes.front() + " (nodes[0]) is of flavor " + first +
                        "; a job's pods share one flavor");
    }
    if (where.nodes.empty()) return;
    std::size_t pods = 0;
    for (const PodSet& s : j.pod_sets) pods += static_cast<std::size_t>(s.count);
    if (where.nodes.size() != pods)
      throw SpecError(p + ".nodes: lists " + counted(where.nodes.size(), "node") + " for " +
                      counted(pods, "pod") + "; give one node per pod");
    const std::string& f = node_flavor_.at(where.nodes.front());
    if (where.flavor && *where.flavor != f)
      throw SpecError(p + ".flavor: \"" + *where.flavor + "\" does not match " + p +
                      ".nodes[0]: node " + where.nodes.front() + " is of flavor " + f);
  }

  void load_pending(const YAML::Node& pending, json::array& rejected) {
    for (std::size_t i = 0; pending && i < pending.size(); ++i) {
      const std::string p = "pending[" + std::to_string(i) + "]";
      check_job_keys(pending[i], p, /*running=*/false);
      JobSpec j = parse_job(pending[i], p, engine_.resource_names(), classes_);
      check_id(p, j.id);
      std::string id = j.id.value;
      if (auto r = engine_.submit(std::move(j), now_); !r) {
        if (r.code() != ErrorCode::kRejected) throw SpecError(p + ": " + r.error());
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
  try {
    YAML::Node root;
    try {
      const std::size_t count = count_documents(yaml_text);
      if (count > 1)
        throw SpecError("the file holds " + std::to_string(count) +
                        " YAML documents (separated by ---); put the scenario in one");
      root = YAML::Load(yaml_text);
      if (root.IsNull() && count == 1)
        throw SpecError("the first YAML document is empty; put the scenario in the first one");
    } catch (const YAML::Exception& e) {
      throw SpecError(
          "line " + std::to_string(e.mark.line + 1) + ", column " +
          std::to_string(e.mark.column + 1) + ": " + e.msg +
          (tab_indented(yaml_text, e.mark.line) ? "; indent with spaces, not tabs" : ""));
    }
    if (!root.IsMap()) throw SpecError("the file must be a YAML map with keys such as queues, nodes, pending");
    check_keys(
        root, "",
        {"now", "fairSharing", "topology", "placement", "priorityClasses", "queues", "nodes",
         "running", "pending"});
    Layout layout = read_layout(root);
    Engine engine(layout.config);
    json::array rejected;
    StateLoader(engine, layout.now, layout.classes).load(root, rejected);

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
  } catch (const SpecError& e) {
    throw SpecError(file_label + ": " + e.what());
  } catch (const YAML::Exception& e) {  // a shape the checks above missed; still name the file
    throw SpecError(file_label + ": " + e.what());
  }
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

std::string to_pretty_json(const json::value& v) {
  std::string out;
  pretty(out, v, 0);
  out += "\n";
  return out;
}

EngineSettings read_engine_settings(const YAML::Node& root) {
  Layout l = read_layout(root);
  EngineSettings s;
  s.config = l.config;
  s.config.quota_only = false;
  s.classes = l.classes;
  return s;
}

}  // namespace gpuq::sim
