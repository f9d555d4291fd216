// The fragmentation measure (FGD) and the fragmentation-aware placement that uses it.
#include <doctest/doctest.h>

#include "scheduler/fragmentation.hpp"
#include "scheduler/placement.hpp"
#include "spec/constraints.hpp"
#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

TEST_CASE("fragmentation: a pod that may not go on a node (its GPU model) finds all of its free GPU unusable") {
  std::vector<NodeConstraints> sets;
  NodeConstraints v100;
  spec::require_gpu_models(v100, {"V100M16", "V100M32"});
  PodShape any{0, 1, 1000, 1}, only_v100{0, 1, 1000, 1};
  any.where = intern_where(sets, NodeConstraints{});
  only_v100.where = intern_where(sets, v100);
  CHECK(any.where == 0);
  CHECK(only_v100.where == 1);
  CHECK(intern_where(sets, v100) == 1);  // the same set, the same index
  FragModel m({any, only_v100}, sets);
  REQUIRE(m.where().size() == 2);
  const std::uint64_t v100_node = 0b11, other_node = 0b01;  // bit 1: meets where()[1]
  CHECK(m.fragmentation(8000, {1000, 1000}, v100_node) == doctest::Approx(0));
  CHECK(m.fragmentation(8000, {1000, 1000}, other_node) == doctest::Approx(0.5 * 2000));
  NodeFreeState a, b;
  REQUIRE(a.assign(8000, {1000}, v100_node));
  REQUIRE(b.assign(8000, {1000}, other_node));
  CHECK_FALSE(a == b);  // same free room, different models: measured apart
  CHECK(m.fragmentation(a) == doctest::Approx(0));
  CHECK(m.fragmentation(b) == doctest::Approx(500));
  // allowed(): asked once per node while the cluster's nodes stay as they are.
  int asked = 0;
  auto meets = [&](const NodeConstraints&) {
    ++asked;
    return true;
  };
  CHECK(m.allowed(3, 7, meets) == 0b11);
  CHECK(m.allowed(3, 7, meets) == 0b11);
  CHECK(asked == 1);
  CHECK(m.allowed(3, 8, meets) == 0b11);  // the nodes changed: asked again
  CHECK(asked == 2);
  // A model rebuilt for a new mix over the same sets keeps what was learned; over others, not.
  FragModel rebuilt({any}, sets);
  rebuilt.keep_allowed(std::move(m));
  CHECK(rebuilt.allowed(3, 8, meets) == 0b11);
  CHECK(asked == 2);
  // Past kFragWhereSets sets, a new one counts as anywhere.
  for (int i = 0; i < 70; ++i) {
    NodeConstraints c;
    c.node_selector["k"] = std::to_string(i);
    intern_where(sets, c);
  }
  CHECK(sets.size() == kFragWhereSets);
  NodeConstraints late;
  late.node_selector["late"] = "1";
  CHECK(intern_where(sets, late) == 0);
}

TEST_CASE("fragmentation: free GPU a pod of the mix could not use, weighted by the mix") {
  const PodShape whole{0, 1, 1000, 1}, half{0, 1, 500, 1}, cpu_only{4000, 0, 0, 2};
  FragModel m({whole, half});
  CHECK(m.shapes()[0].weight == doctest::Approx(0.5));
  // A whole GPU fits (the 500 left on GPU 1 is stranded for it); a half fits with nothing stranded.
  CHECK(m.fragmentation(8000, {1000, 500, 0}) == doctest::Approx(0.5 * 500 + 0.5 * 0));
  CHECK(m.fragmentation(8000, {0, 0}) == 0);
  // Neither fits: all free GPU counts. A CPU-only pod strands all free GPU too.
  CHECK(m.fragmentation(8000, {400, 300}) == doctest::Approx(700));
  FragModel with_cpu({whole, cpu_only});
  CHECK(with_cpu.fragmentation(8000, {1000}) == doctest::Approx(2.0 / 3 * 1000));
  // Without the CPU a pod needs, its GPUs are stranded for it: 2000; and 8000 CPU feeds only
  // 500 milli-GPU at the mix's 16 CPU milli per milli-GPU, so 1500 more are starved.
  FragModel needs_cpu({PodShape{16000, 1, 1000, 1}});
  CHECK(needs_cpu.fragmentation(8000, {1000, 1000}) == doctest::Approx(2000 + 1500));
  NodeFreeState state, reordered;
  REQUIRE(state.assign(8000, {1000, 500}));
  REQUIRE(reordered.assign(8000, {500, 1000}));
  CHECK(state == reordered);  // which GPU is which does not matter
  CHECK(NodeFreeStateHash{}(state) == NodeFreeStateHash{}(reordered));
  CHECK(m.fragmentation(state) == doctest::Approx(250));  // measured, then remembered
  CHECK(m.fragmentation(reordered) == doctest::Approx(250));
  CHECK_FALSE(state.assign(0, std::vector<std::int16_t>(17, 1000)));
}

TEST_CASE("fragmentation: free GPU that the node's free CPU cannot feed counts, though one pod still fits") {
  // The mix asks 4 CPU milli per milli-GPU (pods that ask no GPU do not count in that ratio).
  const FragModel m({PodShape{4000, 1, 1000, 1}, PodShape{32000, 0, 0, 1}});
  // One pod of the GPU type fits (no fragment for it) but 4000 CPU feeds only one of the two
  // free GPUs: 1000 starved, besides the CPU-only type's 2000 (all free GPU, weight 0.5).
  CHECK(m.fragmentation(4000, {1000, 1000}) == doctest::Approx(1000 + 0.5 * 2000));
  CHECK(m.fragmentation(8000, {1000, 1000}) == doctest::Approx(0.5 * 2000));  // CPU enough
  // A mix whose GPU pods ask no CPU has no such term.
  const FragModel no_cpu({PodShape{0, 1, 1000, 1}});
  CHECK(no_cpu.fragmentation(0, {1000, 1000}) == doctest::Approx(0));
}

TEST_CASE("frag-aware: a CPU-only pod goes where the CPU left still feeds the free GPUs") {
  // Both nodes fit one pod of the mix afterwards, so FGD's measure alone ties them (and the tie
  // goes to node 0); on node 0 the 6000 CPU left would feed 1500 of its 2000 free milli-GPU.
  Cluster c;
  REQUIRE(c.upsert(node("tight", "h100", res(gpus(2), 10000)), 0, kNoQueue).ok());
  REQUIRE(c.upsert(node("roomy", "h100", res(gpus(2), 16000)), 0, kNoQueue).ok());
  Topology topology;
  const FragModel mix({PodShape{4000, 1, 1000, 1}});
  std::vector<PodSet> cpu_only{PodSet{"main", 1, res(0, 4000)}};
  PlacementRequest frag{0, 0, false, &cpu_only, PlacementPolicy::kFragAware, &mix};
  auto placed = place(c, topology, frag);
  REQUIRE(placed);
  CHECK(placed->front().node == 1);
}

TEST_CASE("the typical mix keeps the most frequent shapes until they cover 95% of the pods") {
  std::vector<PodShape> pods;
  for (int i = 0; i < 90; ++i) pods.push_back(PodShape{1000, 1, 1000, 1});
  for (int i = 0; i < 8; ++i) pods.push_back(PodShape{1000, 1, 500, 1});
  for (int i = 0; i < 2; ++i) pods.push_back(PodShape{1000, 8, 1000, 1});
  FragModel m = FragModel::typical(pods);
  REQUIRE(m.shapes().size() == 2);  // 90 + 8 = 98% >= 95%: the rare 8-GPU shape is left out
  CHECK(m.shapes()[0].milli == 1000);
  CHECK(m.shapes()[0].weight == doctest::Approx(90.0 / 98));
  CHECK(shape_of(res(500)).milli == 500);
  CHECK(shape_of(res(gpus(4))).gpus == 4);
}

TEST_CASE("frag-aware placement keeps room for the mix's pods where pack would not") {
  // Node a has 2 free GPUs, node b 3 of its 4. Pack puts a 1-GPU pod on a (the fewest free GPUs
  // that fit); with a mix of 2-GPU pods that strands a's last GPU, so frag-aware takes b.
  Cluster c;
  REQUIRE(c.upsert(node("a", "h100", res(gpus(2))), 0, kNoQueue).ok());
  REQUIRE(c.upsert(node("b", "h100", res(gpus(4))), 0, kNoQueue).ok());
  (void)c.take(1, res(gpus(1)), 0, false, PlacementPolicy::kPack);
  Topology topology;
  std::vector<PodSet> one{PodSet{"main", 1, res(gpus(1))}};
  const FragModel mix({PodShape{0, 2, 1000, 1}});
  PlacementRequest pack{0, 0, false, &one, PlacementPolicy::kPack};
  auto packed = place(c, topology, pack);
  REQUIRE(packed);
  CHECK(packed->front().node == 0);
  c.release(packed->front());
  PlacementRequest frag{0, 0, false, &one, PlacementPolicy::kFragAware, &mix};
  auto placed = place(c, topology, frag);
  REQUIRE(placed);
  CHECK(placed->front().node == 1);
  c.release(placed->front());
  // Without a mix it places as pack does.
  PlacementRequest no_mix{0, 0, false, &one, PlacementPolicy::kFragAware, nullptr};
  CHECK(place(c, topology, no_mix)->front().node == 0);
}

TEST_CASE("frag-aware: a share goes to the GPU that strands least, so whole GPUs stay whole") {
  Cluster c;
  REQUIRE(c.upsert(node("n", "h100", res(gpus(2))), 0, kNoQueue).ok());
  (void)c.take(0, res(300), 0, false, PlacementPolicy::kPack);  // GPU 0: 700 free
  Topology topology;
  const FragModel mix({PodShape{0, 1, 1000, 3}, PodShape{0, 1, 600, 1}});
  std::vector<PodSet> share{PodSet{"main", 1, res(600)}};
  PlacementRequest frag{0, 0, false, &share, PlacementPolicy::kFragAware, &mix};
  auto placed = place(c, topology, frag);
  REQUIRE(placed);
  CHECK(placed->front().gpus == std::vector<std::uint8_t>{0});  // GPU 1 stays whole
}

TEST_CASE("frag-aware also measures nodes with more GPUs than a remembered state holds") {
  Cluster c;
  REQUIRE(c.upsert(node("a", "h100", res(gpus(2))), 0, kNoQueue).ok());
  REQUIRE(c.upsert(node("big", "h100", res(gpus(20))), 0, kNoQueue).ok());
  (void)c.take(1, res(gpus(1)), 0, false, PlacementPolicy::kPack);  // big: 19 free, an odd count
  Topology topology;
  const FragModel mix({PodShape{0, 2, 1000, 1}});
  std::vector<PodSet> one{PodSet{"main", 1, res(gpus(1))}};
  PlacementRequest frag{0, 0, false, &one, PlacementPolicy::kFragAware, &mix};
  auto placed = place(c, topology, frag);
  REQUIRE(placed);
  CHECK(placed->front().node == 1);  // on a it would strand a GPU; on big it pairs the odd one
  std::vector<PodSet> share{PodSet{"main", 1, res(300)}};
  PlacementRequest frag_share{0, 0, false, &share, PlacementPolicy::kFragAware, &mix};
  CHECK(place(c, topology, frag_share)->front().node == 1);
}
