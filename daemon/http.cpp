#include "daemon/http.hpp"

#include <memory>
#include <stdexcept>

#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

namespace gpuq::daemon {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace asio = boost::asio;
using tcp = boost::asio::ip::tcp;

// One connection, one request: read it under the deadline and the size limits, answer, close.
struct HttpServer::Session : std::enable_shared_from_this<Session> {
  Session(tcp::socket socket, HttpServer& server) : stream(std::move(socket)), server(server) {
    ++server.open_;
  }
  ~Session() { --server.open_; }

  void start() {
    parser.header_limit(static_cast<std::uint32_t>(server.limits_.max_request_bytes));
    parser.body_limit(server.limits_.max_request_bytes);
    stream.expires_after(server.limits_.deadline);
    http::async_read(stream, buffer, parser,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::header_limit || ec == http::error::body_limit) {
      reply(HttpResponse{413, "text/plain; charset=utf-8",
                         "request over " + std::to_string(server.limits_.max_request_bytes) + " bytes\n", {}},
            11);
      return;
    }
    if (ec) return;  // timed out, closed or not HTTP: nothing to answer
    const auto& req = parser.get();
    HttpRequest r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    if (auto it = req.find(http::field::authorization); it != req.end()) r.authorization = std::string(it->value());
    r.body = req.body();
    reply(server.answer(r), req.version());
  }

  void reply(HttpResponse r, unsigned version) {
    res.version(version);
    res.keep_alive(false);
    res.result(static_cast<http::status>(r.status));
    res.set(http::field::content_type, r.content_type);
    res.set("X-Content-Type-Options", "nosniff");
    for (auto& [name, value] : r.headers) res.set(name, value);
    res.body() = std::move(r.body);
    res.prepare_payload();
    stream.expires_after(server.limits_.deadline);
    http::async_write(stream, res, [self = shared_from_this()](beast::error_code, std::size_t) {
      beast::error_code ignored;
      self->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  beast::tcp_stream stream;
  HttpServer& server;
  beast::flat_buffer buffer;
  http::request_parser<http::string_body> parser;
  http::response<http::string_body> res;
};

HttpServer::HttpServer(std::function<std::string()> metrics, std::function<bool()> ready, HttpHandler handler,
                       HttpLimits limits)
    : metrics_(std::move(metrics)),
      ready_(std::move(ready)),
      handler_(std::move(handler)),
      limits_(limits),
      acceptor_(asio::make_strand(io_)) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("http: \"" + address + "\" is not host:port");
  const std::string host = address.substr(0, colon);
  const auto port = static_cast<unsigned short>(std::stoi(address.substr(colon + 1)));
  tcp::endpoint ep(asio::ip::make_address(host), port);
  acceptor_.open(ep.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(ep);
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  accept();
  for (int i = 0; i < std::max(1, limits_.threads); ++i) threads_.emplace_back([this] { io_.run(); });
}

void HttpServer::stop() {
  if (threads_.empty()) return;
  io_.stop();  // open connections are dropped unanswered
  for (auto& t : threads_) t.join();
  threads_.clear();
  boost::system::error_code ec;
  acceptor_.close(ec);
}

void HttpServer::accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      if (open_.load() >= limits_.max_connections) {
        beast::error_code ignored;
        socket.close(ignored);  // full: the client retries
      } else {
        std::make_shared<Session>(std::move(socket), *this)->start();
      }
    }
    accept();
  });
}

HttpResponse HttpServer::answer(const HttpRequest& req) const {
  const std::string path = req.target.substr(0, req.target.find('?'));
  try {
    if (path == "/metrics" || path == "/healthz" || path == "/readyz") {
      if (req.method != "GET") return {405, "text/plain; charset=utf-8", "GET only\n", {{"Allow", "GET"}}};
      if (path == "/metrics") return {200, "text/plain; version=0.0.4", metrics_(), {}};
      if (path == "/healthz") return {200, "text/plain; charset=utf-8", "ok\n", {}};
      const bool ok = ready_();
      return {ok ? 200 : 503, "text/plain; charset=utf-8", ok ? "ready\n" : "not ready\n", {}};
    }
    if (handler_) {
      if (auto r = handler_(req)) return std::move(*r);
    }
    return {404, "text/plain; charset=utf-8", "not found; try /, /metrics, /healthz or /readyz\n", {}};
  } catch (const std::exception& e) {
    spdlog::warn("event=http_error target={} error={}", req.target, e.what());
    return {500, "text/plain; charset=utf-8", "internal error\n", {}};
  }
}

}  // namespace gpuq::daemon
