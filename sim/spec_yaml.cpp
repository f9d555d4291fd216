#include "sim/spec_yaml.hpp"

#include <charconv>
#include <cmath>
#include <set>

namespace gpuq::sim {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) { spec_fail(path, why); }

// The path of `key` inside the map at `path` ("" is the top level).
std::string child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// The text of a map key; YAML allows a list or a map as a key, a scenario does not.
const std::string& key_text(const YAML::Node& key, const std::string& path) {
  if (!key.IsScalar())
    fail(path, "has a key that is " + shown(key) + "; a key must be a plain name");
  return key.Scalar();
}

// YAML itself allows a key twice in one map (the first wins); a scenario does not.
void check_unique_keys(const YAML::Node& map, const std::string& path) {
  std::set<std::string> seen;
  for (const auto& kv : map)
    if (!seen.insert(key_text(kv.first, path)).second)
      fail(child(path, kv.first.Scalar()), "is listed twice in this map; give each key once");
}

// The scalar text of `node`; `what` names the kind of value expected ("an integer").
const std::string& scalar(const YAML::Node& node, const std::string& path, const char* what) {
  if (!node.IsScalar()) fail(path, std::string("expected ") + what + ", got " + shown(node));
  return node.Scalar();
}


std::int32_t read_int32(const YAML::Node& node, const std::string& path) {
  return int32_value(scalar(node, path, "an integer"), path);
}

std::optional<Quantity> optional_quantity(const YAML::Node& map, const char* key,
                                          const std::string& path, ResourceId r) {
  if (!map[key]) return std::nullopt;
  Quantity q = read_quantity(map[key], path + "." + key, r);
  if (q < 0) fail(path + "." + key, shown(map[key]) + " is negative; it must be >= 0");
  return q;
}

PreemptionSpec parse_preemption(const YAML::Node& node, const std::string& path) {
  require_map(node, path);
  check_keys(node, path, {"withinQueue", "reclaimWithinCohort", "borrowWithinCohort", "minRuntime"});
  PreemptionSpec p;
  if (node["withinQueue"])
    p.within_queue = read_enum<WithinQueuePolicy>(
        node["withinQueue"], path + ".withinQueue",
        {{"Never", WithinQueuePolicy::kNever},
         {"LowerPriority", WithinQueuePolicy::kLowerPriority},
         {"LowerOrNewerEqualPriority", WithinQueuePolicy::kLowerOrNewerEqualPriority}});
  if (node["reclaimWithinCohort"])
    p.reclaim_within_cohort = read_enum<ReclaimPolicy>(
        node["reclaimWithinCohort"], path + ".reclaimWithinCohort",
        {{"Never", ReclaimPolicy::kNever},
         {"LowerPriority", ReclaimPolicy::kLowerPriority},
         {"Any", ReclaimPolicy::kAny}});
  if (const auto& b = node["borrowWithinCohort"]) {
    const std::string bp = path + ".borrowWithinCohort";
    if (!b.IsMap())
      fail(bp, "expected a map such as {policy: LowerPriority, maxPriorityThreshold: 0}, got " +
                   shown(b));
    check_keys(b, bp, {"policy", "maxPriorityThreshold"});
    if (!b["policy"]) fail(bp + ".policy", "is required");
    p.borrow_within_cohort = read_enum<BorrowWithinCohortPolicy>(
        b["policy"], bp + ".policy",
        {{"Never", BorrowWithinCohortPolicy::kNever},
         {"LowerPriority", BorrowWithinCohortPolicy::kLowerPriority}});
    if (b["maxPriorityThreshold"])
      p.borrow_max_priority_threshold =
          read_int32(b["maxPriorityThreshold"], bp + ".maxPriorityThreshold");
  }
  if (node["minRuntime"]) {
    p.min_runtime = read_int(node["minRuntime"], path + ".minRuntime");
    if (p.min_runtime < 0)
      fail(path + ".minRuntime", shown(node["minRuntime"]) + " must be >= 0 seconds");
  }
  // As in Kueue: other queues' jobs are candidates only through reclaimWithinCohort.
  if (p.borrow_within_cohort != BorrowWithinCohortPolicy::kNever &&
      p.reclaim_within_cohort == ReclaimPolicy::kNever)
    fail(path + ".borrowWithinCohort",
         "policy LowerPriority needs reclaimWithinCohort LowerPriority or Any (it is Never)");
  return p;
}

}  // namespace

std::string shown(const YAML::Node& node) {
  if (node.IsScalar()) return "\"" + node.Scalar() + "\"";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return "nothing";
}

void require_map(const YAML::Node& node, const std::string& path) {
  if (!node.IsMap()) fail(path, "expected a map, got " + shown(node));
}

void require_list(const YAML::Node& node, const std::string& path) {
  if (!node.IsSequence()) fail(path, "expected a list, got " + shown(node));
}

void check_keys(const YAML::Node& map, const std::string& path,
                std::initializer_list<const char*> allowed) {
  if (!map.IsMap()) fail(path, "expected a map, got " + shown(map));
  for (const auto& kv : map) {
    const std::string& key = key_text(kv.first, path);
    bool known = false;
    std::string names;
    for (const char* a : allowed) {
      known = known || key == a;
      names += (names.empty() ? "" : ", ") + std::string(a);
    }
    if (key.empty()) fail(path, "has an empty key; allowed here: " + names);
    if (!known) fail(child(path, key), "unknown key; allowed here: " + names);
  }
  check_unique_keys(map, path);
}

std::string read_string(const YAML::Node& node, const std::string& path) {
  return scalar(node, path, "a string");
}

std::int64_t read_int(const YAML::Node& node, const std::string& path) {
  return int_value(scalar(node, path, "an integer"), path);
}

double read_number(const YAML::Node& node, const std::string& path) {
  const std::string_view s = numeric_text(scalar(node, path, "a number"));
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(v))
    fail(path, shown(node) + " is not a number; use a decimal such as 1, 0.5, 2.5e-1");
  return v;
}

bool read_bool(const YAML::Node& node, const std::string& path) {
  const std::string& s = scalar(node, path, "true or false");
  if (s == "true") return true;
  if (s == "false") return false;
  fail(path, shown(node) + " is not allowed; use true or false");
}

Quantity read_quantity(const YAML::Node& node, const std::string& path, ResourceId r) {
  return quantity_value(scalar(node, path, "a quantity such as 2, 500m, 16Gi"), path, r);
}

ResourceVec read_resources(const YAML::Node& node, const std::string& path, ResourceNames& names) {
  require_map(node, path);
  check_unique_keys(node, path);
  ResourceVec v;
  for (const auto& kv : node) {
    const std::string name = kv.first.Scalar();
    const std::string at = path + "." + name;
    ResourceId r = resource_value(name, path, names);
    v[r] = read_quantity(kv.second, at, r);
    if (v[r] < 0) fail(at, shown(kv.second) + " is negative; it must be >= 0");
  }
  return v;
}

QueueSpec parse_queue(const YAML::Node& node, const std::string& path, ResourceNames& names) {
  require_map(node, path);
  // usageHistory is read by the scenario loader (a queue's recent average use, not its spec).
  check_keys(node, path,
             {"name", "cohort", "weight", "queueingStrategy", "quotas", "preemption", "maxPendingJobs",
              "usageHistory"});
  QueueSpec q;
  if (!node["name"]) fail(path + ".name", "is required");
  q.name = QueueName(read_string(node["name"], path + ".name"));
  if (q.name.empty()) fail(path + ".name", "is empty");
  if (node["cohort"]) {
    q.cohort = read_string(node["cohort"], path + ".cohort");
    if (q.cohort.empty()) fail(path + ".cohort", "is empty; name a cohort or leave the key out");
  }
  if (node["weight"]) {
    q.weight = read_number(node["weight"], path + ".weight");
    if (!(q.weight > 0)) fail(path + ".weight", shown(node["weight"]) + " must be > 0");
  }
  if (node["queueingStrategy"])
    q.strategy = read_enum<QueueingStrategy>(
        node["queueingStrategy"], path + ".queueingStrategy",
        {{"BestEffortFIFO", QueueingStrategy::kBestEffortFIFO},
         {"StrictFIFO", QueueingStrategy::kStrictFIFO}});
  if (const auto& quotas = node["quotas"]) {
    const std::string qp = path + ".quotas";
    require_list(quotas, qp);
    for (std::size_t i = 0; i < quotas.size(); ++i) {
      const std::string fp = qp + "[" + std::to_string(i) + "]";
      require_map(quotas[i], fp);
      check_keys(quotas[i], fp, {"flavor", "resources"});
      FlavorQuota fq;
      if (!quotas[i]["flavor"]) fail(fp + ".flavor", "is required");
      fq.flavor = read_string(quotas[i]["flavor"], fp + ".flavor");
      if (fq.flavor.empty()) fail(fp + ".flavor", "is empty");
      for (const FlavorQuota& prev : q.quotas)
        if (prev.flavor == fq.flavor) fail(fp + ".flavor", "\"" + fq.flavor + "\" is listed twice");
      const auto& res = quotas[i]["resources"];
      if (!res) fail(fp + ".resources", "is required");
      require_map(res, fp + ".resources");
      check_unique_keys(res, fp + ".resources");
      for (const auto& kv : res) {
        const std::string rp = fp + ".resources." + kv.first.Scalar();
        ResourceId r = resource_value(kv.first.Scalar(), fp + ".resources", names);
        if (!kv.second.IsMap())
          fail(rp, "expected a map such as {nominal: 8, borrowingLimit: 4, lendingLimit: 4}, got " +
                       shown(kv.second));
        check_keys(kv.second, rp, {"nominal", "borrowingLimit", "lendingLimit"});
        ResourceQuota rq;
        if (!kv.second["nominal"]) fail(rp + ".nominal", "is required");
        rq.nominal = *optional_quantity(kv.second, "nominal", rp, r);
        rq.borrowing_limit = optional_quantity(kv.second, "borrowingLimit", rp, r);
        rq.lending_limit = optional_quantity(kv.second, "lendingLimit", rp, r);
        if (q.cohort.empty() && (rq.borrowing_limit || rq.lending_limit)) {
          const char* key = rq.borrowing_limit ? "borrowingLimit" : "lendingLimit";
          fail(rp + "." + key, shown(kv.second[key]) + " needs the queue to be in a cohort; set " +
                                   path + ".cohort or leave out " + key);
        }
        fq.resources.emplace_back(r, rq);
      }
      q.quotas.push_back(std::move(fq));
    }
  }
  if (node["preemption"]) q.preemption = parse_preemption(node["preemption"], path + ".preemption");
  if (node["maxPendingJobs"]) {
    q.max_pending_jobs = read_int32(node["maxPendingJobs"], path + ".maxPendingJobs");
    if (q.max_pending_jobs < 0)
      fail(path + ".maxPendingJobs", shown(node["maxPendingJobs"]) + " must be >= 0 (0: no limit)");
  }
  return q;
}

std::map<std::string, std::string> read_labels(const YAML::Node& labels, const std::string& path) {
  require_map(labels, path);
  check_unique_keys(labels, path);
  std::map<std::string, std::string> out;
  for (const auto& kv : labels) {
    if (kv.first.Scalar().empty()) fail(path, "has an empty label key");
    out[kv.first.Scalar()] = read_string(kv.second, path + "." + kv.first.Scalar());
  }
  return out;
}

NodeSpec parse_node(const YAML::Node& node, const std::string& path, ResourceNames& names) {
  require_map(node, path);
  check_keys(node, path, {"name", "flavor", "capacity", "labels", "state", "dedicatedTo"});
  NodeSpec n;
  if (!node["name"]) fail(path + ".name", "is required");
  n.name = read_string(node["name"], path + ".name");
  if (n.name.empty()) fail(path + ".name", "is empty");
  if (!node["flavor"]) fail(path + ".flavor", "is required");
  n.flavor = read_string(node["flavor"], path + ".flavor");
  if (n.flavor.empty()) fail(path + ".flavor", "is empty");
  if (!node["capacity"]) fail(path + ".capacity", "is required");
  n.capacity = read_resources(node["capacity"], path + ".capacity", names);
  if (n.capacity[kGpu] % kMilliPerGpu != 0)
    fail(path + ".capacity.gpu", shown(node["capacity"]["gpu"]) +
                                     " is not a whole number of GPUs; a node has whole GPUs");
  if (n.capacity[kGpu] / kMilliPerGpu > 255)
    fail(path + ".capacity.gpu",
         shown(node["capacity"]["gpu"]) + " is too many; a node has at most 255 GPUs");
  if (const auto& labels = node["labels"]) n.labels = read_labels(labels, path + ".labels");
  if (node["state"])
    n.state = read_enum<NodeState>(node["state"], path + ".state",
                                   {{"Ready", NodeState::kReady},
                                    {"Cordoned", NodeState::kCordoned},
                                    {"Draining", NodeState::kDraining},
                                    {"Down", NodeState::kDown}});
  if (node["dedicatedTo"]) {
    n.dedicated_to = QueueName(read_string(node["dedicatedTo"], path + ".dedicatedTo"));
    if (n.dedicated_to->empty())
      fail(path + ".dedicatedTo", "is empty; name a queue or leave the key out");
  }
  return n;
}

void check_job_keys(const YAML::Node& node, const std::string& path, bool running) {
  require_map(node, path);
  if (!running)
    for (const char* key : {"admittedAt", "nodes", "flavor"})
      if (node[key])
        fail(path + "." + key,
             "only running jobs have admittedAt, nodes and flavor; move the job to running");
  if (running)
    check_keys(node, path, {"id", "queue", "name", "owner", "priority", "submittedAt", "pods",
                            "flavors", "preemptible", "exclusive", "maxRuntime", "gracePeriod",
                            "admittedAt", "nodes", "flavor"});
  else
    check_keys(node, path, {"id", "queue", "name", "owner", "priority", "submittedAt", "pods",
                            "flavors", "preemptible", "exclusive", "maxRuntime", "gracePeriod"});
}

PriorityClasses parse_priority_classes(const YAML::Node& node, const std::string& path) {
  require_map(node, path);
  PriorityClasses classes;
  classes.by_name.clear();
  for (const auto& kv : node) {
    const std::string name = read_string(kv.first, path);
    if (name.empty()) fail(path, "a class name is empty");
    if (name.find_first_not_of("-0123456789") == std::string::npos)
      fail(path + "." + name, "a class name must not be a number");
    classes.by_name[name] = read_int32(kv.second, path + "." + name);
  }
  return classes;
}

namespace {
std::int32_t read_priority(const YAML::Node& node, const std::string& path,
                           const PriorityClasses& classes) {
  return priority_value(scalar(node, path, "an integer or a priority class"), path, classes);
}
}  // namespace

JobSpec parse_job(const YAML::Node& node, const std::string& path, ResourceNames& names,
                  const PriorityClasses& classes) {
  require_map(node, path);
  JobSpec j;
  if (!node["id"]) fail(path + ".id", "is required");
  j.id = JobId(read_string(node["id"], path + ".id"));
  if (j.id.empty()) fail(path + ".id", "is empty");
  if (!node["queue"]) fail(path + ".queue", "is required");
  j.queue = QueueName(read_string(node["queue"], path + ".queue"));
  if (j.queue.empty()) fail(path + ".queue", "is empty");
  if (node["name"]) j.name = read_string(node["name"], path + ".name");
  if (node["owner"]) j.owner = read_string(node["owner"], path + ".owner");
  if (node["priority"]) j.priority = read_priority(node["priority"], path + ".priority", classes);
  if (node["submittedAt"]) j.submitted_at = read_int(node["submittedAt"], path + ".submittedAt");
  if (!node["pods"]) fail(path + ".pods", "is required");
  const auto& pods = node["pods"];
  require_list(pods, path + ".pods");
  if (pods.size() == 0) fail(path + ".pods", "is empty; a job needs at least one pod set");
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const std::string pp = path + ".pods[" + std::to_string(i) + "]";
    require_map(pods[i], pp);
    check_keys(pods[i], pp, {"name", "count", "resources"});
    PodSet s;
    if (pods[i]["name"]) s.name = read_string(pods[i]["name"], pp + ".name");
    if (pods[i]["count"]) {
      std::int64_t c = read_int(pods[i]["count"], pp + ".count");
      check_pod_count(c, shown(pods[i]["count"]), pp + ".count");
      s.count = static_cast<std::int32_t>(c);
    }
    if (!pods[i]["resources"]) fail(pp + ".resources", "is required");
    s.per_pod = read_resources(pods[i]["resources"], pp + ".resources", names);
    j.pod_sets.push_back(std::move(s));
  }
  if (const auto& f = node["flavors"]) {
    require_list(f, path + ".flavors");
    for (std::size_t i = 0; i < f.size(); ++i) {
      const std::string fp = path + ".flavors[" + std::to_string(i) + "]";
      j.flavors.push_back(read_string(f[i], fp));
      if (j.flavors.back().empty()) fail(fp, "is empty");
    }
  }
  if (node["preemptible"]) j.preemptible = read_bool(node["preemptible"], path + ".preemptible");
  if (node["exclusive"]) j.exclusive = read_bool(node["exclusive"], path + ".exclusive");
  if (node["maxRuntime"]) {
    j.max_runtime = read_int(node["maxRuntime"], path + ".maxRuntime");
    check_max_runtime(*j.max_runtime, shown(node["maxRuntime"]), path + ".maxRuntime");
  }
  if (node["gracePeriod"]) {
    j.grace_period = read_int(node["gracePeriod"], path + ".gracePeriod");
    check_grace_period(j.grace_period, shown(node["gracePeriod"]), path + ".gracePeriod");
  }
  return j;
}

RunningPlacement parse_running_placement(const YAML::Node& node, const std::string& path, Time now) {
  RunningPlacement where;
  where.admitted_at = node["admittedAt"] ? read_int(node["admittedAt"], path + ".admittedAt") : now;
  if (where.admitted_at > now)
    fail(path + ".admittedAt", shown(node["admittedAt"]) + " is after now (" + std::to_string(now) +
                                   "); a running job was admitted at or before now");
  if (node["flavor"]) where.flavor = read_string(node["flavor"], path + ".flavor");
  if (const auto& nodes = node["nodes"]) {
    require_list(nodes, path + ".nodes");
    for (std::size_t i = 0; i < nodes.size(); ++i)
      where.nodes.push_back(read_string(nodes[i], path + ".nodes[" + std::to_string(i) + "]"));
  }
  return where;
}

}  // namespace gpuq::sim
