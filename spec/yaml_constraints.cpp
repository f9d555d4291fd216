// Node constraints (nodeSelector, required node affinity, tolerations) and node taints from
// YAML, with Kubernetes' keys. Each piece is checked (spec/validate.hpp) where it was read, so
// an error points at the key as the file spells it, in either affinity shape.
#include "spec/limits.hpp"
#include "spec/validate.hpp"
#include "spec/yaml_read.hpp"

namespace gpuq::spec {
namespace {

NodeRequirement read_requirement(yaml::Node n, Path& at) {
  NodeRequirement r;
  for_each_key(n, at, {"key", "operator", "values"}, [&](std::string_view key, yaml::Node v) {
    if (key == "key") {
      r.key = string_of(v, at);
    } else if (key == "operator") {
      r.op = enum_of<LabelOperator>(v, at);
    } else {
      expect_list(v, at);
      located(v, at, [&] { check_count(v.size(), limits::kRequirementValues, "values", at); });
      for (std::size_t i = 0; i < v.size(); ++i) {
        Path::Index vi(at, i);
        r.values.push_back(string_of(v.item(i), at));
      }
    }
  });
  require(n, at, {"key", "operator"});
  located(n, at, [&] { check_requirement(r, at); });
  return r;
}

// One term: its requirements, all of which a node must meet.
std::vector<NodeRequirement> read_term(yaml::Node n, Path& at) {
  if (!n.is_list())
    fail_at(
        n, at,
        "expected a list of requirements such as [{key: zone, operator: In, values: [z1]}], got " +
            n.shown());
  located(n, at, [&] { check_count(n.size(), limits::kTermRequirements, "requirements", at); });
  std::vector<NodeRequirement> term;
  term.reserve(n.size());
  for (std::size_t i = 0; i < n.size(); ++i) {
    Path::Index ri(at, i);
    term.push_back(read_requirement(n.item(i), at));
  }
  return term;
}

std::vector<std::vector<NodeRequirement>> read_terms(yaml::Node n, Path& at, bool kubernetes) {
  located(n, at, [&] { check_count(n.size(), limits::kAffinityTerms, "terms", at); });
  std::vector<std::vector<NodeRequirement>> terms;
  for (std::size_t i = 0; i < n.size(); ++i) {
    Path::Index ti(at, i);
    if (!kubernetes) {
      terms.push_back(read_term(n.item(i), at));
      continue;
    }
    // A term without matchExpressions ({}) matches no node, as in Kubernetes.
    std::vector<NodeRequirement> term;
    for_each_key(n.item(i), at, {"matchExpressions"},
                 [&](std::string_view, yaml::Node v) { term = read_term(v, at); });
    terms.push_back(std::move(term));
  }
  return terms;
}

// {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [...]}}}:
// only the required part; preferences and pod (anti-)affinity are refused, so nobody believes
// they are honoured.
std::vector<std::vector<NodeRequirement>> read_kubernetes_affinity(yaml::Node n, Path& at) {
  std::vector<std::vector<NodeRequirement>> terms;
  for (std::string_view pod : {"podAffinity", "podAntiAffinity"})
    if (const yaml::Node v = n.find(pod)) {
      Path::Key k(at, pod);
      fail_at(v, at,
              "is not supported: gpuq places pods by node labels and taints only; remove this key");
    }
  for_each_key(n, at, {"nodeAffinity"}, [&](std::string_view, yaml::Node na) {
    constexpr std::string_view kPreferred = "preferredDuringSchedulingIgnoredDuringExecution";
    if (const yaml::Node pref = na.find(kPreferred)) {
      Path::Key k(at, kPreferred);
      fail_at(pref, at,
              "preferences are not supported: gpuq honours only "
              "requiredDuringSchedulingIgnoredDuringExecution; "
              "remove this key");
    }
    for_each_key(
        na, at, {"requiredDuringSchedulingIgnoredDuringExecution"},
        [&](std::string_view, yaml::Node req) {
          for_each_key(req, at, {"nodeSelectorTerms"}, [&](std::string_view, yaml::Node list) {
            expect_list(list, at);
            // No term would mean "any node" here but "no node" to Kubernetes: refused, not guessed.
            if (list.size() == 0)
              fail_at(list, at, "is empty; list at least one term, or leave out nodeAffinity");
            terms = read_terms(list, at, /*kubernetes=*/true);
          });
          require(req, at, {"nodeSelectorTerms"});
        });
  });
  return terms;
}

Toleration read_toleration(yaml::Node n, Path& at) {
  Toleration t;
  for_each_key(
      n, at, {"key", "operator", "value", "effect"}, [&](std::string_view key, yaml::Node v) {
        if (key == "key") {
          t.key = string_of(v, at);
        } else if (key == "operator") {
          const std::string_view op = text_of(v, at);
          if (op != "Equal" && op != "Exists")
            fail_at(v, at, quoted(op) + " is not allowed; use one of Equal, Exists");
          t.exists = op == "Exists";
        } else if (key == "value") {
          t.value = string_of(v, at);
        } else if (!text_of(v, at).empty()) {  // effect; empty, as in Kubernetes: every effect
          t.effect = enum_of<TaintEffect>(v, at);
        }
      });
  located(n, at, [&] { check_toleration(t, at); });
  return t;
}

Taint read_taint(yaml::Node n, Path& at) {
  Taint t;
  for_each_key(n, at, {"key", "value", "effect"}, [&](std::string_view key, yaml::Node v) {
    if (key == "key")
      t.key = string_of(v, at);
    else if (key == "value")
      t.value = string_of(v, at);
    else
      t.effect = enum_of<TaintEffect>(v, at);
  });
  require(n, at, {"key", "effect"});
  located(n, at, [&] { check_taint(t, at); });
  return t;
}

}  // namespace

std::map<std::string, std::string> read_node_selector(yaml::Node n, Path& at) {
  auto selector = string_map_of(n, at, limits::kNodeSelector, "pairs");
  located(n, at, [&] { check_node_selector(selector, at); });
  return selector;
}

std::vector<std::vector<NodeRequirement>> read_affinity(yaml::Node n, Path& at) {
  if (n.is_list()) return read_terms(n, at, /*kubernetes=*/false);
  if (n.is_map()) return read_kubernetes_affinity(n, at);
  fail_at(n, at,
          "expected a list of terms such as [[{key: zone, operator: In, values: [z1]}]], or "
          "Kubernetes' "
          "{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: ...}}, got " +
              n.shown());
}

std::vector<Toleration> read_tolerations(yaml::Node n, Path& at) {
  expect_list(n, at);
  located(n, at, [&] { check_count(n.size(), limits::kTolerations, "tolerations", at); });
  std::vector<Toleration> out;
  out.reserve(n.size());
  for (std::size_t i = 0; i < n.size(); ++i) {
    Path::Index ti(at, i);
    out.push_back(read_toleration(n.item(i), at));
  }
  return out;
}

std::vector<Taint> read_taints(yaml::Node n, Path& at) {
  expect_list(n, at);
  located(n, at, [&] { check_count(n.size(), limits::kTaints, "taints", at); });
  std::vector<Taint> out;
  out.reserve(n.size());
  for (std::size_t i = 0; i < n.size(); ++i) {
    Path::Index ti(at, i);
    out.push_back(read_taint(n.item(i), at));
  }
  located(n, at, [&] { check_taints(out, at); });  // a (key, effect) listed twice
  return out;
}

}  // namespace gpuq::spec
