#pragma once
// The HTTP/1.1 front (Boost.Beast on Asio, C++20 coroutines, one strand per connection, a few
// I/O threads): TLS with the fake's certificates (client certificates verified when given),
// keep-alive, authentication (bearer tokens, client certificates), injected faults, the request
// log, and watch responses streamed as chunked JSON lines.
#include <memory>

#include "tests/kubefake/api.hpp"
#include "tests/kubefake/certs.hpp"
#include "tests/kubefake/control.hpp"
#include "tests/kubefake/server.hpp"
#include "tests/kubefake/store.hpp"

namespace gpuq::kubefake {

class HttpServer {
 public:
  // Listens at once (options.host, options.port); `pki` is used when options.tls.
  HttpServer(const Options& options, const Pki& pki, Api& api, Store& store, Faults& faults,
             RequestLog& log);
  ~HttpServer();  // closes every connection and joins the I/O threads
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  unsigned short port() const;
  // Closes every open connection, idle kept-alive ones and watches included, as a restarted API
  // server does; the server goes on serving new ones.
  void drop_connections();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuq::kubefake
