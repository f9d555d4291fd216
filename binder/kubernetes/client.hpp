#pragma once
// An HTTPS client for the Kubernetes API (Boost.Beast over OpenSSL): the Access's CA (or no
// verification when the kubeconfig says insecure-skip-tls-verify), a bearer token (re-read from
// its file when it changes) or a client certificate, kept-alive connections, a client-side rate
// limit (QPS with a burst, as client-go's), a timeout on every request, and retries with capped,
// jittered exponential backoff on 5xx, 429 (honouring Retry-After) and dropped connections.
// Thread-safe: any number of threads may call request() at once (each takes a connection of
// its own from the pool).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "binder/kubernetes/access.hpp"

namespace gpuq::binder::k8s {

struct ClientOptions {
  double qps = 200;
  int burst = 400;
  std::chrono::milliseconds timeout{30'000};  // per attempt of a request
  int max_attempts = 6;                       // of a retried request
  std::chrono::milliseconds backoff_base{100};
  std::chrono::milliseconds backoff_cap{10'000};
  std::string user_agent = "gpuqd";
};

struct Response {
  int status = 0;            // the HTTP status; 0: no response (the connection failed: see body)
  std::string body;
  int retry_after = -1;      // seconds, when the server said
  int attempts = 0;
  bool ok() const { return status >= 200 && status < 300; }
};

// "pods \"x\" not found (NotFound, 404)" from a Status body, or what there is.
std::string describe(const Response& r);
// A 429 from an Eviction that a PodDisruptionBudget refused: its cause ("The disruption budget
// NAME needs 2 healthy pods and has 2 currently"); empty for any other answer (a 429 of the API
// server's own rate limits included).
std::string disruption_budget_cause(const Response& r);

// Whether a request may be sent again after a failure that left its outcome unknown (a dropped
// connection, a 5xx): reads may; writes say so themselves.
enum class Retry { kSafe, kUnsafe };

class TokenBucket {
 public:
  TokenBucket(double qps, int burst);
  // Blocks until a token is free (never when qps <= 0: no limit).
  void acquire();

 private:
  std::mutex mu_;
  double qps_;
  double burst_;
  double tokens_;
  std::chrono::steady_clock::time_point last_;
};

// How many of the binder's writes may be in flight at once, as the API server lets them: up to
// `max`, halved when it throttles (a 429 of API Priority and Fairness, at most one cut per
// 100 ms: a burst of 429s answers one burst of requests), one more after each `limit` answers
// that were not throttled (TCP's additive increase, multiplicative decrease). Without it every
// writer waits out its Retry-After and comes back at once with the others, and most are refused
// again.
//
// A Client's requests made on a thread inside a Scope take a place for each attempt (not while
// waiting to try again), so that a cut applies at once to those already retrying.
class InFlightLimit {
 public:
  explicit InFlightLimit(int max);
  void acquire();
  void release(bool throttled);
  int limit() const;

  // The limit this thread's requests are under, while it lives.
  class Scope {
   public:
    explicit Scope(InFlightLimit& limit);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    InFlightLimit* previous_;
  };
  static InFlightLimit* current();

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  const double max_;
  double limit_;
  int in_flight_ = 0;
  std::chrono::steady_clock::time_point last_cut_{};
};

// Ends one stream of a Client from any thread (a log a caller stopped reading): the stream that
// was given it ends at once, or at its start when it has not started yet.
class StreamStop {
 public:
  void stop();
  bool stopped() const;

 private:
  friend class Client;
  mutable std::mutex mu_;
  void* c_ = nullptr;  // the stream's Client::Connection while it runs
  bool stopped_ = false;
};

// A WebSocket session of the API server's remote command protocol (pods/attach, pods/exec; the
// subprotocol v5.channel.k8s.io, else v4): each message is a channel byte and its bytes (0 the
// container's stdin, 1 stdout, 2 stderr, 3 the status when it ends, 4 a terminal's size as
// {"Width","Height"}). A thread of its own reads what the server sends (answering its pings) and
// keeps the status; send() may be called from any thread.
class ChannelStream {
 public:
  virtual ~ChannelStream() = default;
  // Sends `data` on `channel`, waiting at most `timeout`; false once the session has ended
  // (ended() says why).
  virtual bool send(unsigned char channel, std::string_view data, std::chrono::milliseconds timeout) = 0;
  // "" while it is open; then why it ended (the server's status message, or the connection's).
  virtual std::string ended() const = 0;
};

class Client {
 public:
  Client(Access access, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const Access& access() const { return access_; }
  friend class StreamStop;

  // One request (target: path and query). kUnsafe requests are retried only when the server
  // answered 429 or 503 without doing anything; never throws.
  Response request(std::string_view method, const std::string& target, const std::string& body = {},
                   std::string_view content_type = "application/json", Retry retry = Retry::kSafe);
  Response get(const std::string& target) { return request("GET", target); }

  // A long-lived GET whose body is read as it comes (a watch): on_line gets each complete line
  // (a JSON object) until it returns false, the stream ends or stop_streams() is called. The
  // returned Response has the status and, when not 200, the body; `idle` is the longest wait
  // for the next bytes before the stream is given up. No retries: the caller resumes.
  // `cancelled`, when given, is checked once the stream is registered, so that a stop_streams()
  // racing with the start of a stream still ends it.
  Response stream(const std::string& target, const std::function<bool(std::string_view)>& on_line,
                  std::chrono::milliseconds idle, const std::atomic<bool>* cancelled = nullptr);
  // The same for bytes rather than lines (a pod's log): on_bytes gets each piece as it comes;
  // `stop` may end it from another thread.
  Response stream_bytes(const std::string& target, const std::function<bool(std::string_view)>& on_bytes,
                        std::chrono::milliseconds idle, StreamStop* stop);
  // Ends every open stream (from any thread); new ones may start afterwards.
  void stop_streams();
  // A GET of `target` (path and query) upgraded to a WebSocket remote command session
  // (client_channels.cpp), not rate-limited or retried: nullptr with `why` (the server's status
  // and message) when it was refused or could not connect.
  std::unique_ptr<ChannelStream> open_channels(const std::string& target, std::string& why);

  // Defined in client_conn.hpp, for client*.cpp only.
  struct Connection;
  struct Target;

 private:
  std::unique_ptr<Connection> connect(std::string& why);
  std::unique_ptr<Connection> take(std::string& why);
  void give_back(std::unique_ptr<Connection> c);
  Response open_stream(const std::string& target, const std::function<bool(std::string_view)>& on_data, bool lines,
                       std::chrono::milliseconds idle, const std::atomic<bool>* cancelled, StreamStop* stop);
  Response once(Connection& c, std::string_view method, const std::string& target, const std::string& body,
                std::string_view content_type, bool& reusable);
  std::string bearer();
  std::chrono::milliseconds backoff(int attempt, int retry_after);

  Access access_;
  ClientOptions options_;
  std::unique_ptr<Target> target_;
  TokenBucket bucket_;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::mutex token_mu_;
  std::string token_;
  std::chrono::steady_clock::time_point token_read_{};
  std::mutex streams_mu_;
  std::vector<Connection*> streams_;
  std::mutex rng_mu_;
  std::mt19937_64 rng_;
};

// What gpuqd must be allowed to do, checked once at start: a verb and a resource as RBAC names
// them ("list", "pods", "pods/binding") and either a GET that exercises it or, for what a GET
// cannot try (writes, watches, one object by name), a SelfSubjectAccessReview, as `kubectl auth
// can-i` asks.
struct AccessCheck {
  // A check by a GET.
  AccessCheck(std::string verb, std::string resource, std::string target)
      : verb(std::move(verb)), resource(std::move(resource)), target(std::move(target)) {}
  // A check by a review.
  static AccessCheck review(std::string verb, std::string resource, std::string group, std::string ns,
                            std::string name = "") {
    AccessCheck c(std::move(verb), std::move(resource), "");
    c.group = std::move(group);
    c.ns = std::move(ns);
    c.name = std::move(name);
    return c;
  }

  std::string verb;
  std::string resource;
  std::string target;     // a GET, e.g. "/api/v1/pods?limit=1"; empty: asked with a review
  std::string group;      // a review's API group ("" the core group)
  std::string ns;         // a review's namespace ("": every namespace)
  std::string name;       // a review's object name ("": any)
  bool required = true;   // false: a refusal is a warning (only some feature needs it)
  std::string needed_for;  // said with the warning
};

// Makes each check's request; the first failure becomes an error a person can act on: the server
// cannot be reached (kUnavailable), refuses the credentials (401) or forbids the verb on the
// resource (403, or a review that says no), naming both (kFailedPrecondition). A server without
// the SelfSubjectAccessReview API (404) is not asked the reviews. A refused check that is not
// required adds a line to `warnings` instead.
Result<void> check_access(Client& client, const std::vector<AccessCheck>& checks,
                          std::vector<std::string>* warnings = nullptr);

}  // namespace gpuq::binder::k8s
