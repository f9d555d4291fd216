// kube-fake: the fake Kubernetes API server as a program, for trying kubectl and client
// libraries against it and for benchmarks that run gpuqd as a separate process.
#include <pthread.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "tests/kubefake/server.hpp"

int main(int argc, char** argv) {
  gpuq::kubefake::Options o;
  std::string kubeconfig;
  int nodes = 0;
  int gpus = 8;
  long start_delay_ms = 0;
  bool plain = false;
  bool no_kubelet = false;
  CLI::App app{
      "kube-fake: a fake Kubernetes API server (v1.28-ish) for gpuq's tests and benchmarks"};
  app.add_option("--port", o.port, "port to listen on (0: any free one)");
  app.add_option("--host", o.host, "address to listen on");
  app.add_option("--kubeconfig", kubeconfig, "write a kubeconfig for this server here");
  app.add_option("--nodes", nodes, "pre-create this many Ready nodes node-00000, node-00001, ...")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--gpus-per-node", gpus, "nvidia.com/gpu allocatable on each pre-created node")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--token", o.token, "the bearer token that authenticates");
  app.add_option("--forbidden-token", o.forbidden_token,
                 "a token that authenticates but is refused (403)");
  app.add_option("--threads", o.threads, "I/O threads")->check(CLI::PositiveNumber);
  app.add_option("--history", o.history, "watch events kept before compaction")
      ->check(CLI::PositiveNumber);
  app.add_option("--start-delay-ms", start_delay_ms, "from a pod's admission to Running")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--plain-http", plain, "serve plain HTTP instead of HTTPS");
  app.add_flag("--no-kubelet", no_kubelet, "do not simulate kubelets (bound pods stay Pending)");
  CLI11_PARSE(app, argc, argv);
  o.tls = !plain;
  o.kubelet = !no_kubelet;
  o.start_delay = std::chrono::milliseconds(start_delay_ms);

  // Block the signals before any thread starts, so only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  try {
    gpuq::kubefake::Server server(o);
    for (int i = 0; i < nodes; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "node-%05d", i);
      server.add_node(name, gpus);
    }
    if (!kubeconfig.empty()) server.write_kubeconfig(kubeconfig);
    std::cout << "kube-fake listening " << server.url() << " kubeconfig=" << kubeconfig
              << std::endl;
    int sig = 0;
    sigwait(&signals, &sig);
  } catch (const std::exception& e) {
    std::cerr << "kube-fake: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
