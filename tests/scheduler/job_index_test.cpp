// scheduler/job_index.hpp: ids found by their hash, told apart by the slot's id when two hash
// alike. Checked against a std::map under random inserts and erases, with a hash that collides
// for most ids and with the real one.
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "scheduler/job_index.hpp"

namespace {

struct FewHashes {  // 4 hashes for all ids: nearly every id collides with another
  std::size_t operator()(std::string_view id) const { return id.size() % 4; }
};

template <class Index>
void against_a_map(unsigned seed) {
  std::mt19937 rng(seed);
  Index index;
  std::vector<std::string> slots;  // slot -> id ("" : free)
  std::map<std::string, std::uint32_t> model;
  auto id_of = [&](std::uint32_t s) -> std::string_view { return slots[s]; };
  for (int step = 0; step < 4000; ++step) {
    const std::string id = "job-" + std::to_string(rng() % 300) + std::string(rng() % 3, 'x');
    const bool present = model.count(id) > 0;
    if (!present && rng() % 3 != 0) {
      const auto slot = static_cast<std::uint32_t>(slots.size());
      slots.push_back(id);
      index.insert(id, slot);
      model[id] = slot;
    } else if (present) {
      CHECK(index.erase(id, id_of));
      slots[model[id]].clear();
      model.erase(id);
    } else {
      CHECK_FALSE(index.erase(id, id_of));
    }
    if (step % 50 == 0) {
      REQUIRE(index.size() == model.size());
      for (const auto& [known, slot] : model) CHECK(index.find(known, id_of) == slot);
      CHECK(index.find("absent", id_of) == Index::kNone);
      std::size_t visited = 0;
      index.for_each_slot([&](std::uint32_t s) {
        ++visited;
        CHECK(model.count(slots[s]) == 1);
      });
      CHECK(visited == model.size());
    }
  }
}

}  // namespace

TEST_CASE("JobIndex finds every id and only those, also when ids hash alike") {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    against_a_map<gpuq::BasicJobIndex<FewHashes>>(seed);
    against_a_map<gpuq::JobIndex>(seed);
  }
}
