#pragma once
// The three PATCH content types the API server takes:
//   application/merge-patch+json           RFC 7386
//   application/strategic-merge-patch+json maps merge; lists that carry a patch merge key in the
//                                          Go types (pod status.conditions by type, containers
//                                          by name, ...) merge by it; other lists are replaced;
//                                          $patch, $retainKeys, $deleteFromPrimitiveList/ and
//                                          $setElementOrder/ directives
//   application/json-patch+json            RFC 6902 (add, remove, replace, move, copy, test)
// A patch that cannot apply throws ApiError (422 Invalid; 400 BadRequest when malformed).
#include <boost/json.hpp>
#include <string_view>

namespace gpuq::kubefake {

boost::json::value merge_patch(const boost::json::value& target, const boost::json::value& patch);
boost::json::value strategic_merge_patch(const boost::json::value& target,
                                         const boost::json::value& patch,
                                         std::string_view resource);
boost::json::value json_patch(const boost::json::value& target,
                              const boost::json::value& operations);

}  // namespace gpuq::kubefake
