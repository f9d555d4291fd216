#include "tests/kubefake/patch.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/kubefake/status.hpp"

namespace gpuq::kubefake {

namespace json = boost::json;

// --- RFC 7386 ---

json::value merge_patch(const json::value& target, const json::value& patch) {
  if (!patch.is_object()) return patch;
  json::object out = target.is_object() ? target.get_object() : json::object();
  for (const auto& kv : patch.get_object()) {
    if (kv.value().is_null()) {
      out.erase(kv.key());
    } else {
      const json::value* cur = out.if_contains(kv.key());
      out[kv.key()] = merge_patch(cur == nullptr ? json::value() : *cur, kv.value());
    }
  }
  return out;
}

// --- strategic merge ---

namespace {

// The patch merge keys of the Go types, by resource and dotted path ("" = a list of scalars
// merged as a set). Lists not named here are replaced whole.
std::optional<std::string> merge_key(std::string_view resource, const std::string& path) {
  static const std::map<std::string, std::string, std::less<>> common = {
      {"metadata.ownerReferences", "uid"}, {"metadata.finalizers", ""}};
  static const std::map<std::string, std::string, std::less<>> pods = {
      {"spec.volumes", "name"},        {"spec.imagePullSecrets", "name"},
      {"spec.hostAliases", "ip"},      {"spec.schedulingGates", "name"},
      {"spec.resourceClaims", "name"}, {"status.conditions", "type"},
      {"status.podIPs", "ip"},         {"status.hostIPs", "ip"},
  };
  static const std::map<std::string, std::string, std::less<>> container = {
      {"", "name"},
      {".ports", "containerPort"},
      {".env", "name"},
      {".volumeMounts", "mountPath"},
      {".volumeDevices", "devicePath"}};
  static const std::map<std::string, std::string, std::less<>> nodes = {
      {"status.conditions", "type"}, {"status.addresses", "type"}, {"spec.podCIDRs", ""}};
  if (auto it = common.find(path); it != common.end()) return it->second;
  if (resource == "pods") {
    if (auto it = pods.find(path); it != pods.end()) return it->second;
    for (std::string_view list :
         {"spec.containers", "spec.initContainers", "spec.ephemeralContainers"}) {
      if (path.rfind(list, 0) == 0) {
        if (auto it = container.find(path.substr(list.size())); it != container.end())
          return it->second;
      }
    }
  } else if (resource == "nodes") {
    if (auto it = nodes.find(path); it != nodes.end()) return it->second;
  } else if (resource == "poddisruptionbudgets" || resource == "namespaces") {
    if (path == "status.conditions") return "type";
  }
  return std::nullopt;
}

bool directive(std::string_view key) {
  return key == "$patch" || key == "$retainKeys" || key.rfind("$setElementOrder/", 0) == 0 ||
         key.rfind("$deleteFromPrimitiveList/", 0) == 0;
}

json::value strip(const json::value& v) {
  if (v.is_array()) {
    json::array a;
    for (const auto& e : v.get_array()) a.push_back(strip(e));
    return a;
  }
  if (!v.is_object()) return v;
  json::object o;
  for (const auto& kv : v.get_object()) {
    if (!directive(kv.key())) o[kv.key()] = strip(kv.value());
  }
  return o;
}

std::string patch_directive(const json::value& v) {
  const json::object* o = v.if_object();
  const json::value* d = o == nullptr ? nullptr : o->if_contains("$patch");
  return d != nullptr && d->is_string() ? std::string(d->get_string().c_str()) : std::string();
}

struct Smp {
  std::string_view resource;

  // Returns null when the patch deletes the map ($patch: delete).
  json::value map(const json::value& target, const json::object& patch, const std::string& path) {
    std::string d = patch_directive(patch);
    if (d == "replace") return strip(patch);
    if (d == "delete") return nullptr;
    json::object out = target.is_object() ? target.get_object() : json::object();
    for (const auto& kv : patch) {
      std::string_view key = kv.key();
      std::string sub = path.empty() ? std::string(key) : path + "." + std::string(key);
      if (key.rfind("$deleteFromPrimitiveList/", 0) == 0) {
        remove_values(out, key.substr(std::string_view("$deleteFromPrimitiveList/").size()),
                      kv.value());
      } else if (directive(key)) {
        continue;
      } else if (kv.value().is_null()) {
        out.erase(kv.key());
      } else if (kv.value().is_object()) {
        const json::value* cur = out.if_contains(kv.key());
        json::value r = map(cur == nullptr ? json::value() : *cur, kv.value().get_object(), sub);
        if (r.is_null()) {
          out.erase(kv.key());
        } else {
          out[kv.key()] = std::move(r);
        }
      } else if (kv.value().is_array()) {
        const json::value* cur = out.if_contains(kv.key());
        auto mk = merge_key(resource, sub);
        out[kv.key()] = mk && cur != nullptr && cur->is_array()
                            ? json::value(list(cur->get_array(), kv.value().get_array(), *mk, sub))
                            : strip(kv.value());
      } else {
        out[kv.key()] = kv.value();
      }
    }
    retain(out, patch);
    return out;
  }

  static void remove_values(json::object& out, std::string_view key, const json::value& values) {
    json::value* cur = out.if_contains(json::string_view(key.data(), key.size()));
    if (cur == nullptr || !cur->is_array() || !values.is_array()) return;
    json::array& a = cur->get_array();
    const json::array& gone = values.get_array();
    json::array kept;
    for (const auto& v : a) {
      if (std::find(gone.begin(), gone.end(), v) == gone.end()) kept.push_back(v);
    }
    a = std::move(kept);
  }

  static void retain(json::object& out, const json::object& patch) {
    const json::value* keep = patch.if_contains("$retainKeys");
    if (keep == nullptr || !keep->is_array()) return;
    const json::array& k = keep->get_array();
    std::vector<std::string> drop;
    for (const auto& kv : out) {
      if (std::find(k.begin(), k.end(), json::value(kv.key())) == k.end())
        drop.emplace_back(kv.key());
    }
    for (const auto& d : drop) out.erase(d);
  }

  json::array list(const json::array& target, const json::array& patch, const std::string& key,
                   const std::string& path) {
    if (key.empty()) {  // a set of scalars
      json::array out = target;
      for (const auto& v : patch) {
        if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
      }
      return out;
    }
    bool replace = std::any_of(patch.begin(), patch.end(), [](const json::value& v) {
      return patch_directive(v) == "replace";
    });
    json::array out;
    if (!replace) out = target;
    for (const auto& p : patch) {
      const json::object* po = p.if_object();
      if (po == nullptr || !po->contains(key)) {
        if (patch_directive(p) != "replace") out.push_back(strip(p));
        continue;
      }
      const json::value& id = po->at(key);
      auto same = [&](const json::value& e) {
        const json::object* eo = e.if_object();
        return eo != nullptr && eo->contains(key) && eo->at(key) == id;
      };
      auto it = std::find_if(out.begin(), out.end(), same);
      if (patch_directive(p) == "delete") {
        if (it != out.end()) out.erase(it);
      } else if (it != out.end()) {
        *it = map(*it, *po, path);
      } else {
        out.push_back(strip(p));
      }
    }
    return out;
  }
};

// --- RFC 6902 ---

std::vector<std::string> pointer(const std::string& p) {
  if (p.empty()) return {};
  if (p.front() != '/') throw bad_request("JSON pointer \"" + p + "\" must start with '/'");
  std::vector<std::string> out;
  std::size_t start = 1;
  for (;;) {
    std::size_t slash = p.find('/', start);
    std::string t = p.substr(start, slash == std::string::npos ? slash : slash - start);
    std::string u;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '~' && i + 1 < t.size() && (t[i + 1] == '0' || t[i + 1] == '1')) {
        u.push_back(t[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        u.push_back(t[i]);
      }
    }
    out.push_back(std::move(u));
    if (slash == std::string::npos) return out;
    start = slash + 1;
  }
}

[[noreturn]] void cannot(const std::string& op, const std::string& path, const std::string& why) {
  throw unprocessable(op + " operation does not apply: doc is missing " + why + ": \"" + path +
                      "\"");
}

std::optional<std::size_t> index_of(const std::string& token, std::size_t size, bool append_ok) {
  if (append_ok && token == "-") return size;
  std::size_t n = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), n);
  if (ec != std::errc() || p != token.data() + token.size() || token.empty()) return std::nullopt;
  if (token.size() > 1 && token.front() == '0') return std::nullopt;
  if (n > size || (!append_ok && n == size)) return std::nullopt;
  return n;
}

// The value at `path`'s parent; throws when a step is missing.
json::value& parent_of(json::value& doc, const std::vector<std::string>& tokens,
                       const std::string& op, const std::string& path) {
  json::value* at = &doc;
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (json::object* o = at->if_object()) {
      at = o->if_contains(tokens[i]);
    } else if (json::array* a = at->if_array()) {
      auto idx = index_of(tokens[i], a->size(), false);
      at = idx ? &(*a)[*idx] : nullptr;
    } else {
      at = nullptr;
    }
    if (at == nullptr) cannot(op, path, "path");
  }
  return *at;
}

json::value get(json::value& doc, const std::string& path, const std::string& op) {
  auto tokens = pointer(path);
  if (tokens.empty()) return doc;
  json::value& parent = parent_of(doc, tokens, op, path);
  if (json::object* o = parent.if_object()) {
    if (json::value* v = o->if_contains(tokens.back())) return *v;
  } else if (json::array* a = parent.if_array()) {
    if (auto idx = index_of(tokens.back(), a->size(), false)) return (*a)[*idx];
  }
  cannot(op, path, "key");
}

void add(json::value& doc, const std::string& path, json::value v, const std::string& op) {
  auto tokens = pointer(path);
  if (tokens.empty()) {
    doc = std::move(v);
    return;
  }
  json::value& parent = parent_of(doc, tokens, op, path);
  if (json::object* o = parent.if_object()) {
    (*o)[tokens.back()] = std::move(v);
  } else if (json::array* a = parent.if_array()) {
    auto idx = index_of(tokens.back(), a->size(), true);
    if (!idx) cannot(op, path, "index");
    a->insert(a->begin() + static_cast<std::ptrdiff_t>(*idx), std::move(v));
  } else {
    cannot(op, path, "path");
  }
}

void remove(json::value& doc, const std::string& path, const std::string& op) {
  auto tokens = pointer(path);
  if (tokens.empty()) cannot(op, path, "path");
  json::value& parent = parent_of(doc, tokens, op, path);
  if (json::object* o = parent.if_object()) {
    if (o->erase(tokens.back()) == 0) cannot(op, path, "key");
  } else if (json::array* a = parent.if_array()) {
    auto idx = index_of(tokens.back(), a->size(), false);
    if (!idx) cannot(op, path, "index");
    a->erase(a->begin() + static_cast<std::ptrdiff_t>(*idx));
  } else {
    cannot(op, path, "path");
  }
}

std::string member(const json::object& op, const char* key, bool required) {
  const json::value* v = op.if_contains(key);
  if (v == nullptr || !v->is_string()) {
    if (required) throw bad_request(std::string("json patch operation is missing \"") + key + "\"");
    return {};
  }
  return std::string(v->get_string().c_str());
}

void apply(json::value& doc, const json::object& o) {
  std::string op = member(o, "op", true);
  std::string path = member(o, "path", true);
  const json::value* value = o.if_contains("value");
  auto need_value = [&]() -> const json::value& {
    if (value == nullptr) throw bad_request(op + " operation is missing \"value\"");
    return *value;
  };
  if (op == "add") {
    add(doc, path, need_value(), op);
  } else if (op == "remove") {
    remove(doc, path, op);
  } else if (op == "replace") {
    get(doc, path, op);  // must exist
    remove(doc, path, op);
    add(doc, path, need_value(), op);
  } else if (op == "move" || op == "copy") {
    std::string from = member(o, "from", true);
    json::value v = get(doc, from, op);
    if (op == "move") remove(doc, from, op);
    add(doc, path, std::move(v), op);
  } else if (op == "test") {
    if (get(doc, path, op) != need_value()) {
      throw unprocessable("testing value " + path + " failed: test failed");
    }
  } else {
    throw bad_request("Unexpected kind: " + op);
  }
}

}  // namespace

json::value strategic_merge_patch(const json::value& target, const json::value& patch,
                                  std::string_view resource) {
  if (!patch.is_object()) throw bad_request("a strategic merge patch must be a JSON object");
  json::value r = Smp{resource}.map(target, patch.get_object(), "");
  return r.is_null() ? json::value(json::object()) : r;
}

json::value json_patch(const json::value& target, const json::value& operations) {
  if (!operations.is_array()) {
    throw bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  }
  json::value doc = target;
  for (const auto& op : operations.get_array()) {
    if (!op.is_object()) throw bad_request("a json patch operation must be an object");
    apply(doc, op.get_object());
  }
  return doc;
}

}  // namespace gpuq::kubefake
