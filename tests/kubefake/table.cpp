#include "tests/kubefake/table.hpp"

#include <ctime>

#include "tests/kubefake/kubelet.hpp"
#include "tests/kubefake/meta.hpp"

namespace gpuq::kubefake {

namespace {

struct Column {
  const char* name;
  const char* type;
  const char* format;
  int priority;
  const char* description;
};

// apimachinery's duration.HumanDuration, the AGE column's format.
std::string human_duration(long long s) {
  auto str = [](long long v) { return std::to_string(v); };
  if (s < 0) s = 0;
  if (s < 120) return str(s) + "s";
  long long m = s / 60;
  if (m < 10) return s % 60 == 0 ? str(m) + "m" : str(m) + "m" + str(s % 60) + "s";
  if (m < 180) return str(m) + "m";
  long long h = m / 60;
  if (h < 8) return m % 60 == 0 ? str(h) + "h" : str(h) + "h" + str(m % 60) + "m";
  if (h < 48) return str(h) + "h";
  if (h < 192) return h % 24 == 0 ? str(h / 24) + "d" : str(h / 24) + "d" + str(h % 24) + "h";
  if (h < 24 * 365 * 2) return str(h / 24) + "d";
  return str(h / 24 / 365) + "y";
}

std::string age(const json::object& o) {
  std::string t = string_at(o, {"metadata", "creationTimestamp"});
  std::tm tm{};
  if (t.empty() || strptime(t.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return "<unknown>";
  return human_duration(static_cast<long long>(std::time(nullptr) - timegm(&tm)));
}

json::array columns(std::initializer_list<Column> cs) {
  json::array out;
  for (const Column& c : cs) {
    out.push_back(json::object{{"name", c.name},
                               {"type", c.type},
                               {"format", c.format},
                               {"description", c.description},
                               {"priority", c.priority}});
  }
  return out;
}

json::array pod_cells(const json::object& pod) {
  long long ready = 0;
  long long total = 0;
  long long restarts = 0;
  if (const json::value* cs = value_at(pod, {"spec", "containers"});
      cs != nullptr && cs->is_array()) {
    total = static_cast<long long>(cs->get_array().size());
  }
  if (const json::value* ss = value_at(pod, {"status", "containerStatuses"});
      ss != nullptr && ss->is_array()) {
    for (const json::value& s : ss->get_array()) {
      if (!s.is_object()) continue;
      const json::value* r = s.get_object().if_contains("ready");
      ready += r != nullptr && r->is_bool() && r->get_bool() ? 1 : 0;
      restarts += int_at(s.get_object(), {"restartCount"}, 0);
    }
  }
  std::string status = string_at(pod, {"status", "reason"});
  if (status.empty()) status = string_at(pod, {"status", "phase"});
  if (value_at(pod, {"metadata", "deletionTimestamp"}) != nullptr) status = "Terminating";
  auto or_none = [](std::string s) { return s.empty() ? std::string("<none>") : s; };
  return json::array{string_at(pod, {"metadata", "name"}),
                     std::to_string(ready) + "/" + std::to_string(total),
                     status,
                     restarts,
                     age(pod),
                     or_none(string_at(pod, {"status", "podIP"})),
                     or_none(string_at(pod, {"spec", "nodeName"})),
                     or_none(string_at(pod, {"status", "nominatedNodeName"})),
                     "<none>"};
}

json::array node_cells(const json::object& node) {
  std::string status = node_ready(node) ? "Ready" : "NotReady";
  if (const json::value* u = value_at(node, {"spec", "unschedulable"});
      u != nullptr && u->is_bool() && u->get_bool()) {
    status += ",SchedulingDisabled";
  }
  return json::array{string_at(node, {"metadata", "name"}), status, "<none>", age(node),
                     string_at(node, {"status", "nodeInfo", "kubeletVersion"})};
}

}  // namespace

bool wants_table(const std::string& accept) { return accept.find("as=Table") != std::string::npos; }

json::object to_table(const ResourceType& type, const std::vector<ObjectPtr>& objects,
                      json::object list_meta, const std::string& include_object) {
  json::array defs;
  if (type.name == "pods") {
    defs =
        columns({{"Name", "string", "name", 0, "Name must be unique within a namespace."},
                 {"Ready", "string", "", 0,
                  "The aggregate readiness state of this pod for accepting traffic."},
                 {"Status", "string", "", 0, "The aggregate status of the containers in this pod."},
                 {"Restarts", "string", "", 0,
                  "The number of times the containers in this pod have been restarted."},
                 {"Age", "string", "", 0,
                  "CreationTimestamp is a timestamp representing the server time when this object "
                  "was created."},
                 {"IP", "string", "", 1, "IP address allocated to the pod."},
                 {"Node", "string", "", 1, "Name of the node this pod is assigned to."},
                 {"Nominated Node", "string", "", 1, "Name of the node this pod is nominated to."},
                 {"Readiness Gates", "string", "", 1, "Readiness gates of this pod."}});
  } else if (type.name == "nodes") {
    defs = columns({{"Name", "string", "name", 0, "Name must be unique within a namespace."},
                    {"Status", "string", "", 0, "The status of the node"},
                    {"Roles", "string", "", 0, "The roles of the node"},
                    {"Age", "string", "", 0,
                     "CreationTimestamp is a timestamp representing the server time when this "
                     "object was created."},
                    {"Version", "string", "", 0, "Kubelet Version reported by the node."}});
  } else {
    defs = columns({{"Name", "string", "name", 0, "Name must be unique within a namespace."},
                    {"Age", "string", "", 0,
                     "CreationTimestamp is a timestamp representing the server time when this "
                     "object was created."}});
  }
  json::array rows;
  for (const ObjectPtr& o : objects) {
    json::array cells = type.name == "pods" ? pod_cells(*o)
                        : type.name == "nodes"
                            ? node_cells(*o)
                            : json::array{string_at(*o, {"metadata", "name"}), age(*o)};
    json::object row{{"cells", std::move(cells)}};
    if (include_object == "Object") {
      row["object"] = *o;
    } else if (include_object != "None") {
      row["object"] = json::object{{"kind", "PartialObjectMetadata"},
                                   {"apiVersion", "meta.k8s.io/v1"},
                                   {"metadata", o->at("metadata")}};
    }
    rows.push_back(std::move(row));
  }
  return json::object{{"kind", "Table"},
                      {"apiVersion", "meta.k8s.io/v1"},
                      {"metadata", std::move(list_meta)},
                      {"columnDefinitions", std::move(defs)},
                      {"rows", std::move(rows)}};
}

}  // namespace gpuq::kubefake
