// deploy/kubernetes/'s RBAC is exactly what gpuqd and its reservation pods use. gpuqd runs with
// the deployment's own gpuqd.yaml (its ConfigMap) and does everything it does in a cluster:
// lists and watches, holds its Lease, shares a GPU through a reservation pod (whose script,
// deploy/kubernetes/gpuq-reserve, runs as its container would: started here on the fake, by
// the simulated kubelet with the pod's own token on the real control plane), binds, reads a pod
// after a binding conflict (forced on the fake), evicts, patches a pod's status and posts
// events. Every request each made (the fake's request log; the real API server's audit log) is
// then mapped to the attributes the API server's RBAC authorizer checks (apiGroup,
// resource[/subresource], verb, namespace, name), and
//   (a) each must be allowed by the roles the manifests bind to its service account (a rule
//       too narrow: the call fails in a real cluster; on the real control plane RBAC refuses it
//       too, and the scenario's invariants fail on the 403), and
//   (b) each verb on each resource a rule grants must have been needed: some call would be
//       refused without it (a rule too wide, or one that repeats a narrower one, grants what
//       nobody needs). On the real control plane a binding's 409 cannot be made on demand, so
//       `get pods` (read only after one) is checked on the fake alone.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "spec/yaml.hpp"
#include "tests/kubefake/server.hpp"
#include "tests/kubernetes/harness.hpp"

using namespace gpuq::test;

namespace {

namespace yaml = gpuq::spec::yaml;
namespace kubefake = gpuq::kubefake;
namespace fs = std::filesystem;

// ---- The manifests, as RBAC sees them.

struct Rule {
  std::vector<std::string> groups, resources, verbs, names;
};

struct Role {
  std::string kind, ns, name;  // ns: a Role's namespace ("" for a ClusterRole)
  std::vector<Rule> rules;
};

struct Binding {
  std::string kind, ns, role_kind, role_name;
  std::vector<std::string> users;  // subjects as the authorizer names them
};

// A role bound to an account, and where it applies.
struct Grant {
  const Role* role = nullptr;
  std::string scope;  // a RoleBinding's namespace; "" cluster-wide
};

struct Manifests {
  std::vector<Role> roles;
  std::vector<Binding> bindings;
  std::vector<std::string> namespaces;
  std::string deployment_ns, service_account = "default";
  std::string config;  // the ConfigMap's gpuqd.yaml
};

std::string text_at(yaml::Node n, std::initializer_list<const char*> path) {
  for (const char* key : path) {
    if (!n.is_map()) return {};
    n = n.find(key);
  }
  return n.is_scalar() ? std::string(n.text()) : std::string();
}

std::vector<std::string> texts_of(yaml::Node list) {
  std::vector<std::string> out;
  if (!list.is_list()) return out;
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list.item(i).is_scalar()) out.emplace_back(list.item(i).text());
  return out;
}

Role read_role(yaml::Node doc) {
  Role r{text_at(doc, {"kind"}),
         text_at(doc, {"metadata", "namespace"}),
         text_at(doc, {"metadata", "name"}),
         {}};
  if (r.kind == "ClusterRole") r.ns.clear();
  yaml::Node rules = doc.find("rules");
  for (std::size_t i = 0; rules.is_list() && i < rules.size(); ++i) {
    yaml::Node rule = rules.item(i);
    r.rules.push_back({texts_of(rule.find("apiGroups")), texts_of(rule.find("resources")),
                       texts_of(rule.find("verbs")), texts_of(rule.find("resourceNames"))});
  }
  return r;
}

Binding read_binding(yaml::Node doc) {
  Binding b{text_at(doc, {"kind"}),
            text_at(doc, {"metadata", "namespace"}),
            text_at(doc, {"roleRef", "kind"}),
            text_at(doc, {"roleRef", "name"}),
            {}};
  yaml::Node subjects = doc.find("subjects");
  for (std::size_t i = 0; subjects.is_list() && i < subjects.size(); ++i) {
    yaml::Node s = subjects.item(i);
    const std::string kind = text_at(s, {"kind"}), name = text_at(s, {"name"});
    std::string ns = text_at(s, {"namespace"});
    if (kind == "ServiceAccount")
      b.users.push_back("system:serviceaccount:" + (ns.empty() ? b.ns : ns) + ":" + name);
    else if (kind == "User")
      b.users.push_back(name);
  }
  return b;
}

void read_document(yaml::Node doc, Manifests& m) {
  const std::string kind = text_at(doc, {"kind"});
  if (kind == "ClusterRole" || kind == "Role") {
    m.roles.push_back(read_role(doc));
  } else if (kind == "ClusterRoleBinding" || kind == "RoleBinding") {
    m.bindings.push_back(read_binding(doc));
  } else if (kind == "Namespace") {
    m.namespaces.push_back(text_at(doc, {"metadata", "name"}));
  } else if (kind == "Deployment") {
    m.deployment_ns = text_at(doc, {"metadata", "namespace"});
    const std::string sa = text_at(doc, {"spec", "template", "spec", "serviceAccountName"});
    if (!sa.empty()) m.service_account = sa;
  } else if (kind == "ConfigMap") {
    m.config = text_at(doc, {"data", "gpuqd.yaml"});
  }
}

// Every *.yaml of the folder, every document of each, with the project's YAML reader (a syntax
// error throws with its file, line and column). But queue-namespace.yaml: a grant applied in
// each queue's namespace (kubectl apply -n NS), which real_submit_test checks where it applies.
Manifests load_manifests(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml" && e.path().filename() != "queue-namespace.yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE_MESSAGE(!files.empty(), "no manifests in " << dir);
  Manifests m;
  for (const fs::path& f : files) {
    INFO("reading " << f);
    std::vector<yaml::Document> docs = yaml::parse_stream(slurp(f));
    for (const yaml::Document& d : docs)
      if (d.root().is_map()) read_document(d.root(), m);
  }
  return m;
}

std::vector<Grant> grants_of(const Manifests& m, const std::string& user) {
  std::vector<Grant> out;
  for (const Binding& b : m.bindings) {
    if (std::find(b.users.begin(), b.users.end(), user) == b.users.end()) continue;
    for (const Role& r : m.roles) {
      if (r.kind != b.role_kind || r.name != b.role_name) continue;
      if (r.kind == "Role" && r.ns != b.ns)
        continue;  // a RoleBinding refers to a Role of its namespace
      out.push_back({&r, b.kind == "RoleBinding" ? b.ns : ""});
    }
  }
  return out;
}

// ---- A request as the authorizer sees it (k8s.io/apiserver's RequestInfoFactory).

struct Attr {
  std::string verb, group, resource, ns, name;  // resource: "pods" or "pods/binding"
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

bool watch_asked(const std::string& query) {
  for (const std::string& kv : split(query, '&'))
    if (kv == "watch=true" || kv == "watch=1") return true;
  return false;
}

std::string verb_of(const std::string& method, bool named, bool watch) {
  if (method == "GET" || method == "HEAD") return watch ? "watch" : named ? "get" : "list";
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return named ? "delete" : "deletecollection";
  return method;
}

// nullopt: a non-resource URL (/version, /healthz, discovery), which RBAC grants otherwise.
std::optional<Attr> attributes_of(const std::string& method, const std::string& path,
                                  const std::string& query) {
  std::vector<std::string> p = split(path, '/');
  Attr a;
  std::size_t at = 0;
  if (p.size() > 2 && p[0] == "api") {
    at = 2;
  } else if (p.size() > 3 && p[0] == "apis") {
    a.group = p[1];
    at = 3;
  } else {
    return std::nullopt;
  }
  std::vector<std::string> rest(p.begin() + static_cast<std::ptrdiff_t>(at), p.end());
  const bool legacy_watch = rest[0] == "watch";  // /api/v1/watch/...
  if (legacy_watch) rest.erase(rest.begin());
  if (rest.empty()) return std::nullopt;
  // namespaces/NS/RESOURCE...; namespaces/NS/status and /finalize are a namespace's own.
  if (rest[0] == "namespaces" && rest.size() > 1) {
    a.ns = rest[1];
    if (rest.size() > 2 && rest[2] != "status" && rest[2] != "finalize")
      rest.erase(rest.begin(), rest.begin() + 2);
  }
  a.resource = rest[0];
  if (rest.size() > 1) a.name = rest[1];
  if (rest.size() > 2) a.resource += "/" + rest[2];
  a.verb = verb_of(method, !a.name.empty(), legacy_watch || watch_asked(query));
  return a;
}

std::string shown(const Attr& a) {
  return a.verb + " " + (a.group.empty() ? "\"\"" : a.group) + " " + a.resource +
         (a.ns.empty() ? "" : " in " + a.ns) + (a.name.empty() ? "" : " named " + a.name);
}

// ---- RBAC's rule evaluation (k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac).

bool lists(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end() ||
         std::find(v.begin(), v.end(), "*") != v.end();
}

bool wildcard(const std::vector<std::string>& v) {
  return std::find(v.begin(), v.end(), "*") != v.end();
}

bool rule_allows(const Rule& r, const Attr& a) {
  // resourceNames never match a request without a name (list, watch, create on a collection).
  const bool name_ok = r.names.empty() || (!a.name.empty() && lists(r.names, a.name));
  return lists(r.groups, a.group) && lists(r.resources, a.resource) && lists(r.verbs, a.verb) &&
         name_ok;
}

bool grant_allows(const Grant& g, const Attr& a) {
  if (!g.scope.empty() && g.scope != a.ns) return false;  // a RoleBinding: its namespace only
  for (const Rule& r : g.role->rules)
    if (rule_allows(r, a)) return true;
  return false;
}

bool allowed(const std::vector<Grant>& grants, const Attr& a) {
  return std::any_of(grants.begin(), grants.end(),
                     [&](const Grant& g) { return grant_allows(g, a); });
}

// Each (verb, group, resource[, name]) a grant allows, and whether some request used it.
struct Permission {
  const Grant* grant;
  Attr attr;  // ns unset; name set only for a rule with resourceNames
};

std::vector<Permission> permissions_of(const std::vector<Grant>& grants) {
  std::vector<Permission> out;
  for (const Grant& g : grants)
    for (const Rule& r : g.role->rules) {
      const std::vector<std::string> names =
          r.names.empty() ? std::vector<std::string>{""} : r.names;
      for (const auto& group : r.groups)
        for (const auto& resource : r.resources)
          for (const auto& verb : r.verbs)
            for (const auto& name : names)
              out.push_back({&g, Attr{verb, group, resource, "", name}});
    }
  return out;
}

bool permits(const Permission& p, const Attr& a) {
  return a.verb == p.attr.verb && a.group == p.attr.group && a.resource == p.attr.resource &&
         (p.attr.name.empty() || a.name == p.attr.name) &&
         (p.grant->scope.empty() || p.grant->scope == a.ns);
}

// Some call would be refused without it: it was used, and not only where another permission
// (a narrower Role, say) allows the same.
bool needed(const Permission& p, const std::vector<Permission>& all,
            const std::vector<Attr>& made) {
  return std::any_of(made.begin(), made.end(), [&](const Attr& a) {
    return permits(p, a) && std::none_of(all.begin(), all.end(), [&](const Permission& q) {
             return &q != &p && permits(q, a);
           });
  });
}

// ---- gpuqd, as deployed.

// gpuqd with the ConfigMap's gpuqd.yaml as it is; only where it listens and keeps its state
// change (flags override the file), it finds the API server through $KUBECONFIG as a pod finds
// it through the service account, and on the real control plane its reservation pods run the
// script from this checkout (the image is not there).
void start_deployed(KubeCluster& k, const Manifests& m) {
  REQUIRE_MESSAGE(!m.config.empty(), "no ConfigMap with data gpuqd.yaml in " << GPUQ_DEPLOY_DIR);
  const fs::path config = k.dir.path / "deployed.yaml";
  std::string text = m.config;
  if (k.api.kind() == "real") {
    const auto at = text.find("reservationCommand: ");
    REQUIRE(at != std::string::npos);
    text.replace(at, text.find('\n', at) - at, "reservationCommand: " + std::string(GPUQ_DEPLOY_DIR) + "/gpuq-reserve");
  }
  std::ofstream(config) << text;
  ::setenv("KUBECONFIG", (k.dir.path / "kubeconfig").c_str(), 1);
  k.gpuqd =
      start_gpuqd(GPUQD_PATH,
                  {"--config", config.string(), "--state-file", (k.dir.path / "state.db").string(),
                   "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"},
                  k.dir.path / "gpuqd.out", k.dir.path / "gpuqd.err");
  REQUIRE_MESSAGE(!k.gpuqd.address.empty(), slurp(k.dir.path / "gpuqd.err"));
}

bool all_running(KubeCluster& k, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    auto p = k.api.get("pods", "default", n);
    if (!p || str_at(*p, {"status", "phase"}) != "Running") return false;
  }
  return true;
}

bool made_request(KubeCluster& k, const std::string& method, const std::string& path_part) {
  for (const auto& r : k.api.requests())
    if (r.user_agent.rfind("gpuqd", 0) == 0 && r.method == method &&
        r.path.find(path_part) != std::string::npos)
      return true;
  return false;
}

// A reservation pod's container, run as its kubelet would: deploy/kubernetes/gpuq-reserve with
// the environment gpuqd gave the pod, the GPU the (fake) device plugin gave it, and a service
// account folder with the fake's CA and token. Killed at the end, as its pod's deletion would.
struct ReserveScript {
  pid_t pid = -1;
  ~ReserveScript() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

std::string env_value(const json::object& e, const json::object& pod) {
  if (const json::value* v = e.if_contains("value"); v && v->is_string())
    return std::string(v->get_string());
  const std::string field = str_at(e, {"valueFrom", "fieldRef", "fieldPath"});
  if (field == "metadata.name") return str_at(pod, {"metadata", "name"});
  if (field == "metadata.namespace") return str_at(pod, {"metadata", "namespace"});
  FAIL("gpuq-reserve's environment names " << field << ", which this test does not resolve");
  return {};
}

void run_reserve_script(KubeCluster& k, const json::object& pod, ReserveScript& script) {
  const fs::path sa = k.dir.path / "reservation-sa";
  fs::create_directories(sa);
  std::ofstream(sa / "ca.crt") << k.fake().ca_pem();
  std::ofstream(sa / "token") << k.fake().token();
  std::vector<std::pair<std::string, std::string>> env{
      {"NVIDIA_VISIBLE_DEVICES", str_at(pod, {"metadata", "annotations", "sim.gpuq.io/devices"})},
      {"GPUQ_SERVICE_ACCOUNT_DIR", sa.string()},
      {"GPUQ_API_SERVER", k.fake().url()}};
  const json::value& container = pod.at("spec").as_object().at("containers").as_array().at(0);
  if (const json::value* e = container.as_object().if_contains("env"); e && e->is_array())
    for (const json::value& item : e->as_array())
      env.emplace_back(str_at(item.as_object(), {"name"}), env_value(item.as_object(), pod));
  // Everything the child needs is made before fork: this process has the fake's threads.
  std::vector<std::string> strings;
  for (char** e = environ; *e != nullptr; ++e) strings.emplace_back(*e);
  for (const auto& [name, value] : env) strings.push_back(name + "=" + value);  // later ones win
  std::vector<char*> envp;
  for (std::string& e : strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string path = (fs::path(GPUQ_DEPLOY_DIR) / "gpuq-reserve").string();
  std::string sh = "sh";
  char* argv[] = {sh.data(), path.data(), nullptr};
  const int out = ::open((k.dir.path / "reserve.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(out >= 0);
  script.pid = ::fork();
  if (script.pid == 0) {
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execve("/bin/sh", argv, envp.data());
    ::_exit(127);
  }
  ::close(out);
  REQUIRE(script.pid > 0);
}

std::optional<json::object> reservation_pod(KubeCluster& k) {
  for (const auto& p : k.api.list("pods"))
    if (!str_at(p, {"metadata", "labels", "gpuq.io/reservation"}).empty()) return p;
  return std::nullopt;
}

// A quarter of a GPU: gpuqd makes a reservation pod (create pods), whose script says which GPU
// it holds (patch pods, as the reservation pods' account); gpuqd annotates the sharer with it
// (patch pods) and binds it; when the sharer ends, the reservation pod is deleted (delete pods).
// Returns the reservation pod's service account user.
std::string share_a_gpu(KubeCluster& k, const std::chrono::seconds limit) {
  k.create("quarter", pod_of("team-a", 0).annotate("gpuq.io/gpu-milli", "250"));
  std::optional<json::object> held;
  REQUIRE(eventually(
      [&] {
        held = reservation_pod(k);
        return held && !str_at(*held, {"metadata", "annotations", "sim.gpuq.io/devices"}).empty();
      },
      limit));
  ReserveScript script;
  if (k.api.kind() == "fake") run_reserve_script(k, *held, script);  // the real kubelet runs it
  REQUIRE_MESSAGE(eventually([&] { return k.bound("quarter"); }, limit),
                  slurp(k.dir.path / "reserve.out"));
  k.api.finish_pod("default", "quarter", 0);
  REQUIRE(eventually([&] { return !reservation_pod(k); }, limit));
  const std::string account = str_at(*held, {"spec", "serviceAccountName"});
  return "system:serviceaccount:" + str_at(*held, {"metadata", "namespace"}) + ":" +
         (account.empty() ? "default" : account);
}

// Everything gpuqd asks of the API server, with the deployment's queues (team-a and team-b, 8
// GPUs each in one cohort, reclaim on) on two 8-GPU nodes.
void drive(KubeCluster& k) {
  const std::chrono::seconds limit(60);
  const std::vector<std::string> a{"a-0", "a-1", "a-2", "a-3"};
  for (const std::string& n : a) k.create(n, pod_of("team-a", 4));  // team-a borrows team-b's 8
  REQUIRE(eventually([&] { return all_running(k, a); }, limit));
  // A pod of a queue that does not exist: told so on its PodScheduled condition (pods/status).
  k.create("lost", pod_of("nope", 1));
  REQUIRE(eventually([&] { return !k.unschedulable("lost").empty(); }, limit));
  // team-b takes its quota back: two of team-a's pods are evicted (pods/eviction). Its binding
  // is answered 409 Conflict once: gpuqd reads the pod to learn whether it is bound to its node
  // (get pods), finds it is not, and places it again. (The 409 is on the reclaiming pod, not
  // on one of team-a's: after a refused binding of a team-a pod, gpuqd did not reclaim at all.)
  if (k.api.kind() == "fake") k.fake().fail_next("POST", "b-0/binding", 409, 1);
  k.create("b-0", pod_of("team-b", 8));
  REQUIRE(eventually([&] { return k.bound("b-0"); }, limit));
  // Scheduled events (events), and the Lease renewed (update) after it was made (create).
  REQUIRE(eventually([&] {
    for (const auto& e : k.api.list("events", "default"))
      if (str_at(e, {"source", "component"}) == "gpuq") return true;
    return false;
  }, limit));
  REQUIRE(eventually([&] { return made_request(k, "PUT", "/leases/"); }, limit));
  CHECK(made_request(k, "POST", "/eviction"));
  if (k.api.kind() == "fake") CHECK(made_request(k, "GET", "/pods/b-0"));
  // A Queue object: gpuqd applies it and writes its status (queues/status).
  const ApiResponse made = k.api.request(
      "POST", "/apis/gpuq.io/v1alpha1/queues",
      R"({"apiVersion":"gpuq.io/v1alpha1","kind":"Queue","metadata":{"name":"rbac-check"},"spec":{"quotas":[{"flavor":"default","resources":{"gpu":{"nominal":1}}}]}})");
  REQUIRE_MESSAGE(made.status == 201, made.body);
  REQUIRE(eventually([&] { return made_request(k, "PATCH", "/queues/rbac-check/status"); }, limit));
  k.check_invariants();
}

// (a) and (b) for one account: `who` names the requests it made.
void check_account(const std::string& account, const std::vector<Grant>& grants,
                   const std::vector<ApiRequest>& log, const std::function<bool(const ApiRequest&)>& who,
                   const std::function<bool(const Permission&)>& exempt = {}) {
  INFO("account " << account);
  std::vector<Attr> made;
  std::map<std::string, int> seen;
  for (const auto& r : log) {
    if (!who(r)) continue;
    // Discovery (which versions a group serves: whether Queue objects are installed) every
    // authenticated user may do: Kubernetes' own ClusterRole system:discovery grants it.
    if (r.method == "GET" && r.path.rfind("/apis/", 0) == 0 && std::count(r.path.begin(), r.path.end(), '/') == 3) continue;
    auto a = attributes_of(r.method, r.path, r.query);
    CHECK_MESSAGE(a.has_value(), "a non-resource URL: " << r.method << " " << r.path);
    if (!a) continue;
    // Asking what it may do (gpuqd's checks at start) every authenticated user may: Kubernetes'
    // own ClusterRole system:basic-user grants it, nothing in deploy/.
    if (a->group == "authorization.k8s.io" && a->resource == "selfsubjectaccessreviews" && a->verb == "create") continue;
    CHECK_MESSAGE(allowed(grants, *a), "a call deploy/kubernetes does not allow: "
                                           << shown(*a) << " (" << r.method << " " << r.path << "?"
                                           << r.query << ")");
    made.push_back(*a);
    Attr key = *a;
    key.name.clear();
    ++seen[shown(key)];
  }
  for (const auto& [what, n] : seen) MESSAGE(account << ": " << what << ": " << n << "x");
  // Nothing is exempt but what `exempt` says: the one rare call (get pods, after a 409 on a
  // binding) is forced above on the fake.
  const std::vector<Permission> all = permissions_of(grants);
  for (const Permission& p : all)
    if (!exempt || !exempt(p))
      CHECK_MESSAGE(needed(p, all, made),
                  p.grant->role->kind
                      << " " << p.grant->role->name << " grants " << shown(p.attr)
                      << (p.grant->scope.empty() ? "" : " in " + p.grant->scope)
                      << " but no call needed it (unused, or granted by another rule too)");
}

}  // namespace

TEST_CASE("the RBAC evaluation this test relies on: verbs from requests, names, namespaces") {
  auto attr = [](const char* method, const char* path, const char* query = "") {
    auto a = attributes_of(method, path, query);
    REQUIRE(a.has_value());
    return *a;
  };
  CHECK(shown(attr("GET", "/api/v1/pods", "limit=500")) == "list \"\" pods");
  CHECK(shown(attr("GET", "/api/v1/pods", "watch=true&resourceVersion=5")) == "watch \"\" pods");
  CHECK(shown(attr("GET", "/api/v1/watch/nodes")) == "watch \"\" nodes");
  CHECK(shown(attr("GET", "/api/v1/namespaces/ml/pods/x")) == "get \"\" pods in ml named x");
  CHECK(shown(attr("POST", "/api/v1/namespaces/ml/pods/x/binding")) ==
        "create \"\" pods/binding in ml named x");
  CHECK(shown(attr("PATCH", "/api/v1/namespaces/ml/pods/x/status")) ==
        "patch \"\" pods/status in ml named x");
  CHECK(shown(attr("GET", "/api/v1/namespaces/ml")) == "get \"\" namespaces in ml named ml");
  CHECK(shown(attr("PUT", "/api/v1/namespaces/ml/status")) ==
        "update \"\" namespaces/status in ml named ml");
  CHECK(shown(attr("PUT", "/apis/coordination.k8s.io/v1/namespaces/s/leases/l")) ==
        "update coordination.k8s.io leases in s named l");
  CHECK(shown(attr("DELETE", "/api/v1/namespaces/ml/pods")) == "deletecollection \"\" pods in ml");
  CHECK_FALSE(attributes_of("GET", "/version", "").has_value());
  CHECK_FALSE(attributes_of("GET", "/apis/policy/v1", "").has_value());

  const Role role{"Role",
                  "s",
                  "r",
                  {{{"coordination.k8s.io"}, {"leases"}, {"create"}, {}},
                   {{"coordination.k8s.io"}, {"leases"}, {"get", "update"}, {"l"}}}};
  const std::vector<Grant> in_s{{&role, "s"}};
  CHECK(allowed(in_s, attr("POST", "/apis/coordination.k8s.io/v1/namespaces/s/leases")));
  CHECK(allowed(in_s, attr("GET", "/apis/coordination.k8s.io/v1/namespaces/s/leases/l")));
  CHECK_FALSE(allowed(in_s, attr("GET", "/apis/coordination.k8s.io/v1/namespaces/s/leases/other")));
  CHECK_FALSE(
      allowed(in_s, attr("GET", "/apis/coordination.k8s.io/v1/namespaces/s/leases")));  // list
  CHECK_FALSE(allowed(in_s, attr("GET", "/apis/coordination.k8s.io/v1/namespaces/t/leases/l")));
  CHECK_FALSE(allowed(in_s, attr("PATCH", "/apis/coordination.k8s.io/v1/namespaces/s/leases/l")));
  const Role pods{"ClusterRole", "", "c", {{{""}, {"pods"}, {"list"}, {}}}};
  const std::vector<Grant> cluster{{&pods, ""}};
  CHECK(allowed(cluster, attr("GET", "/api/v1/pods")));
  CHECK(allowed(cluster, attr("GET", "/api/v1/namespaces/x/pods")));
  CHECK_FALSE(allowed(cluster, attr("GET", "/api/v1/pods", "watch=1")));
  CHECK_FALSE(allowed(
      cluster, attr("POST", "/api/v1/namespaces/x/pods/p/binding")));  // a subresource is its own
  // A cluster-wide rule that repeats a namespaced one is not needed, nor is the namespaced one.
  const Role deleter{"ClusterRole", "", "d", {{{""}, {"pods"}, {"delete"}, {}}}};
  const Role scoped{"Role", "s", "e", {{{""}, {"pods"}, {"delete"}, {}}}};
  const std::vector<Grant> grants{{&deleter, ""}, {&scoped, "s"}}, only_scoped{{&scoped, "s"}};
  const std::vector<Permission> both = permissions_of(grants);  // they point into `grants`
  const std::vector<Attr> made{attr("DELETE", "/api/v1/namespaces/s/pods/p")};
  CHECK_FALSE(needed(both[0], both, made));
  CHECK_FALSE(needed(both[1], both, made));
  const std::vector<Permission> one = permissions_of(only_scoped);
  CHECK(needed(one[0], one, made));
}

TEST_CASE(
    "deploy/kubernetes grants gpuqd and its reservation pods exactly the API calls they make") {
  const Manifests m = load_manifests(GPUQ_DEPLOY_DIR);
  REQUIRE_MESSAGE(!m.deployment_ns.empty(),
                  "no Deployment with a namespace in " << GPUQ_DEPLOY_DIR);
  const std::string gpuqd = "system:serviceaccount:" + m.deployment_ns + ":" + m.service_account;
  for (const Role& role : m.roles)
    for (const Rule& r : role.rules)  // a wildcard grants whatever the API will ever have
      CHECK_MESSAGE(!(wildcard(r.groups) || wildcard(r.resources) || wildcard(r.verbs)),
                    role.name << " has \"*\"");

  KubeCluster k(2, 8);
  // The fake's token authenticates as that account; the real control plane's kubeconfig for
  // gpuqd is that account's token.
  if (k.api.kind() == "fake") REQUIRE(k.fake().options().user == gpuqd);
  for (const std::string& ns : m.namespaces) k.ensure_namespace(ns);
  k.install_queue_crd();
  k.install_podgroup_crds();
  start_deployed(k, m);
  const std::string reservation = share_a_gpu(k, std::chrono::seconds(60));
  drive(k);
  k.gpuqd.stop(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its watches' ends, in the audit log

  const std::vector<ApiRequest> log = k.api.requests();
  for (const auto& r : log)
    if (r.user_agent.rfind("gpuqd", 0) == 0) CHECK(r.user == gpuqd);
  // gpuq-reserve's requests are curl's; in a cluster they carry the reservation pod's token.
  const std::vector<Grant> gpuqd_grants = grants_of(m, gpuqd),
                           reservation_grants = grants_of(m, reservation);
  REQUIRE_MESSAGE(!gpuqd_grants.empty(), "no role is bound to " << gpuqd);
  REQUIRE_MESSAGE(!reservation_grants.empty(), "no role is bound to " << reservation);
  const bool real = k.api.kind() == "real";
  check_account(gpuqd, gpuqd_grants, log, [](const ApiRequest& r) { return r.user_agent.rfind("gpuqd", 0) == 0; },
                [real](const Permission& p) { return real && p.attr.verb == "get" && p.attr.resource == "pods"; });
  check_account(reservation, reservation_grants, log, [&](const ApiRequest& r) {
    // On the real control plane the reservation pod's requests carry its own token.
    return r.user_agent.rfind("curl/", 0) == 0 && (!real || r.user == reservation);
  });
  // Every role in the folder is one of theirs: none is left over granting something to someone.
  for (const Role& role : m.roles) {
    bool bound = false;
    for (const auto* grants : {&gpuqd_grants, &reservation_grants})
      for (const Grant& g : *grants) bound |= g.role == &role;
    CHECK_MESSAGE(bound, role.kind << " " << role.name << " is bound to neither account");
  }
}
