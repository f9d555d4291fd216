#include "auth/unix_listener.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>
#include <spdlog/spdlog.h>

namespace gpuq::auth {

namespace {

std::string why(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

bool fill_address(sockaddr_un& addr, const std::string& path) {
  addr = {};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return true;
}

// Whether a gpuqd answers at the socket `path` (a connection is accepted).
bool answers(const sockaddr_un& addr) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

Result<std::unique_ptr<UnixListener>> UnixListener::open(const std::string& path, unsigned mode) {
  sockaddr_un addr;
  if (!fill_address(addr, path))
    return Error{"socket: \"" + path + "\" is not allowed; use a path of 1 to " + std::to_string(sizeof addr.sun_path - 1) +
                     " bytes",
                 ErrorCode::kInvalidArgument};
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return Error{"socket: " + path + " exists and is not a socket; remove it or choose another path",
                   ErrorCode::kFailedPrecondition};
    if (answers(addr))
      return Error{"socket: another gpuqd serves at " + path, ErrorCode::kFailedPrecondition};
    ::unlink(path.c_str());  // left by a gpuqd that is gone
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Error{why("socket: cannot make a socket for", path), ErrorCode::kUnavailable};
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::chmod(path.c_str(), mode) != 0 ||
      ::listen(fd, 128) != 0) {
    Error e{why("socket: cannot listen at", path), ErrorCode::kUnavailable};
    ::close(fd);
    return e;
  }
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) {
    ::close(fd);
    return Error{why("socket: no pipe for", path), ErrorCode::kUnavailable};
  }
  return std::unique_ptr<UnixListener>(new UnixListener(path, fd, wake[0], wake[1]));
}

UnixListener::UnixListener(std::string path, int fd, int wake_read, int wake_write)
    : path_(std::move(path)), fd_(fd), wake_{wake_read, wake_write} {}

UnixListener::~UnixListener() {
  stop();
  for (int fd : {fd_, wake_[0], wake_[1]})
    if (fd >= 0) ::close(fd);
}

void UnixListener::serve(grpc::Server* server) {
  thread_ = std::thread([this, server] { accept_loop(server); });
}

void UnixListener::stop() {
  if (stopped_.exchange(true)) return;
  const char b = 1;
  if (::write(wake_[1], &b, 1) < 0) spdlog::warn("event=socket_stop_failed error=\"{}\"", std::strerror(errno));
  if (thread_.joinable()) thread_.join();
  ::unlink(path_.c_str());
}

void UnixListener::accept_loop(grpc::Server* server) {
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("event=socket_poll_failed error=\"{}\"", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0 || stopped_) return;
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);  // gRPC polls it
    if (c < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        spdlog::warn("event=socket_accept_failed error=\"{}\"", std::strerror(errno));
      continue;
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      spdlog::warn("event=socket_peer_unknown error=\"{}\"", std::strerror(errno));
      ::close(c);
      continue;
    }
    {
      std::lock_guard lock(mu_);
      peers_[c] = PeerCred{cred.pid, cred.uid, cred.gid};
    }
    grpc::AddInsecureChannelFromFd(server, c);  // gRPC owns c from here on
  }
}

std::optional<PeerCred> UnixListener::peer(std::string_view grpc_peer) const {
  if (grpc_peer.substr(0, 3) != "fd:") return std::nullopt;
  int fd = -1;
  const char* end = grpc_peer.data() + grpc_peer.size();
  if (std::from_chars(grpc_peer.data() + 3, end, fd).ec != std::errc()) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = peers_.find(fd);
  if (it == peers_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gpuq::auth
