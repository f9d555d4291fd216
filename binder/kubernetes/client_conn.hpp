#pragma once
// Client's connection (client.hpp), for the files that implement Client: client.cpp (requests,
// streams) and client_channels.cpp (WebSocket sessions). Not for its users.
#include <chrono>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "binder/kubernetes/client.hpp"

namespace gpuq::binder::k8s {


// Where requests go: scheme, host, port, the TLS context made once from the Access.
struct Client::Target {
  bool tls = true;
  std::string host;
  std::string port;
  std::string host_header;
  boost::asio::ssl::context ctx{boost::asio::ssl::context::tls_client};
};

// One kept-alive connection. Operations are asynchronous on the connection's own io_context,
// run by the calling thread until done or past the deadline (beast's timeouts only act on
// asynchronous operations), so a request can never block longer than its timeout.
struct Client::Connection {
  boost::asio::io_context ioc;
  std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls;
  std::optional<boost::beast::tcp_stream> plain;
  boost::beast::flat_buffer buffer;

  boost::beast::tcp_stream& lowest() { return tls ? boost::beast::get_lowest_layer(*tls) : *plain; }
  bool usable();

  // Starts `op(handler)` and runs it to completion; a deadline left running is cancelled.
  template <class Op>
  boost::system::error_code run(Op op, std::chrono::milliseconds timeout) {
    boost::system::error_code result = boost::asio::error::would_block;
    lowest().expires_after(timeout);
    op([&result](boost::system::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run();
    return result;
  }
  // f(the stream requests go over): TLS or plain.
  template <class F>
  auto with(F f) {
    if (tls) return f(*tls);
    return f(*plain);
  }
  void close() {
    boost::system::error_code ec;
    lowest().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    lowest().socket().close(ec);
  }
};

}  // namespace gpuq::binder::k8s
