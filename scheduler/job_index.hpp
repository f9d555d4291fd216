#pragma once
// Job id -> the engine's slot, for a million jobs: a table of the ids' 32-bit hashes (8 bytes a
// slot) rather than of the ids themselves (a std::string of 32 bytes and more a slot). The ids
// live in the jobs already; a lookup checks the slot's id, so two ids with the same hash are
// still told apart (the second one goes to a small map of its own: by the birthday bound, about
// a hundred of a million ids).
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <boost/unordered/unordered_flat_map.hpp>

namespace gpuq {

// `Hash` hashes an id (a test gives one that collides on purpose); its low 32 bits are kept.
template <class Hash = std::hash<std::string_view>>
class BasicJobIndex {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // `id_of(slot)`: the id of the job in that slot.
  template <class IdOf>
  std::uint32_t find(std::string_view id, const IdOf& id_of) const {
    if (auto it = by_hash_.find(hash(id)); it != by_hash_.end() && id_of(it->second) == id) return it->second;
    if (collided_.empty()) return kNone;
    auto c = collided_.find(std::string(id));
    return c == collided_.end() ? kNone : c->second;
  }
  // `id` must not be in the index.
  void insert(std::string_view id, std::uint32_t slot) {
    if (!by_hash_.emplace(hash(id), slot).second) collided_.emplace(std::string(id), slot);
  }
  template <class IdOf>
  bool erase(std::string_view id, const IdOf& id_of) {
    if (auto it = by_hash_.find(hash(id)); it != by_hash_.end() && id_of(it->second) == id) {
      by_hash_.erase(it);
      return true;
    }
    return collided_.erase(std::string(id)) > 0;
  }
  template <class F>
  void for_each_slot(const F& f) const {
    for (const auto& [h, slot] : by_hash_) f(slot);
    for (const auto& [id, slot] : collided_) f(slot);
  }
  std::size_t size() const { return by_hash_.size() + collided_.size(); }
  std::size_t max_load() const { return by_hash_.max_load(); }
  void reserve(std::size_t n) { by_hash_.reserve(n); }

 private:
  static std::uint32_t hash(std::string_view id) { return static_cast<std::uint32_t>(Hash{}(id)); }
  boost::unordered_flat_map<std::uint32_t, std::uint32_t> by_hash_;
  std::unordered_map<std::string, std::uint32_t> collided_;
};

using JobIndex = BasicJobIndex<>;

}  // namespace gpuq
