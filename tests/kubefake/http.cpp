#include "tests/kubefake/http.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <thread>

namespace gpuq::kubefake {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
using HttpRequest = http::request<http::string_body>;

// Go's HTTP server flushes a watch event as chunks of at most its 2 KiB buffer: clients must
// not take a chunk for an event, and this fake makes sure they do not.
void append_chunks(std::string& out, std::string_view data) {
  for (std::size_t i = 0; i < data.size(); i += 2048) {
    std::string_view part = data.substr(i, 2048);
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    out += size;
    out += part;
    out += "\r\n";
  }
}

std::string event_line(const WatchEvent& e) {
  return "{\"type\":\"" + e.type + "\",\"object\":" + json::serialize(*e.object) + "}\n";
}

std::string peer_user(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  std::string user;
  char cn[256] = {};
  if (SSL_get_verify_result(ssl) == X509_V_OK &&
      X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn) > 0) {
    user = cn;
  }
  X509_free(cert);
  return user;
}

bool health_path(std::string_view p) { return p == "/healthz" || p == "/livez" || p == "/readyz"; }

bool binding_request(const Request& r) {
  return r.method == "POST" && (r.path.ends_with("/binding") || r.path.ends_with("/bindings"));
}

template <class Stream>
void close_now(Stream& s) {
  beast::error_code ec;
  beast::get_lowest_layer(s).socket().shutdown(tcp::socket::shutdown_both, ec);
  beast::get_lowest_layer(s).socket().close(ec);
}

}  // namespace

struct HttpServer::Impl {
  struct Identity {
    std::string user;
    bool forbidden = false;
  };

  Impl(const Options& o, const Pki& pki, Api& a, Store& s, Faults& f, RequestLog& l)
      : options(o),
        api(a),
        store(s),
        faults(f),
        log(l),
        ioc(std::max(o.threads, 1)),
        acceptor(asio::make_strand(ioc)),
        work(ioc.get_executor()) {
    if (o.tls) setup_tls(pki);
    tcp::endpoint ep(asio::ip::make_address(o.host), o.port);
    acceptor.open(ep.protocol());
    acceptor.set_option(asio::socket_base::reuse_address(true));
    acceptor.bind(ep);
    acceptor.listen(asio::socket_base::max_listen_connections);
    port = acceptor.local_endpoint().port();
    asio::co_spawn(acceptor.get_executor(), accept_loop(), asio::detached);
    for (int i = 0; i < std::max(o.threads, 1); ++i) threads.emplace_back([this] { ioc.run(); });
  }

  ~Impl() { stop(); }

  void setup_tls(const Pki& pki) {
    ssl.emplace(asio::ssl::context::tls_server);
    ssl->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                     asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                     asio::ssl::context::no_tlsv1_1);
    ssl->use_certificate_chain(asio::buffer(pki.serving().cert_pem));
    ssl->use_private_key(asio::buffer(pki.serving().key_pem), asio::ssl::context::pem);
    ssl->add_certificate_authority(asio::buffer(pki.ca_pem()));
    // Ask for a client certificate but do not require one (tokens authenticate too).
    ssl->set_verify_mode(asio::ssl::verify_peer);
    static const unsigned char context[] = "kubefake";
    SSL_CTX_set_session_id_context(ssl->native_handle(), context, sizeof context - 1);
  }

  void stop() {
    {
      std::lock_guard lock(conns_mutex);
      if (stopping) return;
      stopping = true;
    }
    asio::post(acceptor.get_executor(), [this] {
      beast::error_code ec;
      acceptor.close(ec);
    });
    // Watches wait on timers, not sockets: drop them; close every connection; repeat for
    // requests that were in flight, until none is left (or 5 s passed).
    auto give_up = std::chrono::steady_clock::now() + 5s;
    std::unique_lock lock(conns_mutex);
    while (!conns.empty() && std::chrono::steady_clock::now() < give_up) {
      std::vector<std::function<void()>> closers;
      for (auto& [id, close] : conns) closers.push_back(close);
      lock.unlock();
      store.drop_watches();
      for (auto& close : closers) close();
      lock.lock();
      conns_cv.wait_for(lock, 100ms, [&] { return conns.empty(); });
    }
    lock.unlock();
    work.reset();
    ioc.stop();
    for (auto& t : threads) t.join();
  }

  void drop_connections() {
    std::vector<std::function<void()>> closers;
    {
      std::lock_guard lock(conns_mutex);
      for (auto& [id, close] : conns) closers.push_back(close);
    }
    store.drop_watches();
    for (auto& close : closers) close();
  }

  // Keeps a connection's closer while it lives.
  class Registration {
   public:
    Registration(Impl& impl, std::function<void()> close) : impl_(impl) {
      std::lock_guard lock(impl_.conns_mutex);
      id_ = impl_.next_conn++;
      impl_.conns.emplace(id_, close);
      if (impl_.stopping) asio::post(impl_.ioc, close);
    }
    ~Registration() {
      std::lock_guard lock(impl_.conns_mutex);
      impl_.conns.erase(id_);
      impl_.conns_cv.notify_all();
    }
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    Impl& impl_;
    std::uint64_t id_ = 0;
  };

  template <class Stream>
  static std::function<void()> closer(const std::shared_ptr<Stream>& s) {
    return [weak = std::weak_ptr<Stream>(s), ex = s->get_executor()] {
      asio::post(ex, [weak] {
        if (auto p = weak.lock()) close_now(*p);
      });
    };
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      tcp::socket sock(asio::make_strand(ioc));
      auto [ec] = co_await acceptor.async_accept(sock, use_tuple);
      if (ec) {
        if (!acceptor.is_open()) co_return;
        continue;
      }
      beast::error_code ignored;
      sock.set_option(tcp::no_delay(true), ignored);
      asio::co_spawn(sock.get_executor(), connection(std::move(sock)), asio::detached);
    }
  }

  asio::awaitable<void> connection(tcp::socket sock) {
    if (!ssl) {
      auto s = std::make_shared<beast::tcp_stream>(std::move(sock));
      Registration reg(*this, closer(s));
      co_await serve(s, "");
      co_return;
    }
    auto s = std::make_shared<beast::ssl_stream<beast::tcp_stream>>(
        beast::tcp_stream(std::move(sock)), *ssl);
    Registration reg(*this, closer(s));
    beast::get_lowest_layer(*s).expires_after(10s);
    auto [ec] = co_await s->async_handshake(asio::ssl::stream_base::server, use_tuple);
    if (ec) co_return;
    co_await serve(s, peer_user(s->native_handle()));
  }

  template <class Stream>
  asio::awaitable<void> serve(std::shared_ptr<Stream> s, std::string cert_user) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(64 * 1024 * 1024);
      beast::get_lowest_layer(*s).expires_after(5min);  // an idle kept-alive connection
      if (auto [ec, n] = co_await http::async_read_header(*s, buffer, parser, use_tuple); ec) break;
      if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        // curl asks before sending a large body (and would otherwise wait a second).
        http::response<http::empty_body> go_on{http::status::continue_, parser.get().version()};
        if (auto [ec, n] = co_await http::async_write(*s, go_on, use_tuple); ec) break;
      }
      auto [ec, n] = co_await http::async_read(*s, buffer, parser, use_tuple);
      if (ec) break;
      beast::get_lowest_layer(*s).expires_never();
      HttpRequest req = parser.release();
      if (!co_await respond(*s, req, cert_user)) break;
    }
    close_now(*s);
  }

  std::optional<Identity> authenticate(const HttpRequest& req, const std::string& cert_user) const {
    if (!cert_user.empty()) return Identity{cert_user, false};
    auto h = req[http::field::authorization];
    std::string_view v(h.data(), h.size());
    if (v.size() < 7 || !beast::iequals(v.substr(0, 7), "Bearer ")) return std::nullopt;
    std::string_view token = v.substr(7);
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    if (token == options.token) return Identity{options.user, false};
    if (!options.forbidden_token.empty() && token == options.forbidden_token)
      return Identity{options.user, true};
    return std::nullopt;
  }

  asio::awaitable<void> delay(std::chrono::milliseconds d) {
    if (d.count() <= 0) co_return;
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(use_tuple);
  }

  Request log_entry(const HttpRequest& req) const {
    Request e;
    e.method = std::string(req.method_string());
    std::string target(req.target());
    std::size_t q = target.find('?');
    e.path = target.substr(0, q);
    e.query = q == std::string::npos ? "" : target.substr(q + 1);
    e.content_type = std::string(req[http::field::content_type]);
    e.user_agent = std::string(req[http::field::user_agent]);
    e.at = std::chrono::steady_clock::now();
    return e;
  }

  asio::awaitable<ApiResponse> dispatch(const HttpRequest& req, Request& entry,
                                        const std::string& cert_user) {
    if (health_path(entry.path))
      co_return ApiResponse{200, "ok", "text/plain; charset=utf-8", 0, std::nullopt};
    auto who = authenticate(req, cert_user);
    if (!who) co_return error_response(unauthorized());
    entry.user = who->user;
    co_await delay(faults.pause());
    if (auto fault = faults.take(entry.method, entry.path)) co_return error_response(*fault);
    if (binding_request(entry)) co_await delay(faults.bind_delay());
    ApiRequest a{entry.method,
                 entry.path,
                 entry.query,
                 entry.content_type,
                 std::string(req[http::field::accept]),
                 req.body(),
                 who->user,
                 who->forbidden};
    co_return api.serve(a);
  }

  template <class Stream>
  asio::awaitable<bool> respond(Stream& s, const HttpRequest& req, const std::string& cert_user) {
    Request entry = log_entry(req);
    ApiResponse res = co_await dispatch(req, entry, cert_user);
    entry.status = res.status;
    log.add(entry);
    if (res.watch) co_return co_await stream_watch(s, req, std::move(*res.watch));
    http::response<http::string_body> out;
    out.version(req.version());
    out.result(static_cast<unsigned>(res.status));
    out.set(http::field::content_type, res.content_type);
    out.set(http::field::cache_control, "no-cache, private");
    if (res.retry_after > 0) out.set(http::field::retry_after, std::to_string(res.retry_after));
    out.keep_alive(req.keep_alive());
    out.body() = std::move(res.body);
    out.prepare_payload();
    beast::get_lowest_layer(s).expires_after(60s);
    auto [ec, n] = co_await http::async_write(s, out, use_tuple);
    co_return !ec && req.keep_alive();
  }

  // Streams the watch until its timeout (a clean end: the last chunk, the connection kept),
  // drop_watches (an abrupt end), or a failed write. Returns whether the connection goes on.
  template <class Stream>
  asio::awaitable<bool> stream_watch(Stream& s, const HttpRequest& req, WatchPlan plan) {
    http::response<http::empty_body> head{http::status::ok, req.version()};
    head.set(http::field::content_type, "application/json");
    head.set(http::field::cache_control, "no-cache, private");
    head.chunked(true);
    head.keep_alive(req.keep_alive());
    http::response_serializer<http::empty_body> sr{head};
    beast::get_lowest_layer(s).expires_after(60s);
    if (auto [ec, n] = co_await http::async_write_header(s, sr, use_tuple); ec) co_return false;
    if (plan.error) {
      std::string out;
      json::object ev{{"type", "ERROR"}, {"object", status_body(*plan.error)}};
      append_chunks(out, json::serialize(ev) + "\n");
      out += "0\r\n\r\n";
      auto [ec, n] = co_await asio::async_write(s, asio::buffer(out), use_tuple);
      co_return !ec && req.keep_alive();
    }
    auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
    // Runs on the strand, so a wake between take() and async_wait() still cancels that wait.
    plan.queue->on_wake(
        [timer] { asio::post(timer->get_executor(), [timer] { timer->cancel(); }); });
    using Clock = std::chrono::steady_clock;
    Clock::time_point deadline =
        plan.timeout ? Clock::now() + *plan.timeout : Clock::time_point::max();
    auto interval = std::max(options.bookmark_interval, std::chrono::milliseconds(1));
    Clock::time_point bookmark =
        plan.bookmarks ? Clock::now() + interval : Clock::time_point::max();
    for (;;) {
      WatchQueue::Batch batch = plan.queue->take();
      if (batch.dropped) {
        close_now(s);
        co_return false;
      }
      if (!batch.events.empty()) {
        std::string out;
        for (const WatchEvent& e : batch.events) append_chunks(out, event_line(e));
        beast::get_lowest_layer(s).expires_after(60s);
        if (auto [ec, n] = co_await asio::async_write(s, asio::buffer(out), use_tuple); ec)
          co_return false;
        continue;
      }
      Clock::time_point now = Clock::now();
      if (now >= deadline) {
        beast::get_lowest_layer(s).expires_after(60s);
        auto [ec, n] = co_await asio::async_write(s, asio::buffer("0\r\n\r\n", 5), use_tuple);
        co_return !ec && req.keep_alive();
      }
      if (now >= bookmark) {
        store.bookmark(*plan.queue, plan.kind, plan.api_version);
        bookmark = now + interval;
        continue;
      }
      timer->expires_at(std::min(deadline, bookmark));
      co_await timer->async_wait(use_tuple);
    }
  }

  const Options& options;
  Api& api;
  Store& store;
  Faults& faults;
  RequestLog& log;
  unsigned short port = 0;

  std::mutex conns_mutex;
  std::condition_variable conns_cv;
  std::map<std::uint64_t, std::function<void()>> conns;
  std::uint64_t next_conn = 0;
  bool stopping = false;

  std::optional<asio::ssl::context> ssl;  // outlives the io_context (streams use it)
  std::vector<std::thread> threads;
  // Destroyed first: pending coroutine frames go with it while the members above still live.
  asio::io_context ioc;
  tcp::acceptor acceptor;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
};

HttpServer::HttpServer(const Options& options, const Pki& pki, Api& api, Store& store,
                       Faults& faults, RequestLog& log)
    : impl_(std::make_unique<Impl>(options, pki, api, store, faults, log)) {}

HttpServer::~HttpServer() = default;

unsigned short HttpServer::port() const { return impl_->port; }

void HttpServer::drop_connections() { impl_->drop_connections(); }

}  // namespace gpuq::kubefake
