#pragma once
// gpuq-shim's terminal for a job run by `gpuq run` (--stdin); inline, gpuq-shim is its one user
// (binder/local/README.md). Plain POSIX, as the shim is.
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace gpuq::binder::local {

// The job's terminal (gpuq run, --stdin): a pseudo-terminal whose output is copied to the log
// as it comes and whose input is what gpuqd writes into the FIFO, both without blocking. Input
// the job does not read (its terminal's buffer full) waits here, up to 64 KiB; beyond, it is
// dropped. The shim opens the FIFO for reading and writing, so it never reads end-of-file when
// gpuqd closes its end between writes.
class Terminal {
 public:
  explicit Terminal(int log) : log_(log) {}
  // A terminal of rows x cols, its input from `fifo`; false with `error` set.
  bool open(unsigned short rows, unsigned short cols, const std::string& fifo, std::string& error) {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    char name[128];
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0 || ::ptsname_r(master_, name, sizeof name) != 0)
      return failed("cannot open a pseudo-terminal", error);
    slave_ = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave_ < 0) return failed(std::string("cannot open ") + name, error);
    winsize size{};
    size.ws_row = rows;
    size.ws_col = cols;
    ::ioctl(master_, TIOCSWINSZ, &size);
    ::fcntl(master_, F_SETFL, ::fcntl(master_, F_GETFL) | O_NONBLOCK);
    fifo_ = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fifo_ < 0) return failed("cannot open the terminal's input \"" + fifo + "\"", error);
    return true;
  }
  int slave() const { return slave_; }
  void close_slave() {  // once the job has it: the job's end is then the terminal's hang-up
    ::close(slave_);
    slave_ = -1;
  }

  // Copies what there is either way, waiting up to `ms` for something to come.
  void pump(int ms) {
    pollfd p[2] = {{master_, POLLIN, 0}, {fifo_, POLLIN, 0}};
    if (::poll(p, 2, ms) <= 0) return;
    if (p[0].revents != 0) copy_output();
    if (p[1].revents & POLLIN) {
      char buf[4096];
      const ssize_t n = ::read(fifo_, buf, sizeof buf);
      if (n > 0 && pending_.size() < (64 << 10)) pending_.append(buf, static_cast<std::size_t>(n));
    }
    if (!pending_.empty() && master_ >= 0) {
      const ssize_t n = ::write(master_, pending_.data(), pending_.size());
      if (n > 0) pending_.erase(0, static_cast<std::size_t>(n));
    }
  }
  // What the job wrote before it ended.
  void drain() {
    if (master_ >= 0) copy_output();
  }

 private:
  bool failed(const std::string& what, std::string& error) {
    error = what + ": " + std::strerror(errno);
    return false;
  }
  void copy_output() {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(master_, buf, sizeof buf);
      if (n > 0) {
        for (ssize_t at = 0; at < n;) {
          const ssize_t w = ::write(log_, buf + at, static_cast<std::size_t>(n - at));
          if (w <= 0) break;
          at += w;
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0 || errno != EAGAIN) {  // EIO: every process of the job closed its terminal
        ::close(master_);
        master_ = -1;
      }
      return;
    }
  }

  int log_;  // the job's log, where its output goes
  int master_ = -1, slave_ = -1, fifo_ = -1;
  std::string pending_;
};

}  // namespace gpuq::binder::local
