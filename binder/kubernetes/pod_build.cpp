#include "binder/kubernetes/pod_build.hpp"

#include <algorithm>
#include <cstdio>

#include <boost/json.hpp>

#include "binder/kubernetes/objects.hpp"
#include "binder/kubernetes/translate.hpp"
#include "storage/store.hpp"

namespace gpuq::binder::k8s {

namespace json = boost::json;

namespace {

std::uint64_t fnv(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

std::string hex(std::uint64_t h, int digits) {
  static const char* k = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < digits; ++i, h >>= 4) out += k[h & 15];
  return out;
}

bool is_alnum_lower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

// A label value (at most 63: letters, digits, '-', '_', '.', beginning and ending with a letter
// or digit): the id when it is one, else its name_of_job.
std::string label_value_of(const std::string& id) {
  auto ok = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; };
  const bool fits = !id.empty() && id.size() <= 63 && std::all_of(id.begin(), id.end(), ok) &&
                    std::isalnum(static_cast<unsigned char>(id.front())) && std::isalnum(static_cast<unsigned char>(id.back()));
  return fits ? id : name_of_job(id, 57);
}

namespace {

json::value json_of(const std::string& text) {
  if (text.empty()) return json::object{};
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  return ec || !v.is_object() ? json::value(json::object{}) : v;
}

json::object& object_in(json::object& o, std::string_view key) {
  json::value& v = o[key];
  if (!v.is_object()) v = json::object{};
  return v.get_object();
}

// A pod's metadata.annotations (made when missing).
json::object& meta_of(json::object& pod) { return object_in(object_in(pod, "metadata"), "annotations"); }

std::string milli_cpu(Quantity q) { return std::to_string(q) + "m"; }

}  // namespace

std::string name_of_job(const std::string& id, std::size_t max) {
  std::string base;
  for (char c : id) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    base += is_alnum_lower(l) ? l : '-';
  }
  const std::string tail = hex(fnv(id), 4);
  if (base.size() > max - tail.size() - 1) base.resize(max - tail.size() - 1);
  while (!base.empty() && base.back() == '-') base.pop_back();
  while (!base.empty() && base.front() == '-') base.erase(base.begin());
  if (!base.empty() && !(base.front() >= 'a' && base.front() <= 'z')) base = "j" + base;  // a Service's name begins with a letter
  if (base.size() > max - tail.size() - 1) base.resize(max - tail.size() - 1);
  return base.empty() ? "job-" + tail : base + "-" + tail;
}

Result<void> prepare_submission(Submission& sub, const QueueSpec& queue, ResourceId pods) {
  const QueueKubernetes& k = queue.kubernetes;
  const std::string& q = queue.name.value;
  if (k.ns.empty())
    return Error{"spec.queue: queue \"" + q + "\" takes no jobs from the command line on Kubernetes: it has no "
                 "kubernetes.namespace (an admin sets it, with the pod template: README, \"Jobs from the command "
                 "line on Kubernetes\"); or create pods with spec.schedulerName: gpuq and the label gpuq.io/queue: " + q,
                 ErrorCode::kFailedPrecondition};
  RunSpec& run = sub.run;
  if (run.image.empty()) run.image = k.default_image;
  if (run.image.empty())
    return Error{"spec.image: no image given, and queue \"" + q + "\" has no kubernetes.defaultImage; name one with "
                 "--image (or #GPUQ --image, or image: in a job file)",
                 ErrorCode::kInvalidArgument};
  if (!k.allowed_images.empty() &&
      std::none_of(k.allowed_images.begin(), k.allowed_images.end(),
                   [&](const std::string& p) { return run.image.starts_with(p); })) {
    std::string list;
    for (const std::string& p : k.allowed_images) list += (list.empty() ? "\"" : ", \"") + p + "\"";
    return Error{"spec.image: \"" + run.image + "\" is not allowed in queue \"" + q + "\": an image must start with " +
                     (k.allowed_images.size() == 1 ? "" : "one of ") + list,
                 ErrorCode::kInvalidArgument};
  }
  for (const PodSet& s : sub.job.pod_sets) {
    const Quantity g = s.per_pod[kGpu];
    if (g > kMilliPerGpu && g % kMilliPerGpu != 0)
      return Error{"spec.podSets[" + s.name + "].gpu: " + std::to_string(g) + " milli-GPU: a pod asks whole GPUs or a "
                   "share of one (less than 1000m), not whole GPUs and a share",
                   ErrorCode::kInvalidArgument};
  }
  // The template's node selector, affinity and tolerations hold for every pod: the engine
  // places by them.
  json::value tmpl = json_of(k.pod_template);
  if (json::object* spec = tmpl.get_object().if_contains("spec") ? tmpl.get_object()["spec"].if_object() : nullptr) {
    NodeConstraints where;
    try {
      spec::Path at("kubernetes.podTemplate.spec");
      where = constraints_at(*spec, at);
    } catch (const spec::SpecError& e) {
      return Error{"queue \"" + q + "\": " + e.what(), ErrorCode::kFailedPrecondition};
    }
    for (PodSet& s : sub.job.pod_sets) {
      if (where.empty()) break;
      NodeConstraints& w = s.where.mut();
      for (const auto& [key, value] : where.node_selector) w.node_selector[key] = value;
      if (!where.affinity.empty()) {
        if (w.affinity.empty()) {
          w.affinity = where.affinity;
        } else {  // both must hold: each of the job's terms ANDed with each of the template's
          std::vector<std::vector<NodeRequirement>> terms;
          for (const auto& a : w.affinity)
            for (const auto& b : where.affinity) {
              terms.push_back(a);
              terms.back().insert(terms.back().end(), b.begin(), b.end());
            }
          w.affinity = std::move(terms);
        }
      }
      w.tolerations.insert(w.tolerations.end(), where.tolerations.begin(), where.tolerations.end());
    }
  }
  if (pods != 0)
    for (PodSet& s : sub.job.pod_sets) s.per_pod[pods] = 1;
  return Ok();
}

Result<PodsToMake> make_pods(const PodInput& in) {
  const storage::JobRecord& job = *in.job;
  const QueueKubernetes& k = *in.queue;
  const std::string& id = job.spec.id.value;
  PodsToMake out;
  out.ns = k.ns;
  const std::string base = name_of_job(id, 40);
  const std::size_t count = in.placement.size();
  const bool gang = count > 1;
  if (gang) out.service = base + "-" + in.run;
  out.tty = job.run.tty;
  out.tty_size = job.run.tty_size;
  const json::value tmpl = json_of(k.pod_template);
  for (std::size_t rank = 0; rank < count; ++rank) {
    const PodPlacement& where = in.placement[rank];
    if (where.pod_set >= job.spec.pod_sets.size()) return Error{"job " + id + ": a placement names no pod set", ErrorCode::kFailedPrecondition};
    const PodSet& set = job.spec.pod_sets[where.pod_set];
    const std::string name = base + "-" + in.run + "-" + std::to_string(rank);
    json::object pod = tmpl.as_object();
    (void)object_in(pod, "metadata");  // made before either is held (see resources below)
    (void)object_in(pod, "spec");
    json::object& meta = pod["metadata"].get_object();
    meta.erase("name");
    meta.erase("generateName");
    meta["name"] = name;
    meta["namespace"] = k.ns;
    {
      json::object& labels = object_in(meta, "labels");
      labels[kJobLabel] = label_value_of(id);
      labels[kRunLabel] = base + "-" + in.run;
      labels[kRankLabel] = std::to_string(rank);
      labels["gpuq.io/queue"] = job.spec.queue.value;
    }
    {
      json::object& notes = object_in(meta, "annotations");
      notes[kJobIdAnnotation] = id;
      notes[kOwnerAnnotation] = job.spec.owner;
    }
    json::object& spec = pod["spec"].get_object();
    spec["nodeName"] = where.node;
    spec["schedulerName"] = in.scheduler_name;
    spec["restartPolicy"] = "Never";
    spec["terminationGracePeriodSeconds"] = job.spec.grace_period;
    if (gang) {
      spec["hostname"] = name;
      spec["subdomain"] = out.service;
    }
    // The job's container: the template's first (its mounts, limits, security context), with
    // the submitter's image, command, environment, working directory and requests.
    json::value& cs = spec["containers"];
    if (!cs.is_array() || cs.get_array().empty()) cs = json::array{json::object{}};
    json::array& containers = cs.get_array();
    containers.resize(1);
    if (!containers[0].is_object()) containers[0] = json::object{};
    json::object& c = containers[0].get_object();
    if (!c.contains("name")) c["name"] = "main";
    c["image"] = job.run.image;
    c.erase("args");
    if (!job.run.command.empty()) {
      json::array cmd;
      for (const std::string& a : job.run.command) cmd.emplace_back(a);
      c["command"] = std::move(cmd);
    } else {
      c.erase("command");  // the image's entrypoint
    }
    if (!job.run.working_dir.empty() && !job.run.working_dir_implicit) c["workingDir"] = job.run.working_dir;
    // gpuq run: a terminal whose input comes through pods/attach (Binder::write_input).
    c.erase("stdinOnce");
    if (job.run.tty) {
      c["stdin"] = true;
      c["tty"] = true;
    } else {
      c.erase("stdin");
      c.erase("tty");
    }
    json::value& envv = c["env"];
    if (!envv.is_array()) envv = json::array{};
    json::array& env = envv.get_array();
    // What gpuq tells every pod (as the local executor does), then the submitter's.
    std::vector<std::pair<std::string, std::string>> vars{
        {"GPUQ_JOB_ID", id},
        {"GPUQ_QUEUE", job.spec.queue.value},
        {"GPUQ_POD_INDEX", std::to_string(rank)},
        {"GPUQ_POD_COUNT", std::to_string(count)},
        {"GPUQ_NODE", where.node}};
    if (!job.spec.array_id.empty()) {
      vars.emplace_back("GPUQ_ARRAY_ID", job.spec.array_id);
      vars.emplace_back("GPUQ_ARRAY_INDEX", std::to_string(job.spec.array_index));
    }
    if (gang) {  // what torchrun, mpirun and friends read
      const std::string first = base + "-" + in.run + "-0." + out.service;
      vars.emplace_back("RANK", std::to_string(rank));
      vars.emplace_back("WORLD_SIZE", std::to_string(count));
      vars.emplace_back("MASTER_ADDR", first);
      vars.emplace_back("MASTER_PORT", std::to_string(kMasterPort));
      vars.emplace_back("GPUQ_SERVICE", out.service);
    }
    for (const auto& [key, value] : vars) env.push_back(json::object{{"name", key}, {"value", value}});
    for (const auto& [key, value] : job.run.env)
      if (!key.starts_with("GPUQ_")) env.push_back(json::object{{"name", key}, {"value", value}});
    const bool shared = set.per_pod[kGpu] > 0 && set.per_pod[kGpu] < kMilliPerGpu && where.gpus.size() == 1;
    if (shared) {  // its GPU from the reservation pod's, written on the pod when it is made
      json::object& notes = meta_of(pod);
      notes[kGpuMilliAnnotation] = std::to_string(set.per_pod[kGpu]);
      notes[kShareSlotAnnotation] = std::to_string(where.gpus.front());
      env.push_back(json::object{
          {"name", "NVIDIA_VISIBLE_DEVICES"},
          {"valueFrom", {{"fieldRef", {{"fieldPath", std::string("metadata.annotations['") + kShareDeviceAnnotation + "']"}}}}}});
    }
    json::object& res = object_in(c, "resources");
    (void)object_in(res, "requests");  // both made before either is held: an insertion moves a map's values
    (void)object_in(res, "limits");
    json::object& req = res["requests"].get_object();
    json::object& lim = res["limits"].get_object();
    if (const Quantity cpu = set.per_pod[kCpu]; cpu > 0) req["cpu"] = milli_cpu(cpu);
    if (const Quantity mem = set.per_pod[kMemory]; mem > 0) req["memory"] = std::to_string(mem);
    if (const Quantity gpu = set.per_pod[kGpu]; gpu > 0 && !shared) {
      req[kGpuResource] = std::to_string(gpu / kMilliPerGpu);
      lim[kGpuResource] = std::to_string(gpu / kMilliPerGpu);
    } else {
      req.erase(kGpuResource);
      lim.erase(kGpuResource);
    }
    const bool no_limits = lim.empty(), no_requests = req.empty();  // erase moves the map's values
    if (no_limits) res.erase("limits");
    if (no_requests) res.erase("requests");
    if (res.empty()) c.erase("resources");
    pod["apiVersion"] = "v1";
    pod["kind"] = "Pod";
    out.names.push_back(name);
    out.pods.push_back(std::move(pod));
    out.where.push_back(where);
    out.slot.push_back(shared ? where.gpus.front() : -1);
  }
  if (gang)
    out.service_object = json::object{
        {"apiVersion", "v1"},
        {"kind", "Service"},
        {"metadata", {{"name", out.service},
                      {"namespace", k.ns},
                      {"labels", {{kJobLabel, label_value_of(id)}, {kRunLabel, base + "-" + in.run}}},
                      {"annotations", {{kJobIdAnnotation, id}}}}},
        {"spec", {{"clusterIP", "None"},
                  {"publishNotReadyAddresses", true},
                  {"selector", {{kRunLabel, base + "-" + in.run}}}}}};
  return out;
}

}  // namespace gpuq::binder::k8s
