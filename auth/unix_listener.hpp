#pragma once
// gpuqd's Unix socket (issue [3/6], docs/tasks/tenants-and-security.md): local callers reach the gRPC API through
// it, and the kernel says who they are (SO_PEERCRED). gRPC cannot tell a handler the peer's
// credentials of a Unix socket, so this listener accepts the connections itself, reads each
// one's credentials, and hands the connection to the gRPC server (AddInsecureChannelFromFd);
// gRPC then names the call's peer "fd:N", which peer() maps back to the credentials.
//
// A connection's fd number is only reused once gRPC has closed it, and gRPC closes it only
// after every call on it is gone: so while a handler's call lives, its "fd:N" still names the
// connection the call came on.
#include <sys/types.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "spec/result.hpp"

namespace grpc {
class Server;
}

namespace gpuq::auth {

struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

class UnixListener {
 public:
  // Listens at `path` with mode `mode` (0666: every local account may connect; what each may
  // do is decided per call). A socket file left by a gpuqd that is gone is replaced; one that
  // answers is an error (another gpuqd serves there), as is any other file at the path.
  static Result<std::unique_ptr<UnixListener>> open(const std::string& path, unsigned mode = 0666);
  ~UnixListener();
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  // Starts accepting, handing each connection to `server` (started, not yet shut down).
  void serve(grpc::Server* server);
  // Stops accepting (before the server shuts down) and removes the socket file.
  void stop();
  // The credentials of the connection a call came on, from the call's peer ("fd:N"); nullopt
  // for a peer of another kind (TCP) or unknown.
  std::optional<PeerCred> peer(std::string_view grpc_peer) const;
  const std::string& path() const { return path_; }

 private:
  UnixListener(std::string path, int fd, int wake_read, int wake_write);
  void accept_loop(grpc::Server* server);

  std::string path_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};  // stop() writes to [1]; the accept loop polls [0]
  std::thread thread_;
  mutable std::mutex mu_;
  std::unordered_map<int, PeerCred> peers_;  // by the fd gRPC was given
  std::atomic<bool> stopped_{false};
};

}  // namespace gpuq::auth
