#pragma once
// A real HTTP server on a loopback port that keeps what is POSTed to it (a notification hook):
// for the tests of notifications, standalone and on Kubernetes.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace gpuq::test {

// The path and body of each request it was sent; it answers 500 to the first request of a path
// that ends in "flaky", 200 to the rest.
class HttpReceiver {
 public:
  HttpReceiver() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    REQUIRE(::listen(fd_, 16) == 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~HttpReceiver() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  // (path, body) of each request so far, waiting up to 10 s for at least n.
  std::vector<std::pair<std::string, std::string>> got(std::size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return got_.size() >= n; });
    return got_;
  }

 private:
  void serve() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string in;
      char buf[4096];
      std::size_t need = std::string::npos;
      while (need == std::string::npos || in.size() < need) {
        const ssize_t r = ::read(c, buf, sizeof buf);
        if (r <= 0) break;
        in.append(buf, static_cast<std::size_t>(r));
        const auto end = in.find("\r\n\r\n");
        if (end != std::string::npos && need == std::string::npos) {
          const auto cl = in.find("Content-Length: ");
          need = end + 4 + (cl == std::string::npos ? 0 : std::stoul(in.substr(cl + 16)));
        }
      }
      const std::string path = in.substr(5, in.find(' ', 5) - 5);
      const auto body_at = in.find("\r\n\r\n");
      bool fail = false;
      {
        std::lock_guard lock(mu_);
        got_.emplace_back(path, body_at == std::string::npos ? "" : in.substr(body_at + 4));
        fail = path.ends_with("flaky") && flaky_failed_++ < 1;
      }
      cv_.notify_all();
      const std::string out = fail ? "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"
                                   : "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
      (void)!::write(c, out.data(), out.size());
      ::close(c);
    }
  }
  int fd_ = -1;
  int port_ = 0;
  int flaky_failed_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<std::string, std::string>> got_;
  std::thread thread_;
};


}  // namespace gpuq::test
