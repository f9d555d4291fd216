// Client::open_channels (client.hpp): a WebSocket remote command session with the API server
// (pods/attach), over a connection of its own that a thread of the session runs.
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/json.hpp>

#include "binder/kubernetes/client.hpp"
#include "binder/kubernetes/client_conn.hpp"

namespace gpuq::binder::k8s {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

// The status message of channel 3 ({"status": "Success"} or a Status with its message).
std::string status_of(std::string_view json) {
  boost::system::error_code ec;
  const auto v = boost::json::parse(json, ec);
  if (ec || !v.is_object()) return "it ended: " + std::string(json);
  const auto& o = v.get_object();
  if (const auto* st = o.if_contains("status"); st != nullptr && st->is_string() && st->get_string() == "Success")
    return "it ended";
  if (const auto* m = o.if_contains("message"); m != nullptr && m->is_string()) return std::string(m->get_string());
  return "it ended: " + std::string(json);
}

// Next: the stream under the WebSocket (TLS or plain TCP), a part of the Connection it owns.
template <class Next>
class Session final : public ChannelStream {
 public:
  Session(std::unique_ptr<Client::Connection> c, Next& next) : c_(std::move(c)), ws_(next) {}

  ~Session() override {
    if (thread_.joinable()) {
      asio::post(c_->ioc, [this] { c_->close(); });
      guard_.reset();
      thread_.join();
    }
  }

  bool handshake(const std::string& host, const std::string& target, const std::string& token, const std::string& agent,
                 std::chrono::milliseconds timeout, std::string& why) {
    ws_.set_option(websocket::stream_base::decorator([token, agent](websocket::request_type& req) {
      req.set(http::field::user_agent, agent);
      if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
      req.set(http::field::sec_websocket_protocol, "v5.channel.k8s.io, v4.channel.k8s.io");
    }));
    websocket::response_type res;
    const boost::system::error_code ec =
        c_->run([&](auto h) { ws_.async_handshake(res, host, target, h); }, timeout);
    if (ec) {
      why = ec == websocket::error::upgrade_declined
                ? describe(Response{static_cast<int>(res.result_int()), res.body(), -1, 1})
                : "cannot open " + target + ": " + ec.message();
      return false;
    }
    // The session lasts as long as the job: no deadline on the connection, no idle limit.
    c_->lowest().expires_never();
    ws_.set_option(websocket::stream_base::timeout{std::chrono::seconds(30), websocket::stream_base::none(), false});
    ws_.binary(true);
    c_->ioc.restart();
    guard_.emplace(c_->ioc.get_executor());
    thread_ = std::thread([this] {
      read();
      c_->ioc.run();
    });
    return true;
  }

  bool send(unsigned char channel, std::string_view data, std::chrono::milliseconds timeout) override {
    std::lock_guard one_at_a_time(send_mu_);
    if (!ended().empty()) return false;
    std::string message(1, static_cast<char>(channel));
    message.append(data);
    auto done = std::make_shared<std::promise<boost::system::error_code>>();
    std::future<boost::system::error_code> written = done->get_future();
    asio::post(c_->ioc, [this, &message, done] {
      ws_.async_write(asio::buffer(message), [done](boost::system::error_code ec, std::size_t) { done->set_value(ec); });
    });
    if (written.wait_for(timeout) != std::future_status::ready) {
      finish("what was sent took more than " + std::to_string(timeout.count()) + " ms");
      asio::post(c_->ioc, [this] { c_->close(); });
      written.wait();  // `message` is the write's until its handler has run
      return false;
    }
    if (const boost::system::error_code ec = written.get()) {
      finish(ec.message());
      return false;
    }
    return true;
  }

  std::string ended() const override {
    std::lock_guard lock(mu_);
    return ended_;
  }

 private:
  // On the session's thread: each message as it comes; channel 3's status is kept.
  void read() {
    ws_.async_read(buffer_, [this](boost::system::error_code ec, std::size_t) {
      if (ec) {
        finish(ec == websocket::error::closed ? "the API server closed the session" : ec.message());
        return;
      }
      const std::string data = beast::buffers_to_string(buffer_.data());
      buffer_.consume(buffer_.size());
      if (!data.empty() && static_cast<unsigned char>(data[0]) == 3) {
        std::lock_guard lock(mu_);
        status_ = status_of(std::string_view(data).substr(1));
      }
      read();
    });
  }

  void finish(const std::string& why) {
    std::lock_guard lock(mu_);
    if (ended_.empty()) ended_ = status_.empty() ? why : status_;
  }

  std::unique_ptr<Client::Connection> c_;
  websocket::stream<Next&> ws_;
  beast::flat_buffer buffer_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::thread thread_;
  std::mutex send_mu_;
  mutable std::mutex mu_;
  std::string status_;
  std::string ended_;
};

}  // namespace

std::unique_ptr<ChannelStream> Client::open_channels(const std::string& target, std::string& why) {
  std::unique_ptr<Connection> c = connect(why);
  if (!c) return nullptr;
  Connection& conn = *c;
  const std::string token = bearer();
  auto open = [&](auto& next) -> std::unique_ptr<ChannelStream> {
    using Next = std::remove_reference_t<decltype(next)>;
    auto s = std::make_unique<Session<Next>>(std::move(c), next);
    if (!s->handshake(target_->host_header, target, token, options_.user_agent, options_.timeout, why)) return nullptr;
    return s;
  };
  if (conn.tls) return open(*conn.tls);
  return open(*conn.plain);
}

}  // namespace gpuq::binder::k8s
