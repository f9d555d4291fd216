#include "spec/constraints.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <utility>

namespace gpuq::spec {
namespace {

bool as_int(const std::string& s, std::int64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace

bool matches(const NodeRequirement& r, const std::map<std::string, std::string>& labels) {
  const auto it = labels.find(r.key);
  const bool has = it != labels.end();
  auto in_values = [&] { return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end(); };
  switch (r.op) {
    case LabelOperator::kIn: return in_values();
    case LabelOperator::kNotIn: return !in_values();
    case LabelOperator::kExists: return has;
    case LabelOperator::kDoesNotExist: return !has;
    case LabelOperator::kGt:
    case LabelOperator::kLt: {
      std::int64_t have = 0, want = 0;
      if (!has || r.values.size() != 1 || !as_int(it->second, have) || !as_int(r.values[0], want)) return false;
      return r.op == LabelOperator::kGt ? have > want : have < want;
    }
  }
  return false;
}

bool tolerates(const Toleration& t, const Taint& taint) {
  if (t.effect && *t.effect != taint.effect) return false;
  if (t.exists) return t.key.empty() || t.key == taint.key;
  return t.key == taint.key && t.value == taint.value;
}

const Taint* untolerated(const NodeConstraints& c, const std::vector<Taint>& taints) {
  for (const Taint& taint : taints) {
    if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
    if (std::none_of(c.tolerations.begin(), c.tolerations.end(),
                     [&](const Toleration& t) { return tolerates(t, taint); }))
      return &taint;
  }
  return nullptr;
}

bool allows(const NodeConstraints& c, const std::map<std::string, std::string>& labels,
            const std::vector<Taint>& taints) {
  for (const auto& [k, v] : c.node_selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  if (!c.affinity.empty()) {
    const bool any = std::any_of(c.affinity.begin(), c.affinity.end(), [&](const std::vector<NodeRequirement>& term) {
      return !term.empty() &&
             std::all_of(term.begin(), term.end(), [&](const NodeRequirement& r) { return matches(r, labels); });
    });
    if (!any) return false;
  }
  return untolerated(c, taints) == nullptr;
}

NodeConstraints merged(const NodeConstraints& job, NodeConstraints pod_set) {
  NodeConstraints out = job;
  for (auto& [k, v] : pod_set.node_selector) out.node_selector[k] = std::move(v);
  if (!pod_set.affinity.empty()) out.affinity = std::move(pod_set.affinity);
  out.tolerations.insert(out.tolerations.end(),
                         std::make_move_iterator(pod_set.tolerations.begin()),
                         std::make_move_iterator(pod_set.tolerations.end()));
  return out;
}

void require_gpu_models(NodeConstraints& c, const std::vector<std::string>& models) {
  if (models.empty()) return;
  const NodeRequirement model{kGpuModelLabel, LabelOperator::kIn, models};
  if (c.affinity.empty()) c.affinity.emplace_back();
  for (auto& term : c.affinity) term.push_back(model);
}

}  // namespace gpuq::spec
