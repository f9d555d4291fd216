#pragma once
// HTTP on a second port (Boost.Beast, one thread, one request per connection): /metrics in the
// Prometheus text format, /healthz (the process answers), /readyz (the state is loaded and the
// engine thread answers within a second).
#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace gpuq::daemon {

class HttpServer {
 public:
  // `metrics` returns the /metrics body; `ready` whether /readyz is 200.
  HttpServer(std::function<std::string()> metrics, std::function<bool()> ready);
  ~HttpServer();
  // "host:port"; port 0 picks a free one. Throws on a bad address or a port in use.
  void start(const std::string& address);
  void stop();
  unsigned short port() const { return port_; }

 private:
  void serve();

  std::function<std::string()> metrics_;
  std::function<bool()> ready_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  unsigned short port_ = 0;
};

}  // namespace gpuq::daemon
