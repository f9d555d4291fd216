#pragma once
// A binary min-heap over dense ids (0..n) whose keys can be changed or removed in O(log n). The
// admission cycle keeps one entry per queue keyed by its head job's fair-share key, and only the
// queue that just admitted (or skipped) a job is re-keyed: the cost per decision stays flat as
// queues and jobs grow.
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace gpuq::drf {

template <class Key, class Less = std::less<Key>>
class IndexedHeap {
 public:
  explicit IndexedHeap(Less less = Less()) : less_(std::move(less)) {}

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  bool contains(std::uint32_t id) const { return id < pos_.size() && pos_[id] != kAbsent; }
  std::uint32_t top() const { return heap_.front(); }
  const Key& key(std::uint32_t id) const { return keys_[id]; }

  void clear() {
    for (auto id : heap_) pos_[id] = kAbsent;
    heap_.clear();
  }

  // Inserts id, or changes its key when already present.
  void set(std::uint32_t id, Key key) {
    if (id >= pos_.size()) {
      pos_.resize(id + 1, kAbsent);
      keys_.resize(id + 1);
    }
    keys_[id] = std::move(key);
    if (pos_[id] == kAbsent) {
      pos_[id] = static_cast<std::uint32_t>(heap_.size());
      heap_.push_back(id);
      sift_up(pos_[id]);
    } else {
      sift_down(sift_up(pos_[id]));
    }
  }

  void erase(std::uint32_t id) {
    if (!contains(id)) return;
    std::uint32_t at = pos_[id];
    std::uint32_t last = heap_.back();
    heap_.pop_back();
    pos_[id] = kAbsent;
    if (last == id) return;
    heap_[at] = last;
    pos_[last] = at;
    sift_down(sift_up(at));
  }

 private:
  static constexpr std::uint32_t kAbsent = UINT32_MAX;

  bool before(std::uint32_t a, std::uint32_t b) const { return less_(keys_[a], keys_[b]); }
  void place(std::uint32_t at, std::uint32_t id) {
    heap_[at] = id;
    pos_[id] = at;
  }
  std::uint32_t sift_up(std::uint32_t at) {
    std::uint32_t id = heap_[at];
    while (at > 0) {
      std::uint32_t parent = (at - 1) / 2;
      if (!before(id, heap_[parent])) break;
      place(at, heap_[parent]);
      at = parent;
    }
    place(at, id);
    return at;
  }
  std::uint32_t sift_down(std::uint32_t at) {
    std::uint32_t id = heap_[at];
    const auto n = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
      if (!before(heap_[child], id)) break;
      place(at, heap_[child]);
      at = child;
    }
    place(at, id);
    return at;
  }

  Less less_;
  std::vector<std::uint32_t> heap_;
  std::vector<std::uint32_t> pos_;
  std::vector<Key> keys_;
};

}  // namespace gpuq::drf
