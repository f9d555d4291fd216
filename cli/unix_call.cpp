#include "cli/unix_call.hpp"

#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>

#include <google/protobuf/message_lite.h>

namespace gpuq::cli {
namespace {

// What a gRPC client takes by default; a larger reply is refused as gRPC refuses it.
constexpr std::size_t kMaxReceive = 4u * 1024 * 1024;
constexpr std::int32_t kWindow = 16 * 1024 * 1024;  // a whole reply without WINDOW_UPDATEs

struct Call {
  int fd = -1;
  std::string request;  // the length-prefixed message
  std::size_t sent = 0;
  std::int32_t stream = -1;
  int http_status = 0;
  std::optional<int> grpc_status;
  std::string grpc_message;
  std::string body;
  std::optional<grpc::Status> failed;  // by the transport, or a reply too large
  bool closed = false;
  std::uint32_t reset = 0;  // RST_STREAM's error code
};

Call& of(void* user) { return *static_cast<Call*>(user); }

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// grpc-message is percent-encoded (gRPC's HTTP/2 mapping).
std::string percent_decoded(const std::uint8_t* v, std::size_t n) {
  std::string out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (v[i] == '%' && i + 2 < n && hex(static_cast<char>(v[i + 1])) >= 0 && hex(static_cast<char>(v[i + 2])) >= 0) {
      out += static_cast<char>(hex(static_cast<char>(v[i + 1])) * 16 + hex(static_cast<char>(v[i + 2])));
      i += 2;
    } else {
      out += static_cast<char>(v[i]);
    }
  }
  return out;
}

std::uint32_t prefix_length(const std::string& body) {
  return (std::uint32_t{static_cast<std::uint8_t>(body[1])} << 24) |
         (std::uint32_t{static_cast<std::uint8_t>(body[2])} << 16) |
         (std::uint32_t{static_cast<std::uint8_t>(body[3])} << 8) | std::uint32_t{static_cast<std::uint8_t>(body[4])};
}

ssize_t on_send(nghttp2_session*, const std::uint8_t* data, std::size_t length, int, void* user) {
  const ssize_t n = ::send(of(user).fd, data, length, MSG_NOSIGNAL);
  if (n >= 0) return n;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return NGHTTP2_ERR_WOULDBLOCK;
  of(user).failed = grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string("Socket closed: ") + std::strerror(errno));
  return NGHTTP2_ERR_CALLBACK_FAILURE;
}

ssize_t read_request(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length, std::uint32_t* flags,
                     nghttp2_data_source*, void* user) {
  Call& c = of(user);
  const std::size_t n = std::min(length, c.request.size() - c.sent);
  std::memcpy(buf, c.request.data() + c.sent, n);
  c.sent += n;
  if (c.sent == c.request.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t namelen,
              const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
  Call& c = of(user);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->hd.stream_id != c.stream) return 0;
  const std::string_view n(reinterpret_cast<const char*>(name), namelen);
  const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":status") {
    c.http_status = std::atoi(std::string(v).c_str());
  } else if (n == "grpc-status") {
    c.grpc_status = std::atoi(std::string(v).c_str());
  } else if (n == "grpc-message") {
    c.grpc_message = percent_decoded(value, valuelen);
  }
  return 0;
}

int on_data(nghttp2_session*, std::uint8_t, std::int32_t stream, const std::uint8_t* data, std::size_t len, void* user) {
  Call& c = of(user);
  if (stream != c.stream) return 0;
  c.body.append(reinterpret_cast<const char*>(data), len);
  if (c.body.size() >= 5 && prefix_length(c.body) > kMaxReceive) {
    c.failed = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            "Received message larger than max (" + std::to_string(prefix_length(c.body)) + " vs. " +
                                std::to_string(kMaxReceive) + ")");
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

int on_close(nghttp2_session*, std::int32_t stream, std::uint32_t error, void* user) {
  Call& c = of(user);
  if (stream != c.stream) return 0;
  c.closed = true;
  c.reset = error;
  return 0;
}

// gRPC's mapping of an HTTP status without grpc-status (doc/http-grpc-status-mapping.md).
grpc::StatusCode from_http(int status) {
  switch (status) {
    case 400: return grpc::StatusCode::INTERNAL;
    case 401: return grpc::StatusCode::UNAUTHENTICATED;
    case 403: return grpc::StatusCode::PERMISSION_DENIED;
    case 404: return grpc::StatusCode::UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504: return grpc::StatusCode::UNAVAILABLE;
    default: return grpc::StatusCode::UNKNOWN;
  }
}

// gRPC's mapping of RST_STREAM's code (doc/PROTOCOL-HTTP2.md).
grpc::StatusCode from_reset(std::uint32_t error) {
  switch (error) {
    case NGHTTP2_REFUSED_STREAM: return grpc::StatusCode::UNAVAILABLE;
    case NGHTTP2_CANCEL: return grpc::StatusCode::CANCELLED;
    case NGHTTP2_ENHANCE_YOUR_CALM: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case NGHTTP2_INADEQUATE_SECURITY: return grpc::StatusCode::PERMISSION_DENIED;
    default: return grpc::StatusCode::INTERNAL;
  }
}

grpc::Status outcome(const Call& c, google::protobuf::MessageLite& response) {
  if (c.failed) return *c.failed;
  if (!c.grpc_status) {
    if (c.reset != 0) return {from_reset(c.reset), "Stream reset: error code " + std::to_string(c.reset)};
    if (c.http_status != 200)
      return {from_http(c.http_status), "Received http2 header with status: " + std::to_string(c.http_status)};
    return {grpc::StatusCode::INTERNAL, "Stream ended without a grpc-status"};
  }
  if (*c.grpc_status < 0 || *c.grpc_status > 16) return {grpc::StatusCode::UNKNOWN, c.grpc_message};
  if (*c.grpc_status != 0) return {static_cast<grpc::StatusCode>(*c.grpc_status), c.grpc_message};
  if (c.body.size() < 5 || c.body.size() != 5 + std::size_t{prefix_length(c.body)})
    return {grpc::StatusCode::INTERNAL, "No message returned for unary request"};
  if (c.body[0] != 0) return {grpc::StatusCode::INTERNAL, "A compressed message that was not asked for"};
  if (!response.ParseFromArray(c.body.data() + 5, static_cast<int>(c.body.size() - 5)))
    return {grpc::StatusCode::INTERNAL, "Failed to parse server response"};
  return grpc::Status();  // OK (not Status::OK: a data symbol of libgrpc++, which the quick gpuq does not link)
}

struct SessionFree {
  void operator()(nghttp2_session* s) const { nghttp2_session_del(s); }
};
struct CallbacksFree {
  void operator()(nghttp2_session_callbacks* c) const { nghttp2_session_callbacks_del(c); }
};

nghttp2_nv header(const char* name, const std::string& value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name)),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), std::strlen(name), value.size(),
          NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

// gRPC's grpc-timeout: at most 8 digits and a unit.
std::string grpc_timeout(double seconds) {
  const auto ms = static_cast<std::int64_t>(seconds * 1000);
  if (ms < 100'000'000) return std::to_string(std::max<std::int64_t>(ms, 1)) + "m";
  return std::to_string(std::min<std::int64_t>(ms / 1000, 99'999'999)) + "S";
}

grpc::Status run(Call& c, const std::string& method, double timeout_s, google::protobuf::MessageLite& response) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::microseconds(static_cast<std::int64_t>(timeout_s * 1e6));
  nghttp2_session_callbacks* cbs_raw = nullptr;
  if (nghttp2_session_callbacks_new(&cbs_raw) != 0) return {grpc::StatusCode::INTERNAL, "out of memory"};
  std::unique_ptr<nghttp2_session_callbacks, CallbacksFree> cbs(cbs_raw);
  nghttp2_session_callbacks_set_send_callback(cbs.get(), on_send);
  nghttp2_session_callbacks_set_on_header_callback(cbs.get(), on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs.get(), on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs.get(), on_close);
  nghttp2_session* session_raw = nullptr;
  if (nghttp2_session_client_new(&session_raw, cbs.get(), &c) != 0) return {grpc::StatusCode::INTERNAL, "out of memory"};
  std::unique_ptr<nghttp2_session, SessionFree> session(session_raw);

  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                             {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kWindow}};
  nghttp2_submit_settings(session.get(), NGHTTP2_FLAG_NONE, settings, 2);
  nghttp2_session_set_local_window_size(session.get(), NGHTTP2_FLAG_NONE, 0, kWindow);
  const std::string post = "POST", scheme = "http", authority = "localhost", te = "trailers",
                    type = "application/grpc", agent = "gpuq", timeout = grpc_timeout(timeout_s);
  nghttp2_nv nva[] = {header(":method", post),   header(":scheme", scheme),   header(":path", method),
                      header(":authority", authority), header("te", te),    header("content-type", type),
                      header("user-agent", agent), header("grpc-timeout", timeout)};
  nghttp2_data_provider body{};
  body.read_callback = read_request;
  c.stream = nghttp2_submit_request(session.get(), nullptr, nva, timeout_s > 0 ? 8 : 7, &body, nullptr);
  if (c.stream < 0) return {grpc::StatusCode::INTERNAL, nghttp2_strerror(c.stream)};

  char buf[64 * 1024];
  while (!c.closed) {
    if (nghttp2_session_send(session.get()) != 0)
      return c.failed.value_or(grpc::Status(grpc::StatusCode::UNAVAILABLE, "Socket closed"));
    short events = 0;
    if (nghttp2_session_want_read(session.get())) events |= POLLIN;
    if (nghttp2_session_want_write(session.get())) events |= POLLOUT;
    if (events == 0) return {grpc::StatusCode::UNAVAILABLE, "Socket closed"};
    int wait = -1;
    if (timeout_s > 0) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return {grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"};
      wait = static_cast<int>(std::min<std::int64_t>(left, 1 << 30));
    }
    pollfd p{c.fd, events, 0};
    const int ready = ::poll(&p, 1, wait);
    if (ready < 0 && errno != EINTR) return {grpc::StatusCode::UNAVAILABLE, std::string("poll: ") + std::strerror(errno)};
    if (ready <= 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    const ssize_t n = ::read(c.fd, buf, sizeof buf);
    if (n == 0) return {grpc::StatusCode::UNAVAILABLE, "Socket closed"};
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return {grpc::StatusCode::UNAVAILABLE, std::string("Connection reset: ") + std::strerror(errno)};
    }
    const ssize_t used = nghttp2_session_mem_recv(session.get(), reinterpret_cast<const std::uint8_t*>(buf),
                                                  static_cast<std::size_t>(n));
    if (used < 0)
      return c.failed.value_or(grpc::Status(grpc::StatusCode::INTERNAL,
                                            std::string("HTTP/2 error: ") + nghttp2_strerror(static_cast<int>(used))));
  }
  return outcome(c, response);
}

}  // namespace

std::optional<std::string> unix_socket_path(const std::string& server) {
  if (server.rfind("unix:", 0) != 0) return std::nullopt;
  std::string path = server.substr(5);
  if (path.rfind("//", 0) == 0) path = path.substr(2);  // unix:///absolute
  if (path.empty()) return std::nullopt;
  return path;
}

std::optional<grpc::Status> unix_unary(const std::string& path, const std::string& method,
                                       const google::protobuf::MessageLite& request,
                                       google::protobuf::MessageLite& response, double timeout_s) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return std::nullopt;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  Call c;
  c.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (c.fd < 0) return std::nullopt;
  // Not connected (no gpuqd there, or its backlog is full): nothing was sent.
  if (::connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(c.fd);
    return std::nullopt;
  }
  const std::size_t size = request.ByteSizeLong();
  c.request.resize(5 + size);
  c.request[0] = 0;  // not compressed
  for (int i = 0; i < 4; ++i) c.request[1 + i] = static_cast<char>((size >> (8 * (3 - i))) & 0xff);
  request.SerializeWithCachedSizesToArray(reinterpret_cast<std::uint8_t*>(c.request.data() + 5));
  grpc::Status st = run(c, method, timeout_s, response);
  ::close(c.fd);
  return st;
}

}  // namespace gpuq::cli
