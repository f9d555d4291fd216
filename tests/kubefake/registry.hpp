#pragma once
// The generic object semantics of the API server over the store (k8s.io/apiserver's
// registry/generic): what create, update, patch and delete do to metadata (uid,
// creationTimestamp, generateName, generation, resourceVersion preconditions, finalizers,
// deletion), status subresources, no-op writes (no new resourceVersion), and the per-kind rules
// that pods.cpp and pdb.cpp add.
#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "tests/kubefake/resources.hpp"
#include "tests/kubefake/store.hpp"

namespace gpuq::kubefake {

struct DeleteOptions {
  std::optional<std::int64_t> grace_period;
  std::string uid;               // preconditions.uid
  std::string resource_version;  // preconditions.resourceVersion
};
// From a DeleteOptions body (may be empty) and the gracePeriodSeconds query parameter.
DeleteOptions parse_delete_options(std::string_view body, std::string_view grace_query);

struct Deletion {
  ObjectPtr object;  // as after the call (with a deletionTimestamp when not gone yet)
  bool gone = false;
};

// Every function runs inside the caller's transaction and throws ApiError as the real server
// refuses. `ns` is the URL's namespace ("" for cluster-scoped resources).
ObjectPtr create_object(Store::Txn& txn, const ResourceType& type, const std::string& ns,
                        json::object object);
// PUT (status: the /status subresource).
ObjectPtr update_object(Store::Txn& txn, const ResourceType& type, const ObjectKey& key,
                        json::object object, bool status);
// PATCH with one of the three patch content types.
ObjectPtr patch_object(Store::Txn& txn, const ResourceType& type, const ObjectKey& key,
                       std::string_view content_type, const json::value& patch, bool status);
Deletion delete_object(Store::Txn& txn, const ResourceType& type, const ObjectKey& key,
                       const DeleteOptions& options);
// Writes `next` over `old` as an update would: nothing when nothing changed, removal when a
// deleted object lost its last finalizer.
ObjectPtr write_object(Store::Txn& txn, const ResourceType& type, const ObjectPtr& old,
                       json::object next);

}  // namespace gpuq::kubefake
