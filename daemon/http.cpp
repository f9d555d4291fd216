#include "daemon/http.hpp"

#include <stdexcept>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

namespace gpuq::daemon {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

HttpServer::HttpServer(std::function<std::string()> metrics, std::function<bool()> ready)
    : metrics_(std::move(metrics)), ready_(std::move(ready)), acceptor_(io_) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("http: \"" + address + "\" is not host:port");
  const std::string host = address.substr(0, colon);
  const auto port = static_cast<unsigned short>(std::stoi(address.substr(colon + 1)));
  tcp::endpoint ep(boost::asio::ip::make_address(host), port);
  acceptor_.open(ep.protocol());
  acceptor_.set_option(boost::asio::socket_base::reuse_address(true));
  acceptor_.bind(ep);
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  thread_ = std::thread([this] { serve(); });
}

void HttpServer::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  boost::system::error_code ec;
  // Wake the blocking accept with a connection of our own.
  tcp::socket poke(io_);
  poke.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port_), ec);
  thread_.join();
  acceptor_.close(ec);
}

void HttpServer::serve() {
  while (!stopping_) {
    tcp::socket socket(io_);
    boost::system::error_code ec;
    acceptor_.accept(socket, ec);
    if (ec || stopping_) continue;
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    http::read(socket, buffer, req, ec);
    if (ec) continue;
    http::response<http::string_body> res;
    res.version(req.version());
    res.keep_alive(false);
    const std::string target(req.target());
    try {
      if (req.method() != http::verb::get) {
        res.result(http::status::method_not_allowed);
        res.body() = "GET only\n";
      } else if (target == "/metrics") {
        res.result(http::status::ok);
        res.set(http::field::content_type, "text/plain; version=0.0.4");
        res.body() = metrics_();
      } else if (target == "/healthz") {
        res.result(http::status::ok);
        res.body() = "ok\n";
      } else if (target == "/readyz") {
        const bool ok = ready_();
        res.result(ok ? http::status::ok : http::status::service_unavailable);
        res.body() = ok ? "ready\n" : "not ready\n";
      } else {
        res.result(http::status::not_found);
        res.body() = "not found; try /metrics, /healthz or /readyz\n";
      }
    } catch (const std::exception& e) {
      res.result(http::status::internal_server_error);
      res.body() = std::string(e.what()) + "\n";
    }
    res.prepare_payload();
    http::write(socket, res, ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }
}

}  // namespace gpuq::daemon
