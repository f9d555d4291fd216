// gpuqd: the gpuq daemon. Loads its state file, serves gRPC (gpuq.v1) and HTTP (/metrics,
// /healthz, /readyz) until SIGINT or SIGTERM. gpuqd(8) and gpuqd.yaml(5) (docs/reference/) document it.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "gpuq/v1/gpuq.pb.h"

#include "auth/roles.hpp"
#include "auth/unix_listener.hpp"
#include "daemon/config.hpp"
#include "daemon/estimates.hpp"
#include "daemon/frontend.hpp"
#include "daemon/http.hpp"
#include "daemon/loop.hpp"
#include "daemon/metrics.hpp"

using namespace gpuq;

namespace {

// stdout through stdio's buffer (spdlog's console sinks flush every line).
class BufferedStdout final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  void flush_() override { std::fflush(stdout); }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpuqd: the gpuq fair-share GPU batch scheduler daemon"};
  std::string config_path, state_file, grpc_address, http_address;
  bool check_config = false;
  app.set_version_flag("--version", "gpuqd " GPUQ_VERSION, "print gpuqd's version and exit");
  app.add_option("--config", config_path, "YAML configuration file (gpuqd.yaml(5): docs/reference/gpuqd.yaml.5.md)");
  app.add_option("--state-file", state_file, "SQLite state file (overrides stateFile)");
  app.add_option("--grpc", grpc_address, "gRPC listen address host:port (overrides grpc)");
  app.add_option("--http", http_address, "HTTP listen address host:port (overrides http)");
  app.add_flag("--check-config", check_config,
               "read and check the configuration (every key, its queues and nodes) and exit: 0 when it is valid, "
               "2 with the error otherwise; opens no state file and starts nothing")
      ->needs("--config");
  CLI11_PARSE(app, argc, argv);
  // SIGINT and SIGTERM are taken by sigwait below; blocked before any thread starts so that
  // every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Logs go to stdout, buffered: a line per job state change must not cost a write() each.
  // Warnings and errors are flushed at once, the rest at least every second.
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("gpuqd", std::make_shared<BufferedStdout>()));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e level=%l %v");
  spdlog::flush_on(spdlog::level::warn);
  spdlog::flush_every(std::chrono::seconds(1));

  daemon::Config config;
  try {
    if (!config_path.empty()) config = daemon::load_config(config_path);
  } catch (const std::exception& e) {
    std::cerr << "gpuqd: " << e.what() << "\n";
    return 2;
  }
  if (check_config) {
    if (auto r = daemon::check_start_specs(config); !r) {
      std::cerr << "gpuqd: " << config_path << ": " << r.error() << "\n";
      return 2;
    }
    std::cout << "gpuqd: " << config_path << ": valid (binder " << config.binder << ", "
              << (config.queues ? config.queues.size() : 0) << " queue(s), "
              << (config.nodes ? config.nodes.size() : 0) << " node(s) declared)\n";
    return 0;
  }
  if (!state_file.empty()) config.core.state_file = state_file;
  if (!grpc_address.empty()) config.grpc_address = grpc_address;
  if (!http_address.empty()) config.http_address = http_address;

  std::optional<NodeSpec> local_node;
  if (config.binder == "kubernetes") {
    if (auto r = daemon::prepare_kubernetes(config); !r) {
      std::cerr << "gpuqd: " << r.error() << "\n";
      return 2;
    }
  } else if (config.binder == "local") {
    if (auto r = daemon::prepare_local(config); !r) {
      std::cerr << "gpuqd: " << r.error() << "\n";
      return 2;
    } else {
      local_node = r.value();
    }
  }
  config.core.start_specs = [&config, &local_node](ResourceNames& names, std::vector<QueueSpec>& queues,
                                                   std::vector<NodeSpec>& nodes) {
    auto specs = daemon::specs_at_start(config, names);
    queues = std::move(specs.queues);
    nodes = std::move(specs.nodes);
    if (local_node) nodes.push_back(*local_node);
  };
  Result<std::unique_ptr<daemon::Core>> core = Error{"not opened"};
  try {
    core = daemon::Core::open(config.core, daemon::Loop::now());
  } catch (const std::exception& e) {
    std::cerr << "gpuqd: config: " << e.what() << "\n";
    return 2;
  }
  if (!core) {
    std::cerr << "gpuqd: cannot start: " << core.error() << "\n";
    return 1;
  }
  // Without TLS, gRPC serves beyond this machine only when the config says insecure: true.
  const std::string grpc_host = config.grpc_address.substr(0, config.grpc_address.rfind(':'));
  const bool loopback = grpc_host.rfind("127.", 0) == 0 || grpc_host == "localhost" || grpc_host == "[::1]";
  if (!loopback && !config.insecure && !config.tls) {
    std::cerr << "gpuqd: grpc: " << config.grpc_address
              << " is not a loopback address, and gpuqd has no TLS configured: set tls: {cert, key, clientCA} "
                 "(gpuqd.yaml(5)), or listen on 127.0.0.1 (local users reach gpuqd through its Unix socket), "
                 "or set insecure: true to serve every TCP caller as trusted\n";
    return 2;
  }
  std::shared_ptr<grpc::ServerCredentials> tcp_credentials = grpc::InsecureServerCredentials();
  if (config.tls) {
    auto tls = daemon::server_credentials(*config.tls);
    if (!tls) {
      std::cerr << "gpuqd: " << tls.error() << "\n";
      return 2;
    }
    tcp_credentials = tls.value();
  }
  const std::string tcp_mode = !config.tls ? "plaintext"
                               : config.tls->client_ca.empty() ? "tls"
                                                               : "tls+client-certificates";
  spdlog::info("event=grpc_mode grpc={} mode={} insecure={} callers=\"{}\"", config.grpc_address, tcp_mode,
               config.insecure,
               config.insecure ? "TCP callers without credentials are trusted with everything"
               : config.tls && !config.tls->client_ca.empty()
                   ? "TCP callers by client certificate (CN) or bearer token, else anonymous"
                   : "TCP callers by bearer token, else anonymous");
  if (config.insecure)
    spdlog::warn("event=insecure grpc={} note=\"insecure: true: every TCP caller may do everything\"",
                 config.grpc_address);
  // The Unix socket: local callers, known by the kernel (docs/tasks/tenants-and-security.md).
  std::unique_ptr<auth::UnixListener> socket;
  const std::string socket_path =
      config.socket.value_or(std::filesystem::path(config.core.state_file).replace_extension(".sock").string());
  if (!socket_path.empty()) {
    auto opened = auth::UnixListener::open(socket_path);
    if (!opened) {
      std::cerr << "gpuqd: " << opened.error() << "\n";
      return 2;
    }
    socket = std::move(opened.value());
  }
  daemon::Loop loop(*core.value());
  std::unique_ptr<daemon::Frontend> api = daemon::make_frontend(loop);
  api->attach(*core.value());
  api->guard(socket.get(), auth::admins_with(config.admin_users, config.admin_groups), config.insecure);
  // The bearer tokens, from the file the Core opened (checked then), before serving.
  auto tokens = core.value()->store().tokens();
  if (!tokens) {
    std::cerr << "gpuqd: cannot start: " << tokens.error() << "\n";
    return 1;
  }
  api->identify_tcp(std::move(tokens.value()), config.tls && !config.tls->client_ca.empty());
  loop.start();

  // The config's queues and nodes are written with the first turn, before serving.
  std::string start_error;
  loop.run_sync([&](daemon::Core& c) {
    auto r = c.end_turn(daemon::Loop::now());
    if (!r.ok) start_error = "writing the configured queues and nodes: " + r.error;
  });
  if (!start_error.empty()) {
    std::cerr << "gpuqd: " << start_error << "\n";
    loop.stop();
    return 1;
  }
  // The binder's facts (a pod exited) come from its thread; each is applied in a turn.
  loop.run_sync([&](daemon::Core& c) {
    c.start_binder(
        [&loop](const BinderFact& fact) {
          loop.post([fact](daemon::Core& core, Time now) -> daemon::Loop::Done {
            core.observe(fact, now);
            return {};
          });
        },
        [&loop](binder::SourceFact fact) {
          loop.post([fact = std::move(fact)](daemon::Core& core, Time now) mutable -> daemon::Loop::Done {
            core.observe_source(std::move(fact), now);
            return {};
          });
        },
        [&loop](binder::GpuSample sample) {
          loop.post([sample = std::move(sample)](daemon::Core& core, Time now) -> daemon::Loop::Done {
            core.observe_gpus(sample, now);
            return {};
          });
        },
        [&loop](const binder::PodUsage& usage) {
          loop.post([usage](daemon::Core& core, Time) -> daemon::Loop::Done {
            core.observe_usage(usage);
            return {};
          });
        });
  });

  grpc::EnableDefaultHealthCheckService(true);
  // gpuq.proto's descriptors are added to protobuf's pool when first asked for
  // (api/proto/lazy_descriptors.cmake); the reflection service looks its services up by name.
  (void)gpuq::v1::Job::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int grpc_port = 0;
  builder.AddListeningPort(config.grpc_address, tcp_credentials, &grpc_port);
  builder.SetMaxReceiveMessageSize(config.max_request_bytes);
  api->register_with(builder);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || grpc_port == 0) {
    std::cerr << "gpuqd: cannot listen on " << config.grpc_address << " (in use, or not an address)\n";
    loop.stop();
    return 1;
  }

  if (socket) socket->serve(server.get());

  // The dashboard reads the gRPC API through the server's in-process channel, as its viewer.
  daemon::HttpServer http([&] { return core.value()->metrics().render(loop); },
                          [&] { return true; },  // serving gRPC means the state is loaded
                          daemon::make_dashboard(server->InProcessChannel(grpc::ChannelArguments()),
                                                          std::chrono::seconds(5)));
  try {
    http.start(config.http_address);
  } catch (const std::exception& e) {
    std::cerr << "gpuqd: cannot listen on " << config.http_address << " for HTTP: " << e.what() << "\n";
    if (socket) socket->stop();
    server->Shutdown();
    loop.stop();
    return 1;
  }
  const std::string grpc_bound =
      config.grpc_address.substr(0, config.grpc_address.rfind(':')) + ":" + std::to_string(grpc_port);
  spdlog::info("event=serving grpc={} http={}:{} socket={} state_file={}", grpc_bound,
               config.http_address.substr(0, config.http_address.rfind(':')), http.port(),
               socket ? socket->path() : std::string("none"), config.core.state_file);
  daemon::Notifier notifier(config.core.notify, core.value()->metrics());
  notifier.start();
  loop.run_sync([&](daemon::Core& c) { c.set_notify_sink([&notifier](daemon::Notification n) { notifier.push(std::move(n)); }); });
  std::optional<daemon::Estimator> estimator;
  if (config.estimate_interval > 0) {
    estimator.emplace(loop, core.value()->estimates(), core.value()->metrics(), config.estimate_interval);
    estimator->start();
  }
  // For scripts and tests that ask for port 0: the ports on one line of stdout.
  std::printf("gpuqd listening grpc=%s http_port=%u socket=%s\n", grpc_bound.c_str(), http.port(),
              socket ? socket->path().c_str() : "none");
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("event=stopping signal={}", sig);
  api->close();
  if (socket) socket->stop();  // no new connection is handed to the server from here on
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  spdlog::info("event=stopping stage=grpc_done");
  http.stop();
  spdlog::info("event=stopping stage=http_done");
  if (estimator) estimator->stop();  // it asks the loop for copies of the engine
  loop.stop();
  notifier.stop();  // after the loop: no turn pushes any more
  core.value()->halt_binder();  // before the loop goes: it posts the binder's facts there
  spdlog::info("event=stopped");
  spdlog::shutdown();  // flushes
  return 0;
}
