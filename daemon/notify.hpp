#pragma once
// Notifications (docs/tasks/batch.md, Notifications): an HTTP POST of JSON for a job's state change, to the
// job's own URL (gpuq submit --notify) and its queue's, on the events each asks for. The Core
// hands them over once the change is on disk; a thread of the Notifier's own sends them, with
// retries, from a bounded queue: pushing never blocks the engine thread (a full queue drops its
// oldest notification, counted in gpuq_notifications_total{result="dropped"}).
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/model.hpp"

namespace gpuq::daemon {

class Metrics;

struct NotifyConfig {
  // URL prefixes notifications may go to (gpuqd's config notifications.allowedUrls); empty:
  // none, and a job or queue asking for notifications is refused.
  std::vector<std::string> allowed_urls;
  int retries = 3;                            // attempts after the first
  std::chrono::milliseconds retry_delay{5000};  // doubled after each failed attempt
  std::chrono::milliseconds timeout{10000};     // one attempt: connect, send, answer
  std::size_t queue_limit = 10000;
};

// The error for a URL the config does not allow ("" when allowed), naming `field`.
std::string notify_url_refusal(const NotifyConfig& c, const NotifySpec& n, const std::string& field);

// The event a job's move to `to` is ("started", "finished", ...), or nullopt.
std::optional<std::string> notify_event(JobState to);
// Whether `n` asks for `event` (no `on`: finished and failed).
bool wants(const NotifySpec& n, const std::string& event);

struct Notification {
  std::string url;
  std::string body;  // JSON
};

class Notifier {
 public:
  Notifier(NotifyConfig config, Metrics& metrics);
  ~Notifier();
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;
  void start();
  void stop();  // what is still queued is dropped (and counted)
  void push(Notification n);  // never blocks on the network

 private:
  void run();
  bool send(const Notification& n);  // one attempt: a 2xx answer

  const NotifyConfig config_;
  Metrics& metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Notification> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpuq::daemon
