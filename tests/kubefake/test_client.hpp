#pragma once
// A small HTTP(S) client for the fake's tests (Boost.Beast, OpenSSL): it trusts only the fake's
// CA and checks the certificate is for 127.0.0.1, keeps its connection alive, and reads watch
// streams line by line on a thread of their own.
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "tests/kubefake/server.hpp"

namespace gpuq::kubefake::testing {

namespace json = boost::json;

struct Response {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
  json::object json() const;                   // the body as an object (throws if it is not one)
};

struct Connection;

class Client {
 public:
  // token: nullopt: the server's; "": no Authorization header.
  explicit Client(const Server& server, std::optional<std::string> token = std::nullopt);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  void use_cert(const ClientCert& cert);  // present this certificate from the next connection on

  Response request(const std::string& method, const std::string& target,
                   const std::string& body = "",
                   const std::string& content_type = "application/json",
                   const std::map<std::string, std::string>& headers = {});
  Response get(const std::string& target) { return request("GET", target); }
  Response post(const std::string& target, const json::value& body) {
    return request("POST", target, json::serialize(body));
  }
  Response put(const std::string& target, const json::value& body) {
    return request("PUT", target, json::serialize(body));
  }
  Response patch(const std::string& target, const json::value& body, const std::string& type) {
    return request("PATCH", target, json::serialize(body), type);
  }
  Response del(const std::string& target, const std::string& body = "") {
    return request("DELETE", target, body);
  }

 private:
  const Server& server_;
  std::string token_;
  std::optional<ClientCert> cert_;
  std::unique_ptr<Connection> conn_;
};

// A watch request's response, read on its own thread.
class WatchStream {
 public:
  WatchStream(const Server& server, const std::string& target,
              std::optional<std::string> token = std::nullopt);
  ~WatchStream();
  WatchStream(const WatchStream&) = delete;
  WatchStream& operator=(const WatchStream&) = delete;

  int status();  // of the response head (waits for it)
  // The next event ({"type":..., "object":...}); nullopt when none came within `timeout` or the
  // stream ended.
  std::optional<json::object> next(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits (up to `timeout`) for the stream to end; whether it ended, and cleanly (its last chunk
  // arrived) or abruptly.
  bool wait_end(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  bool ended_cleanly();

 private:
  struct Reader;
  std::unique_ptr<Reader> reader_;
};

// Polls `done` until it holds or `timeout` passes; returns whether it held. Never asserts time.
bool eventually(const std::function<bool()>& done,
                std::chrono::milliseconds timeout = std::chrono::seconds(10));

inline const std::string kPods = "/api/v1/namespaces/default/pods";

// A JSON string's text.
inline std::string str(const json::value& v) { return std::string(v.as_string().c_str()); }

// A pod asking for `gpus` nvidia.com/gpu (as limits, the way GPU pods ask), schedulerName gpuq.
json::object gpu_pod(const std::string& name, int gpus, json::object labels = {},
                     const std::string& restart_policy = "Never");

}  // namespace gpuq::kubefake::testing
