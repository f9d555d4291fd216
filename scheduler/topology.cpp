#include "scheduler/topology.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <map>

namespace gpuq {
namespace {

struct Vertex {
  int level = -1;  // -1: the root; 0..L-1: a domain; L: a node
  std::uint32_t index = 0;  // domain index within its level, or the node index
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, Vertex>;
using VertexId = boost::graph_traits<Graph>::vertex_descriptor;

// Walks the tree from the root and records, for every node, the domain above it at each level.
class AncestorRecorder : public boost::default_bfs_visitor {
 public:
  AncestorRecorder(std::vector<std::vector<std::uint32_t>>& node_domain,
                   std::vector<VertexId>& parent)
      : node_domain_(&node_domain), parent_(&parent) {}

  void tree_edge(boost::graph_traits<Graph>::edge_descriptor e, const Graph& g) const {
    (*parent_)[boost::target(e, g)] = boost::source(e, g);
  }
  void discover_vertex(VertexId v, const Graph& g) const {
    const auto levels = static_cast<int>(node_domain_->size());
    if (g[v].level != levels) return;
    for (VertexId up = (*parent_)[v]; g[up].level >= 0; up = (*parent_)[up])
      (*node_domain_)[g[up].level][g[v].index] = g[up].index;
  }

 private:
  std::vector<std::vector<std::uint32_t>>* node_domain_;
  std::vector<VertexId>* parent_;
};

}  // namespace

void Topology::build(const std::vector<std::string>& levels, const std::vector<Node>& nodes) {
  levels_ = levels;
  const std::size_t L = levels.size();
  domains_.assign(L, {});
  node_domain_.assign(L, std::vector<std::uint32_t>(nodes.size(), kNoDomain));
  if (L == 0) return;

  Graph g;
  VertexId root = boost::add_vertex(Vertex{-1, 0}, g);
  std::vector<std::map<std::string, VertexId>> by_path(L);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    VertexId parent = root;
    std::string path;
    for (std::size_t l = 0; l < L; ++l) {
      auto label = nodes[n].labels.find(levels[l]);
      if (label == nodes[n].labels.end()) break;
      path += (l ? "/" : "") + label->second;
      auto [it, fresh] = by_path[l].try_emplace(path);
      if (fresh) {
        it->second = boost::add_vertex(
            Vertex{static_cast<int>(l), static_cast<std::uint32_t>(domains_[l].size())}, g);
        domains_[l].push_back(Domain{path, {}, {}});
        boost::add_edge(parent, it->second, g);
      }
      parent = it->second;
    }
    if (parent == root) continue;  // no topology labels: not in any domain
    VertexId leaf = boost::add_vertex(Vertex{static_cast<int>(L), static_cast<std::uint32_t>(n)}, g);
    boost::add_edge(parent, leaf, g);
  }

  std::vector<VertexId> parent(boost::num_vertices(g), root);
  boost::breadth_first_search(g, root, boost::visitor(AncestorRecorder(node_domain_, parent)));
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t n = 0; n < nodes.size(); ++n)
      if (node_domain_[l][n] != kNoDomain) {
        Domain& d = domains_[l][node_domain_[l][n]];
        d.nodes.push_back(static_cast<NodeIdx>(n));
        if (nodes[n].dedicated != kNoQueue) d.dedicated.push_back(static_cast<NodeIdx>(n));
      }
}

}  // namespace gpuq
