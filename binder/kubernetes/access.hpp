#pragma once
// How gpuqd reaches and authenticates to a Kubernetes API server: from a kubeconfig (the file
// named in gpuqd's config, else $KUBECONFIG, else ~/.kube/config) or, inside a pod, from the
// service account Kubernetes mounts. Read with the spec layer's YAML reader, so a bad kubeconfig
// is refused with its file, line and column like any other input.
#include <optional>
#include <string>

#include "spec/result.hpp"

namespace gpuq::binder::k8s {

struct Access {
  std::string server;         // "https://host:port" (or "http://..." for a test server)
  std::string ca_pem;         // trusted CAs; empty: the system's trust store
  bool insecure = false;      // the kubeconfig's insecure-skip-tls-verify
  std::string token;          // bearer token
  std::string token_file;     // a token re-read when it changes (in-cluster tokens rotate)
  std::string cert_pem;       // client certificate and key (PEM), both or neither
  std::string key_pem;
  std::string namespace_;     // the context's namespace, or the service account's
  std::string source;         // where this came from, for messages ("kubeconfig F, context C")
};

struct AccessOptions {
  std::string kubeconfig;  // empty: $KUBECONFIG, then ~/.kube/config, then in-cluster
  std::string context;     // empty: the kubeconfig's current-context
  // In-cluster: the service account files and the API server's address. Tests point these
  // elsewhere.
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  std::optional<std::string> in_cluster_host;  // default: $KUBERNETES_SERVICE_HOST / _PORT
};

// Errors say which file, which key and what to do (kInvalidArgument for a bad file,
// kNotFound when there is nothing to read).
Result<Access> load_access(const AccessOptions& options);

// A kubeconfig's text (`label` names it in errors); files it refers to are read relative to
// `dir`.
Result<Access> parse_kubeconfig(const std::string& text, const std::string& label, const std::string& dir,
                                const std::string& context);

}  // namespace gpuq::binder::k8s
