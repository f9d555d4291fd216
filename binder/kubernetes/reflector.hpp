#pragma once
// List, then watch, one kind of object (pods, nodes, ...), as client-go's reflector does, and
// hand each change to the consumer exactly once: the list in pages, a watch from the list's
// resourceVersion with bookmarks (so a resumed watch starts from a recent version), resumed from
// the last version seen when the stream ends or drops, and a fresh list on 410 Gone. The
// reflector keeps the resourceVersion of every object it has delivered, so a relist delivers
// only what changed meanwhile (ADDED, MODIFIED, or DELETED for what is gone) and a repeated
// event (the same object at the same version) is never delivered twice.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/json/object.hpp>

#include "binder/kubernetes/client.hpp"

namespace gpuq::binder::k8s {

enum class EventType { kAdded, kModified, kDeleted };

struct WatchEvent {
  EventType type = EventType::kAdded;
  boost::json::object object;  // as the API sent it (for kDeleted: its last state)
};

struct ReflectorOptions {
  std::string path;            // "/api/v1/pods" or "/api/v1/namespaces/NS/pods"
  std::string label_selector;  // as in the API's query (unescaped)
  std::string field_selector;
  std::size_t page_size = 500;
  // Each watch asks the server to end it after about this long (as client-go, between 5 and
  // 10 minutes, so that load spreads), and gives it up when nothing, not even a bookmark, came
  // for `idle`.
  std::chrono::seconds watch_timeout{300};
  std::chrono::milliseconds idle{330'000};
  std::chrono::milliseconds retry{1000};  // first wait before listing again after a failure
};

class Reflector {
 public:
  // on_events gets each batch of changes (a page of a list, a watch event), in order, on the
  // thread running run(). on_synced is called after the first complete list (and after each
  // relist). on_error gets what went wrong before a retry (for logs).
  struct Handlers {
    std::function<void(std::vector<WatchEvent>&)> on_events;
    std::function<void()> on_synced;
    std::function<void(const std::string& why)> on_error;
  };
  Reflector(Client& client, ReflectorOptions options, Handlers handlers);

  // Lists and watches until stop(). Blocking.
  void run();
  // From any thread: ends run() (the open watch is closed).
  void stop();

  std::string resource_version() const;
  std::uint64_t lists() const { return lists_.load(); }

 private:
  enum class WatchEnd { kResume, kFailed, kRelist, kStopped };
  bool list();
  WatchEnd watch();
  // Applies one change to the known versions; returns false when it is a repeat.
  bool note(EventType type, const boost::json::object& obj);
  std::string query(bool watch, const std::string& cont) const;
  void backoff(int failures);

  Client& client_;
  ReflectorOptions options_;
  Handlers handlers_;
  std::unordered_map<std::string, std::string> known_;  // namespace/name -> resourceVersion
  std::string rv_;                                      // resume the watch from here
  mutable std::mutex rv_mu_;
  std::atomic<bool> stopped_{false};
  std::atomic<std::uint64_t> lists_{0};
};

// The key an object is known by: "namespace/name" (or "name" for cluster-scoped ones).
std::string object_key(const boost::json::object& obj);
// metadata.resourceVersion, or "".
std::string resource_version_of(const boost::json::object& obj);
// A query parameter's value, escaped for a URL.
std::string url_escape(std::string_view v);

}  // namespace gpuq::binder::k8s
