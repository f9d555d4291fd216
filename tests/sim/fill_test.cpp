// `gpuq sim fill` on small made-up clusters: the order, the target, the accounting, the summary.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "sim/fill.hpp"
#include "spec/enums.hpp"

using namespace gpuq;
using namespace gpuq::sim;

namespace {

std::vector<OpenbNode> two_nodes() {
  return {OpenbNode{"n0", 32000, Quantity{64} << 30, 2, "T4"}, OpenbNode{"n1", 32000, Quantity{64} << 30, 2, "T4"}};
}

std::vector<OpenbPod> pods(int n, int gpu_milli) {
  std::vector<OpenbPod> out;
  for (int i = 0; i < n; ++i) {
    OpenbPod p;
    p.name = "p" + std::to_string(i);
    p.cpu_milli = 1000;
    p.memory_bytes = Quantity{1} << 30;
    p.num_gpu = 1;
    p.gpu_milli = gpu_milli;
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("fill: pods drawn until the target, the one that would pass it left out; what does not fit fails") {
  // 4 GPUs; 3 one-GPU pods ask for 75%. Target 1.0: one drawn pod more (100%), then stop.
  FillRun r = run_fill(two_nodes(), pods(3, 1000), PlacementPolicy::kPack, 1.0, 42);
  CHECK(r.capacity_milli == 4000);
  CHECK(r.pods == 4);
  CHECK(r.failed == 0);
  CHECK(r.arrived_milli == 4000);
  CHECK(r.alloc_ratio == doctest::Approx(1.0));
  CHECK(r.frag_ratio == doctest::Approx(0.0));
  // Target 1.5: six pods arrive, two find no GPU.
  r = run_fill(two_nodes(), pods(3, 1000), PlacementPolicy::kFragAware, 1.5, 42);
  CHECK(r.pods == 6);
  CHECK(r.failed == 2);
  CHECK(r.arrived_milli == 6000);
  CHECK(r.allocated_milli == 4000);
}

TEST_CASE("fill: the same seed gives the same result; shares fragment, and frag-aware strands no more than pack") {
  std::vector<OpenbPod> mix = pods(6, 600);
  for (auto& p : pods(4, 1000)) {
    p.name += "w";
    mix.push_back(p);
  }
  const FillRun a = run_fill(two_nodes(), mix, PlacementPolicy::kFragAware, 1.3, 7);
  const FillRun b = run_fill(two_nodes(), mix, PlacementPolicy::kFragAware, 1.3, 7);
  CHECK(a.allocated_milli == b.allocated_milli);
  CHECK(a.failed == b.failed);
  CHECK(a.frag_ratio == b.frag_ratio);
  CHECK(to_json({summarize(PlacementPolicy::kFragAware, 1.3, {a})}) ==
        to_json({summarize(PlacementPolicy::kFragAware, 1.3, {b})}));
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    const FillRun frag = run_fill(two_nodes(), mix, PlacementPolicy::kFragAware, 1.3, seed);
    const FillRun pack = run_fill(two_nodes(), mix, PlacementPolicy::kPack, 1.3, seed);
    CHECK(frag.alloc_ratio <= 1.0);
    CHECK(frag.allocated_milli >= pack.allocated_milli - 600);  // never far behind on a tiny cluster
  }
  CHECK_THROWS_AS(run_fill({}, pods(1, 1000), PlacementPolicy::kPack, 1.0, 1), std::invalid_argument);
}

TEST_CASE("fill: a pod's gpu_spec is honoured by every policy: it goes only on nodes of a model it accepts") {
  // A T4 node and a V100 node, 2 GPUs each; every pod accepts only V100s.
  const std::vector<OpenbNode> nodes{OpenbNode{"t4", 32000, Quantity{64} << 30, 2, "T4"},
                                     OpenbNode{"v100", 32000, Quantity{64} << 30, 2, "V100M32"},
                                     OpenbNode{"bare", 32000, Quantity{64} << 30, 2, ""}};  // no model
  std::vector<OpenbPod> picky = pods(3, 1000);
  for (auto& p : picky) p.gpu_models = {"V100M16", "V100M32"};
  for (PlacementPolicy policy : {PlacementPolicy::kPack, PlacementPolicy::kSpread, PlacementPolicy::kFragAware}) {
    INFO(to_string(policy));
    // Target 1.0 of 6 GPUs: 6 pods arrive; only the V100's 2 GPUs take any.
    const FillRun r = run_fill(nodes, picky, policy, 1.0, 3);
    CHECK(r.pods == 6);
    CHECK(r.allocated_milli == 2000);
    CHECK(r.failed == 4);
    // The T4 and the model-less node are idle, and all of their GPUs count as fragmented: no
    // pod of the mix may use them.
    CHECK(r.frag_ratio == doctest::Approx(4000.0 / 6000));
  }
  // A mix of picky and any-model pods: frag-aware keeps the V100 for the picky ones.
  std::vector<OpenbPod> mix = pods(2, 1000);
  for (auto& p : pods(2, 1000)) {
    p.name += "v";
    p.gpu_models = {"V100M32"};
    mix.push_back(p);
  }
  // The V100 node first: were the model left out of the measure, the two empty nodes would tie
  // and an any-model pod arriving first would go to the V100 (the lowest-numbered), leaving a
  // V100-only pod without room.
  const std::vector<OpenbNode> two{OpenbNode{"v100", 32000, Quantity{64} << 30, 2, "V100M32"},
                                   OpenbNode{"t4", 32000, Quantity{64} << 30, 2, "T4"}};
  for (std::uint64_t seed : {1, 2, 3, 4, 5, 6, 7, 8}) {
    const FillRun frag = run_fill(two, mix, PlacementPolicy::kFragAware, 1.0, seed);
    CHECK(frag.failed == 0);  // each kind where it may go: all 4 fit
  }
}

TEST_CASE("fill summary: mean, range and failed pods over the seeds, as JSON with the keys scripts read") {
  std::vector<FillRun> runs(2);
  runs[0].seed = 42;
  runs[0].alloc_ratio = 0.9;
  runs[0].failed = 10;
  runs[1].seed = 43;
  runs[1].alloc_ratio = 0.95;
  runs[1].failed = 20;
  FillSummary s = summarize(PlacementPolicy::kPack, 1.3, runs);
  CHECK(s.alloc_ratio_mean == doctest::Approx(0.925));
  CHECK(s.alloc_ratio_min == doctest::Approx(0.9));
  CHECK(s.alloc_ratio_max == doctest::Approx(0.95));
  CHECK(s.failed_pods_mean == doctest::Approx(15));
  const auto v = boost::json::parse(to_json({s})).as_object();
  for (const char* key : {"policy", "seeds", "alloc_ratio_mean", "alloc_ratio_min", "alloc_ratio_max", "failed_pods_mean",
                          "frag_ratio_mean", "runs"})
    CHECK_MESSAGE(v.contains(key), key);
  CHECK(v.at("policy").as_string() == "pack");
  CHECK(v.at("seeds").as_array().size() == 2);
  CHECK(boost::json::parse(to_json({s, s})).is_array());  // several policies: one object each
  // Doubles as people write them, not Boost's 9.25E-1.
  CHECK(to_json({s}).find("\"alloc_ratio_mean\":0.92") != std::string::npos);
  CHECK(to_json({s}).find("E-") == std::string::npos);
  CHECK(to_table({s}).find("pack") != std::string::npos);
}

TEST_CASE("seeds: N, A-B and lists; anything else names the text") {
  CHECK(parse_seeds("42-51").size() == 10);
  CHECK(parse_seeds("7") == std::vector<std::uint64_t>{7});
  CHECK(parse_seeds("1,5,3") == std::vector<std::uint64_t>{1, 5, 3});
  CHECK(parse_seeds("1-2,9") == std::vector<std::uint64_t>{1, 2, 9});
  CHECK_THROWS_WITH(parse_seeds("x"), doctest::Contains("--seeds \"x\""));
  CHECK_THROWS_WITH(parse_seeds("5-3"), doctest::Contains("range 5-3"));
  CHECK_THROWS_AS(parse_seeds(""), std::invalid_argument);
  CHECK_THROWS_AS(parse_seeds("-1"), std::invalid_argument);
}
