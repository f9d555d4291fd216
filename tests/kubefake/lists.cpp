#include "tests/kubefake/lists.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "tests/kubefake/meta.hpp"
#include "tests/kubefake/selectors.hpp"
#include "tests/kubefake/table.hpp"

namespace gpuq::kubefake {

namespace {

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() &&
               std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      int v = 0;
      std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      out.push_back(static_cast<char>(v));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

template <class Int>
Int number(const Query& q, const char* key, Int fallback) {
  std::string s = q.get(key);
  if (s.empty()) return fallback;
  Int n{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || p != s.data() + s.size()) {
    throw bad_request(std::string(key) + ": Invalid value: \"" + s + "\": must be an integer");
  }
  return n;
}

// The continue token: base64url of {"v":"meta.k8s.io/v1","rv":N,"start":"KEY\u0000"} as the real
// server encodes it (KEY relative to the list's scope: "name" in a namespace, "ns/name" across
// namespaces). rv -1 means "the latest" (the token a 410 carries).
struct Continue {
  std::int64_t rv = 0;
  ObjectKey after;
};

std::string relative_key(const ObjectKey& k, const std::string& ns) {
  return ns.empty() && !k.ns.empty() ? k.ns + "/" + k.name : k.name;
}

std::string encode_continue(std::int64_t rv, const ObjectKey& last, const std::string& ns) {
  json::object t{{"v", "meta.k8s.io/v1"},
                 {"rv", rv},
                 {"start", relative_key(last, ns) + std::string(1, '\0')}};
  return base64url_encode(json::serialize(t));
}

Continue decode_continue(const std::string& token, const std::string& ns, bool namespaced) {
  std::string raw;
  boost::system::error_code ec;
  json::value v;
  if (base64_decode(token, raw)) v = json::parse(raw, ec);
  if (raw.empty() || ec || !v.is_object() || string_at(v.get_object(), {"v"}) != "meta.k8s.io/v1") {
    throw bad_request(
        "continue key is not valid: incorrect encoded start resourceVersion (version "
        "meta.k8s.io/v1)");
  }
  Continue c;
  c.rv = int_at(v.get_object(), {"rv"}, 0);
  std::string start = string_at(v.get_object(), {"start"});
  if (!start.empty() && start.back() == '\0') start.pop_back();
  if (c.rv == 0 || start.empty()) throw bad_request("continue key is not valid: no start key");
  std::size_t slash = start.find('/');
  if (ns.empty() && namespaced && slash != std::string::npos) {
    c.after = {start.substr(0, slash), start.substr(slash + 1)};
  } else {
    c.after = {ns, start};
  }
  return c;
}

struct Selectors {
  LabelSelector labels;
  FieldSelector fields;
  bool matches(const json::object& o) const {
    return labels.matches_object(o) && fields.matches(o);
  }
  bool empty() const { return labels.empty() && fields.empty(); }
};

Selectors selectors(const Query& q, const ResourceType& type, const std::string& name = "") {
  std::string fs = q.get("fieldSelector");
  if (!name.empty()) fs = "metadata.name=" + name + (fs.empty() ? "" : "," + fs);
  return {LabelSelector::parse(q.get("labelSelector")), FieldSelector::parse(fs, type)};
}

const std::string kInconsistentContinue =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list.";

struct Page {
  json::array items;
  std::vector<ObjectPtr> objects;
  std::uint64_t rv = 0;
  std::string next;
  std::optional<std::int64_t> remaining;
};

Page read_page(Store::Txn& txn, const ResourceType& type, const std::string& ns, const Query& q,
               const Selectors& sel) {
  std::int64_t limit = number<std::int64_t>(q, "limit", 0);
  std::string cont = q.get("continue");
  Page page;
  std::shared_ptr<const std::vector<ObjectPtr>> listed;
  std::optional<Continue> from;
  if (!cont.empty()) from = decode_continue(cont, ns, type.namespaced);
  if (from && from->rv > 0 && static_cast<std::uint64_t>(from->rv) < txn.rv()) {
    auto at = txn.list_at(type.name, ns, static_cast<std::uint64_t>(from->rv));
    if (!at) {
      ApiError e = expired(kInconsistentContinue);
      e.metadata["continue"] = encode_continue(-1, from->after, ns);
      throw e;
    }
    listed = std::make_shared<const std::vector<ObjectPtr>>(std::move(*at));
    page.rv = static_cast<std::uint64_t>(from->rv);
  } else {  // the latest: the same list for every page until something changes
    listed = txn.list_shared(type.name, ns);
    page.rv = from && from->rv > 0 ? static_cast<std::uint64_t>(from->rv) : txn.rv();
  }
  const std::vector<ObjectPtr>& all = *listed;
  std::size_t i = 0;
  auto key = [](const ObjectPtr& o) {
    return ObjectKey{string_at(*o, {"metadata", "namespace"}), string_at(*o, {"metadata", "name"})};
  };
  if (from) {  // the first object after the token's key (`all` is in key order)
    auto after = std::upper_bound(all.begin(), all.end(), from->after,
                                  [&](const ObjectKey& k, const ObjectPtr& o) { return k < key(o); });
    i = static_cast<std::size_t>(after - all.begin());
  }
  for (; i < all.size(); ++i) {
    if (limit > 0 && static_cast<std::int64_t>(page.items.size()) == limit) break;
    if (!sel.matches(*all[i])) continue;
    page.items.push_back(without_type(*all[i]));
    page.objects.push_back(all[i]);
  }
  if (i < all.size() && i > 0) {
    page.next = encode_continue(static_cast<std::int64_t>(page.rv), key(all[i - 1]), ns);
    if (sel.empty()) page.remaining = static_cast<std::int64_t>(all.size() - i);
  }
  return page;
}

}  // namespace

Query::Query(std::string_view raw) {
  std::size_t i = 0;
  while (i <= raw.size() && !raw.empty()) {
    std::size_t amp = raw.find('&', i);
    if (amp == std::string_view::npos) amp = raw.size();
    std::string_view pair = raw.substr(i, amp - i);
    if (!pair.empty()) {
      std::size_t eq = pair.find('=');
      std::string key = percent_decode(pair.substr(0, eq));
      std::string value = eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1));
      values_.emplace(std::move(key), std::move(value));  // the first of a repeated key wins
    }
    i = amp + 1;
  }
}

std::string Query::get(std::string_view key) const {
  auto it = values_.find(key);
  return it == values_.end() ? std::string() : it->second;
}

bool Query::flag(std::string_view key) const {
  std::string v = get(key);  // what Go's strconv.ParseBool takes as true
  return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
}

ApiResponse list_response(Store& store, const ResourceType& type, const std::string& ns,
                          const Query& q, const std::string& accept) {
  Selectors sel = selectors(q, type);
  Page page = store.transact([&](Store::Txn& txn) { return read_page(txn, type, ns, q, sel); });
  json::object meta{{"resourceVersion", std::to_string(page.rv)}};
  if (!page.next.empty()) meta["continue"] = page.next;
  if (page.remaining) meta["remainingItemCount"] = *page.remaining;
  ApiResponse r;
  if (wants_table(accept)) {
    r.body = json::serialize(to_table(type, page.objects, std::move(meta), q.get("includeObject")));
    return r;
  }
  json::object list{{"kind", type.list_kind()},
                    {"apiVersion", type.api_version()},
                    {"metadata", std::move(meta)},
                    {"items", std::move(page.items)}};
  r.body = json::serialize(list);
  return r;
}

ApiResponse watch_response(Store& store, const ResourceType& type, const std::string& ns,
                           const std::string& name, const Query& q) {
  Selectors sel = selectors(q, type, name);
  std::string rv = q.get("resourceVersion");
  std::optional<std::uint64_t> from;
  if (!rv.empty() && rv != "0") {
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), n);
    if (ec != std::errc() || p != rv.data() + rv.size()) {
      throw bad_request("resourceVersion: Invalid value: \"" + rv +
                        "\": must be an unsigned integer");
    }
    from = n;
  }
  WatchFilter filter{type.name, ns, nullptr};
  if (!sel.empty()) filter.matches = [sel](const json::object& o) { return sel.matches(o); };
  WatchPlan plan;
  plan.kind = type.kind;
  plan.api_version = type.api_version();
  plan.bookmarks = q.flag("allowWatchBookmarks");
  if (std::int64_t t = number<std::int64_t>(q, "timeoutSeconds", 0); t > 0)
    plan.timeout = std::chrono::seconds(t);
  auto started = store.watch(std::move(filter), from);
  if (auto* old = std::get_if<TooOld>(&started)) {
    plan.error = expired("too old resource version: " + std::to_string(old->requested) + " (" +
                         std::to_string(old->oldest) + ")");
  } else {
    plan.queue = std::get<std::shared_ptr<WatchQueue>>(started);
  }
  ApiResponse r;
  r.watch = std::move(plan);
  return r;
}

ApiResponse delete_collection(Store& store, const ResourceType& type, const std::string& ns,
                              const Query& q, const DeleteOptions& options) {
  Selectors sel = selectors(q, type);
  json::array items;
  std::uint64_t rv = store.transact([&](Store::Txn& txn) {
    for (const ObjectPtr& o : txn.list(type.name, ns)) {
      if (!sel.matches(*o)) continue;
      ObjectKey k{string_at(*o, {"metadata", "namespace"}), string_at(*o, {"metadata", "name"})};
      items.push_back(without_type(*delete_object(txn, type, k, options).object));
    }
    return txn.rv();
  });
  json::object list{{"kind", type.list_kind()},
                    {"apiVersion", type.api_version()},
                    {"metadata", json::object{{"resourceVersion", std::to_string(rv)}}},
                    {"items", std::move(items)}};
  ApiResponse r;
  r.body = json::serialize(list);
  return r;
}

}  // namespace gpuq::kubefake
