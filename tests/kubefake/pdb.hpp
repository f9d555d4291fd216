#pragma once
// PodDisruptionBudgets: the disruption controller's status (expectedPods, desiredHealthy,
// currentHealthy, disruptionsAllowed), kept current in the same transaction as every pod or
// budget change, and the Eviction API that consults it.
#include <boost/json.hpp>

#include "tests/kubefake/store.hpp"

namespace gpuq::kubefake {

// A commit hook: recomputes the budgets of every namespace whose pods or budgets changed.
void refresh_budgets(Store::Txn& txn);

// POST .../pods/NAME/eviction with a policy/v1 Eviction: 429 when the pod's budget allows no
// disruption, else the pod is deleted as DELETE would (gracefully when on a node) and the
// budget's disruptionsAllowed goes down by one.
void evict_pod(Store::Txn& txn, const ObjectKey& key, const json::object& eviction);

}  // namespace gpuq::kubefake
