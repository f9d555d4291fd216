#include "spec/enums.hpp"

#include <array>

namespace gpuq {
namespace {

template <class E, std::size_t N>
const char* name_in(const std::array<spec::EnumName<E>, N>& table, E value) {
  for (const auto& n : table)
    if (n.value == value) return n.name;
  return "?";
}

constexpr std::array<spec::EnumName<NodeState>, 4> kNodeStates{{{NodeState::kReady, "Ready"},
                                                                {NodeState::kCordoned, "Cordoned"},
                                                                {NodeState::kDraining, "Draining"},
                                                                {NodeState::kDown, "Down"}}};
constexpr std::array<spec::EnumName<QueueingStrategy>, 2> kStrategies{
    {{QueueingStrategy::kBestEffortFIFO, "BestEffortFIFO"},
     {QueueingStrategy::kStrictFIFO, "StrictFIFO"}}};
constexpr std::array<spec::EnumName<PlacementPolicy>, 3> kPlacements{
    {{PlacementPolicy::kPack, "pack"},
     {PlacementPolicy::kSpread, "spread"},
     {PlacementPolicy::kFragAware, "frag-aware"}}};
constexpr std::array<spec::EnumName<NodeLossPolicy>, 2> kNodeLoss{
    {{NodeLossPolicy::kRequeue, "Requeue"}, {NodeLossPolicy::kFail, "Fail"}}};
constexpr std::array<spec::EnumName<WithinQueuePolicy>, 3> kWithinQueue{
    {{WithinQueuePolicy::kNever, "Never"},
     {WithinQueuePolicy::kLowerPriority, "LowerPriority"},
     {WithinQueuePolicy::kLowerOrNewerEqualPriority, "LowerOrNewerEqualPriority"}}};
constexpr std::array<spec::EnumName<ReclaimPolicy>, 3> kReclaim{
    {{ReclaimPolicy::kNever, "Never"},
     {ReclaimPolicy::kLowerPriority, "LowerPriority"},
     {ReclaimPolicy::kAny, "Any"}}};
constexpr std::array<spec::EnumName<BorrowWithinCohortPolicy>, 2> kBorrow{
    {{BorrowWithinCohortPolicy::kNever, "Never"},
     {BorrowWithinCohortPolicy::kLowerPriority, "LowerPriority"}}};
constexpr std::array<spec::EnumName<FairShareStrategy>, 2> kFairShare{
    {{FairShareStrategy::kLessThanOrEqualToFinalShare, "LessThanOrEqualToFinalShare"},
     {FairShareStrategy::kLessThanInitialShare, "LessThanInitialShare"}}};
// Kubernetes' own words (NodeSelectorOperator, TaintEffect).
constexpr std::array<spec::EnumName<LabelOperator>, 6> kLabelOps{{{LabelOperator::kIn, "In"},
                                                                 {LabelOperator::kNotIn, "NotIn"},
                                                                 {LabelOperator::kExists, "Exists"},
                                                                 {LabelOperator::kDoesNotExist, "DoesNotExist"},
                                                                 {LabelOperator::kGt, "Gt"},
                                                                 {LabelOperator::kLt, "Lt"}}};
constexpr std::array<spec::EnumName<TaintEffect>, 3> kTaintEffects{{{TaintEffect::kNoSchedule, "NoSchedule"},
                                                                   {TaintEffect::kPreferNoSchedule, "PreferNoSchedule"},
                                                                   {TaintEffect::kNoExecute, "NoExecute"}}};

}  // namespace

const char* to_string(NodeState s) { return name_in(kNodeStates, s); }
const char* to_string(QueueingStrategy s) { return name_in(kStrategies, s); }
const char* to_string(PlacementPolicy p) { return name_in(kPlacements, p); }
const char* to_string(NodeLossPolicy p) { return name_in(kNodeLoss, p); }
const char* to_string(WithinQueuePolicy p) { return name_in(kWithinQueue, p); }
const char* to_string(ReclaimPolicy p) { return name_in(kReclaim, p); }
const char* to_string(BorrowWithinCohortPolicy p) { return name_in(kBorrow, p); }
const char* to_string(FairShareStrategy s) { return name_in(kFairShare, s); }
const char* to_string(LabelOperator o) { return name_in(kLabelOps, o); }
const char* to_string(TaintEffect e) { return name_in(kTaintEffects, e); }

}  // namespace gpuq

namespace gpuq::spec {

template <>
std::span<const EnumName<NodeState>> enum_names<NodeState>() {
  return kNodeStates;
}
template <>
std::span<const EnumName<QueueingStrategy>> enum_names<QueueingStrategy>() {
  return kStrategies;
}
template <>
std::span<const EnumName<PlacementPolicy>> enum_names<PlacementPolicy>() {
  return kPlacements;
}
template <>
std::span<const EnumName<NodeLossPolicy>> enum_names<NodeLossPolicy>() {
  return kNodeLoss;
}
template <>
std::span<const EnumName<WithinQueuePolicy>> enum_names<WithinQueuePolicy>() {
  return kWithinQueue;
}
template <>
std::span<const EnumName<ReclaimPolicy>> enum_names<ReclaimPolicy>() {
  return kReclaim;
}
template <>
std::span<const EnumName<BorrowWithinCohortPolicy>> enum_names<BorrowWithinCohortPolicy>() {
  return kBorrow;
}
template <>
std::span<const EnumName<FairShareStrategy>> enum_names<FairShareStrategy>() {
  return kFairShare;
}

template <>
std::span<const EnumName<LabelOperator>> enum_names<LabelOperator>() {
  return kLabelOps;
}

template <>
std::span<const EnumName<TaintEffect>> enum_names<TaintEffect>() {
  return kTaintEffects;
}

}  // namespace gpuq::spec
