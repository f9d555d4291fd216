#include "binder/kubernetes/access.hpp"

#include <openssl/evp.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "spec/yaml_read.hpp"

namespace gpuq::binder::k8s {
namespace {

namespace fs = std::filesystem;
using spec::Path;
using spec::SpecError;
using spec::yaml::Node;

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Standard base64 (the kubeconfig's *-data keys), through OpenSSL's decoder.
std::optional<std::string> base64_decode(std::string_view in) {
  std::string clean;
  clean.reserve(in.size());
  for (char c : in)
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') clean.push_back(c);
  if (clean.size() % 4 != 0) return std::nullopt;
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()), static_cast<int>(clean.size()));
  if (n < 0) return std::nullopt;
  std::size_t size = static_cast<std::size_t>(n);
  for (std::size_t i = clean.size(); i > 0 && clean[i - 1] == '='; --i) --size;  // EVP counts padding
  out.resize(size);
  return out;
}

// The entry named `name` in a kubeconfig list of {name, <what>: {...}} (clusters, users, contexts).
Node named(Node list, std::string_view name, const char* what) {
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list.item(i).find("name").text() == name) return list.item(i).find(what);
  return {};
}

// `key-data` (base64) or `key` (a file relative to the kubeconfig's folder); "" when neither.
std::string pem_of(Node map, const char* key, Path& at, const fs::path& dir) {
  const std::string data_key = std::string(key) + "-data";
  if (Node d = map.find(data_key)) {
    Path::Key k(at, data_key);
    auto pem = base64_decode(spec::text_of(d, at));
    if (!pem) spec::fail_at(d, at, "is not base64");
    return *pem;
  }
  if (Node f = map.find(key)) {
    Path::Key k(at, key);
    const fs::path file = fs::path(spec::string_of(f, at)).is_absolute() ? fs::path(std::string(f.text())) : dir / f.text();
    auto pem = read_file(file);
    if (!pem) spec::fail_at(f, at, "cannot read " + file.string());
    return *pem;
  }
  return {};
}

Access read_kubeconfig(Node root, const fs::path& dir, const std::string& wanted) {
  Path at;
  spec::expect_map(root, at);
  std::string context = wanted;
  if (context.empty()) {
    Path::Key k(at, "current-context");
    const Node cur = root.find("current-context");
    if (!cur || cur.text().empty())
      spec::fail_at(root, at, "is not set; set it (kubectl config use-context NAME) or name a context in gpuqd's "
                              "kubernetes.context");
    context = spec::string_of(cur, at);
  }
  Path::Key ck(at, "contexts");
  const Node ctx = named(root.find("contexts"), context, "context");
  if (!ctx) spec::fail_at(root.find("contexts"), at, "has no context named \"" + context + "\"");
  const std::string cluster_name(ctx.find("cluster").text());
  const std::string user_name(ctx.find("user").text());
  at.pop();

  Access a;
  a.namespace_ = std::string(ctx.find("namespace").text());
  {
    Path::Key k(at, "clusters");
    const Node cluster = named(root.find("clusters"), cluster_name, "cluster");
    if (!cluster) spec::fail_at(root.find("clusters"), at, "has no cluster named \"" + cluster_name + "\" (context " + context + ")");
    Path::Key ck2(at, cluster_name);
    spec::expect_map(cluster, at);
    {
      Path::Key s(at, "server");
      if (!cluster.find("server")) spec::fail_at(cluster, at, "is required");
      a.server = spec::string_of(cluster.find("server"), at);
    }
    a.ca_pem = pem_of(cluster, "certificate-authority", at, dir);
    if (Node v = cluster.find("insecure-skip-tls-verify")) {
      Path::Key s(at, "insecure-skip-tls-verify");
      a.insecure = spec::bool_of(v, at);
    }
  }
  if (!user_name.empty()) {
    Path::Key k(at, "users");
    const Node user = named(root.find("users"), user_name, "user");
    if (!user) spec::fail_at(root.find("users"), at, "has no user named \"" + user_name + "\" (context " + context + ")");
    Path::Key uk(at, user_name);
    if (user.is_map()) {
      if (Node t = user.find("token")) {
        Path::Key s(at, "token");
        a.token = spec::string_of(t, at);
      }
      if (Node t = user.find("tokenFile")) {
        Path::Key s(at, "tokenFile");
        a.token_file = fs::path(spec::string_of(t, at)).is_absolute() ? std::string(t.text()) : (dir / t.text()).string();
      }
      a.cert_pem = pem_of(user, "client-certificate", at, dir);
      a.key_pem = pem_of(user, "client-key", at, dir);
      if (a.cert_pem.empty() != a.key_pem.empty())
        spec::fail_at(user, at, "gives a client certificate without its key, or a key without its certificate");
      if (user.find("exec") || user.find("auth-provider"))
        if (a.token.empty() && a.token_file.empty() && a.cert_pem.empty())
          spec::fail_at(user, at,
                        "authenticates with an exec or auth-provider plugin, which gpuqd does not run; give it a "
                        "service account token (token or tokenFile) or a client certificate");
    }
  }
  a.source = "context \"" + context + "\"";
  return a;
}

}  // namespace

Result<Access> parse_kubeconfig(const std::string& text, const std::string& label, const std::string& dir,
                                const std::string& context) {
  try {
    const spec::yaml::Document doc = spec::parse_document(text, label);
    Access a = spec::read_document(doc, label, [&] { return read_kubeconfig(doc.root(), dir, context); });
    a.source = "kubeconfig " + label + ", " + a.source;
    return a;
  } catch (const SpecError& e) {
    return Error{e.what(), ErrorCode::kInvalidArgument};
  }
}

Result<Access> load_access(const AccessOptions& o) {
  std::string path = o.kubeconfig;
  if (path.empty())
    if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
      path = env;
      if (auto colon = path.find(':'); colon != std::string::npos) path.resize(colon);  // the first of a list
    }
  if (path.empty())
    if (const char* home = std::getenv("HOME"); home != nullptr && fs::exists(fs::path(home) / ".kube/config"))
      path = (fs::path(home) / ".kube/config").string();
  if (!path.empty()) {
    auto text = read_file(path);
    if (!text) return Error{"kubeconfig " + path + ": cannot be read", ErrorCode::kNotFound};
    return parse_kubeconfig(*text, path, fs::path(path).parent_path().string(), o.context);
  }
  // In a pod: the service account's token, CA and namespace, and the API server's address.
  const fs::path sa = o.service_account_dir;
  std::string host;
  if (o.in_cluster_host) {
    host = *o.in_cluster_host;
  } else {
    const char* h = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* p = std::getenv("KUBERNETES_SERVICE_PORT");
    if (h != nullptr && p != nullptr) host = std::string(h).find(':') != std::string::npos
                                                 ? "[" + std::string(h) + "]:" + p
                                                 : std::string(h) + ":" + p;
  }
  auto token = read_file(sa / "token");
  if (host.empty() || !token)
    return Error{"no kubeconfig (kubernetes.kubeconfig, $KUBECONFIG, ~/.kube/config) and not in a pod (no "
                 "KUBERNETES_SERVICE_HOST or no " + (sa / "token").string() + "); say where the cluster is",
                 ErrorCode::kNotFound};
  Access a;
  a.server = "https://" + host;
  a.token_file = (sa / "token").string();
  a.token = *token;
  while (!a.token.empty() && (a.token.back() == '\n' || a.token.back() == '\r')) a.token.pop_back();
  if (auto ca = read_file(sa / "ca.crt")) a.ca_pem = *ca;
  if (auto ns = read_file(sa / "namespace")) a.namespace_ = *ns;
  a.source = "in-cluster service account " + sa.string();
  return a;
}

}  // namespace gpuq::binder::k8s
