// A set of node indices kept as a bitset: insert and erase are a bit flip, iteration is in
// ascending index order (as std::set<NodeIdx> gives), and nothing is allocated once the set has
// grown to the cluster's size. The free-capacity index moves a node between these on every pod
// taken or released, which victim searches do thousands of times per cycle.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <boost/dynamic_bitset.hpp>

namespace gpuq {

class NodeSet {
 public:
  using Bits = boost::dynamic_bitset<std::uint64_t>;

  class iterator {
   public:
    using value_type = std::uint32_t;
    iterator() = default;
    iterator(const Bits* bits, Bits::size_type at) : bits_(bits), at_(at) {}
    value_type operator*() const { return static_cast<value_type>(at_); }
    iterator& operator++() {
      at_ = bits_->find_next(at_);
      return *this;
    }
    bool operator==(const iterator& o) const { return at_ == o.at_; }

   private:
    const Bits* bits_ = nullptr;
    Bits::size_type at_ = Bits::npos;
  };

  void insert(std::uint32_t n) {
    if (n >= bits_.size()) bits_.resize(std::max<Bits::size_type>(n + 1, bits_.size() * 2));
    if (!bits_.test(n)) {
      bits_.set(n);
      ++count_;
    }
  }
  void erase(std::uint32_t n) {
    if (n < bits_.size() && bits_.test(n)) {
      bits_.reset(n);
      --count_;
    }
  }
  bool empty() const { return count_ == 0; }  // counted: bits_.none() would scan every word
  iterator begin() const { return {&bits_, count_ == 0 ? Bits::npos : bits_.find_first()}; }
  iterator end() const { return {&bits_, Bits::npos}; }

 private:
  Bits bits_;
  std::size_t count_ = 0;
};

}  // namespace gpuq
