#include "binder/kubernetes/reflector.hpp"

#include <boost/json.hpp>

#include <random>
#include <thread>
#include <unordered_set>

namespace gpuq::binder::k8s {

namespace json = boost::json;

namespace {

std::string string_at(const json::object& o, std::initializer_list<const char*> path) {
  const json::object* cur = &o;
  const json::value* v = nullptr;
  for (const char* key : path) {
    if (cur == nullptr) return {};
    v = cur->if_contains(key);
    if (v == nullptr) return {};
    cur = v->if_object();
  }
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

}  // namespace

std::string object_key(const json::object& obj) {
  const std::string ns = string_at(obj, {"metadata", "namespace"});
  const std::string name = string_at(obj, {"metadata", "name"});
  return ns.empty() ? name : ns + "/" + name;
}

std::string resource_version_of(const json::object& obj) { return string_at(obj, {"metadata", "resourceVersion"}); }

std::string url_escape(std::string_view v) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : v) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

Reflector::Reflector(Client& client, ReflectorOptions options, Handlers handlers)
    : client_(client), options_(std::move(options)), handlers_(std::move(handlers)) {}

std::string Reflector::resource_version() const {
  std::lock_guard lock(rv_mu_);
  return rv_;
}

std::string Reflector::query(bool watch, const std::string& cont) const {
  std::string q;
  auto add = [&q](const char* key, const std::string& value) {
    q += q.empty() ? '?' : '&';
    q += key;
    q += '=';
    q += url_escape(value);
  };
  if (!options_.label_selector.empty()) add("labelSelector", options_.label_selector);
  if (!options_.field_selector.empty()) add("fieldSelector", options_.field_selector);
  if (watch) {
    add("watch", "true");
    add("allowWatchBookmarks", "true");
    add("resourceVersion", resource_version());
    // Between one and two times the configured length, so that watches do not all end at once.
    static thread_local std::mt19937 rng(std::random_device{}());
    const auto base = options_.watch_timeout.count();
    add("timeoutSeconds", std::to_string(base + std::uniform_int_distribution<long>(0, base)(rng)));
  } else {
    add("limit", std::to_string(options_.page_size));
    if (!cont.empty()) add("continue", cont);
  }
  return q;
}

bool Reflector::note(EventType type, const json::object& obj) {
  const std::string key = object_key(obj);
  if (type == EventType::kDeleted) return known_.erase(key) > 0;
  const std::string rv = resource_version_of(obj);
  auto [it, fresh] = known_.try_emplace(key, rv);
  if (fresh) return true;
  if (it->second == rv) return false;  // seen at this version already
  it->second = rv;
  return true;
}

bool Reflector::list() {
  std::string cont;
  std::string list_rv;
  std::unordered_set<std::string> listed;
  for (;;) {
    Response r = client_.get(options_.path + query(false, cont));
    if (r.status == 410 && !cont.empty()) {  // the snapshot we were paging through is gone
      cont.clear();
      list_rv.clear();
      listed.clear();
      continue;
    }
    if (!r.ok()) {
      if (handlers_.on_error) handlers_.on_error("list " + options_.path + ": " + describe(r));
      return false;
    }
    boost::system::error_code ec;
    // One arena per page: a page of 500 pods is thousands of small allocations, made and freed
    // together (with glibc's malloc, freeing them one by one was most of a large list's cost;
    // BENCHMARKS.md, "Kubernetes binder"). Declared before the page and its batch, so it
    // outlives both; handlers copy what they keep.
    json::monotonic_resource arena;
    json::value v = json::parse(r.body, ec, &arena);
    if (ec || !v.is_object() || !v.get_object().if_contains("items")) {
      if (handlers_.on_error) handlers_.on_error("list " + options_.path + ": not a list: " + r.body.substr(0, 200));
      return false;
    }
    json::object& page = v.get_object();
    if (list_rv.empty()) list_rv = string_at(page, {"metadata", "resourceVersion"});
    std::vector<WatchEvent> batch;
    if (json::array* items = page["items"].if_array()) {
      batch.reserve(items->size());
      for (json::value& item : *items) {
        if (!item.is_object()) continue;
        json::object& obj = item.get_object();
        const std::string key = object_key(obj);
        listed.insert(key);
        const bool known = known_.count(key) > 0;
        if (note(EventType::kAdded, obj))
          batch.push_back({known ? EventType::kModified : EventType::kAdded, std::move(obj)});
      }
    }
    if (!batch.empty() && handlers_.on_events) handlers_.on_events(batch);
    cont = string_at(page, {"metadata", "continue"});
    if (cont.empty()) break;
  }
  // What we knew and the list no longer has was deleted while we were not watching.
  std::vector<WatchEvent> gone;
  for (auto it = known_.begin(); it != known_.end();) {
    if (listed.count(it->first) > 0) {
      ++it;
      continue;
    }
    json::object meta;
    const auto slash = it->first.find('/');
    if (slash != std::string::npos) {
      meta["namespace"] = it->first.substr(0, slash);
      meta["name"] = it->first.substr(slash + 1);
    } else {
      meta["name"] = it->first;
    }
    meta["resourceVersion"] = it->second;
    gone.push_back({EventType::kDeleted, json::object{{"metadata", std::move(meta)}}});
    it = known_.erase(it);
  }
  if (!gone.empty() && handlers_.on_events) handlers_.on_events(gone);
  {
    std::lock_guard lock(rv_mu_);
    rv_ = list_rv;
  }
  ++lists_;
  if (handlers_.on_synced) handlers_.on_synced();
  return true;
}

Reflector::WatchEnd Reflector::watch() {
  bool relist = false;
  std::string error;
  const auto on_line = [&](std::string_view line) {
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) {
      error = "watch " + options_.path + ": not JSON: " + std::string(line.substr(0, 200));
      return false;
    }
    json::object& e = v.get_object();
    const std::string type = e.contains("type") && e["type"].is_string() ? std::string(e["type"].get_string()) : "";
    json::object* obj = e.contains("object") ? e["object"].if_object() : nullptr;
    if (obj == nullptr) return !stopped_;
    if (type == "ERROR") {
      const auto* code = obj->if_contains("code");
      if (code != nullptr && code->is_int64() && code->get_int64() == 410) relist = true;  // Gone: too old
      else error = "watch " + options_.path + ": " + string_at(*obj, {"message"});
      return false;
    }
    const std::string rv = resource_version_of(*obj);
    if (type != "BOOKMARK") {
      const EventType t = type == "DELETED" ? EventType::kDeleted
                          : known_.count(object_key(*obj)) > 0 ? EventType::kModified
                                                               : EventType::kAdded;
      if (note(t, *obj) && handlers_.on_events) {
        std::vector<WatchEvent> one;
        one.push_back({t, std::move(*obj)});
        handlers_.on_events(one);
      }
    }
    if (!rv.empty()) {
      std::lock_guard lock(rv_mu_);
      rv_ = rv;
    }
    return !stopped_.load();
  };
  Response r = client_.stream(options_.path + query(true, ""), on_line, options_.idle, &stopped_);
  if (stopped_) return WatchEnd::kStopped;
  if (relist || r.status == 410) return WatchEnd::kRelist;
  if (r.status != 200 && error.empty()) error = "watch " + options_.path + ": " + describe(r);
  if (!error.empty()) {  // resumed from the same version, after a wait
    if (handlers_.on_error) handlers_.on_error(error);
    return WatchEnd::kFailed;
  }
  if (!r.body.empty() && handlers_.on_error) handlers_.on_error(r.body);  // dropped: resume
  return WatchEnd::kResume;
}

void Reflector::backoff(int failures) {
  const auto wait = std::min<std::chrono::milliseconds>(options_.retry * (1 << std::min(failures, 5)),
                                                        std::chrono::milliseconds(30'000));
  const auto until = std::chrono::steady_clock::now() + wait;
  while (!stopped_ && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

void Reflector::run() {
  int failures = 0;
  while (!stopped_) {
    if (!list()) {
      backoff(failures++);
      continue;
    }
    failures = 0;
    for (;;) {
      const WatchEnd end = watch();
      if (end == WatchEnd::kStopped || stopped_) return;
      if (end == WatchEnd::kRelist) break;
      if (end == WatchEnd::kFailed) backoff(failures++);
      else failures = 0;
    }
  }
}

void Reflector::stop() {
  stopped_ = true;
  client_.stop_streams();
}

}  // namespace gpuq::binder::k8s
