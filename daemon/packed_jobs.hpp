#pragma once
// The pending jobs' records at rest, packed (storage::pack_job), by job id: gpuqd keeps one per
// pending job, a million at a large site, so each costs one allocation holding its id and its
// packed text, and one pointer in an open-addressing table (about 200 bytes in all, where a
// std::unordered_map<std::string, std::string> took 300 and a JobRecord 1,200: BENCHMARKS.md,
// Memory per pending job). Core (daemon/core.hpp) owns one; not thread-safe.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/unordered/unordered_flat_set.hpp>

namespace gpuq::daemon {

class PackedJobs {
 public:
  bool contains(std::string_view id) const { return set_.find(id) != set_.end(); }
  // The packed text of `id`, valid until the next change; nullopt: none.
  std::optional<std::string_view> find(std::string_view id) const;
  void put(std::string_view id, std::string_view packed);  // replaces one with the same id
  bool erase(std::string_view id) { return set_.erase(id) > 0; }
  void clear() { set_.clear(); }
  void reserve(std::size_t n) { set_.reserve(n); }
  std::size_t size() const { return set_.size(); }

 private:
  // One block: the id's length (4 bytes), the packed text's length (4 bytes), the id, the text.
  struct Entry {
    std::unique_ptr<char[]> block;
    std::string_view id() const;
    std::string_view text() const;
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view id) const;
    std::size_t operator()(const Entry& e) const { return (*this)(e.id()); }
  };
  struct Eq {
    using is_transparent = void;
    bool operator()(const Entry& a, const Entry& b) const { return a.id() == b.id(); }
    bool operator()(std::string_view a, const Entry& b) const { return a == b.id(); }
    bool operator()(const Entry& a, std::string_view b) const { return a.id() == b; }
  };
  boost::unordered_flat_set<Entry, Hash, Eq> set_;
};

}  // namespace gpuq::daemon
