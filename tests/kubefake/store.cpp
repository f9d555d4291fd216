#include "tests/kubefake/store.hpp"

#include <algorithm>

#include "tests/kubefake/meta.hpp"

namespace gpuq::kubefake {

void WatchQueue::push(WatchEvent e) {
  {
    std::lock_guard lock(mutex_);
    if (dropped_) return;
    events_.push_back(std::move(e));
  }
  wake();
}

void WatchQueue::drop() {
  {
    std::lock_guard lock(mutex_);
    dropped_ = true;
    events_.clear();
  }
  wake();
}

WatchQueue::Batch WatchQueue::take() {
  std::lock_guard lock(mutex_);
  Batch b;
  b.events.assign(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  b.dropped = dropped_;
  return b;
}

void WatchQueue::on_wake(std::function<void()> wake) {
  std::lock_guard lock(mutex_);
  wake_ = std::move(wake);
}

void WatchQueue::wake() {
  std::function<void()> w;
  {
    std::lock_guard lock(mutex_);
    w = wake_;
  }
  if (w) w();
}

namespace {

ObjectKey key_of(const json::object& o) {
  return {string_at(o, {"metadata", "namespace"}), string_at(o, {"metadata", "name"})};
}

ObjectPtr with_rv(const json::object& o, std::uint64_t rv) {
  json::object copy = o;
  child(copy, "metadata")["resourceVersion"] = std::to_string(rv);
  return std::make_shared<const json::object>(std::move(copy));
}

bool passes(const WatchFilter& f, const json::object& o) { return !f.matches || f.matches(o); }

// What one watcher sees of a change: selectors turn a modification into ADDED (starts
// matching) or DELETED (stops matching; the previous object with the change's rv), as the
// real watch cache does.
std::optional<WatchEvent> view(const Event& e, const WatchFilter& f) {
  if (e.resource != f.resource) return std::nullopt;
  if (!f.ns.empty() && e.key.ns != f.ns) return std::nullopt;
  switch (e.type) {
    case Change::added:
      if (passes(f, *e.object)) return WatchEvent{"ADDED", e.object};
      return std::nullopt;
    case Change::deleted:
      if (passes(f, *e.object)) return WatchEvent{"DELETED", e.object};
      return std::nullopt;
    case Change::modified: {
      bool now = passes(f, *e.object);
      bool before = passes(f, *e.prev);
      if (now && before) return WatchEvent{"MODIFIED", e.object};
      if (now) return WatchEvent{"ADDED", e.object};
      if (before) return WatchEvent{"DELETED", with_rv(*e.prev, e.rv)};
      return std::nullopt;
    }
  }
  return std::nullopt;
}

bool in_namespace(const ObjectKey& k, std::string_view ns) { return ns.empty() || k.ns == ns; }

}  // namespace

Store::Store(std::size_t history_limit) : history_limit_(std::max<std::size_t>(history_limit, 1)) {}

const Store::Objects* Store::objects_of(std::string_view resource) const {
  auto it = objects_.find(resource);
  return it == objects_.end() ? nullptr : &it->second;
}

ObjectPtr Store::Txn::get(std::string_view resource, const ObjectKey& key) const {
  const Objects* objs = store_.objects_of(resource);
  if (objs == nullptr) return nullptr;
  auto it = objs->find(key);
  return it == objs->end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Store::Txn::list(std::string_view resource, std::string_view ns) const {
  std::vector<ObjectPtr> out;
  const Objects* objs = store_.objects_of(resource);
  if (objs == nullptr) return out;
  auto it = ns.empty() ? objs->begin() : objs->lower_bound(ObjectKey{std::string(ns), ""});
  for (; it != objs->end() && in_namespace(it->first, ns); ++it) out.push_back(it->second);
  return out;
}

std::shared_ptr<const std::vector<ObjectPtr>> Store::Txn::list_shared(std::string_view resource,
                                                                     std::string_view ns) const {
  ListCache& c = store_.list_cache_;
  if (!c.objects || c.rv != store_.rv_ || c.resource != resource || c.ns != ns) {
    c = {std::string(resource), std::string(ns), store_.rv_,
         std::make_shared<const std::vector<ObjectPtr>>(list(resource, ns))};
  }
  return c.objects;
}

std::optional<std::vector<ObjectPtr>> Store::Txn::list_at(std::string_view resource,
                                                          std::string_view ns,
                                                          std::uint64_t rv) const {
  if (rv < store_.oldest_rv_) return std::nullopt;
  if (rv >= store_.rv_) return list(resource, ns);
  std::map<ObjectKey, ObjectPtr> snapshot;
  for (const ObjectPtr& o : list(resource, ns)) snapshot.emplace(key_of(*o), o);
  // Undo, newest first, every change after rv: the history holds all of them (rv >= oldest).
  for (auto it = store_.history_.rbegin(); it != store_.history_.rend() && it->rv > rv; ++it) {
    if (it->resource != resource || !in_namespace(it->key, ns)) continue;
    if (it->type == Change::added) {
      snapshot.erase(it->key);
    } else {
      snapshot[it->key] = it->prev;
    }
  }
  std::vector<ObjectPtr> out;
  out.reserve(snapshot.size());
  for (auto& [k, o] : snapshot) out.push_back(std::move(o));
  return out;
}

std::uint64_t Store::Txn::rv() const { return store_.rv_; }
std::uint64_t Store::Txn::oldest_rv() const { return store_.oldest_rv_; }

ObjectPtr Store::Txn::put(std::string_view resource, json::object object) {
  ObjectKey key = key_of(object);
  auto& objs = store_.objects_[std::string(resource)];
  auto it = objs.find(key);
  ObjectPtr prev = it == objs.end() ? nullptr : it->second;
  std::uint64_t rv = ++store_.rv_;
  child(object, "metadata")["resourceVersion"] = std::to_string(rv);
  auto obj = std::make_shared<const json::object>(std::move(object));
  objs[key] = obj;
  Event e{prev ? Change::modified : Change::added,
          std::string(resource),
          std::move(key),
          rv,
          obj,
          prev};
  store_.record(e);
  changes_.push_back(std::move(e));
  return obj;
}

ObjectPtr Store::Txn::erase(std::string_view resource, const ObjectKey& key) {
  auto found = store_.objects_.find(resource);
  if (found == store_.objects_.end()) return nullptr;
  auto it = found->second.find(key);
  if (it == found->second.end()) return nullptr;
  ObjectPtr prev = it->second;
  found->second.erase(it);
  std::uint64_t rv = ++store_.rv_;
  ObjectPtr last = with_rv(*prev, rv);
  Event e{Change::deleted, std::string(resource), key, rv, last, prev};
  store_.record(e);
  changes_.push_back(std::move(e));
  return last;
}

void Store::record(Event e) {
  deliver(e);
  for (const auto& [id, observe] : observers_) observe(e);
  history_.push_back(std::move(e));
  while (history_.size() > history_limit_) {
    oldest_rv_ = history_.front().rv;
    history_.pop_front();
  }
}

void Store::deliver(const Event& e) {
  std::erase_if(watchers_, [&](const std::weak_ptr<WatchQueue>& w) {
    auto q = w.lock();
    if (!q) return true;
    if (auto we = view(e, q->filter())) q->push(std::move(*we));
    return false;
  });
}

void Store::run_hooks(Txn& txn) {
  if (txn.changes_.empty() || in_hooks_) return;
  in_hooks_ = true;
  try {
    for (const auto& hook : hooks_) hook(txn);
  } catch (...) {
    in_hooks_ = false;
    throw;
  }
  in_hooks_ = false;
}

std::uint64_t Store::observe(std::function<void(const Event&)> observer) {
  std::lock_guard lock(mutex_);
  observers_.emplace(next_observer_, std::move(observer));
  return next_observer_++;
}

void Store::unobserve(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  observers_.erase(id);
}

void Store::on_commit(std::function<void(Txn&)> hook) {
  std::lock_guard lock(mutex_);
  hooks_.push_back(std::move(hook));
}

std::variant<std::shared_ptr<WatchQueue>, TooOld> Store::watch(WatchFilter filter,
                                                               std::optional<std::uint64_t> from) {
  std::lock_guard lock(mutex_);
  if (from && *from < oldest_rv_) return TooOld{*from, oldest_rv_};
  auto queue = std::make_shared<WatchQueue>(std::move(filter));
  const WatchFilter& f = queue->filter();
  if (from) {
    auto first = std::upper_bound(history_.begin(), history_.end(), *from,
                                  [](std::uint64_t rv, const Event& e) { return rv < e.rv; });
    for (auto it = first; it != history_.end(); ++it) {
      if (auto we = view(*it, f)) queue->push(std::move(*we));
    }
  } else if (const Objects* objs = objects_of(f.resource)) {
    for (const auto& [key, obj] : *objs) {
      if (in_namespace(key, f.ns) && passes(f, *obj)) queue->push(WatchEvent{"ADDED", obj});
    }
  }
  watchers_.push_back(queue);
  return queue;
}

void Store::bookmark(WatchQueue& queue, const std::string& kind, const std::string& api_version) {
  std::lock_guard lock(mutex_);
  json::object o{{"kind", kind},
                 {"apiVersion", api_version},
                 {"metadata", json::object{{"resourceVersion", std::to_string(rv_)}}}};
  queue.push(WatchEvent{"BOOKMARK", std::make_shared<const json::object>(std::move(o))});
}

void Store::drop_watches() {
  std::lock_guard lock(mutex_);
  for (const auto& w : watchers_) {
    if (auto q = w.lock()) q->drop();
  }
  watchers_.clear();
}

void Store::compact() {
  std::lock_guard lock(mutex_);
  // As if other writes happened and etcd then compacted: the revision moves on, so every
  // resourceVersion handed out before this is too old (a client cannot dodge the 410 by having
  // seen the very last change).
  ++rv_;
  history_.clear();
  oldest_rv_ = rv_;
}

std::uint64_t Store::rv() const {
  std::lock_guard lock(mutex_);
  return rv_;
}

}  // namespace gpuq::kubefake
