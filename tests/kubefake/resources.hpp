#pragma once
// The resources the fake serves and the discovery documents that describe them (/version, /api,
// /apis, /api/v1, /apis/GROUP/VERSION), as kubectl and client libraries read them.
#include <boost/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tests/kubefake/status.hpp"

namespace gpuq::kubefake {

struct ResourceType {
  std::string name;  // plural, as in URLs
  std::string singular;
  std::string kind;
  std::string group;
  std::string version;
  bool namespaced = true;
  // Whether a status subresource exists: then the main resource's writes keep the old status
  // and /status writes change only the status.
  bool has_status = false;
  std::vector<std::string> short_names;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  std::string list_kind() const { return kind + "List"; }
  GroupResource group_resource() const { return {group, name}; }
};

std::span<const ResourceType> all_resources();
// The resource `name` of `group`/`version`; nullptr when the fake has none.
const ResourceType* find_resource(std::string_view group, std::string_view version,
                                  std::string_view name);
// By plural name alone (unique among the fake's resources); nullptr when none.
const ResourceType* find_resource(std::string_view name);
const ResourceType& resource(std::string_view name);  // one that exists

boost::json::object version_info();
boost::json::object api_versions();    // GET /api
boost::json::object api_group_list();  // GET /apis
// GET /api/v1 or /apis/GROUP/VERSION; nullopt for a group version the fake does not serve.
std::optional<boost::json::object> api_resource_list(std::string_view group,
                                                     std::string_view version);

}  // namespace gpuq::kubefake
