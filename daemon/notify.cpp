#include "daemon/notify.hpp"

#include <algorithm>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include "daemon/metrics.hpp"
#include "scheduler/model.hpp"

namespace gpuq::daemon {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

std::string notify_url_refusal(const NotifyConfig& c, const NotifySpec& n, const std::string& field) {
  if (n.empty()) return {};
  for (const std::string& prefix : c.allowed_urls)
    if (n.url.rfind(prefix, 0) == 0) return {};
  if (c.allowed_urls.empty())
    return field + ": \"" + n.url + "\" is not allowed: notifications are off (gpuqd's config lists no notifications.allowedUrls)";
  std::string allowed;
  for (const std::string& p : c.allowed_urls) allowed += (allowed.empty() ? "" : ", ") + p;
  return field + ": \"" + n.url + "\" is not allowed: gpuqd sends notifications only to URLs starting with " + allowed +
         " (notifications.allowedUrls)";
}

std::optional<std::string> notify_event(JobState to) {
  switch (to) {
    case JobState::kRunning: return "started";
    case JobState::kSucceeded: return "finished";
    case JobState::kFailed: return "failed";
    case JobState::kPreempting: return "preempted";
    case JobState::kCancelled: return "cancelled";
    default: return std::nullopt;
  }
}

bool wants(const NotifySpec& n, const std::string& event) {
  if (n.empty()) return false;
  if (n.on.empty()) return event == "finished" || event == "failed";
  return std::find(n.on.begin(), n.on.end(), event) != n.on.end();
}

Notifier::Notifier(NotifyConfig config, Metrics& metrics) : config_(std::move(config)), metrics_(metrics) {}

Notifier::~Notifier() { stop(); }

void Notifier::start() { thread_ = std::thread([this] { run(); }); }

void Notifier::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (std::size_t i = 0; i < queue_.size(); ++i) metrics_.notification("dropped");
  queue_.clear();
}

void Notifier::push(Notification n) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= config_.queue_limit) {
      queue_.pop_front();
      metrics_.notification("dropped");
      spdlog::warn("event=notification_dropped reason=\"more than {} waiting\"", config_.queue_limit);
    }
    queue_.push_back(std::move(n));
  }
  cv_.notify_one();
}

void Notifier::run() {
  for (;;) {
    Notification n;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      n = std::move(queue_.front());
      queue_.pop_front();
    }
    auto delay = config_.retry_delay;
    bool sent = false;
    for (int attempt = 0; attempt <= config_.retries && !sent; ++attempt) {
      if (attempt > 0) {
        std::unique_lock lock(mu_);
        if (cv_.wait_for(lock, delay, [this] { return stopping_; })) {
          metrics_.notification("dropped");
          return;
        }
        delay *= 2;
      }
      sent = send(n);
    }
    metrics_.notification(sent ? "sent" : "failed");
    if (!sent)
      spdlog::warn("event=notification_failed url=\"{}\" attempts={}", n.url, config_.retries + 1);
  }
}

bool Notifier::send(const Notification& n) {
  // http://host[:port][/path]: checked when the job or queue was accepted.
  const std::string rest = n.url.substr(7);
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  const std::string target = slash == std::string::npos ? "/" : rest.substr(slash);
  std::string host = authority, port = "80";
  if (const auto colon = authority.rfind(':'); colon != std::string::npos && authority.find(']') == std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  try {
    boost::asio::io_context io;
    tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(config_.timeout);
    stream.connect(resolver.resolve(host, port));
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, authority);
    req.set(http::field::user_agent, "gpuqd");
    req.set(http::field::content_type, "application/json");
    req.body() = n.body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    const unsigned code = res.result_int();
    if (code >= 200 && code < 300) return true;
    spdlog::debug("event=notification_refused url=\"{}\" status={}", n.url, code);
  } catch (const std::exception& e) {
    spdlog::debug("event=notification_error url=\"{}\" error=\"{}\"", n.url, e.what());
  }
  return false;
}

}  // namespace gpuq::daemon
