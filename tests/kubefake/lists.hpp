#pragma once
// Reading collections: list (selectors, limit and continue tokens served from a consistent
// snapshot, 410 when that snapshot was compacted), watch (from a resourceVersion, from now with
// synthetic ADDED events, 410 as an ERROR event when too old), and deletecollection.
#include <map>
#include <string>
#include <string_view>

#include "tests/kubefake/api.hpp"
#include "tests/kubefake/registry.hpp"
#include "tests/kubefake/resources.hpp"
#include "tests/kubefake/store.hpp"

namespace gpuq::kubefake {

// A URL query (percent-decoded, '+' as space, as Go's url.ParseQuery).
class Query {
 public:
  explicit Query(std::string_view raw);
  std::string get(std::string_view key) const;  // "" when absent
  bool flag(std::string_view key) const;        // true as Go's strconv.ParseBool reads it

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

ApiResponse list_response(Store& store, const ResourceType& type, const std::string& ns,
                          const Query& q, const std::string& accept);
ApiResponse watch_response(Store& store, const ResourceType& type, const std::string& ns,
                           const std::string& name, const Query& q);
ApiResponse delete_collection(Store& store, const ResourceType& type, const std::string& ns,
                              const Query& q, const DeleteOptions& options);

}  // namespace gpuq::kubefake
