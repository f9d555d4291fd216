#include "tests/kubefake/server.hpp"

#include <fstream>

#include "tests/kubefake/api.hpp"
#include "tests/kubefake/certs.hpp"
#include "tests/kubefake/control.hpp"
#include "tests/kubefake/http.hpp"
#include "tests/kubefake/kubelet.hpp"
#include "tests/kubefake/meta.hpp"
#include "tests/kubefake/pdb.hpp"
#include "tests/kubefake/registry.hpp"
#include "tests/kubefake/resources.hpp"
#include "tests/kubefake/store.hpp"

namespace gpuq::kubefake {

namespace {

StatusError status_error(const ApiError& e) { return StatusError(e.code, e.reason, e.message); }

// The C++ calls report what the API would have: the same checks, thrown as StatusError.
template <class F>
auto as_api(F&& f) {
  try {
    return f();
  } catch (const ApiError& e) {
    throw status_error(e);
  }
}

}  // namespace

struct Server::Impl {
  explicit Impl(Options o) : options(std::move(o)), store(options.history) {
    store.on_commit(refresh_budgets);
    store.transact([](Store::Txn& txn) {
      for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
        create_object(txn, resource("namespaces"), "",
                      json::object{{"metadata", json::object{{"name", ns}}}});
      }
    });
    kubelet = std::make_unique<Kubelet>(store, options.kubelet, options.start_delay);
    http = std::make_unique<HttpServer>(options, pki, api, store, faults, log);
  }

  ~Impl() {
    // The kubelet first (it stops observing the store): its writes wake watch streams, which
    // need the I/O threads.
    kubelet.reset();
    http.reset();
  }

  Options options;
  Pki pki;
  Store store;
  Api api{store};
  Faults faults;
  RequestLog log;
  std::unique_ptr<Kubelet> kubelet;
  std::unique_ptr<HttpServer> http;
};

Server::Server(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Server::~Server() = default;

std::string Server::url() const {
  return std::string(impl_->options.tls ? "https://" : "http://") + impl_->options.host + ":" +
         std::to_string(port());
}

unsigned short Server::port() const { return impl_->http->port(); }
const std::string& Server::ca_pem() const { return impl_->pki.ca_pem(); }
const std::string& Server::token() const { return impl_->options.token; }
const Options& Server::options() const { return impl_->options; }

ClientCert Server::issue_client_cert(const std::string& common_name) const {
  PemPair p = impl_->pki.issue_client(common_name);
  return {p.cert_pem, p.key_pem};
}

void Server::write_kubeconfig(const std::string& path, const std::string& token) const {
  std::string cluster = "    server: " + url() + "\n";
  if (impl_->options.tls)
    cluster += "    certificate-authority-data: " + base64_encode(ca_pem()) + "\n";
  std::ofstream out(path, std::ios::trunc);
  out << "apiVersion: v1\n"
         "kind: Config\n"
         "clusters:\n"
         "- name: kubefake\n"
         "  cluster:\n"
      << cluster
      << "users:\n"
         "- name: kubefake\n"
         "  user:\n"
         "    token: "
      << (token.empty() ? impl_->options.token : token)
      << "\n"
         "contexts:\n"
         "- name: kubefake\n"
         "  context:\n"
         "    cluster: kubefake\n"
         "    user: kubefake\n"
         "    namespace: default\n"
         "current-context: kubefake\n";
  if (!out) throw std::runtime_error("kubefake: cannot write kubeconfig " + path);
}

json::object Server::create(const std::string& res, const std::string& ns, json::object object) {
  const ResourceType& type = resource(res);
  return as_api([&] {
    return *impl_->store.transact([&](Store::Txn& txn) {
      return create_object(txn, type, type.namespaced ? ns : "", std::move(object));
    });
  });
}

std::optional<json::object> Server::get(const std::string& res, const std::string& ns,
                                        const std::string& name) const {
  const ResourceType& type = resource(res);
  ObjectPtr o = impl_->store.transact([&](Store::Txn& txn) {
    return txn.get(type.name, {type.namespaced ? ns : "", name});
  });
  if (!o) return std::nullopt;
  return *o;
}

std::vector<json::object> Server::list(const std::string& res, const std::string& ns) const {
  const ResourceType& type = resource(res);
  std::vector<ObjectPtr> all = impl_->store.transact(
      [&](Store::Txn& txn) { return txn.list(type.name, type.namespaced ? ns : ""); });
  std::vector<json::object> out;
  out.reserve(all.size());
  for (const ObjectPtr& o : all) out.push_back(*o);
  return out;
}

void Server::add_node(const std::string& name, int gpus, const std::string& cpu,
                      const std::string& memory, json::object labels) {
  create("nodes", "", make_node(name, gpus, cpu, memory, std::move(labels)));
}

void Server::set_node_ready(const std::string& name, bool ready) {
  as_api([&] {
    impl_->store.transact([&](Store::Txn& txn) {
      ObjectPtr node = txn.get("nodes", {"", name});
      if (!node) throw not_found({"", "nodes"}, name);
      json::object next = *node;
      set_ready(next, ready);
      write_object(txn, resource("nodes"), node, std::move(next));
    });
  });
}

void Server::finish_pod(const std::string& ns, const std::string& name, int exit_code) {
  as_api([&] { impl_->kubelet->finish({ns, name}, exit_code); });
}

std::vector<std::string> Server::devices_of(const std::string& ns, const std::string& name) const {
  return impl_->kubelet->devices_of({ns, name});
}

std::uint64_t Server::resource_version() const { return impl_->store.rv(); }

void Server::fail_next(const std::string& method, const std::string& path_substring, int http_code,
                       int count, int retry_after_seconds) {
  impl_->faults.fail_next(method, path_substring, http_code, count, retry_after_seconds);
}

void Server::drop_watches() { impl_->store.drop_watches(); }
void Server::drop_connections() {
  if (impl_->http) impl_->http->drop_connections();
}
void Server::compact() { impl_->store.compact(); }
void Server::set_pause(std::chrono::milliseconds pause) { impl_->faults.set_pause(pause); }
void Server::set_bind_delay(std::chrono::milliseconds delay) {
  impl_->faults.set_bind_delay(delay);
}
std::vector<Request> Server::requests() const { return impl_->log.copy(); }
void Server::clear_requests() { impl_->log.clear(); }

}  // namespace gpuq::kubefake
