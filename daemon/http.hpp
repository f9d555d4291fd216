#pragma once
// HTTP on a second port (Boost.Beast): /metrics in the Prometheus text format, /healthz (the
// process answers), /readyz (the state is loaded and the engine thread answers within a second),
// and whatever else a handler serves (gpuqd: the web dashboard, web/). A few I/O threads; every
// connection has a whole-request deadline, a size limit and one request; past `max_connections`
// open at once, new ones are closed unanswered. No client can hold the port for others.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace gpuq::daemon {

struct HttpRequest {
  std::string method;         // "GET", "POST", ...
  std::string target;         // path and query, as sent
  std::string authorization;  // the Authorization header ("" when absent)
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Serves what it knows, std::nullopt for the rest (404). Called on an I/O thread: it may block,
// up to its own deadline.
using HttpHandler = std::function<std::optional<HttpResponse>(const HttpRequest&)>;

struct HttpLimits {
  int threads = 4;
  int max_connections = 64;
  std::chrono::milliseconds deadline{10000};  // to read the request and write the answer
  std::size_t max_request_bytes = 64 * 1024;   // headers and body
};

class HttpServer {
 public:
  // `metrics` returns the /metrics body; `ready` whether /readyz is 200; `handler` the rest.
  HttpServer(std::function<std::string()> metrics, std::function<bool()> ready, HttpHandler handler = {},
             HttpLimits limits = {});
  ~HttpServer();
  // "host:port"; port 0 picks a free one. Throws on a bad address or a port in use.
  void start(const std::string& address);
  void stop();
  unsigned short port() const { return port_; }

 private:
  struct Session;
  void accept();
  HttpResponse answer(const HttpRequest& req) const;

  std::function<std::string()> metrics_;
  std::function<bool()> ready_;
  HttpHandler handler_;
  HttpLimits limits_;
  std::atomic<int> open_{0};  // before io_: sessions its destructor drops count themselves out
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
  unsigned short port_ = 0;
};

}  // namespace gpuq::daemon
