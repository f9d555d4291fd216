#pragma once
// Server-side printing: kubectl's human-readable `get` asks for a meta.k8s.io/v1 Table
// (Accept: application/json;as=Table;v=v1;g=meta.k8s.io) and prints its columns. Pods and nodes
// get the real server's main columns; other resources Name and Age.
#include <boost/json.hpp>
#include <string>
#include <vector>

#include "tests/kubefake/resources.hpp"
#include "tests/kubefake/store.hpp"

namespace gpuq::kubefake {

bool wants_table(const std::string& accept);
// includeObject: "None", "Object", or "Metadata" (the default: PartialObjectMetadata).
boost::json::object to_table(const ResourceType& type, const std::vector<ObjectPtr>& objects,
                             boost::json::object list_meta, const std::string& include_object);

}  // namespace gpuq::kubefake
