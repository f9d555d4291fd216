#include "spec/yaml_read.hpp"

#include "spec/duration.hpp"

#include <charconv>

#include "spec/constraints.hpp"
#include "spec/limits.hpp"
#include "spec/validate.hpp"

namespace gpuq::spec {

yaml::Document parse_document(std::string_view text, const std::string& source) {
  try {
    return yaml::parse_one(text);
  } catch (SpecError& e) {
    e.from_source(source);
    throw;
  }
}

void fail_at(yaml::Node n, const Path& at, std::string reason) {
  SpecError e(at, std::move(reason));
  if (n) e.locate(n.mark());
  throw e;
}

void expect_map(yaml::Node n, const Path& at) {
  if (!n.is_map()) fail_at(n, at, "expected a map, got " + n.shown());
}

void expect_list(yaml::Node n, const Path& at) {
  if (!n.is_list()) fail_at(n, at, "expected a list, got " + n.shown());
}

std::string_view text_of(yaml::Node n, const Path& at, const char* what) {
  if (!n.is_scalar()) fail_at(n, at, std::string("expected ") + what + ", got " + n.shown());
  return n.text();
}

std::string string_of(yaml::Node n, const Path& at) { return std::string(text_of(n, at)); }

std::int64_t int_of(yaml::Node n, const Path& at) {
  const std::string_view t = text_of(n, at, "an integer");
  return located(n, at, [&] { return int_value(t, at); });
}

std::int32_t int32_of(yaml::Node n, const Path& at) {
  const std::string_view t = text_of(n, at, "an integer");
  return located(n, at, [&] { return int32_value(t, at); });
}

double number_of(yaml::Node n, const Path& at) {
  const std::string_view t = text_of(n, at, "a number");
  return located(n, at, [&] { return number_value(t, at); });
}

bool bool_of(yaml::Node n, const Path& at) {
  const std::string_view t = text_of(n, at, "true or false");
  return located(n, at, [&] { return bool_value(t, at); });
}

Quantity quantity_of(yaml::Node n, ResourceId r, const Path& at) {
  const std::string_view t = text_of(n, at, "a quantity such as 2, 500m, 16Gi");
  return located(n, at, [&] { return quantity_value(t, r, at); });
}

ResourceId resource_of(yaml::Node key, Path& at, ResourceNames& names) {
  const std::string_view name = key.text();
  if (name.empty()) return located(key, at, [&] { return resource_value(name, names, at); });
  Path::Key k(at, name);
  return located(key, at, [&] { return resource_value(name, names, at); });
}

ResourceVec resources_of(yaml::Node n, Path& at, ResourceNames& names) {
  expect_map(n, at);
  ResourceVec v;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const ResourceId r = resource_of(n.key(i), at, names);
    Path::Key k(at, n.key(i).text());
    v[r] = quantity_of(n.value(i), r, at);
  }
  return v;
}

std::map<std::string, std::string> string_map_of(yaml::Node n, Path& at, std::size_t max_entries,
                                                 const char* what) {
  expect_map(n, at);
  // Before reading any of it: a map too big to take costs nothing more than its parse.
  located(n, at, [&] { check_count(n.size(), max_entries, what, at, Counted::kHeld); });
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string_view k = n.key(i).text();
    if (k.empty()) fail_at(n.key(i), at, "has an empty key");
    Path::Key pk(at, k);
    out.emplace_hint(out.end(), std::string(k), string_of(n.value(i), at));
  }
  return out;
}

void refuse_unknown_key(yaml::Node key, const Path& at, std::initializer_list<std::string_view> allowed, Keys also) {
  std::vector<std::string_view> words(allowed);
  words.insert(words.end(), also.begin(), also.end());
  std::string list;
  for (std::string_view w : words) list += (list.empty() ? "" : ", ") + std::string(w);
  if (key.text().empty()) fail_at(key, at, "has an empty key; allowed here: " + list);
  Path here = at;
  here.push_key(key.text());
  std::string why = "unknown key; ";
  if (auto near = nearest(key.text(), words)) why += "did you mean " + std::string(*near) + "? ";
  fail_at(key, here, why + "allowed here: " + list);
}

void require(yaml::Node map, Path& at, std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys)
    if (!map.find(key)) {
      Path::Key k(at, key);
      fail_at(map, at, "is required");
    }
}

std::vector<std::string> read_names(yaml::Node v, Path& at, std::size_t max, const char* what) {
  expect_list(v, at);
  located(v, at, [&] { check_count(v.size(), max, what, at); });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    Path::Index ni(at, i);
    out.push_back(string_of(v.item(i), at));
  }
  return out;
}

namespace {

// A duration in whole seconds (spec/duration.hpp: 90, "90s", "30m", "2h", "1d", "1h30m",
// "1:30:00", "1-12:00:00"); a negative one ("-5") is read, and refused by validate().
Time duration_of(yaml::Node n, const Path& at) {
  const std::string_view text = text_of(n, at, "a duration such as 30m or 2h");
  const bool negative = !text.empty() && text.front() == '-';
  const auto v = duration_seconds(negative ? text.substr(1) : text);
  if (!v || *v > (Time{1} << 40)) fail_at(n, at, quoted(text) + " is not a duration; use " + kDurationForms);
  return negative ? -*v : *v;
}


PreemptionSpec read_preemption(yaml::Node n, Path& at) {
  PreemptionSpec p;
  for_each_key(
      n, at, {"withinQueue", "reclaimWithinCohort", "borrowWithinCohort", "minRuntime"},
      [&](std::string_view key, yaml::Node v) {
        if (key == "withinQueue") {
          p.within_queue = enum_of<WithinQueuePolicy>(v, at);
        } else if (key == "reclaimWithinCohort") {
          p.reclaim_within_cohort = enum_of<ReclaimPolicy>(v, at);
        } else if (key == "minRuntime") {
          p.min_runtime = duration_of(v, at);
        } else {  // borrowWithinCohort
          if (!v.is_map())
            fail_at(
                v, at,
                "expected a map such as {policy: LowerPriority, maxPriorityThreshold: 0}, got " +
                    v.shown());
          for_each_key(v, at, {"policy", "maxPriorityThreshold"},
                       [&](std::string_view k, yaml::Node w) {
                         if (k == "policy")
                           p.borrow_within_cohort = enum_of<BorrowWithinCohortPolicy>(w, at);
                         else
                           p.borrow_max_priority_threshold = int32_of(w, at);
                       });
          require(v, at, {"policy"});
        }
      });
  return p;
}

FlavorQuota read_flavor_quota(yaml::Node n, Path& at, ResourceNames& names) {
  FlavorQuota fq;
  for_each_key(n, at, {"flavor", "resources"}, [&](std::string_view key, yaml::Node v) {
    if (key == "flavor") {
      fq.flavor = string_of(v, at);
      return;
    }
    expect_map(v, at);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const ResourceId r = resource_of(v.key(i), at, names);
      Path::Key rk(at, v.key(i).text());
      const yaml::Node q = v.value(i);
      if (!q.is_map())
        fail_at(q, at,
                "expected a map such as {nominal: 8, borrowingLimit: 4, lendingLimit: 4}, got " +
                    q.shown());
      ResourceQuota rq;
      for_each_key(q, at, {"nominal", "borrowingLimit", "lendingLimit"},
                   [&](std::string_view k, yaml::Node w) {
                     const Quantity value = quantity_of(w, r, at);
                     if (k == "nominal")
                       rq.nominal = value;
                     else if (k == "borrowingLimit")
                       rq.borrowing_limit = value;
                     else
                       rq.lending_limit = value;
                   });
      require(q, at, {"nominal"});
      fq.resources.emplace_back(r, rq);
    }
  });
  require(n, at, {"flavor", "resources"});
  return fq;
}


NotifySpec read_notify(yaml::Node n, Path& at) {
  if (!n.is_map())
    fail_at(n, at, "expected a map such as {url: http://hooks.example/gpuq, on: [finished, failed]}, got " + n.shown());
  NotifySpec s;
  for_each_key(n, at, {"url", "on"}, [&](std::string_view key, yaml::Node v) {
    if (key == "url")
      s.url = string_of(v, at);
    else
      s.on = read_names(v, at, 5, "events");
  });
  return s;
}

Members read_members(yaml::Node n, Path& at) {
  if (!n.is_map())
    fail_at(n, at, "expected a map such as {users: [alice], groups: [ml]}, got " + n.shown());
  Members m;
  for_each_key(n, at, {"users", "groups"}, [&](std::string_view key, yaml::Node v) {
    (key == "users" ? m.users : m.groups) = read_names(v, at, limits::kRoleMembers, key == "users" ? "users" : "groups");
  });
  return m;
}


// idle: {warnAfter: 2h, cancelAfter: 6h}
IdlePolicy read_idle(yaml::Node n, Path& at) {
  if (!n.is_map()) fail_at(n, at, "expected a map such as {warnAfter: 2h, cancelAfter: 6h}, got " + n.shown());
  IdlePolicy p;
  for_each_key(n, at, {"warnAfter", "cancelAfter"}, [&](std::string_view key, yaml::Node v) {
    (key == "warnAfter" ? p.warn_after : p.cancel_after) = duration_of(v, at);
  });
  return p;
}

// A queue's guardrail keys (docs/tasks/queues-and-fair-sharing.md, Queue guardrails); false for another key.
bool read_guardrail(std::string_view key, yaml::Node v, Path& at, QueueSpec& q) {
  if (key == "maxGpusPerJob")
    q.max_gpus_per_job = quantity_of(v, kGpu, at);
  else if (key == "maxPodsPerJob")
    q.max_pods_per_job = int32_of(v, at);
  else if (key == "maxRuntime")
    q.max_runtime = duration_of(v, at);
  else if (key == "defaultMaxRuntime")
    q.default_max_runtime = duration_of(v, at);
  else if (key == "runtimeEstimate")
    q.runtime_estimate = duration_of(v, at);
  else if (key == "maxGracePeriod")
    q.max_grace_period = duration_of(v, at);
  else if (key == "allowedPriorityClasses")
    q.allowed_priority_classes = read_names(v, at, limits::kPriorityClasses, "classes");
  else if (key == "nonPreemptibleMayBorrow")
    q.non_preemptible_may_borrow = bool_of(v, at);
  else if (key == "maxRunningJobsPerUser")
    q.max_running_jobs_per_user = int32_of(v, at);
  else if (key == "maxPendingJobsPerUser")
    q.max_pending_jobs_per_user = int32_of(v, at);
  else if (key == "maxSubmitsPerUserPerMinute")
    q.max_submits_per_user_per_minute = int32_of(v, at);
  else if (key == "maxRetries")
    q.max_retries = int32_of(v, at);
  else if (key == "idle")
    q.idle = read_idle(v, at);
  else
    return false;
  return true;
}

}  // namespace

namespace {

// A queue's keys; `name`: given from elsewhere (a Queue object's metadata.name), else the
// required `name` key.
QueueSpec read_queue_keys(yaml::Node n, Path& at, ResourceNames& names, Keys also, const std::string* name) {
  expect_map(n, at);
  QueueSpec q;
  if (name != nullptr) q.name = QueueName(*name);
  for_each_key(
      n, at,
      {"name", "cohort", "weight", "queueingStrategy", "quotas", "preemption", "maxPendingJobs",
       "maxGpusPerJob", "maxPodsPerJob", "maxRuntime", "defaultMaxRuntime", "runtimeEstimate", "maxGracePeriod",
       "allowedPriorityClasses", "nonPreemptibleMayBorrow", "maxRunningJobsPerUser",
       "maxPendingJobsPerUser", "maxSubmitsPerUserPerMinute", "maxRetries", "idle", "submitters", "viewers", "notify",
       "kubernetes"},
      [&](std::string_view key, yaml::Node v) {
        if (key == "name") {
          if (name != nullptr) fail_at(v, at, "is not a key of a Queue object's spec: its name is metadata.name");
          q.name = QueueName(string_of(v, at));
        } else if (key == "cohort") {
          q.cohort = string_of(v, at);
          if (q.cohort.empty()) fail_at(v, at, "is empty; name a cohort or leave the key out");
        } else if (key == "weight") {
          q.weight = number_of(v, at);
        } else if (key == "queueingStrategy") {
          q.strategy = enum_of<QueueingStrategy>(v, at);
        } else if (key == "quotas") {
          expect_list(v, at);
          located(v, at, [&] { check_count(v.size(), limits::kQuotaFlavors, "flavors", at); });
          for (std::size_t i = 0; i < v.size(); ++i) {
            Path::Index fi(at, i);
            q.quotas.push_back(read_flavor_quota(v.item(i), at, names));
          }
        } else if (key == "preemption") {
          q.preemption = read_preemption(v, at);
        } else if (key == "maxPendingJobs") {
          q.max_pending_jobs = int32_of(v, at);
        } else if (key == "submitters") {
          q.submitters = read_members(v, at);
        } else if (key == "viewers") {
          q.viewers = read_members(v, at);
        } else if (key == "notify") {
          q.notify = read_notify(v, at);
        } else if (key == "kubernetes") {
          q.kubernetes = read_queue_kubernetes(v, at);
        } else {
          read_guardrail(key, v, at, q);  // or a key of the caller's own (`also`), read there
        }
      },
      also);
  if (name == nullptr) require(n, at, {"name"});
  located(n, at, [&] { validate(q, at, names); });
  return q;
}

}  // namespace

QueueSpec read_queue(yaml::Node n, Path& at, ResourceNames& names, Keys also) {
  return read_queue_keys(n, at, names, also, nullptr);
}

QueueSpec read_queue_object(yaml::Node n, Path& at, ResourceNames& names) {
  expect_map(n, at);
  std::string name;
  yaml::Node spec;
  for_each_key(n, at, {"apiVersion", "kind", "metadata", "spec", "status"}, [&](std::string_view key, yaml::Node v) {
    if (key == "apiVersion") {
      if (const std::string version = string_of(v, at); version != kQueueApiVersion)
        fail_at(v, at, quoted(version) + " is not served; use " + std::string(kQueueApiVersion));
    } else if (key == "kind") {
      if (const std::string kind = string_of(v, at); kind != "Queue") fail_at(v, at, quoted(kind) + " is not allowed; use Queue");
    } else if (key == "metadata") {
      expect_map(v, at);
      if (yaml::Node nn = v.find("name")) {
        Path::Key k(at, "name");
        name = string_of(nn, at);
      }
    } else if (key == "spec") {
      spec = v;
    }
  });
  require(n, at, {"apiVersion", "kind", "metadata", "spec"});
  if (name.empty()) {
    Path::Key k(at, "metadata");
    Path::Key kn(at, "name");
    fail_at(n.find("metadata"), at, "is required");
  }
  Path::Key k(at, "spec");
  return read_queue_keys(spec, at, names, {}, &name);
}

NodeSpec read_node(yaml::Node n, Path& at, ResourceNames& names, Keys also) {
  expect_map(n, at);
  NodeSpec s;
  for_each_key(
      n, at, {"name", "flavor", "capacity", "labels", "taints", "state", "dedicatedTo"},
      [&](std::string_view key, yaml::Node v) {
        if (key == "name") {
          s.name = string_of(v, at);
        } else if (key == "flavor") {
          s.flavor = string_of(v, at);
        } else if (key == "capacity") {
          s.capacity = resources_of(v, at, names);
        } else if (key == "labels") {
          s.labels = string_map_of(v, at, limits::kLabels, "labels");
        } else if (key == "taints") {
          s.taints = read_taints(v, at);
        } else if (key == "state") {
          s.state = enum_of<NodeState>(v, at);
        } else if (key == "dedicatedTo") {
          s.dedicated_to = QueueName(string_of(v, at));
          if (s.dedicated_to->empty())
            fail_at(v, at, "is empty; name a queue or leave the key out");
        }
      },
      also);
  require(n, at, {"name", "flavor", "capacity"});
  located(n, at, [&] { validate(s, at, names); });
  return s;
}

namespace {

// A job's or a pod set's nodeSelector, affinity or tolerations into `c`; false for another key.
bool read_constraint(std::string_view key, yaml::Node v, Path& at, NodeConstraints& c) {
  if (key == "nodeSelector")
    c.node_selector = read_node_selector(v, at);
  else if (key == "affinity")
    c.affinity = read_affinity(v, at);
  else if (key == "tolerations")
    c.tolerations = read_tolerations(v, at);
  else
    return false;
  return true;
}

PodSet read_pod_set(yaml::Node n, Path& at, ResourceNames& names) {
  PodSet s;
  for_each_key(n, at, {"name", "count", "resources", "nodeSelector", "affinity", "tolerations"},
               [&](std::string_view key, yaml::Node v) {
                 if (read_constraint(key, v, at, s.where.mut())) return;
                 if (key == "name") {
                   s.name = string_of(v, at);
                 } else if (key == "count") {
                   const std::int64_t c = int_of(v, at);
                   if (c < 1 || c > limits::kPodsPerJob)
                     fail_at(v, at,
                             v.shown() + " must be 1.." + std::to_string(limits::kPodsPerJob));
                   s.count = static_cast<std::int32_t>(c);
                 } else {
                   s.per_pod = resources_of(v, at, names);
                 }
               });
  require(n, at, {"resources"});
  if (s.where->empty()) s.where.reset();  // none: nothing allocated (spec/rare.hpp)
  return s;
}

std::vector<std::string> read_command(yaml::Node v, Path& at) {
  if (v.is_scalar()) return {std::string(v.text())};
  expect_list(v, at);
  located(v, at, [&] { check_count(v.size(), limits::kCommandArgs, "arguments", at, Counted::kHeld); });
  std::vector<std::string> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    Path::Index ai(at, i);
    out.push_back(string_of(v.item(i), at));
  }
  return out;
}

}  // namespace

Submission read_job(yaml::Node n, Path& at, ResourceNames& names, const JobKeys& keys) {
  expect_map(n, at);
  Submission sub;
  JobSpec& j = sub.job;
  NodeConstraints job_where;  // for every pod set, merged once all keys are read
  std::vector<std::string> gpu_models;
  auto read = [&](std::string_view key, yaml::Node v) {
    if (read_constraint(key, v, at, job_where)) return;
    if (key == "gpuModels") {  // the GPU models it accepts: an affinity on kGpuModelLabel
      expect_list(v, at);
      located(v, at, [&] { check_count(v.size(), limits::kRequirementValues, "models", at); });
      for (std::size_t i = 0; i < v.size(); ++i) {
        Path::Index mi(at, i);
        gpu_models.push_back(string_of(v.item(i), at));
      }
      if (gpu_models.empty()) fail_at(v, at, "is empty; list the GPU models the job accepts, or leave the key out");
      return;
    }
    if (key == "id") {
      j.id = JobId(string_of(v, at));
      if (j.id.empty()) fail_at(v, at, "is empty");
    } else if (key == "queue") {
      j.queue = QueueName(string_of(v, at));
    } else if (key == "name") {
      j.name = string_of(v, at);
    } else if (key == "owner") {
      j.owner = string_of(v, at);
    } else if (key == "priority") {
      sub.priority = string_of(v, at);
      if (keys.classes)
        j.priority =
            located(v, at, [&] { return priority_value(sub.priority, *keys.classes, at); });
    } else if (key == "submittedAt") {
      j.submitted_at = int_of(v, at);
    } else if (key == "pods") {
      expect_list(v, at);
      located(v, at, [&] { check_count(v.size(), limits::kPodSets, "pod sets", at); });
      for (std::size_t i = 0; i < v.size(); ++i) {
        Path::Index pi(at, i);
        j.pod_sets.push_back(read_pod_set(v.item(i), at, names));
      }
    } else if (key == "flavors") {
      expect_list(v, at);
      located(v, at, [&] { check_count(v.size(), limits::kJobFlavors, "flavors", at); });
      for (std::size_t i = 0; i < v.size(); ++i) {
        Path::Index fi(at, i);
        j.flavors.push_back(string_of(v.item(i), at));
      }
    } else if (key == "preemptible") {
      j.preemptible = bool_of(v, at);
    } else if (key == "exclusive") {
      j.exclusive = bool_of(v, at);
    } else if (key == "maxRuntime") {
      j.max_runtime = duration_of(v, at);
    } else if (key == "expectedRuntime") {
      j.expected_runtime = duration_of(v, at);
    } else if (key == "gracePeriod") {
      j.grace_period = duration_of(v, at);
    } else if (key == "onNodeLoss") {
      j.on_node_loss = enum_of<NodeLossPolicy>(v, at);
    } else if (key == "command") {
      sub.run.command = read_command(v, at);
    } else if (key == "env") {
      sub.run.env = string_map_of(v, at, limits::kEnvEntries, "variables");
    } else if (key == "workingDir") {
      sub.run.working_dir = string_of(v, at);
    } else if (key == "image") {
      sub.run.image = string_of(v, at);
    } else if (key == "notify") {
      sub.notify = read_notify(v, at);
    }
  };
  if (keys.run)
    for_each_key(n, at,
                 // A submission's time is the server's: no submittedAt.
                 {"id", "queue", "name", "owner", "priority", "pods", "flavors", "preemptible",
                  "exclusive", "maxRuntime", "expectedRuntime", "gracePeriod", "onNodeLoss", "command", "env",
                  "workingDir", "image", "notify", "nodeSelector", "affinity", "tolerations", "gpuModels"},
                 read, keys.also);
  else
    for_each_key(n, at,
                 {"id", "queue", "name", "owner", "priority", "submittedAt", "pods", "flavors",
                  "preemptible", "exclusive", "maxRuntime", "expectedRuntime", "gracePeriod", "nodeSelector",
                  "affinity", "tolerations", "gpuModels"},
                 read, keys.also);
  if (keys.id_required) require(n, at, {"id"});
  require(n, at, {"queue", "pods"});
  if (!job_where.empty())
    for (PodSet& s : j.pod_sets) s.where = merged(job_where, NodeConstraints(*s.where));
  for (PodSet& s : j.pod_sets) {
    require_gpu_models(s.where.mut(), gpu_models);
    if (s.where->empty()) s.where.reset();
  }
  located(n, at, [&] {
    validate(j, at, names);
    validate(sub.run, at);
    Path::Key k(at, "notify");
    validate(sub.notify, at);
  });
  return sub;
}

PriorityClasses read_priority_classes(yaml::Node n, Path& at) {
  expect_map(n, at);
  PriorityClasses classes;
  classes.by_name.clear();
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string_view name = n.key(i).text();
    if (name.empty()) fail_at(n.key(i), at, "a class name is empty");
    Path::Key k(at, name);
    classes.by_name[std::string(name)] = int32_of(n.value(i), at);
  }
  located(n, at, [&] { validate(classes, at); });
  return classes;
}

SchedulingPolicy read_policy(yaml::Node root, Path& at) {
  SchedulingPolicy p;
  if (const yaml::Node v = root.find("placement")) {
    Path::Key k(at, "placement");
    p.placement = enum_of<PlacementPolicy>(v, at);
  }
  if (const yaml::Node v = root.find("nodeReservation")) {
    Path::Key k(at, "nodeReservation");
    p.node_reservation = bool_of(v, at);
  }
  if (const yaml::Node t = root.find("topology")) {
    Path::Key k(at, "topology");
    for_each_key(t, at, {"levels"}, [&](std::string_view, yaml::Node levels) {
      if (!levels.is_list())
        fail_at(levels, at, "expected a list of node label keys, got " + levels.shown());
      for (std::size_t i = 0; i < levels.size(); ++i) {
        Path::Index li(at, i);
        p.topology_levels.push_back(string_of(levels.item(i), at));
      }
    });
    if (!t.find("levels")) {
      Path::Key lk(at, "levels");
      fail_at(t, at, "is required; list node label keys, widest first");
    }
  }
  if (const yaml::Node fs = root.find("fairSharing")) {
    Path::Key k(at, "fairSharing");
    for_each_key(fs, at, {"enabled", "preemptionStrategies", "usageHalfLife"},
                 [&](std::string_view key, yaml::Node v) {
                   if (key == "enabled") {
                     p.fair_sharing.enabled = bool_of(v, at);
                   } else if (key == "usageHalfLife") {
                     p.usage_half_life = duration_of(v, at);
                     if (p.usage_half_life <= 0) fail_at(v, at, v.shown() + " must be > 0 seconds");
                   } else {
                     expect_list(v, at);
                     if (v.size() == 0 || v.size() > 2)
                       fail_at(v, at,
                               "lists " + std::to_string(v.size()) +
                                   " strategies; list one or both of " +
                                   one_of(enum_words<FairShareStrategy>()));
                     auto& strategies = p.fair_sharing.strategies;
                     strategies.clear();
                     for (std::size_t i = 0; i < v.size(); ++i) {
                       Path::Index si(at, i);
                       strategies.push_back(enum_of<FairShareStrategy>(v.item(i), at));
                     }
                   }
                 });
  }
  located(root, at, [&] { validate(p, at); });
  return p;
}

}  // namespace gpuq::spec
