// gpuqd's Unix socket (auth/unix_listener.hpp) with a real gRPC server: each call learns the
// account of the process that made it from the kernel; a client run as `nobody` (setpriv) is
// seen as nobody, the test itself as its own account. A stale socket file is replaced, a live
// one is not taken over.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "auth/caller.hpp"
#include "tests/support/files.hpp"

using namespace gpuq;

namespace {

std::string text_of(const grpc::ByteBuffer& b) {
  std::vector<grpc::Slice> slices;
  if (!b.Dump(&slices).ok()) return {};
  std::string out;
  for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// Answers every call with "<user> <uid> <groups...>" of its caller, or "unknown <peer>".
class WhoService final : public grpc::CallbackGenericService {
 public:
  explicit WhoService(const auth::UnixListener*& listener) : listener_(listener) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    std::string reply = "unknown " + ctx->peer();
    if (auto cred = listener_->peer(ctx->peer())) {
      const auth::Caller c = auth::local_caller(*cred);
      reply = c.user + " " + std::to_string(c.uid);
      for (const auto& g : c.groups) reply += " " + g;
    }
    return new Reactor(reply);
  }

 private:
  class Reactor final : public grpc::ServerGenericBidiReactor {
   public:
    explicit Reactor(const std::string& reply) {
      grpc::Slice s(reply);
      out_ = grpc::ByteBuffer(&s, 1);
      StartRead(&in_);
    }
    void OnReadDone(bool) override { StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK); }
    void OnDone() override { delete this; }

   private:
    grpc::ByteBuffer in_, out_;
  };
  const auth::UnixListener*& listener_;
};

std::string who_at(const std::string& target) {
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice s(std::string("?"));
  grpc::ByteBuffer req(&s, 1), resp;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, "/test.Who/Ask", grpc::StubOptions(), &req, &resp, [&](grpc::Status st) { done.set_value(st); });
  const grpc::Status st = done.get_future().get();
  return st.ok() ? text_of(resp) : "error " + st.error_message();
}

std::string run(const std::string& command) {
  std::string out;
  FILE* f = ::popen(command.c_str(), "r");
  if (!f) return out;
  char buf[512];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  ::pclose(f);
  return out;
}

}  // namespace

// Not a test of its own: the client the test below runs as another account.
TEST_CASE("[client] who am I at $GPUQ_TEST_SOCKET" * doctest::skip(std::getenv("GPUQ_TEST_SOCKET") == nullptr)) {
  std::printf("WHO=%s\n", who_at(std::string("unix:") + std::getenv("GPUQ_TEST_SOCKET")).c_str());
}

TEST_CASE("a call through the socket is known by the account that made it") {
  if (std::getenv("GPUQ_TEST_SOCKET")) return;  // the client run above
  test::TempDir dir;
  ::chmod(dir.path.c_str(), 0755);
  const std::string path = (dir.path / "gpuqd.sock").string();
  auto listener = auth::UnixListener::open(path);
  REQUIRE_MESSAGE(listener.ok(), listener.error());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0666);
  CHECK_FALSE(auth::UnixListener::open(path).ok());  // it answers: not taken over

  const auth::UnixListener* l = listener.value().get();
  WhoService who(l);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(&who);
  auto server = builder.BuildAndStart();
  REQUIRE(server);
  listener.value()->serve(server.get());

  const std::string me = who_at("unix:" + path);
  CHECK(me.rfind(auth::local_caller({::getpid(), ::getuid(), ::getgid()}).user + " " + std::to_string(::getuid()), 0) == 0);
  // Over TCP nobody is known: the peer is an address.
  CHECK(who_at("127.0.0.1:" + std::to_string(port)).rfind("unknown ipv4:127.0.0.1:", 0) == 0);

  if (::getuid() != 0) {
    MESSAGE("not root: the call as nobody (setpriv) is skipped; CI runs as root");
  } else {
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    // The test binary must be reachable by nobody: it is run from a copy in the temp dir.
    const std::string copy = (dir.path / "client").string();
    std::filesystem::copy_file(self, copy);
    ::chmod(copy.c_str(), 0755);
    const std::string out = run("GPUQ_TEST_SOCKET=" + path + " setpriv --reuid=nobody --regid=nogroup --clear-groups " +
                                copy + " -tc='[client]*' 2>&1");
    INFO(out);
    CHECK(out.find("WHO=nobody 65534 nogroup") != std::string::npos);
  }
  listener.value()->stop();
  CHECK_FALSE(std::filesystem::exists(path));
  server->Shutdown();
}

TEST_CASE("a socket file left by a gpuqd that is gone is replaced; another file is not") {
  if (std::getenv("GPUQ_TEST_SOCKET")) return;
  test::TempDir dir;
  const std::string path = (dir.path / "gpuqd.sock").string();
  // A socket file nobody answers at (its gpuqd was killed): bound, then closed.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  ::close(fd);
  REQUIRE(std::filesystem::exists(path));
  auto again = auth::UnixListener::open(path);
  REQUIRE_MESSAGE(again.ok(), again.error());
  std::FILE* f = std::fopen((dir.path / "plain").c_str(), "w");
  std::fclose(f);
  auto refused = auth::UnixListener::open((dir.path / "plain").string());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error() == "socket: " + (dir.path / "plain").string() + " exists and is not a socket; remove it or choose another path");
  auto long_path = auth::UnixListener::open(std::string(200, 'x'));
  REQUIRE_FALSE(long_path.ok());
  CHECK(long_path.error() == "socket: \"" + std::string(200, 'x') + "\" is not allowed; use a path of 1 to 107 bytes");
}
