// The cold part of a job row (column jobs.body): pod sets, accepted flavors, options, run spec
// and placement, in a compact length-prefixed text form. load() decodes one of these per
// unfinished job at start-up, so it is read front to back with no parse tree (JSON was 4x slower
// for a million rows). Format "j1;" (no pod set has node constraints) or "j2;" then, in this order:
//   integer  = decimal digits (optional '-') and ';'        e.g. "-12;"
//   string   = byte length, ':', the bytes (any bytes)       e.g. "4:main"
//   pod sets : count; per set: name, pods; resource count; per resource: name, quantity;
//   flavors  : count; names
//   max_runtime: 0; | 1;seconds;     preemptible; grace_period; exclusive; on_node_loss (name)
//   command  : count; strings        env: count; key, value pairs     working_dir: string
//   placement: count; per pod: pod_set; node; gpu count; gpu indices; gpu_milli;
//   j2 only, per pod set, its node constraints:
//     nodeSelector: count; key, value pairs
//     affinity: term count; per term: requirement count; per requirement: key, operator (name),
//               value count, values
//     tolerations: count; per toleration: key, exists (0|1), value, effect (name, or "" for all)
// A body without constraints is still written "j1;", so older builds read it.
// Format "j3;" is "j2;" (constraints written, maybe none) followed by the extras, written only
// when a job has one, so that older builds refuse such a row ("unknown format") instead of
// misreading it: count; per extra: name, value (strings). Known: expected_runtime (seconds, in
// decimal), notify_url, notify_on (events, comma-separated), held ("1": pending and held),
// retries and retried (decimal), array (id), array_index and array_throttle (decimal), singleton
// ("1"), after (dependencies, comma-separated, each ok|any|notok ':' job id), tty ("1", or the
// terminal's size ROWSxCOLS), image (the container image, binder kubernetes), workdir_implicit
// ("1": working_dir is only where the submitter was, not asked for), cpu_usec and memory_peak
// (decimal: ProcessUse).
// Resources by name (never ResourceId), enums by name: see codec.hpp.
#include <algorithm>
#include <charconv>
#include <string>

#include "spec/enums.hpp"
#include "storage/codec.hpp"
#include "storage/job_rows.hpp"

namespace gpuq::storage {
namespace {

constexpr std::string_view kTag = "j1;";
constexpr std::string_view kTagWithConstraints = "j2;";
constexpr std::string_view kTagWithExtras = "j3;";

struct BadBody {
  const char* why;
};

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void num(std::int64_t v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    out_.append(buf, end);
    out_.push_back(';');
  }
  void str(std::string_view s) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), s.size());
    out_.append(buf, end);
    out_.push_back(':');
    out_.append(s);
  }

 private:
  std::string& out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::int64_t num() {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(in_.data() + pos_, in_.data() + in_.size(), v);
    if (ec != std::errc() || end == in_.data() + in_.size() || *end != ';')
      throw BadBody{"bad number"};
    pos_ = static_cast<std::size_t>(end - in_.data()) + 1;
    return v;
  }
  std::size_t count() {
    const auto n = num();
    if (n < 0 || static_cast<std::size_t>(n) > in_.size()) throw BadBody{"bad count"};
    return static_cast<std::size_t>(n);
  }
  std::string_view str() {
    std::size_t n = 0;
    auto [end, ec] = std::from_chars(in_.data() + pos_, in_.data() + in_.size(), n);
    if (ec != std::errc() || end == in_.data() + in_.size() || *end != ':')
      throw BadBody{"bad string length"};
    const auto start = static_cast<std::size_t>(end - in_.data()) + 1;
    if (n > in_.size() - start) throw BadBody{"string runs past the end"};
    pos_ = start + n;
    return in_.substr(start, n);
  }
  bool at_end() const { return pos_ == in_.size(); }
  void skip(std::size_t n) { pos_ += n; }
  std::size_t offset() const { return pos_; }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

const char* node_loss_name(NodeLossPolicy p) {
  return p == NodeLossPolicy::kFail ? "Fail" : "Requeue";
}

void write_constraints(Writer& w, const NodeConstraints& c) {
  w.num(static_cast<std::int64_t>(c.node_selector.size()));
  for (const auto& [k, v] : c.node_selector) {
    w.str(k);
    w.str(v);
  }
  w.num(static_cast<std::int64_t>(c.affinity.size()));
  for (const auto& term : c.affinity) {
    w.num(static_cast<std::int64_t>(term.size()));
    for (const NodeRequirement& r : term) {
      w.str(r.key);
      w.str(to_string(r.op));
      w.num(static_cast<std::int64_t>(r.values.size()));
      for (const auto& v : r.values) w.str(v);
    }
  }
  w.num(static_cast<std::int64_t>(c.tolerations.size()));
  for (const Toleration& t : c.tolerations) {
    w.str(t.key);
    w.num(t.exists ? 1 : 0);
    w.str(t.value);
    w.str(t.effect ? to_string(*t.effect) : "");
  }
}

template <class E>
E enum_named(std::string_view name, const char* field) {
  if (auto e = spec::enum_from<E>(name)) return *e;
  throw BadBody{field};
}

void read_constraints(Reader& r, NodeConstraints& c) {
  for (std::size_t n = r.count(); n > 0; --n) {
    auto k = r.str();
    c.node_selector.emplace(std::string(k), std::string(r.str()));
  }
  c.affinity.resize(r.count());
  for (auto& term : c.affinity) {
    term.resize(r.count());
    for (NodeRequirement& req : term) {
      req.key = r.str();
      req.op = enum_named<LabelOperator>(r.str(), "unknown affinity operator");
      req.values.resize(r.count());
      for (auto& v : req.values) v = r.str();
    }
  }
  c.tolerations.resize(r.count());
  for (Toleration& t : c.tolerations) {
    t.key = r.str();
    t.exists = r.num() != 0;
    t.value = r.str();
    if (const auto effect = r.str(); !effect.empty())
      t.effect = enum_named<TaintEffect>(effect, "unknown toleration effect");
  }
}

}  // namespace

std::string encode_job_body(const JobRecord& j, const ResourceNames& names) {
  std::vector<std::pair<std::string_view, std::string>> extra;
  if (j.spec.expected_runtime) extra.emplace_back("expected_runtime", std::to_string(*j.spec.expected_runtime));
  if (!j.notify.url.empty()) extra.emplace_back("notify_url", j.notify.url);
  if (j.held) extra.emplace_back("held", "1");
  if (j.used.cpu_usec >= 0) extra.emplace_back("cpu_usec", std::to_string(j.used.cpu_usec));
  if (j.used.memory_peak >= 0) extra.emplace_back("memory_peak", std::to_string(j.used.memory_peak));
  if (j.spec.retries != 0) extra.emplace_back("retries", std::to_string(j.spec.retries));
  if (j.retried != 0) extra.emplace_back("retried", std::to_string(j.retried));
  if (!j.spec.array_id.empty()) {
    extra.emplace_back("array", j.spec.array_id);
    extra.emplace_back("array_index", std::to_string(j.spec.array_index));
    if (j.spec.array_throttle != 0) extra.emplace_back("array_throttle", std::to_string(j.spec.array_throttle));
  }
  if (j.spec.singleton) extra.emplace_back("singleton", "1");
  if (j.run.tty) extra.emplace_back("tty", j.run.tty_size.empty() ? "1" : j.run.tty_size);
  if (!j.run.image.empty()) extra.emplace_back("image", j.run.image);
  if (j.run.working_dir_implicit) extra.emplace_back("workdir_implicit", "1");
  if (!j.after.empty()) {
    std::string after;
    for (const Dependency& d : j.after)
      after += (after.empty() ? "" : ",") + std::string(d.kind == AfterKind::kOk ? "ok:" : d.kind == AfterKind::kAny ? "any:" : "notok:") + d.job;
    extra.emplace_back("after", std::move(after));
  }
  if (!j.notify.on.empty()) {
    std::string on;
    for (const std::string& e : j.notify.on) on += (on.empty() ? "" : ",") + e;
    extra.emplace_back("notify_on", std::move(on));
  }
  const bool extras = !extra.empty();
  const bool constrained = extras || std::any_of(j.spec.pod_sets.begin(), j.spec.pod_sets.end(),
                                                 [](const PodSet& p) { return !p.where->empty(); });
  std::string out(extras ? kTagWithExtras : constrained ? kTagWithConstraints : kTag);
  out.reserve(256);
  Writer w(out);
  w.num(static_cast<std::int64_t>(j.spec.pod_sets.size()));
  for (const auto& p : j.spec.pod_sets) {
    w.str(p.name);
    w.num(p.count);
    std::int64_t nonzero = 0;
    for (std::size_t r = 0; r < names.size(); ++r) nonzero += p.per_pod.v[r] != 0;
    w.num(nonzero);
    for (std::size_t r = 0; r < names.size(); ++r) {
      if (p.per_pod.v[r] == 0) continue;
      w.str(names.name(static_cast<ResourceId>(r)));
      w.num(p.per_pod.v[r]);
    }
  }
  w.num(static_cast<std::int64_t>(j.spec.flavors.size()));
  for (const auto& f : j.spec.flavors) w.str(f);
  w.num(j.spec.max_runtime ? 1 : 0);
  if (j.spec.max_runtime) w.num(*j.spec.max_runtime);
  w.num(j.spec.preemptible ? 1 : 0);
  w.num(j.spec.grace_period);
  w.num(j.spec.exclusive ? 1 : 0);
  w.str(node_loss_name(j.spec.on_node_loss));
  w.num(static_cast<std::int64_t>(j.run.command.size()));
  for (const auto& c : j.run.command) w.str(c);
  w.num(static_cast<std::int64_t>(j.run.env.size()));
  for (const auto& [k, v] : j.run.env) {
    w.str(k);
    w.str(v);
  }
  w.str(j.run.working_dir);
  w.num(static_cast<std::int64_t>(j.placement.size()));
  for (const auto& p : j.placement) {
    w.num(p.pod_set);
    w.str(p.node);
    w.num(static_cast<std::int64_t>(p.gpus.size()));
    for (int g : p.gpus) w.num(g);
    w.num(p.gpu_milli);
  }
  if (constrained)
    for (const auto& p : j.spec.pod_sets) write_constraints(w, p.where);
  if (extras) {
    w.num(static_cast<std::int64_t>(extra.size()));
    for (const auto& [name, value] : extra) {
      w.str(name);
      w.str(value);
    }
  }
  return out;
}

Result<void> decode_job_body(std::string_view text, JobRecord& j, ResourceInterner& names) {
  auto fail = [&](const std::string& why) -> Result<void> {
    return Error{"stored job " + j.spec.id.value + ": body: " + why,
                 ErrorCode::kFailedPrecondition};
  };
  const std::string_view tag = text.substr(0, kTag.size());
  const bool extras = tag == kTagWithExtras;
  const bool constrained = extras || tag == kTagWithConstraints;
  if (tag != kTag && !constrained) return fail("unknown format (no \"j1;\", \"j2;\" or \"j3;\" tag)");
  try {
    Reader r(text);
    r.skip(kTag.size());
    j.spec.pod_sets.resize(r.count());
    for (auto& p : j.spec.pod_sets) {
      p.name = r.str();
      p.count = static_cast<std::int32_t>(r.num());
      for (std::size_t n = r.count(); n > 0; --n) {
        const auto name = r.str();
        const auto id = names.intern(name);
        if (!id) return fail("resource \"" + std::string(name) + "\" does not fit: more than " +
                             std::to_string(kMaxResources) + " resource names");
        p.per_pod[*id] = r.num();
      }
    }
    j.spec.flavors.resize(r.count());
    for (auto& f : j.spec.flavors) f = r.str();
    if (r.num() != 0) j.spec.max_runtime = r.num();
    j.spec.preemptible = r.num() != 0;
    j.spec.grace_period = r.num();
    j.spec.exclusive = r.num() != 0;
    const auto loss = r.str();
    if (loss == "Fail") j.spec.on_node_loss = NodeLossPolicy::kFail;
    else if (loss == "Requeue") j.spec.on_node_loss = NodeLossPolicy::kRequeue;
    else return fail("on_node_loss \"" + std::string(loss) + "\" is not a known value");
    j.run.command.resize(r.count());
    for (auto& c : j.run.command) c = r.str();
    for (std::size_t n = r.count(); n > 0; --n) {
      auto k = r.str();
      j.run.env.emplace(std::string(k), std::string(r.str()));
    }
    j.run.working_dir = r.str();
    j.placement.resize(r.count());
    for (auto& p : j.placement) {
      p.pod_set = static_cast<std::uint32_t>(r.num());
      p.node = r.str();
      p.gpus.resize(r.count());
      for (auto& g : p.gpus) g = static_cast<int>(r.num());
      p.gpu_milli = r.num();
    }
    if (constrained)
      for (auto& p : j.spec.pod_sets) {
        NodeConstraints where;
        read_constraints(r, where);
        if (!where.empty()) p.where = std::move(where);  // none: nothing allocated (spec/rare.hpp)
      }
    if (extras)
      for (std::size_t n = r.count(); n > 0; --n) {
        const auto name = r.str();
        const auto value = r.str();
        if (name == "expected_runtime") {
          std::int64_t seconds = 0;
          const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
          if (ec != std::errc() || end != value.data() + value.size()) return fail("expected_runtime \"" + std::string(value) + "\" is not a number");
          j.spec.expected_runtime = seconds;
        } else if (name == "held") {
          j.held = value == "1";
        } else if (name == "cpu_usec" || name == "memory_peak") {
          std::int64_t v = 0;
          const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
          if (ec != std::errc() || end != value.data() + value.size() || v < 0)
            return fail(std::string(name) + " \"" + std::string(value) + "\" is not a number");
          (name == "cpu_usec" ? j.used.cpu_usec : j.used.memory_peak) = v;
        } else if (name == "singleton") {
          j.spec.singleton = value == "1";
        } else if (name == "tty") {
          j.run.tty = true;
          if (value != "1") j.run.tty_size = std::string(value);
        } else if (name == "image") {
          j.run.image = std::string(value);
        } else if (name == "workdir_implicit") {
          j.run.working_dir_implicit = value == "1";
        } else if (name == "array") {
          j.spec.array_id = std::string(value);
        } else if (name == "retries" || name == "retried" || name == "array_index" || name == "array_throttle") {
          std::int32_t n = 0;
          const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
          if (ec != std::errc() || end != value.data() + value.size()) return fail(std::string(name) + " \"" + std::string(value) + "\" is not a number");
          (name == "retries" ? j.spec.retries : name == "retried" ? j.retried : name == "array_index" ? j.spec.array_index : j.spec.array_throttle) = n;
        } else if (name == "after") {
          for (std::size_t at = 0; at < value.size();) {
            const std::size_t comma = std::min(value.find(',', at), value.size());
            const auto item = value.substr(at, comma - at);
            const auto colon = item.find(':');
            if (colon == std::string_view::npos) return fail("after \"" + std::string(item) + "\" has no kind");
            const auto kind = item.substr(0, colon);
            Dependency d;
            d.kind = kind == "ok" ? AfterKind::kOk : kind == "any" ? AfterKind::kAny : AfterKind::kNotOk;
            if (kind != "ok" && kind != "any" && kind != "notok") return fail("after kind \"" + std::string(kind) + "\" is not known");
            d.job = std::string(item.substr(colon + 1));
            j.after.push_back(std::move(d));
            at = comma + 1;
          }
        } else if (name == "notify_url") {
          j.notify.url = std::string(value);
        } else if (name == "notify_on") {
          for (std::size_t at = 0; at <= value.size();) {
            const std::size_t comma = std::min(value.find(',', at), value.size());
            j.notify.on.emplace_back(value.substr(at, comma - at));
            at = comma + 1;
          }
        }
        // An extra this build does not know is skipped: it only informs.
      }
    if (!r.at_end()) return fail("trailing bytes");
  } catch (const BadBody& e) {
    return fail(e.why);
  }
  return Ok();
}

std::string pack_job(const JobRecord& j, const ResourceNames& names) {
  std::string out;
  Writer w(out);
  for (std::int64_t v : {static_cast<std::int64_t>(j.number), std::int64_t{state_code(j.state)},
                         std::int64_t{j.spec.priority}, j.spec.submitted_at, j.admitted_at, j.finished_at,
                         std::int64_t{j.attempts}, std::int64_t{j.preemptions}, std::int64_t{j.exit_code},
                         j.gpu_use.samples, j.gpu_use.util_sum, j.gpu_use.memory_peak_mib})
    w.num(v);
  for (std::string_view t : {std::string_view(j.spec.id.value), std::string_view(j.spec.queue.value),
                             std::string_view(j.spec.owner), std::string_view(j.spec.name),
                             std::string_view(j.priority_text), std::string_view(j.flavor),
                             std::string_view(j.preempted_by), std::string_view(j.reason)})
    w.str(t);
  out += encode_job_body(j, names);
  return out;
}

Result<void> unpack_job(std::string_view packed, JobRecord& j, ResourceInterner& names) {
  RowView row;
  try {
    Reader r(packed);
    for (auto& v : row.ints) v = r.num();
    for (int c = 0; c + 1 < kJobTextColumns; ++c) row.texts[static_cast<std::size_t>(c)] = r.str();
    row.texts[kJobTextColumns - 1] = packed.substr(r.offset());
  } catch (const BadBody& e) {
    return Error{std::string("a packed job record: ") + e.why, ErrorCode::kFailedPrecondition};
  }
  return decode_job(row, j, names);
}

}  // namespace gpuq::storage
