#include "cli/requests.hpp"

#include "spec/duration.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <system_error>

#include "api/to_proto.hpp"
#include "spec/job_array.hpp"
#include "spec/constraints.hpp"
#include "spec/enums.hpp"
#include "spec/kueue.hpp"
#include "spec/quantity.hpp"
#include "spec/yaml_read.hpp"

namespace gpuq::cli {

namespace {

Quantity flag_quantity(const std::string& text, const char* flag, ResourceId r) {
  auto q = parse_quantity(text, scale_of(r));
  if (!q) throw UsageError(std::string(flag) + " \"" + text + "\": " + q.error());
  if (*q < 0) throw UsageError(std::string(flag) + " \"" + text + "\" must be >= 0");
  return *q;
}

std::optional<std::int64_t> to_int(const std::string& s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The current directory; UsageError when it cannot be had (e.g. it was removed).
std::filesystem::path current_dir(const std::string& what) {
  std::error_code ec;
  std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec)
    throw UsageError("cannot get the current directory for " + what + ": " + ec.message() +
                     "; give an absolute --workdir");
  return cwd;
}

// --node-selector, --toleration and --gpu-model into the job's one pod set; the server checks
// the names.
NodeConstraints constraints_from_flags(const SubmitFlags& f) {
  NodeConstraints c;
  for (const std::string& kv : f.node_selector) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--node-selector \"" + kv + "\": expected KEY=VALUE (a node label)");
    c.node_selector[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const std::string& text : f.tolerations) {
    Toleration t;
    std::string rest = text;
    if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
      const std::string effect = rest.substr(colon + 1);
      t.effect = spec::enum_from<TaintEffect>(effect);
      if (!t.effect)
        throw UsageError("--toleration \"" + text + "\": effect \"" + effect +
                         "\" is not NoSchedule, PreferNoSchedule or NoExecute");
      rest.resize(colon);
    }
    const auto eq = rest.find('=');
    t.key = rest.substr(0, eq);
    t.exists = eq == std::string::npos;
    if (!t.exists) t.value = rest.substr(eq + 1);
    if (t.key.empty())
      throw UsageError("--toleration \"" + text +
                       "\": expected KEY=VALUE:EFFECT, KEY=VALUE, KEY:EFFECT or KEY");
    c.tolerations.push_back(std::move(t));
  }
  for (const std::string& m : f.gpu_models)
    if (m.empty()) throw UsageError("--gpu-model \"\": name a GPU model (the node label gpuq.io/gpu-model)");
  spec::require_gpu_models(c, f.gpu_models);
  return c;
}

}  // namespace

v1::SubmitJobRequest submit_request_from_flags(const SubmitFlags& f) {
  if (f.queue.empty()) throw UsageError("--queue is required (or give a job file with -f)");
  if (f.replicas < 1)
    throw UsageError("--replicas " + std::to_string(f.replicas) + " must be >= 1");
  JobSpec spec;
  spec.id = JobId(f.id);
  spec.queue = QueueName(f.queue);
  spec.name = f.name;
  spec.owner = f.owner;
  PodSet pods;
  pods.name = "main";
  pods.count = f.replicas;
  if (!f.gpus.empty()) {
    pods.per_pod[kGpu] = flag_quantity(f.gpus, "--gpus", kGpu);
    if (!is_valid_gpu_request(pods.per_pod[kGpu]))
      throw UsageError("--gpus \"" + f.gpus +
                       "\": a pod takes a share of one GPU (below 1) or whole GPUs");
  }
  if (!f.cpu.empty()) pods.per_pod[kCpu] = flag_quantity(f.cpu, "--cpu", kCpu);
  if (!f.memory.empty()) pods.per_pod[kMemory] = flag_quantity(f.memory, "--memory", kMemory);
  if (!f.gpus.empty() && pods.per_pod[kGpu] == 0 && pods.per_pod[kCpu] == 0 && pods.per_pod[kMemory] == 0)
    throw UsageError("--gpus \"" + f.gpus +
                     "\" asks for no GPU, and nothing else is asked: give --gpus above 0 (2, or 500m "
                     "for half of one), or --cpu or --memory for a job without GPUs");
  pods.where = constraints_from_flags(f);
  spec.pod_sets.push_back(pods);
  spec.flavors = f.flavors;
  if (f.max_runtime < 0) throw UsageError("--max-runtime must be >= 0 seconds");
  if (f.max_runtime > 0) spec.max_runtime = f.max_runtime;
  if (f.expected_runtime < 0) throw UsageError("--expected-runtime must be >= 0 seconds");
  if (f.expected_runtime > 0) spec.expected_runtime = f.expected_runtime;
  spec.preemptible = f.preemptible.value_or(true);
  if (f.grace_period && *f.grace_period < 0) throw UsageError("--grace-period must be >= 0");
  spec.grace_period = f.grace_period.value_or(30);
  spec.exclusive = f.exclusive;

  v1::SubmitJobRequest req;
  *req.mutable_spec() = api::to_proto(spec, ResourceNames{});
  v1::JobSpec& out = *req.mutable_spec();
  out.set_priority(f.priority);  // as typed: the server resolves class names
  if (!f.notify_on.empty() && f.notify.empty()) throw UsageError("--notify-on needs --notify URL");
  if (!f.notify.empty()) {
    out.mutable_notify()->set_url(f.notify);
    for (const std::string& e : f.notify_on) out.mutable_notify()->add_on(e);
  }
  if (f.retries < 0) throw UsageError("--retries must be >= 0");
  out.set_retries(f.retries);
  out.set_singleton(f.singleton);
  if (!f.array.empty()) {
    if (auto r = spec::parse_array(f.array); !r) throw UsageError("--array " + r.error());
    out.set_array(f.array);
  }
  auto add_after = [&](const std::vector<std::string>& ids, const char* kind) {
    for (const std::string& list : ids)
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        if (comma > at) {
          auto* d = out.add_after();
          d->set_kind(kind);
          d->set_job(list.substr(at, comma - at));
        }
        at = comma + 1;
      }
  };
  add_after(f.after_ok, "ok");
  add_after(f.after_any, "any");
  add_after(f.after_not_ok, "not_ok");
  if (!f.preemptible) out.clear_preemptible();
  if (!f.grace_period) out.clear_grace_period_seconds();
  for (const std::string& kv : f.env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--env \"" + kv + "\": expected NAME=VALUE");
    (*out.mutable_env())[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (f.workdir.empty()) {
    if (!f.command.empty()) {
      out.set_working_dir(current_dir("the working directory").string());
      out.set_working_dir_implicit(true);
    }
  } else if (std::filesystem::path(f.workdir).is_relative()) {
    out.set_working_dir((current_dir("--workdir \"" + f.workdir + "\"") / f.workdir).string());
  } else {
    out.set_working_dir(f.workdir);
  }
  for (const std::string& c : f.command) out.add_command(c);
  out.set_image(f.image);
  return req;
}

v1::LogsRequest logs_request(const std::string& id, std::int32_t pod, bool follow) {
  if (pod < 0) throw UsageError("--pod " + std::to_string(pod) + " must be >= 0");
  v1::LogsRequest req;
  req.set_id(id);
  req.set_pod(pod);
  req.set_follow(follow);
  return req;
}

v1::SubmitJobRequest submit_request_from_yaml(const std::string& text, const std::string& file,
                                              const std::string& default_owner) {
  const spec::yaml::Document doc = spec::parse_document(text, file);
  return spec::read_document(doc, file, [&] {
    const spec::yaml::Node root = doc.root();
    if (!root.is_map())
      throw spec::SpecError("expected a map with a job's keys (queue, pods, ...), got " +
                            root.shown());
    spec::Path at;
    ResourceNames names;
    spec::JobKeys keys;
    keys.id_required = false;
    keys.run = true;  // the priority stays text: the server knows the classes
    Submission sub = spec::read_job(root, at, names, keys);
    if (sub.job.owner.empty()) sub.job.owner = default_owner;
    v1::SubmitJobRequest req;
    v1::JobSpec& out = *req.mutable_spec();
    out = api::to_proto(sub.job, names);
    out.set_priority(sub.priority);
    if (!root.find("preemptible")) out.clear_preemptible();
    if (!root.find("gracePeriod")) out.clear_grace_period_seconds();
    for (const std::string& c : sub.run.command) out.add_command(c);
    for (const auto& [k, v] : sub.run.env) (*out.mutable_env())[k] = v;
    out.set_working_dir(sub.run.working_dir);
    out.set_image(sub.run.image);
    if (!sub.notify.empty()) {
      out.mutable_notify()->set_url(sub.notify.url);
      for (const std::string& e : sub.notify.on) out.mutable_notify()->add_on(e);
    }
    return req;
  });
}

namespace {

constexpr std::string_view kKind[] = {"kind"};

void add_queue(spec::yaml::Node n, spec::Path& at, std::vector<ApplyItem>& out) {
  // usageHistory is a scenario's snapshot of the past, not part of a queue's spec.
  if (spec::yaml::Node h = n.find("usageHistory")) {
    spec::Path::Key k(at, "usageHistory");
    spec::fail_at(h, at, "is only for scenario files; remove it");
  }
  ResourceNames names;
  QueueSpec q = spec::read_queue(n, at, names, n.find("kind") ? spec::Keys(kKind) : spec::Keys());
  out.push_back({api::to_proto(q, names), std::nullopt});
}

void add_node(spec::yaml::Node n, spec::Path& at, std::vector<ApplyItem>& out) {
  ResourceNames names;
  NodeSpec s = spec::read_node(n, at, names, n.find("kind") ? spec::Keys(kKind) : spec::Keys());
  out.push_back({std::nullopt, api::to_proto(s, names)});
}

// One document: `kind: Queue` or `kind: Node` beside the object's keys, or queues:/nodes: lists.
void add_document(spec::yaml::Node root, std::vector<ApplyItem>& items) {
  spec::Path at;
  if (!root.is_map())
    throw spec::SpecError("expected a map with queues:, nodes: or kind:, got " + root.shown(),
                          root.mark());
  if (root.find("apiVersion")) {  // a Queue object, as kubectl applies it (gpuq.io/v1alpha1)
    ResourceNames names;
    items.push_back({api::to_proto(spec::read_queue_object(root, at, names), names), std::nullopt});
    return;
  }
  if (spec::yaml::Node kind = root.find("kind")) {
    std::string what;
    {
      spec::Path::Key k(at, "kind");
      what = spec::string_of(kind, at);
      if (what != "Queue" && what != "Node")
        spec::fail_at(kind, at, spec::quoted(what) + " is not allowed; use Queue or Node");
    }
    if (what == "Queue")
      add_queue(root, at, items);
    else
      add_node(root, at, items);
    return;
  }
  if (!root.find("queues") && !root.find("nodes"))
    throw spec::SpecError("expected queues:, nodes: or kind: at the top of the document",
                          root.mark());
  spec::for_each_key(root, at, {"queues", "nodes"},
                     [&](std::string_view key, spec::yaml::Node list) {
                       spec::expect_list(list, at);
                       for (std::size_t i = 0; i < list.size(); ++i) {
                         spec::Path::Index li(at, i);
                         if (key == "queues")
                           add_queue(list.item(i), at, items);
                         else
                           add_node(list.item(i), at, items);
                       }
                     });
}

}  // namespace

namespace {

// A file of Kubernetes objects (apiVersion beside kind): Kueue's, read by spec/kueue.hpp.
std::vector<ApplyItem> kueue_items(const std::vector<spec::yaml::Document>& docs, const std::string& file,
                                   std::vector<std::string>* warnings) {
  for (const spec::yaml::Document& doc : docs) {
    const spec::yaml::Node root = doc.root();
    if (!root.is_null() && !root.find("apiVersion"))
      throw spec::SpecError("a gpuq document (queues:, nodes: or kind: Queue|Node) in a file of "
                            "Kubernetes objects (apiVersion:); apply the two from separate files",
                            root.mark())
          .from_source(file);
  }
  spec::KueueImport k = spec::read_kueue(docs, file);
  if (warnings != nullptr) *warnings = std::move(k.warnings);
  std::vector<ApplyItem> items;
  for (const QueueSpec& q : k.queues) items.push_back({api::to_proto(q, k.names), std::nullopt});
  return items;
}

}  // namespace

std::vector<ApplyItem> parse_apply_file(const std::string& text, const std::string& file,
                                        std::vector<std::string>* warnings) {
  std::vector<spec::yaml::Document> docs;
  try {
    docs = spec::yaml::parse_stream(text);
  } catch (spec::SpecError& e) {
    e.from_source(file);
    throw;
  }
  // Kubernetes objects other than gpuq's own Queue objects: Kueue's.
  const auto gpuq_object = [](spec::yaml::Node root) {
    const spec::yaml::Node v = root.find("apiVersion");
    return v && v.is_scalar() && v.text().starts_with("gpuq.io/");
  };
  for (const spec::yaml::Document& doc : docs)
    if (doc.root().is_map() && doc.root().find("apiVersion") && !gpuq_object(doc.root()))
      return kueue_items(docs, file, warnings);
  std::vector<ApplyItem> items;
  std::size_t with_content = 0;
  for (const spec::yaml::Document& doc : docs) {
    if (doc.root().is_null()) continue;  // an empty or comment-only document
    ++with_content;
    spec::read_document(doc, file, [&] { add_document(doc.root(), items); });
  }
  if (with_content == 0)
    throw spec::SpecError("has no documents; expected queues: or nodes:").from_source(file);
  return items;
}

std::int64_t parse_time_arg(const std::string& text, std::int64_t now) {
  if (text.empty()) return 0;
  if (auto v = to_int(text); v && *v >= 0) return *v;
  // Back from now: -7d, or 7d (the sign is optional: a time is never ahead of now this way);
  // any duration with a unit (spec/duration.hpp: 1h30m, 1-12:00:00), and weeks (2w).
  const std::string back = text.substr(text[0] == '-' ? 1 : 0);
  std::optional<std::int64_t> ago;
  if (back.size() >= 2 && back.back() == 'w') {
    if (auto n = to_int(back.substr(0, back.size() - 1)); n && *n >= 0 && *n <= 100 * 52) ago = *n * 7 * 86400;
  } else if (!to_int(back)) {  // a bare number is Unix seconds (above), never "ago"
    ago = spec::duration_seconds(back);
  }
  if (ago && *ago <= 100LL * 365 * 86400) return now - *ago;
  // A date, or a date and time (ISO 8601): YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS][Z|+HH:MM|-HH:MM];
  // UTC unless an offset says otherwise.
  if (text.size() >= 10 && text[4] == '-' && text[7] == '-' && (text.size() == 10 || text[10] == 'T')) {
    auto y = to_int(text.substr(0, 4));
    auto m = to_int(text.substr(5, 2));
    auto d = to_int(text.substr(8, 2));
    std::int64_t hh = 0, mm = 0, ss = 0, offset = 0;
    bool ok = true;
    if (text.size() > 10) {
      std::string rest = text.substr(11);
      if (!rest.empty() && rest.back() == 'Z') {
        rest.pop_back();
      } else if (rest.size() > 6 && (rest[rest.size() - 6] == '+' || rest[rest.size() - 6] == '-') &&
                 rest[rest.size() - 3] == ':') {
        const auto oh = to_int(rest.substr(rest.size() - 5, 2)), om = to_int(rest.substr(rest.size() - 2));
        ok = oh && om && *oh <= 23 && *om <= 59;
        if (ok) offset = (rest[rest.size() - 6] == '+' ? 1 : -1) * (*oh * 3600 + *om * 60);
        rest.resize(rest.size() - 6);
      }
      // HH:MM or HH:MM:SS, each field two digits.
      ok = ok && (rest.size() == 5 || (rest.size() == 8 && rest[5] == ':')) && rest[2] == ':';
      hh = ok ? to_int(rest.substr(0, 2)).value_or(-1) : -1;
      mm = ok ? to_int(rest.substr(3, 2)).value_or(-1) : -1;
      ss = ok && rest.size() == 8 ? to_int(rest.substr(6, 2)).value_or(-1) : 0;
      ok = ok && hh >= 0 && hh <= 23 && mm >= 0 && mm <= 59 && ss >= 0 && ss <= 59;
    }
    if (ok && y && m && d && *y >= 1970 && *m >= 1 && *m <= 12 && *d >= 1 && *d <= 31) {
      std::tm tm{};
      tm.tm_year = static_cast<int>(*y - 1900);
      tm.tm_mon = static_cast<int>(*m - 1);
      tm.tm_mday = static_cast<int>(*d);
      const std::int64_t t = timegm(&tm);
      // timegm normalizes 2024-02-31 to March; refuse dates that do not exist.
      if (tm.tm_mday == *d && tm.tm_mon == *m - 1) return t + hh * 3600 + mm * 60 + ss - offset;
    }
  }
  throw UsageError("time \"" + text +
                   "\": expected Unix seconds, a time back from now such as 7d, 24h, 30m, 1h30m, 2w "
                   "(or -7d), or a date YYYY-MM-DD or date and time YYYY-MM-DDTHH:MM[:SS][Z|+HH:MM] (UTC "
                   "unless it says otherwise)");
}

std::string resolve_server(const std::string& flag, const char* env) {
  if (!flag.empty()) return flag;
  if (env != nullptr && *env != '\0') return env;
  // gpuqd's Unix socket where it is by default (docs/tasks/tenants-and-security.md): run.sh's ./var, then a
  // system gpuqd's; TCP only when there is none (anonymous there: queue summaries only).
  for (const char* path : kDefaultSockets) {
    std::error_code ec;
    if (std::filesystem::is_socket(path, ec)) return "unix:" + std::filesystem::absolute(path, ec).string();
  }
  return kDefaultServer;
}

// The account this process runs as (as gpuqd's socket will see it), not $USER, which sudo and
// setpriv may leave as it was.
std::string current_user() {
  if (const passwd* pw = getpwuid(getuid()); pw != nullptr && pw->pw_name != nullptr)
    return pw->pw_name;
  return "";  // gpuqd names the caller itself ("uid:N"), and says what that account may do
}

}  // namespace gpuq::cli
