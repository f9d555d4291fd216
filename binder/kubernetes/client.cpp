#include "binder/kubernetes/client.hpp"

#include "binder/kubernetes/client_conn.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace gpuq::binder::k8s {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

std::string describe(const Response& r) {
  if (r.status == 0) return r.body.empty() ? std::string("no response") : r.body;
  boost::system::error_code ec;
  const auto v = boost::json::parse(r.body, ec);
  if (!ec && v.is_object()) {
    const auto& o = v.get_object();
    const auto* msg = o.if_contains("message");
    const auto* reason = o.if_contains("reason");
    if (msg != nullptr && msg->is_string())
      return std::string(msg->get_string()) + " (" +
             (reason != nullptr && reason->is_string() ? std::string(reason->get_string()) + ", " : "") +
             std::to_string(r.status) + ")";
  }
  std::string body = r.body.substr(0, 200);
  return "HTTP " + std::to_string(r.status) + (body.empty() ? "" : ": " + body);
}

std::string disruption_budget_cause(const Response& r) {
  if (r.status != 429) return {};
  boost::system::error_code ec;
  const auto v = boost::json::parse(r.body, ec);
  if (ec || !v.is_object()) return {};
  const auto* details = v.get_object().if_contains("details");
  const auto* causes = details && details->is_object() ? details->get_object().if_contains("causes") : nullptr;
  if (causes == nullptr || !causes->is_array()) return {};
  for (const auto& c : causes->get_array()) {
    if (!c.is_object()) continue;
    const auto* reason = c.get_object().if_contains("reason");
    const auto* message = c.get_object().if_contains("message");
    if (reason && reason->is_string() && reason->get_string() == "DisruptionBudget" && message && message->is_string())
      return std::string(message->get_string());
  }
  return {};
}

// ---------------------------------------------------------------------------------------------

TokenBucket::TokenBucket(double qps, int burst)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(std::max(1, burst)), last_(Clock::now()) {}

void TokenBucket::acquire() {
  if (qps_ <= 0) return;
  std::unique_lock lock(mu_);
  for (;;) {
    const auto now = Clock::now();
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * qps_);
    last_ = now;
    if (tokens_ >= 1) {
      tokens_ -= 1;
      return;
    }
    // Wait for the next token; others wait on the mutex meanwhile, in turn.
    const auto wait = std::chrono::duration<double>((1 - tokens_) / qps_);
    lock.unlock();
    std::this_thread::sleep_for(wait);
    lock.lock();
  }
}

InFlightLimit::InFlightLimit(int max) : max_(std::max(1, max)), limit_(max_) {}

void InFlightLimit::acquire() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return in_flight_ < static_cast<int>(limit_); });
  ++in_flight_;
}

void InFlightLimit::release(bool throttled) {
  {
    std::lock_guard lock(mu_);
    --in_flight_;
    const auto now = Clock::now();
    if (throttled) {
      if (now - last_cut_ >= std::chrono::milliseconds(100)) {
        limit_ = std::max(1.0, limit_ / 2);
        last_cut_ = now;
      }
    } else {
      limit_ = std::min(max_, limit_ + 1.0 / limit_);
    }
  }
  cv_.notify_all();
}

int InFlightLimit::limit() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(limit_);
}

namespace {
thread_local InFlightLimit* current_limit = nullptr;
}  // namespace

InFlightLimit::Scope::Scope(InFlightLimit& limit) : previous_(current_limit) { current_limit = &limit; }
InFlightLimit::Scope::~Scope() { current_limit = previous_; }
InFlightLimit* InFlightLimit::current() { return current_limit; }

// ---------------------------------------------------------------------------------------------

namespace {

// "https://host:port" -> parts; default ports as Kubernetes clients use them.
bool split_server(const std::string& server, bool& tls, std::string& host, std::string& port) {
  std::string rest;
  if (server.rfind("https://", 0) == 0) {
    tls = true;
    rest = server.substr(8);
  } else if (server.rfind("http://", 0) == 0) {
    tls = false;
    rest = server.substr(7);
  } else {
    return false;
  }
  if (auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  if (rest.empty()) return false;
  if (rest[0] == '[') {  // [v6]:port
    const auto close = rest.find(']');
    if (close == std::string::npos) return false;
    host = rest.substr(1, close - 1);
    port = close + 2 <= rest.size() && rest[close + 1] == ':' ? rest.substr(close + 2) : "";
  } else if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  } else {
    host = rest;
  }
  if (port.empty()) port = tls ? "443" : "80";
  return !host.empty();
}

int retry_after_of(const http::response<http::string_body>& res) {
  auto it = res.find(http::field::retry_after);
  if (it == res.end()) return -1;
  int v = -1;
  const auto s = it->value();
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

Client::Client(Access access, ClientOptions options)
    : access_(std::move(access)),
      options_(std::move(options)),
      target_(std::make_unique<Target>()),
      bucket_(options_.qps, options_.burst),
      rng_(std::random_device{}()) {
  Target& t = *target_;
  if (!split_server(access_.server, t.tls, t.host, t.port))
    throw std::invalid_argument("server \"" + access_.server + "\" (" + access_.source +
                                ") is not an https:// or http:// address");
  const bool default_port = t.port == (t.tls ? "443" : "80");
  t.host_header = (t.host.find(':') != std::string::npos ? "[" + t.host + "]" : t.host) + (default_port ? "" : ":" + t.port);
  if (t.tls) {
    t.ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                      ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    if (access_.insecure) {
      t.ctx.set_verify_mode(ssl::verify_none);
    } else {
      t.ctx.set_verify_mode(ssl::verify_peer);
      if (access_.ca_pem.empty()) t.ctx.set_default_verify_paths();
      else t.ctx.add_certificate_authority(asio::buffer(access_.ca_pem));
    }
    if (!access_.cert_pem.empty()) {
      t.ctx.use_certificate_chain(asio::buffer(access_.cert_pem));
      t.ctx.use_private_key(asio::buffer(access_.key_pem), ssl::context::pem);
    }
  }
  token_ = access_.token;
}

Client::~Client() = default;

std::string Client::bearer() {
  std::lock_guard lock(token_mu_);
  // Projected service account tokens rotate: read the file again once a minute, as client-go.
  if (!access_.token_file.empty() && Clock::now() - token_read_ > std::chrono::minutes(1)) {
    std::ifstream in(access_.token_file);
    std::ostringstream s;
    if (in && (s << in.rdbuf())) {
      token_ = s.str();
      while (!token_.empty() && (token_.back() == '\n' || token_.back() == '\r')) token_.pop_back();
    }
    token_read_ = Clock::now();
  }
  return token_;
}

std::unique_ptr<Client::Connection> Client::connect(std::string& why) {
  auto c = std::make_unique<Connection>();
  Target& t = *target_;  // its TLS context is shared by the connections (OpenSSL locks it)
  tcp::resolver resolver(c->ioc);
  boost::system::error_code ec;
  const auto endpoints = resolver.resolve(t.host, t.port, ec);
  if (ec) {
    why = "cannot resolve " + t.host + ": " + ec.message();
    return nullptr;
  }
  if (t.tls) c->tls.emplace(c->ioc, t.ctx);
  else c->plain.emplace(c->ioc);
  ec = c->run([&](auto h) { c->lowest().async_connect(endpoints, [h](auto e, auto&&) { h(e); }); }, options_.timeout);
  if (ec) {
    why = "cannot connect to " + access_.server + ": " + ec.message();
    return nullptr;
  }
  c->lowest().socket().set_option(tcp::no_delay(true), ec);
  if (t.tls) {
    if (!access_.insecure) c->tls->set_verify_callback(ssl::host_name_verification(t.host));
    SSL_set_tlsext_host_name(c->tls->native_handle(), t.host.c_str());
    ec = c->run([&](auto h) { c->tls->async_handshake(ssl::stream_base::client, h); }, options_.timeout);
    if (ec) {
      why = "TLS with " + access_.server + " failed: " + ec.message() +
            (access_.insecure ? "" : " (is the CA right? " + access_.source + ")");
      return nullptr;
    }
  }
  return c;
}

// Whether a kept-alive connection can still carry a request: the server closes idle ones (after
// its own timeout, or when it restarts), and a request written to one of those is lost with no
// way to know whether it was done. Between requests a server sends nothing, so anything to read
// (the end of the stream, an alert) means it is done with the connection (Go's HTTP client
// drops such connections the same way).
bool Client::Connection::usable() {
  char b = 0;
  const ssize_t n = ::recv(lowest().socket().native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

std::unique_ptr<Client::Connection> Client::take(std::string& why) {
  for (;;) {
    std::unique_ptr<Connection> c;
    {
      std::lock_guard lock(pool_mu_);
      if (idle_.empty()) break;
      c = std::move(idle_.back());
      idle_.pop_back();
    }
    if (c->usable()) return c;
  }
  return connect(why);
}

void Client::give_back(std::unique_ptr<Connection> c) {
  std::lock_guard lock(pool_mu_);
  if (idle_.size() < 64) idle_.push_back(std::move(c));
}

Response Client::once(Connection& c, std::string_view method, const std::string& target, const std::string& body,
                      std::string_view content_type, bool& reusable) {
  reusable = false;
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, target_->host_header);
  req.set(http::field::user_agent, options_.user_agent);
  req.set(http::field::accept, "application/json");
  if (const std::string token = bearer(); !token.empty()) req.set(http::field::authorization, "Bearer " + token);
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    req.set(http::field::content_type, content_type);
    req.body() = body;
  }
  req.keep_alive(true);
  req.prepare_payload();
  Response out;
  auto ec = c.with([&](auto& s) {
    return c.run([&](auto h) { http::async_write(s, req, [h](auto e, std::size_t) { h(e); }); }, options_.timeout);
  });
  if (ec) {
    out.body = "sending " + std::string(method) + " " + target + " failed: " + ec.message();
    return out;
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::uint64_t{1} << 30);
  ec = c.with([&](auto& s) {
    return c.run([&](auto h) { http::async_read(s, c.buffer, parser, [h](auto e, std::size_t) { h(e); }); },
                 options_.timeout);
  });
  if (ec) {
    out.body = std::string(method) + " " + target + ": no answer: " + ec.message();
    return out;
  }
  auto res = parser.release();
  out.status = static_cast<int>(res.result_int());
  out.retry_after = retry_after_of(res);
  reusable = res.keep_alive();
  out.body = std::move(res.body());
  return out;
}

std::chrono::milliseconds Client::backoff(int attempt, int retry_after) {
  // Full jitter: a uniform draw below base * 2^attempt, capped.
  const auto ceiling = std::min<std::int64_t>(options_.backoff_cap.count(),
                                              options_.backoff_base.count() << std::min(attempt, 20));
  std::int64_t ms = 0;
  {
    std::lock_guard lock(rng_mu_);
    ms = std::uniform_int_distribution<std::int64_t>(ceiling / 2, std::max<std::int64_t>(ceiling, 1))(rng_);
  }
  if (retry_after > 0) ms = std::max<std::int64_t>(ms, std::int64_t{retry_after} * 1000);
  return std::chrono::milliseconds(ms);
}

Response Client::request(std::string_view method, const std::string& target, const std::string& body,
                         std::string_view content_type, Retry retry) {
  Response r;
  InFlightLimit* const limit = InFlightLimit::current();
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    bucket_.acquire();
    if (limit != nullptr) limit->acquire();
    std::string why;
    auto c = take(why);
    bool sent = false;
    if (c) {
      bool reusable = false;
      r = once(*c, method, target, body, content_type, reusable);
      sent = r.status != 0 || r.body.rfind("sending ", 0) != 0;
      if (reusable && r.status != 0) give_back(std::move(c));
    } else {
      r = Response{};
      r.body = why;
    }
    r.attempts = attempt;
    // A 429 of a PodDisruptionBudget is an answer, not a throttle: the caller decides.
    const bool budget = r.status == 429 && !disruption_budget_cause(r).empty();
    if (limit != nullptr) limit->release(r.status == 429 && !budget);
    const bool transient = r.status == 0 || (r.status == 429 && !budget) || r.status >= 500;
    const bool may_repeat = retry == Retry::kSafe || r.status == 429 || (r.status == 0 && !sent);
    if (!transient || !may_repeat || attempt == options_.max_attempts) return r;
    std::this_thread::sleep_for(backoff(attempt, r.retry_after));
  }
  return r;
}

void StreamStop::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  if (c_ != nullptr) {
    auto* c = static_cast<Client::Connection*>(c_);
    asio::post(c->ioc, [c] { c->close(); });
  }
}

bool StreamStop::stopped() const {
  std::lock_guard lock(mu_);
  return stopped_;
}

Response Client::stream(const std::string& target, const std::function<bool(std::string_view)>& on_line,
                        std::chrono::milliseconds idle, const std::atomic<bool>* cancelled) {
  return open_stream(target, on_line, /*lines=*/true, idle, cancelled, nullptr);
}

Response Client::stream_bytes(const std::string& target, const std::function<bool(std::string_view)>& on_bytes,
                              std::chrono::milliseconds idle, StreamStop* stop) {
  return open_stream(target, on_bytes, /*lines=*/false, idle, nullptr, stop);
}

Response Client::open_stream(const std::string& target, const std::function<bool(std::string_view)>& on_line, bool lines,
                             std::chrono::milliseconds idle, const std::atomic<bool>* cancelled, StreamStop* stop) {
  Response out;
  bucket_.acquire();
  std::string why;
  auto c = connect(why);  // a connection of its own, closed at the end
  if (!c) {
    out.body = why;
    return out;
  }
  {
    std::lock_guard lock(streams_mu_);
    streams_.push_back(c.get());
  }
  struct Unregister {
    Client& self;
    Connection* c;
    ~Unregister() {
      std::lock_guard lock(self.streams_mu_);
      std::erase(self.streams_, c);
    }
  } unregister{*this, c.get()};
  if (cancelled != nullptr && cancelled->load()) return out;
  struct Registered {  // with `stop`, while the stream runs
    StreamStop* stop;
    ~Registered() {
      if (stop == nullptr) return;
      std::lock_guard lock(stop->mu_);
      stop->c_ = nullptr;
    }
  } registered{stop};
  if (stop != nullptr) {
    std::lock_guard lock(stop->mu_);
    if (stop->stopped_) return out;
    stop->c_ = c.get();
  }

  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, target_->host_header);
  req.set(http::field::user_agent, options_.user_agent);
  req.set(http::field::accept, "application/json");
  if (const std::string token = bearer(); !token.empty()) req.set(http::field::authorization, "Bearer " + token);
  auto ec = c->with([&](auto& s) {
    return c->run([&](auto h) { http::async_write(s, req, [h](auto e, std::size_t) { h(e); }); }, options_.timeout);
  });
  if (ec) {
    out.body = "watch " + target + ": " + ec.message();
    return out;
  }
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  ec = c->with([&](auto& s) {
    return c->run([&](auto h) { http::async_read_header(s, c->buffer, parser, [h](auto e, std::size_t) { h(e); }); },
                  options_.timeout);
  });
  if (ec) {
    out.body = "watch " + target + ": no answer: " + ec.message();
    return out;
  }
  out.status = static_cast<int>(parser.get().result_int());
  std::string pending;
  char chunk[64 * 1024];
  bool go_on = true;
  while (go_on && !parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof chunk;
    ec = c->with([&](auto& s) {
      return c->run([&](auto h) { http::async_read_some(s, c->buffer, parser, [h](auto e, std::size_t) { h(e); }); }, idle);
    });
    if (ec == http::error::need_buffer) ec = {};
    pending.append(chunk, sizeof chunk - parser.get().body().size);
    if (out.status != 200) {
      if (ec) break;
      continue;  // an error's body: kept whole
    }
    if (!lines) {
      if (!pending.empty()) go_on = on_line(pending);
      pending.clear();
    } else {
      std::size_t start = 0;
      for (std::size_t nl; go_on && (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
        if (nl > start) go_on = on_line(std::string_view(pending).substr(start, nl - start));
      pending.erase(0, start);
    }
    if (ec) {
      if (ec != beast::error::timeout && ec != asio::error::operation_aborted && ec != http::error::end_of_stream &&
          ec != asio::error::eof)
        out.body = "watch " + target + " ended: " + ec.message();
      break;
    }
  }
  if (out.status != 200) out.body = pending;
  c->close();
  return out;
}

void Client::stop_streams() {
  std::lock_guard lock(streams_mu_);
  for (Connection* c : streams_) asio::post(c->ioc, [c] { c->close(); });
}

namespace {

std::string scope_of(const AccessCheck& c) {
  std::string out = c.name.empty() ? "" : " named " + c.name;
  return out + (c.ns.empty() ? " cluster-wide" : " in namespace " + c.ns);
}

// Whether the server allows the check (a SelfSubjectAccessReview): 1 yes, 0 no (with `why`),
// -1 it cannot say (no such API: an old or a test server), and the answer when it failed.
int review(Client& client, const AccessCheck& c, std::string& why, Response& answer) {
  const auto slash = c.resource.find('/');
  boost::json::object attrs{{"verb", c.verb},
                            {"group", c.group},
                            {"resource", c.resource.substr(0, slash)},
                            {"namespace", c.ns}};
  if (slash != std::string::npos) attrs["subresource"] = c.resource.substr(slash + 1);
  if (!c.name.empty()) attrs["name"] = c.name;
  const boost::json::object body{{"apiVersion", "authorization.k8s.io/v1"},
                                 {"kind", "SelfSubjectAccessReview"},
                                 {"spec", {{"resourceAttributes", attrs}}}};
  answer = client.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", boost::json::serialize(body));
  if (answer.status == 404) return -1;
  if (!answer.ok()) return 0;
  boost::system::error_code ec;
  const auto v = boost::json::parse(answer.body, ec);
  const auto* status = !ec && v.is_object() ? v.get_object().if_contains("status") : nullptr;
  if (status == nullptr || !status->is_object()) return 0;
  const auto* allowed = status->get_object().if_contains("allowed");
  if (allowed != nullptr && allowed->is_bool() && allowed->get_bool()) return 1;
  if (const auto* r = status->get_object().if_contains("reason"); r != nullptr && r->is_string()) why = r->get_string();
  return 0;
}

}  // namespace

Result<void> check_access(Client& client, const std::vector<AccessCheck>& checks, std::vector<std::string>* warnings) {
  const Access& a = client.access();
  bool reviews = true;
  for (const AccessCheck& c : checks) {
    const std::string what = c.verb + " " + c.resource;
    Response r;
    if (c.target.empty()) {
      if (!reviews) continue;
      std::string why;
      const int allowed = review(client, c, why, r);
      if (allowed == 1) continue;
      if (allowed < 0) {
        reviews = false;
        continue;
      }
      if (r.ok()) {
        const std::string message = "gpuqd may not " + what + scope_of(c) + (why.empty() ? "" : " (" + why + ")") +
                                    "; grant it the roles in deploy/kubernetes/ (" + a.source + ")";
        if (!c.required) {
          if (warnings != nullptr) warnings->push_back(message + "; " + c.needed_for + " will fail");
          continue;
        }
        return Error{message, ErrorCode::kFailedPrecondition};
      }
    } else {
      r = client.get(c.target);
      if (r.ok() || r.status == 404) continue;  // allowed (a named object may not exist yet)
    }
    if (r.status == 0)
      return Error{"cannot reach the Kubernetes API server at " + a.server + " (" + a.source + ") to " + what + ": " +
                       r.body,
                   ErrorCode::kUnavailable};
    if (r.status == 401)
      return Error{"the Kubernetes API server at " + a.server + " refused the credentials of " + a.source +
                       " (401 Unauthorized) to " + what + "; check the token or client certificate",
                   ErrorCode::kFailedPrecondition};
    if (r.status == 403)
      return Error{"gpuqd may not " + what + ": " + describe(r) +
                       "; grant it the ClusterRole in deploy/kubernetes/ (" + a.source + ")",
                   ErrorCode::kFailedPrecondition};
    return Error{"the Kubernetes API server at " + a.server + " answered " + what + " with " + describe(r),
                 ErrorCode::kUnavailable};
  }
  return Ok();
}

}  // namespace gpuq::binder::k8s
