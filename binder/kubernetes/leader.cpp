#include "binder/kubernetes/leader.hpp"

#include <unistd.h>

#include <ctime>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

namespace gpuq::binder::k8s {

namespace json = boost::json;

namespace {

// A MicroTime: "2026-11-25T16:54:55.123456Z".
std::string micro_time_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%06lldZ", static_cast<long long>(micros));
  return buf;
}

std::string field(const json::object& spec, const char* key) {
  const json::value* v = spec.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

}  // namespace

std::string default_identity() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + "_" + std::to_string(::getpid());
}

LeaderElector::LeaderElector(Client& client, LeaderConfig config, std::function<void(bool)> on_change)
    : client_(client), config_(std::move(config)), on_change_(std::move(on_change)) {
  if (config_.identity.empty()) config_.identity = default_identity();
  path_ = "/apis/coordination.k8s.io/v1/namespaces/" + config_.ns + "/leases";
}

bool LeaderElector::wait(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [&] { return stopped_; });
  return !stopped_;
}

void LeaderElector::set_note(std::string note) {
  std::lock_guard lock(mu_);
  note_ = std::move(note);
}

std::string LeaderElector::taken_note() const {
  std::lock_guard lock(mu_);
  return taken_note_;
}

void LeaderElector::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  cv_.notify_all();
}

LeaderElector::Outcome LeaderElector::try_acquire_or_renew() {
  const std::string now = micro_time_now();
  json::object spec{{"holderIdentity", config_.identity},
                    {"leaseDurationSeconds", std::max<std::int64_t>(1, config_.lease_duration.count() / 1000)},
                    {"acquireTime", now},
                    {"renewTime", now},
                    {"leaseTransitions", 0}};
  Response got = client_.get(path_ + "/" + config_.name);
  if (got.status == 404) {
    json::object lease{{"apiVersion", "coordination.k8s.io/v1"},
                       {"kind", "Lease"},
                       {"metadata", {{"name", config_.name}, {"namespace", config_.ns}}},
                       {"spec", spec}};
    Response made = client_.request("POST", path_, json::serialize(lease), "application/json", Retry::kUnsafe);
    return made.ok() ? Outcome::kHeld : Outcome::kFailed;
  }
  if (!got.ok()) return Outcome::kFailed;
  json::value v = json::parse(got.body);
  json::object& lease = v.as_object();
  json::object old = lease["spec"].is_object() ? lease["spec"].as_object() : json::object{};
  const std::string holder = field(old, "holderIdentity");
  const std::string renewed = field(old, "renewTime");
  const auto seen = std::chrono::steady_clock::now();
  if (holder != observed_holder_ || renewed != observed_renew_) {
    observed_holder_ = holder;
    observed_renew_ = renewed;
    observed_at_ = seen;
  }
  std::int64_t duration_s = config_.lease_duration.count() / 1000;
  if (const json::value* d = old.if_contains("leaseDurationSeconds"); d && d->is_int64()) duration_s = d->as_int64();
  const bool ours = holder == config_.identity;
  if (!ours && !holder.empty() && seen - observed_at_ < std::chrono::seconds(duration_s)) return Outcome::kNotOurs;
  std::int64_t transitions = 0;
  if (const json::value* t = old.if_contains("leaseTransitions"); t && t->is_int64()) transitions = t->as_int64();
  json::object& meta = lease["metadata"].is_object() ? lease["metadata"].as_object() : lease["metadata"].emplace_object();
  if (ours) {
    spec["acquireTime"] = old.contains("acquireTime") ? old["acquireTime"] : json::value(now);
    spec["leaseTransitions"] = transitions;
    std::lock_guard lock(mu_);
    if (!note_.empty()) {
      json::value& ann = meta["annotations"];
      if (!ann.is_object()) ann.emplace_object();
      ann.as_object()[kLeaseNoteAnnotation] = note_;
    }
  } else {
    spec["leaseTransitions"] = transitions + 1;
    // The last leader's note stays on the Lease until this one writes its own.
    const json::value* ann = meta.if_contains("annotations");
    const json::value* note = ann && ann->is_object() ? ann->as_object().if_contains(kLeaseNoteAnnotation) : nullptr;
    std::lock_guard lock(mu_);
    taken_note_ = note && note->is_string() ? std::string(note->get_string()) : std::string();
  }
  lease["spec"] = spec;  // metadata keeps the resourceVersion read: a concurrent update gets 409
  Response put = client_.request("PUT", path_ + "/" + config_.name, json::serialize(lease), "application/json",
                                 Retry::kUnsafe);
  if (put.ok()) return Outcome::kHeld;
  return put.status == 409 ? Outcome::kNotOurs : Outcome::kFailed;
}

void LeaderElector::run() {
  // Campaign.
  for (;;) {
    if (try_acquire_or_renew() == Outcome::kHeld) break;
    if (!wait(config_.retry_period)) return;
  }
  spdlog::info("event=leader_elected lease={}/{} identity={}", config_.ns, config_.name, config_.identity);
  on_change_(true);
  // Renew; a lead that could not be renewed for renew_deadline is given up at once.
  auto renewed = std::chrono::steady_clock::now();
  for (;;) {
    if (!wait(config_.retry_period)) return;
    if (try_acquire_or_renew() == Outcome::kHeld) {
      renewed = std::chrono::steady_clock::now();
      continue;
    }
    if (std::chrono::steady_clock::now() - renewed >= config_.renew_deadline) {
      spdlog::error("event=leader_lost lease={}/{} identity={}", config_.ns, config_.name, config_.identity);
      on_change_(false);
      return;
    }
  }
}

}  // namespace gpuq::binder::k8s
