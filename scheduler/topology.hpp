#pragma once
// The cluster's topology as a graph: the cluster root, then one vertex per domain at each level
// (e.g. zone, then rack within zone, then switch), then the nodes. A multi-node gang prefers the
// narrowest domain that can hold all of its pods.
#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/cluster.hpp"

namespace gpuq {

struct Domain {
  std::string path;  // "z1/r2": the label values from the widest level down to this one
  std::vector<NodeIdx> nodes;
  std::vector<NodeIdx> dedicated;  // those of its nodes that are dedicated to a queue
};

class Topology {
 public:
  static constexpr std::uint32_t kNoDomain = UINT32_MAX;

  // levels: node label keys from the widest domain to the narrowest. A node that lacks a level's
  // label belongs to no domain at that level or below.
  void build(const std::vector<std::string>& levels, const std::vector<Node>& nodes);

  bool enabled() const { return !levels_.empty(); }
  std::size_t level_count() const { return levels_.size(); }
  const std::vector<std::string>& levels() const { return levels_; }
  const std::vector<Domain>& domains(std::size_t level) const { return domains_[level]; }
  const std::vector<std::vector<std::uint32_t>>& node_domains() const { return node_domain_; }
  std::uint32_t domain_of(NodeIdx n, std::size_t level) const {
    return n < node_domain_[level].size() ? node_domain_[level][n] : kNoDomain;
  }

 private:
  std::vector<std::string> levels_;
  std::vector<std::vector<Domain>> domains_;                // [level][domain]
  std::vector<std::vector<std::uint32_t>> node_domain_;     // [level][node]
};

}  // namespace gpuq
