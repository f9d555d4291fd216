#pragma once
// A gpuqd child process, for the integration tests and daemon_bench: started with its stdout
// and stderr in files, ready once it prints "gpuqd listening grpc=ADDR http_port=PORT socket=PATH".
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace gpuq::test {

struct GpuqdChild {
  pid_t pid = -1;
  std::string address;  // "unix:SOCKET" (or TCP without one); empty: it exited or did not answer in time
  std::string socket;   // its Unix socket's path; empty: none
  std::string tcp;      // its TCP address (anonymous callers there)
  int http_port = 0;
  double start_seconds = 0;  // from exec to the listening line
  int exit_status = -1;      // when it ended before it listened: its exit code (-1: a signal)

  void stop(int sig) {
    if (pid <= 0) return;
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
  }
};

inline GpuqdChild start_gpuqd(const std::string& binary, const std::vector<std::string>& args,
                              const std::filesystem::path& out, const std::filesystem::path& err,
                              std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  std::error_code ec;
  std::filesystem::remove(out, ec);
  std::fflush(stdout);
  std::fflush(stderr);
  const auto t0 = std::chrono::steady_clock::now();
  // Everything the child needs is made before fork: the caller may have threads (the Kubernetes
  // fake's), and one of them may hold the allocator's lock at fork, so the child only calls
  // dup2 and execv (a malloc there hung for good under ASan).
  std::vector<char*> argv{const_cast<char*>("gpuqd")};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  GpuqdChild c;
  if (out_fd < 0 || err_fd < 0) {
    if (out_fd >= 0) ::close(out_fd);
    if (err_fd >= 0) ::close(err_fd);
    return c;
  }
  c.pid = fork();
  if (c.pid == 0) {
    ::dup2(out_fd, STDOUT_FILENO);  // dup2's copies are not close-on-exec
    ::dup2(err_fd, STDERR_FILENO);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  while (c.address.empty() && std::chrono::steady_clock::now() - t0 < timeout) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::ifstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      const auto at = line.find("grpc=");
      if (line.rfind("gpuqd listening", 0) != 0 || at == std::string::npos) continue;
      c.address = line.substr(at + 5, line.find(' ', at) - at - 5);
      const auto hp = line.find("http_port=");
      if (hp != std::string::npos) c.http_port = std::stoi(line.substr(hp + 10));
      if (const auto so = line.find("socket="); so != std::string::npos && line.substr(so + 7) != "none")
        c.socket = line.substr(so + 7);
      c.tcp = c.address;
      if (!c.socket.empty()) c.address = "unix:" + c.socket;  // as root: an admin
    }
    int status = 0;
    if (c.address.empty() && waitpid(c.pid, &status, WNOHANG) == c.pid) {
      c.pid = -1;
      if (WIFEXITED(status)) c.exit_status = WEXITSTATUS(status);
      break;
    }
  }
  c.start_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

}  // namespace gpuq::test
