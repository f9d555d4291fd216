#pragma once
// What the local executor's tests through a real gpuqd share: submitting, waiting for a job's
// state or a file the job writes, and whether a process still lives.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/integration/daemon_process.hpp"
#include "tests/support/files.hpp"

namespace gpuq::test {

inline void submit_ok(Daemon& d, const v1::SubmitJobRequest& r) {
  auto s = submit(d, r);
  REQUIRE_MESSAGE(s.ok(), s.error_message());
}

// Polls until the job is in `state` (at most 30 s; the test fails with where it is otherwise).
inline v1::Job wait_state(Daemon& d, const std::string& id, v1::JobState state) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  v1::Job j;
  while (std::chrono::steady_clock::now() < until) {
    j = get(d, id);
    if (j.state() == state) return j;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  FAIL("job " << id << " is " << v1::JobState_Name(j.state()) << " (" << j.reason() << "), not "
              << v1::JobState_Name(state));
  return j;
}

inline void wait_file(const fs::path& p) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(p) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE_MESSAGE(fs::exists(p), p << " never appeared");
}

// Whether pid is a live process (a zombie is not: it has ended, unreaped by its new parent).
inline bool alive(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z' && stat[paren + 2] != 'X';
}

}  // namespace gpuq::test
