#include "tests/kubefake/api.hpp"

#include <charconv>
#include <map>
#include <vector>

#include "tests/kubefake/lists.hpp"
#include "tests/kubefake/meta.hpp"
#include "tests/kubefake/pdb.hpp"
#include "tests/kubefake/pods.hpp"
#include "tests/kubefake/registry.hpp"
#include "tests/kubefake/resources.hpp"
#include "tests/kubefake/table.hpp"

namespace gpuq::kubefake {

namespace {

struct Route {
  const ResourceType* type = nullptr;
  std::string ns;
  std::string name;
  std::string sub;
  bool watch_path = false;  // the legacy /watch/ prefix
};

std::vector<std::string> segments(std::string_view path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

ApiResponse json_response(int status, const json::object& body) {
  ApiResponse r;
  r.status = status;
  r.body = json::serialize(body);
  return r;
}

// Discovery documents; nullopt when `segs` is not a discovery path.
std::optional<ApiResponse> discovery(const std::vector<std::string>& segs) {
  if (segs.size() == 1 && segs[0] == "version") return json_response(200, version_info());
  if (segs.size() == 1 && segs[0] == "api") return json_response(200, api_versions());
  if (segs.size() == 1 && segs[0] == "apis") return json_response(200, api_group_list());
  if (segs.size() == 2 && segs[0] == "openapi" && segs[1] == "v2") {
    // An empty OpenAPI v2 document (a valid, empty protobuf message): kubectl's client-side
    // validation finds no schema and skips itself instead of failing `create -f`.
    return ApiResponse{200, "", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", 0,
                       std::nullopt};
  }
  std::optional<json::object> list;
  if (segs.size() == 2 && segs[0] == "api") list = api_resource_list("", segs[1]);
  if (segs.size() == 3 && segs[0] == "apis") list = api_resource_list(segs[1], segs[2]);
  if (segs.size() == 2 && segs[0] == "apis") {
    for (const json::value& g : api_group_list()["groups"].get_array()) {
      if (string_at(g.get_object(), {"name"}) != segs[1]) continue;
      json::object group = g.get_object();
      group["kind"] = "APIGroup";
      group["apiVersion"] = "v1";
      return json_response(200, group);
    }
    throw resource_not_found();
  }
  if (list) return json_response(200, *list);
  if ((segs.size() == 2 && segs[0] == "api") || (segs.size() == 3 && segs[0] == "apis")) {
    throw resource_not_found();
  }
  return std::nullopt;
}

Route route(const std::vector<std::string>& segs) {
  std::string group;
  std::string version;
  std::size_t at = 0;
  if (segs.size() >= 2 && segs[0] == "api") {
    version = segs[1];
    at = 2;
  } else if (segs.size() >= 3 && segs[0] == "apis") {
    group = segs[1];
    version = segs[2];
    at = 3;
  } else {
    throw resource_not_found();
  }
  std::vector<std::string> rest(segs.begin() + static_cast<std::ptrdiff_t>(at), segs.end());
  Route r;
  if (!rest.empty() && rest[0] == "watch") {
    r.watch_path = true;
    rest.erase(rest.begin());
  }
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    const ResourceType* t = find_resource(group, version, rest[2]);
    if (t != nullptr && t->namespaced) {
      r.ns = rest[1];
      rest.erase(rest.begin(), rest.begin() + 2);
    }
  }
  if (rest.empty() || rest.size() > 3) throw resource_not_found();
  r.type = find_resource(group, version, rest[0]);
  if (r.type == nullptr) throw resource_not_found();
  if (rest.size() > 1) r.name = rest[1];
  if (rest.size() > 2) r.sub = rest[2];
  // A namespaced object is addressed only under its namespace.
  if (r.type->namespaced && r.ns.empty() && !r.name.empty()) throw resource_not_found();
  bool sub_ok = r.sub.empty() || (r.sub == "status" && r.type->has_status) ||
                (r.type->name == "pods" && (r.sub == "binding" || r.sub == "eviction"));
  if (!sub_ok) throw resource_not_found();
  return r;
}

std::string verb_of(const ApiRequest& req, const Route& r, const Query& q) {
  const std::string& m = req.method;
  if (m == "GET") {
    if (r.watch_path || q.flag("watch")) return "watch";
    return r.name.empty() ? "list" : "get";
  }
  if (m == "POST") return "create";
  if (m == "PUT") return "update";
  if (m == "PATCH") return "patch";
  if (m == "DELETE") return r.name.empty() ? "deletecollection" : "delete";
  return "unknown";
}

json::object body_object(const ApiRequest& req) {
  std::string_view ct = std::string_view(req.content_type).substr(0, req.content_type.find(';'));
  if (req.method != "PATCH" && !ct.empty() && ct != "application/json" && ct != "*/*") {
    throw unsupported_media_type(
        "application/json, application/yaml, application/vnd.kubernetes.protobuf");
  }
  boost::system::error_code ec;
  json::value v = json::parse(req.body, ec);
  if (ec)
    throw bad_request("the body of the request could not be decoded as JSON: " + ec.message());
  if (!v.is_object()) throw bad_request("the body of the request must be a JSON object");
  return std::move(v.get_object());
}

json::value body_value(const ApiRequest& req) {
  boost::system::error_code ec;
  json::value v = json::parse(req.body, ec);
  if (ec)
    throw bad_request("the body of the request could not be decoded as JSON: " + ec.message());
  return v;
}

ApiResponse object_response(int status, const ObjectPtr& o) { return json_response(status, *o); }

ApiResponse post(Store& store, const ApiRequest& req, const Route& r) {
  const ResourceType& t = *r.type;
  if (t.name == "pods" && r.sub == "binding") {
    json::object b = body_object(req);
    store.transact([&](Store::Txn& txn) { bind_pod(txn, {r.ns, r.name}, b); });
    return json_response(201, success_body(201));
  }
  if (t.name == "bindings" && r.name.empty()) {  // the older POST .../namespaces/NS/bindings
    json::object b = body_object(req);
    std::string pod = string_at(b, {"metadata", "name"});
    store.transact([&](Store::Txn& txn) { bind_pod(txn, {r.ns, pod}, b); });
    return json_response(201, success_body(201));
  }
  if (t.name == "pods" && r.sub == "eviction") {
    json::object e = body_object(req);
    std::string v = string_at(e, {"apiVersion"});
    if (!v.empty() && v != "policy/v1" && v != "policy/v1beta1") {
      throw bad_request("the API version in the data (" + v +
                        ") does not match the expected API version (policy/v1)");
    }
    store.transact([&](Store::Txn& txn) { evict_pod(txn, {r.ns, r.name}, e); });
    return json_response(201, success_body(201));
  }
  if (!r.name.empty()) throw method_not_allowed();
  json::object o = body_object(req);
  return object_response(201, store.transact([&](Store::Txn& txn) {
    return create_object(txn, t, r.ns, std::move(o));
  }));
}

ApiResponse remove(Store& store, const ApiRequest& req, const Route& r, const Query& q) {
  const ResourceType& t = *r.type;
  if (!r.sub.empty()) throw method_not_allowed();
  DeleteOptions options = parse_delete_options(req.body, q.get("gracePeriodSeconds"));
  if (r.name.empty()) return delete_collection(store, t, r.ns, q, options);
  Deletion d = store.transact([&](Store::Txn& txn) {
    return delete_object(txn, t, {r.ns, r.name}, options);
  });
  // Pods (ReturnDeletedObject) and namespaces answer with the object; the rest with a Status.
  if (t.name == "pods" || t.name == "namespaces" || !d.gone) return object_response(200, d.object);
  json::object details{{"name", r.name}};
  if (!t.group.empty()) details["group"] = t.group;
  details["kind"] = t.name;
  details["uid"] = string_at(*d.object, {"metadata", "uid"});
  return json_response(200, success_body(0, std::move(details)));
}

ApiResponse handle(Store& store, const ApiRequest& req, const Route& r, const Query& q) {
  const ResourceType& t = *r.type;
  std::string verb = verb_of(req, r, q);
  if (req.forbidden) {
    throw forbidden(req.user, verb, t.group_resource(), r.sub, r.ns, r.name);
  }
  if (t.name == "bindings" && verb != "create") throw method_not_allowed();
  if (verb == "watch") return watch_response(store, t, r.ns, r.name, q);
  if (verb == "list") return list_response(store, t, r.ns, q, req.accept);
  if (verb == "get") {
    if (!r.sub.empty() && r.sub != "status") throw method_not_allowed();
    ObjectPtr o = store.transact([&](Store::Txn& txn) { return txn.get(t.name, {r.ns, r.name}); });
    if (!o) throw not_found(t.group_resource(), r.name);
    if (wants_table(req.accept)) {
      return json_response(
          200, to_table(t, {o},
                        json::object{
                            {"resourceVersion", string_at(*o, {"metadata", "resourceVersion"})}},
                        q.get("includeObject")));
    }
    return object_response(200, o);
  }
  if (verb == "create") return post(store, req, r);
  bool status = r.sub == "status";
  if ((verb == "update" || verb == "patch") && !r.sub.empty() && !status)
    throw method_not_allowed();
  if (verb == "update") {
    json::object o = body_object(req);
    return object_response(200, store.transact([&](Store::Txn& txn) {
      return update_object(txn, t, {r.ns, r.name}, std::move(o), status);
    }));
  }
  if (verb == "patch") {
    json::value p = body_value(req);
    return object_response(200, store.transact([&](Store::Txn& txn) {
      return patch_object(txn, t, {r.ns, r.name}, req.content_type, p, status);
    }));
  }
  if (verb == "delete" || verb == "deletecollection") return remove(store, req, r, q);
  throw method_not_allowed();
}

}  // namespace

ApiResponse error_response(const ApiError& e) {
  ApiResponse r = json_response(e.code, status_body(e));
  r.retry_after = e.retry_after;
  return r;
}

ApiResponse Api::serve(const ApiRequest& request) {
  try {
    std::vector<std::string> segs = segments(request.path);
    if (auto d = discovery(segs)) return *d;
    Route r = route(segs);
    Query q(request.query);
    return handle(store_, request, r, q);
  } catch (const ApiError& e) {
    return error_response(e);
  } catch (const std::exception& e) {
    return error_response(internal_error(e.what()));
  }
}

}  // namespace gpuq::kubefake
