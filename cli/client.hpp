#pragma once
// What every client command shares: where the server is, the per-call deadline, the output
// streams, and how a failed call is reported (exit 1).
#include <grpcpp/grpcpp.h>
#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/credentials.hpp"

namespace gpuq::cli {

struct Context {
  Context(std::ostream& o, std::ostream& e) : out(o), err(e) {}

  std::ostream& out;
  std::ostream& err;
  std::string server_flag;  // --server; empty: $GPUQ_SERVER, then 127.0.0.1:7433
  double timeout_s = 30;    // per call; 0: none
  CredentialFlags credential_flags;  // --token, --token-file, --tls-* (cli/credentials.hpp)
  // The words run_cli was given: whether submit's words came after "--" (a command) or not (a
  // batch script).
  std::vector<std::string> args;
  // The command chosen by the parse; run after every option has its value.
  std::function<int(Context&)> action;
  // What the command read of its standard input (a file argument "-"): the quick gpuq hands it
  // to gpuq-full as its standard input when it runs gpuq-full in its place (quick.cpp).
  std::optional<std::string> stdin_read;

  const std::string& server();
  // gpuqd's socket when unary calls go through it as plain HTTP/2: a unix: server, and not
  // GPUQ_TRANSPORT=grpc; nullopt otherwise.
  std::optional<std::string> socket_path();
  // The gRPC channel, and a context with the deadline of --timeout (none when
  // `stream_without_deadline`), carrying the bearer token to a TCP server: gpuq-full's alone
  // (client_channel.cpp); the quick gpuq has no gRPC channel (quick.cpp).
  std::shared_ptr<grpc::Channel> channel();
  std::unique_ptr<grpc::ClientContext> call(bool stream_without_deadline = false);
  // One unary call, `method` as gRPC names it ("/gpuq.v1.Jobs/Submit"). To a unix: server it goes
  // as plain HTTP/2 on the socket (cli/unix_call.hpp: no gRPC channel to build, no threads);
  // otherwise, and when the socket cannot be connected (so that is reported as before), through
  // the gRPC channel. The same request, reply, status and caller either way.
  // GPUQ_TRANSPORT=grpc takes the channel always. (In the quick gpuq "the channel" is gpuq-full
  // run in its place with the same words, when no call has been answered yet: quick.cpp.)
  template <class Req, class Resp>
  grpc::Status unary(const char* method, const Req& req, Resp& resp) {
    if (auto st = unix_unary(method, req, resp)) return *st;
    return channel_unary(method, req, resp);
  }
  // Whether the server knows who calls by itself: the account the kernel gives it for its
  // socket (unix:), or a token or certificate (TCP). Then a submit leaves the owner to the server
  // (and gpuq looks up no passwd entry: it is linked statically, glibc too).
  bool server_knows_caller();
  // Prints "gpuq: MESSAGE (CODE)" or, when the server cannot be reached, which address was tried
  // and how to fix it. Returns 1, the exit code for a failed call.
  int fail(const grpc::Status& status);

 private:
  std::optional<grpc::Status> unix_unary(const char* method, const google::protobuf::MessageLite& req,
                                         google::protobuf::MessageLite& resp);
  grpc::Status channel_unary(const char* method, const google::protobuf::MessageLite& req,
                             google::protobuf::MessageLite& resp);
  int answered_ = 0;  // calls that reached gpuqd through its socket
  const Credentials& credentials();
  std::string server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::optional<Credentials> credentials_;
};

// "NOT_FOUND" for grpc::StatusCode::NOT_FOUND.
const char* code_name(grpc::StatusCode code);
// True when the status says the connection failed, not that the server refused the call.
bool is_unreachable(const grpc::Status& status);
std::int64_t unix_now();

}  // namespace gpuq::cli
