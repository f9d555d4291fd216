#pragma once
// The names of the spec's enums: one table each, used by every front end to read them (YAML,
// the API), by the API and the CLI to show them, and by storage to write them (by name, so
// reordering an enum never changes what a stored file means).
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "spec/types.hpp"

namespace gpuq {

const char* to_string(NodeState s);
const char* to_string(QueueingStrategy s);
const char* to_string(PlacementPolicy p);
const char* to_string(NodeLossPolicy p);
const char* to_string(WithinQueuePolicy p);
const char* to_string(ReclaimPolicy p);
const char* to_string(BorrowWithinCohortPolicy p);
const char* to_string(FairShareStrategy s);
const char* to_string(LabelOperator o);
const char* to_string(TaintEffect e);

}  // namespace gpuq

namespace gpuq::spec {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// Every value of E with its name, in declaration order.
template <class E>
std::span<const EnumName<E>> enum_names();

template <>
std::span<const EnumName<NodeState>> enum_names<NodeState>();
template <>
std::span<const EnumName<QueueingStrategy>> enum_names<QueueingStrategy>();
template <>
std::span<const EnumName<PlacementPolicy>> enum_names<PlacementPolicy>();
template <>
std::span<const EnumName<NodeLossPolicy>> enum_names<NodeLossPolicy>();
template <>
std::span<const EnumName<WithinQueuePolicy>> enum_names<WithinQueuePolicy>();
template <>
std::span<const EnumName<ReclaimPolicy>> enum_names<ReclaimPolicy>();
template <>
std::span<const EnumName<BorrowWithinCohortPolicy>> enum_names<BorrowWithinCohortPolicy>();
template <>
std::span<const EnumName<FairShareStrategy>> enum_names<FairShareStrategy>();
template <>
std::span<const EnumName<LabelOperator>> enum_names<LabelOperator>();
template <>
std::span<const EnumName<TaintEffect>> enum_names<TaintEffect>();

template <class E>
std::optional<E> enum_from(std::string_view name) {
  for (const auto& n : enum_names<E>())
    if (name == n.name) return n.value;
  return std::nullopt;
}

template <class E>
std::vector<std::string_view> enum_words() {
  std::vector<std::string_view> out;
  for (const auto& n : enum_names<E>()) out.emplace_back(n.name);
  return out;
}

}  // namespace gpuq::spec
