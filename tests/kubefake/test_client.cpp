#include "tests/kubefake/test_client.hpp"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <stdexcept>

namespace gpuq::kubefake::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct Connection {
  asio::io_context ioc;
  asio::ssl::context ctx{asio::ssl::context::tls_client};
  std::unique_ptr<asio::ssl::stream<tcp::socket>> tls;
  std::unique_ptr<tcp::socket> plain;
  beast::flat_buffer buffer;

  int fd() { return tls ? tls->next_layer().native_handle() : plain->native_handle(); }

  // Calls f with whichever stream this connection has.
  template <class F>
  auto with_stream(F&& f) {
    return tls ? f(*tls) : f(*plain);
  }
};

namespace {

std::unique_ptr<Connection> connect(const Server& s, const std::optional<ClientCert>& cert) {
  auto c = std::make_unique<Connection>();
  tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), s.port());
  if (!s.options().tls) {
    c->plain = std::make_unique<tcp::socket>(c->ioc);
    c->plain->connect(ep);
    return c;
  }
  c->ctx.add_certificate_authority(asio::buffer(s.ca_pem()));
  c->ctx.set_verify_mode(asio::ssl::verify_peer);
  if (cert) {
    c->ctx.use_certificate_chain(asio::buffer(cert->cert_pem));
    c->ctx.use_private_key(asio::buffer(cert->key_pem), asio::ssl::context::pem);
  }
  c->tls = std::make_unique<asio::ssl::stream<tcp::socket>>(c->ioc, c->ctx);
  // The serving certificate must name the address we dialled.
  X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->tls->native_handle()), "127.0.0.1");
  c->tls->next_layer().connect(ep);
  c->tls->handshake(asio::ssl::stream_base::client);
  return c;
}

http::request<http::string_body> make_request(const Server& s, const std::string& method,
                                              const std::string& target, const std::string& token,
                                              const std::string& body,
                                              const std::string& content_type) {
  http::request<http::string_body> req;
  req.method_string(method);
  req.target(target);
  req.version(11);
  req.set(http::field::host, "127.0.0.1:" + std::to_string(s.port()));
  req.set(http::field::user_agent, "kubefake-test/1.0");
  req.set(http::field::accept, "application/json");
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  if (!body.empty()) req.set(http::field::content_type, content_type);
  req.keep_alive(true);
  req.body() = body;
  req.prepare_payload();
  return req;
}

}  // namespace

json::object Response::json() const { return boost::json::parse(body).as_object(); }

Client::Client(const Server& server, std::optional<std::string> token)
    : server_(server), token_(token ? *token : server.token()) {}

Client::~Client() = default;

void Client::use_cert(const ClientCert& cert) {
  cert_ = cert;
  conn_.reset();
}

Response Client::request(const std::string& method, const std::string& target,
                         const std::string& body, const std::string& content_type,
                         const std::map<std::string, std::string>& headers) {
  auto req = make_request(server_, method, target, token_, body, content_type);
  for (const auto& [k, v] : headers) req.set(k, v);
  // A kept-alive connection the server closed is retried once on a new one.
  for (int attempt = 0;; ++attempt) {
    try {
      if (!conn_) conn_ = connect(server_, cert_);
      http::response<http::string_body> res;
      conn_->with_stream([&](auto& s) {
        http::write(s, req);
        http::read(s, conn_->buffer, res);
      });
      Response out;
      out.status = static_cast<int>(res.result_int());
      out.body = res.body();
      for (const auto& f : res) {
        std::string name(f.name_string());
        for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        out.headers[name] = std::string(f.value());
      }
      if (!res.keep_alive()) conn_.reset();
      return out;
    } catch (const std::exception&) {
      conn_.reset();
      if (attempt > 0) throw;
    }
  }
}

struct WatchStream::Reader {
  std::unique_ptr<Connection> conn;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<json::object> events;
  int status = -1;
  bool ended = false;
  bool clean = false;
  std::thread thread;

  void deliver(std::string& pending, const char* data, std::size_t n) {
    pending.append(data, n);
    std::size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.empty()) continue;
      json::object ev = boost::json::parse(line).as_object();
      std::lock_guard lock(mutex);
      events.push_back(std::move(ev));
      changed.notify_all();
    }
  }

  template <class Stream>
  void read(Stream& s) {
    http::response_parser<http::buffer_body> p;
    p.body_limit(std::numeric_limits<std::uint64_t>::max());
    beast::error_code ec;
    http::read_header(s, conn->buffer, p, ec);
    {
      std::lock_guard lock(mutex);
      status = ec ? 0 : static_cast<int>(p.get().result_int());
      changed.notify_all();
    }
    std::string pending;
    char data[4096];
    while (!ec && !p.is_done()) {
      p.get().body().data = data;
      p.get().body().size = sizeof data;
      http::read_some(s, conn->buffer, p, ec);
      if (ec == http::error::need_buffer) ec = {};
      deliver(pending, data, sizeof data - p.get().body().size);
    }
    std::lock_guard lock(mutex);
    ended = true;
    clean = !ec && p.is_done();
    changed.notify_all();
  }
};

WatchStream::WatchStream(const Server& server, const std::string& target,
                         std::optional<std::string> token)
    : reader_(std::make_unique<Reader>()) {
  reader_->conn = connect(server, std::nullopt);
  auto req = make_request(server, "GET", target, token ? *token : server.token(), "", "");
  reader_->conn->with_stream([&](auto& s) { http::write(s, req); });
  reader_->thread = std::thread([r = reader_.get()] {
    try {
      r->conn->with_stream([&](auto& s) { r->read(s); });
    } catch (const std::exception&) {
      std::lock_guard lock(r->mutex);
      r->ended = true;
      r->changed.notify_all();
    }
  });
}

WatchStream::~WatchStream() {
  // Unblocks the reader's blocking read; the socket itself is closed by its owner afterwards.
  ::shutdown(reader_->conn->fd(), SHUT_RDWR);
  reader_->thread.join();
}

int WatchStream::status() {
  std::unique_lock lock(reader_->mutex);
  reader_->changed.wait_for(lock, std::chrono::seconds(10), [&] { return reader_->status >= 0; });
  return reader_->status;
}

std::optional<json::object> WatchStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(reader_->mutex);
  reader_->changed.wait_for(lock, timeout,
                            [&] { return !reader_->events.empty() || reader_->ended; });
  if (reader_->events.empty()) return std::nullopt;
  json::object ev = std::move(reader_->events.front());
  reader_->events.pop_front();
  return ev;
}

bool WatchStream::wait_end(std::chrono::milliseconds timeout) {
  std::unique_lock lock(reader_->mutex);
  return reader_->changed.wait_for(lock, timeout, [&] { return reader_->ended; });
}

bool WatchStream::ended_cleanly() {
  std::lock_guard lock(reader_->mutex);
  return reader_->ended && reader_->clean;
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

json::object gpu_pod(const std::string& name, int gpus, json::object labels,
                     const std::string& restart_policy) {
  json::object resources;
  if (gpus > 0) resources["limits"] = json::object{{"nvidia.com/gpu", std::to_string(gpus)}};
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", json::object{{"name", name}, {"labels", std::move(labels)}}},
      {"spec", json::object{{"schedulerName", "gpuq"},
                            {"restartPolicy", restart_policy},
                            {"containers",
                             json::array{json::object{{"name", "main"},
                                                      {"image", "busybox:1.36"},
                                                      {"resources", std::move(resources)}}}}}}};
}

}  // namespace gpuq::kubefake::testing
