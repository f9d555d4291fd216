#pragma once
// Files for tests: reading one whole, and a temporary folder removed at the end.
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuq::test {

// The whole content of a file ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh folder under /tmp, removed with everything in it at the end (kept when GPUQ_KEEP_TMP is
// set, to read what a failed test left there).
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/gpuq-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    if (std::getenv("GPUQ_KEEP_TMP") != nullptr) return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace gpuq::test
