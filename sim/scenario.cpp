#include "sim/scenario.hpp"

#include <boost/json.hpp>
#include <set>

#include "sim/spec_yaml.hpp"

namespace gpuq::sim {
namespace {

namespace json = boost::json;

struct Layout {
  Time now = 0;
  EngineConfig config;
};

Layout read_layout(const YAML::Node& root) {
  Layout l;
  if (root["now"]) l.now = read_int(root["now"], "now");
  l.config.quota_only = !root["nodes"];
  if (const auto& fs = root["fairSharing"]) {
    if (!fs.IsMap()) throw SpecError("fairSharing: expected a map");
    check_keys(fs, "fairSharing", {"enabled", "preemptionStrategies"});
    if (fs["enabled"]) (void)read_bool(fs["enabled"], "fairSharing.enabled");
    if (const auto& st = fs["preemptionStrategies"]) {
      if (!st.IsSequence()) throw SpecError("fairSharing.preemptionStrategies: expected a list");
      for (std::size_t i = 0; i < st.size(); ++i) {
        const std::string p = "fairSharing.preemptionStrategies[" + std::to_string(i) + "]";
        std::string s = read_string(st[i], p);
        if (s != "LessThanOrEqualToFinalShare" && s != "LessThanInitialShare")
          throw SpecError(p + ": \"" + s +
                          "\" is not allowed; use LessThanOrEqualToFinalShare or LessThanInitialShare");
      }
    }
  }
  if (const auto& topo = root["topology"]) {
    if (!topo.IsMap()) throw SpecError("topology: expected a map");
    check_keys(topo, "topology", {"levels"});
    const auto& levels = topo["levels"];
    if (!levels || !levels.IsSequence()) throw SpecError("topology.levels: expected a list of label keys");
    for (std::size_t i = 0; i < levels.size(); ++i)
      l.config.topology_levels.push_back(
          read_string(levels[i], "topology.levels[" + std::to_string(i) + "]"));
  }
  if (root["placement"]) {
    std::string p = read_string(root["placement"], "placement");
    if (p == "pack") l.config.placement = PlacementPolicy::kPack;
    else if (p == "spread") l.config.placement = PlacementPolicy::kSpread;
    else throw SpecError("placement: \"" + p + "\" is not allowed; use pack or spread");
  }
  return l;
}

const YAML::Node list_or_empty(const YAML::Node& root, const char* key) {
  const YAML::Node n = root[key];
  if (n && !n.IsSequence() && !n.IsNull())
    throw SpecError(std::string(key) + ": expected a list");
  return n;
}

void load_state(Engine& engine, const YAML::Node& root, Time now, json::array& rejected) {
  const YAML::Node queues = list_or_empty(root, "queues");
  if (!queues || queues.size() == 0) {
    QueueSpec def;  // no queues: one default queue with the whole cluster as its limit
    def.name = QueueName("default");
    (void)engine.apply_queue(def);
  }
  for (std::size_t i = 0; queues && i < queues.size(); ++i) {
    const std::string p = "queues[" + std::to_string(i) + "]";
    QueueSpec q = parse_queue(queues[i], p, engine.resource_names());
    if (engine.queue_index(q.name)) throw SpecError(p + ".name: \"" + q.name.value + "\" is listed twice");
    if (auto r = engine.apply_queue(q); !r) throw SpecError(p + ": " + r.error());
  }
  const YAML::Node nodes = list_or_empty(root, "nodes");
  std::set<std::string> node_names;
  for (std::size_t i = 0; nodes && i < nodes.size(); ++i) {
    const std::string p = "nodes[" + std::to_string(i) + "]";
    NodeSpec n = parse_node(nodes[i], p, engine.resource_names());
    if (!node_names.insert(n.name).second) throw SpecError(p + ".name: \"" + n.name + "\" is listed twice");
    if (auto r = engine.upsert_node(n, now); !r) throw SpecError(p + ": " + r.error());
  }
  const YAML::Node running = list_or_empty(root, "running");
  for (std::size_t i = 0; running && i < running.size(); ++i) {
    const std::string p = "running[" + std::to_string(i) + "]";
    check_job_keys(running[i], p, /*running=*/true);
    JobSpec j = parse_job(running[i], p, engine.resource_names());
    RunningPlacement where = parse_running_placement(running[i], p, now);
    if (auto r = engine.restore_running(std::move(j), where, now); !r) throw SpecError(p + ": " + r.error());
  }
  const YAML::Node pending = list_or_empty(root, "pending");
  for (std::size_t i = 0; pending && i < pending.size(); ++i) {
    const std::string p = "pending[" + std::to_string(i) + "]";
    check_job_keys(pending[i], p, /*running=*/false);
    JobSpec j = parse_job(pending[i], p, engine.resource_names());
    std::string id = j.id.value;
    if (auto r = engine.submit(std::move(j), now); !r) {
      if (r.code() != ErrorCode::kRejected) throw SpecError(p + ": " + r.error());
      rejected.push_back(json::object{{"job", id}, {"reason", r.error()}});
    }
  }
}

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
      root = YAML::Load(yaml_text);
    } catch (const YAML::Exception& e) {
      throw SpecError("line " + std::to_string(e.mark.line + 1) + ", column " +
                      std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
    if (!root.IsMap()) throw SpecError("the file must be a YAML map with keys such as queues, nodes, pending");
    check_keys(root, "(top level)",
               {"now", "fairSharing", "topology", "placement", "queues", "nodes", "running", "pending"});
    Layout layout = read_layout(root);
    Engine engine(layout.config);
    json::array rejected;
    load_state(engine, root, layout.now, rejected);

    json::array admitted;
    for (const Decision& d : engine.schedule(layout.now))
      if (const auto* a = std::get_if<Admission>(&d))
        admitted.push_back(admission_json(*a, !layout.config.quota_only));
    json::array pending;
    for (const Job* j : engine.pending_in_submission_order())
      pending.push_back(json::object{{"job", j->spec.id.value}, {"reason", engine.pending_reason(*j)}});
    return json::object{{"admitted", std::move(admitted)},
                        {"preempted", json::array{}},
                        {"pending", std::move(pending)},
                        {"rejected", std::move(rejected)}};
  } catch (const SpecError& e) {
    throw SpecError(file_label + ": " + e.what());
  }
}

namespace {
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
    if (scalars) { out += json::serialize(v); return; }
    out += "[\n";
    for (std::size_t i = 0; i < a.size(); ++i) {
      out += pad + "  ";
      pretty(out, a[i], indent + 2);
      out += i + 1 < a.size() ? ",\n" : "\n";
    }
    out += pad + "]";
  } else {
    out += json::serialize(v);
  }
}
}  // namespace

std::string to_pretty_json(const json::value& v) {
  std::string out;
  pretty(out, v, 0);
  out += "\n";
  return out;
}

}  // namespace gpuq::sim
