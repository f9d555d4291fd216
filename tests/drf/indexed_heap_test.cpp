#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "drf/indexed_heap.hpp"

using gpuq::drf::IndexedHeap;

TEST_CASE("the heap yields ids in key order, ties broken by the comparator") {
  IndexedHeap<int> h;
  h.set(3, 30);
  h.set(1, 10);
  h.set(2, 20);
  CHECK(h.top() == 1);
  h.erase(1);
  CHECK(h.top() == 2);
  h.set(3, 5);  // re-key moves it up
  CHECK(h.top() == 3);
  h.set(3, 50);  // and down
  CHECK(h.top() == 2);
  CHECK(h.size() == 2);
  CHECK_FALSE(h.contains(1));
}

TEST_CASE("random sets and erases keep the heap equal to a sorted reference") {
  std::mt19937 rng(7);
  IndexedHeap<std::pair<int, unsigned>> h;
  std::vector<int> key(200, -1);
  for (int step = 0; step < 20000; ++step) {
    unsigned id = rng() % 200;
    if (rng() % 3 == 0) {
      h.erase(id);
      key[id] = -1;
    } else {
      key[id] = static_cast<int>(rng() % 50);
      h.set(id, {key[id], id});
    }
    unsigned best = 1000;
    for (unsigned i = 0; i < key.size(); ++i)
      if (key[i] >= 0 && (best == 1000 || std::pair(key[i], i) < std::pair(key[best], best))) best = i;
    if (best == 1000) {
      REQUIRE(h.empty());
    } else {
      REQUIRE(h.top() == best);
    }
  }
}
