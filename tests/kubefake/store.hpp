#pragma once
// The fake's etcd and watch cache: every object by resource and namespace/name, one global
// resourceVersion counter (etcd's revision), a bounded history of changes (older ones are
// compacted), consistent lists at an older resourceVersion (continue tokens), and watch queues
// fed under the same lock as the change, so a watcher sees every change after its start exactly
// once and in order.
#include <boost/json.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace gpuq::kubefake {

namespace json = boost::json;

struct ObjectKey {
  std::string ns;  // "" for cluster-scoped objects
  std::string name;
  auto operator<=>(const ObjectKey&) const = default;
};

// Stored objects are immutable snapshots shared by the store, its history and watch queues.
using ObjectPtr = std::shared_ptr<const json::object>;

enum class Change { added, modified, deleted };

struct Event {
  Change type;
  std::string resource;
  ObjectKey key;
  std::uint64_t rv;
  ObjectPtr object;  // after the change; for deleted: as last seen, with the deletion's rv
  ObjectPtr prev;    // before the change; null for added
};

// One event of one watch stream, as it goes on the wire.
struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  ObjectPtr object;
};

struct WatchFilter {
  std::string resource;
  std::string ns;                                    // "" = all namespaces
  std::function<bool(const json::object&)> matches;  // label and field selectors
};

// The events waiting for one watch stream. The store pushes under its lock; the stream takes
// them from its own thread and is woken through `on_wake`.
class WatchQueue {
 public:
  explicit WatchQueue(WatchFilter filter) : filter_(std::move(filter)) {}
  const WatchFilter& filter() const { return filter_; }

  void push(WatchEvent e);
  void drop();  // the stream is to end abruptly
  struct Batch {
    std::vector<WatchEvent> events;
    bool dropped = false;
  };
  Batch take();
  // Called (without the queue's lock) after every push and drop; must not block.
  void on_wake(std::function<void()> wake);

 private:
  void wake();
  WatchFilter filter_;
  std::mutex mutex_;
  std::deque<WatchEvent> events_;
  bool dropped_ = false;
  std::function<void()> wake_;
};

// A watch that asked for a resourceVersion the history no longer holds.
struct TooOld {
  std::uint64_t requested;
  std::uint64_t oldest;  // the oldest resourceVersion a watch may still start from
};

class Store {
 public:
  explicit Store(std::size_t history_limit);

  // Everything that reads or changes objects happens in a transaction: under the store's lock.
  class Txn {
   public:
    ObjectPtr get(std::string_view resource, const ObjectKey& key) const;
    // In key order; `ns` "" = all namespaces (and cluster-scoped resources).
    std::vector<ObjectPtr> list(std::string_view resource, std::string_view ns) const;
    // list(resource, ns), shared: made once per resourceVersion, so that paging through a long
    // list does not copy it for every page.
    std::shared_ptr<const std::vector<ObjectPtr>> list_shared(std::string_view resource,
                                                              std::string_view ns) const;
    // The same list as it was at `rv` (rebuilt from the history); nullopt when compacted.
    std::optional<std::vector<ObjectPtr>> list_at(std::string_view resource, std::string_view ns,
                                                  std::uint64_t rv) const;
    std::uint64_t rv() const;
    std::uint64_t oldest_rv() const;
    // Creates or replaces the object with the next resourceVersion (set in its metadata).
    ObjectPtr put(std::string_view resource, json::object object);
    // Removes it; returns it as last seen with the deletion's resourceVersion (null when absent).
    ObjectPtr erase(std::string_view resource, const ObjectKey& key);
    const std::vector<Event>& changes() const { return changes_; }

   private:
    friend class Store;
    explicit Txn(Store& s) : store_(s) {}
    Store& store_;
    std::vector<Event> changes_;
  };

  // Runs f(txn) under the lock, then the commit hooks (which may change more), and returns
  // f's result.
  template <class F>
  auto transact(F&& f) {
    std::lock_guard lock(mutex_);
    Txn txn(*this);
    if constexpr (std::is_void_v<decltype(f(txn))>) {
      f(txn);
      run_hooks(txn);
    } else {
      auto result = f(txn);
      run_hooks(txn);
      return result;
    }
  }

  // Sees every event under the lock, in order; must be quick and must not use the store.
  // Returns an id for unobserve, after which it is never called again.
  std::uint64_t observe(std::function<void(const Event&)> observer);
  void unobserve(std::uint64_t id);
  // Runs at the end of every transaction that changed something, with its changes; may change
  // more (those changes do not run the hooks again).
  void on_commit(std::function<void(Txn&)> hook);

  // A watch from `from` (every change after it, from the history, then live ones) or, with no
  // `from`, a synthetic ADDED for every current object, then live ones.
  std::variant<std::shared_ptr<WatchQueue>, TooOld> watch(WatchFilter filter,
                                                          std::optional<std::uint64_t> from);
  // Queues a BOOKMARK carrying the current resourceVersion after everything queued before.
  void bookmark(WatchQueue& queue, const std::string& kind, const std::string& api_version);
  void drop_watches();
  // Forgets the whole history and moves the resourceVersion on by one: every version handed out
  // before is too old.
  void compact();
  std::uint64_t rv() const;

 private:
  using Objects = std::map<ObjectKey, ObjectPtr>;
  void record(Event e);
  void deliver(const Event& e);
  void run_hooks(Txn& txn);
  const Objects* objects_of(std::string_view resource) const;

  mutable std::mutex mutex_;
  std::uint64_t rv_ = 1;
  std::uint64_t oldest_rv_ = 1;  // a watch or continue from below this gets 410
  std::size_t history_limit_;
  std::map<std::string, Objects, std::less<>> objects_;
  std::deque<Event> history_;
  std::vector<std::weak_ptr<WatchQueue>> watchers_;
  std::map<std::uint64_t, std::function<void(const Event&)>> observers_;
  std::uint64_t next_observer_ = 0;
  std::vector<std::function<void(Txn&)>> hooks_;
  struct ListCache {
    std::string resource, ns;
    std::uint64_t rv = 0;
    std::shared_ptr<const std::vector<ObjectPtr>> objects;
  };
  mutable ListCache list_cache_;  // Txn::list_shared's last list
  bool in_hooks_ = false;
};

}  // namespace gpuq::kubefake
