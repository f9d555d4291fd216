#include "scheduler/flavor_list.hpp"

#include <mutex>
#include <set>

namespace gpuq {
namespace {

struct Interned {
  std::mutex mu;
  std::set<std::vector<FlavorId>> lists;  // nodes never move: their addresses are the handles
};

Interned& interned() {
  static Interned* pool = new Interned;  // never destroyed: a list may be read to the last moment
  return *pool;
}

}  // namespace

const std::vector<FlavorId>* FlavorList::none() {
  static const std::vector<FlavorId> kNone;
  return &kNone;
}

FlavorList::FlavorList(const std::vector<FlavorId>& flavors) {
  if (flavors.empty()) return;
  Interned& pool = interned();
  std::lock_guard lock(pool.mu);
  list_ = &*pool.lists.insert(flavors).first;
}

}  // namespace gpuq
