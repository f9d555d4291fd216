#pragma once
// The gpuq command line run in this process against a gpuqd child (tests/integration/
// daemon_process.hpp), what it printed, and the readers the tests look at it with: JSON, table
// rows, job ids, and a `gpuq watch` running on a thread of its own.
#include <doctest/doctest.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli.hpp"
#include "tests/integration/daemon_process.hpp"

namespace gpuq::test {

struct Run {
  int rc = 0;
  std::string out, err;
};

inline Run gpuq_cmd(const Daemon& d, std::vector<std::string> args) {
  args.insert(args.begin(), {"--server", d.address()});
  std::ostringstream out, err;
  Run r;
  r.rc = gpuq::cli::run_cli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

inline boost::json::value parse_json(const std::string& text) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  REQUIRE_MESSAGE(!ec, "not JSON (" << ec.message() << "): " << text.substr(0, 500));
  return v;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// The line of a table whose first column is `name`; empty when there is none.
inline std::string row_of(const std::string& table, const std::string& name) {
  for (const std::string& l : lines_of(table))
    if (l.rfind(name + " ", 0) == 0) return l;
  return "";
}

// "job/ID submitted (STATE)\n" -> ID.
inline std::string submitted_id(const Run& r) {
  const std::string prefix = "job/", suffix = " submitted (";
  const auto end = r.out.find(suffix);
  REQUIRE_MESSAGE((r.out.rfind(prefix, 0) == 0 && end != std::string::npos), r.out << r.err);
  return r.out.substr(prefix.size(), end - prefix.size());
}

inline std::string str(const boost::json::value& v) { return std::string(v.as_string()); }

// The ids (spec.id) of `ls -o json`'s jobs.
inline std::set<std::string> listed_ids(const Run& r) {
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const boost::json::value v = parse_json(r.out);
  CHECK(v.at("next_page_token").as_string().empty());  // every page merged
  std::set<std::string> ids;
  for (const auto& j : v.at("jobs").as_array()) ids.insert(str(j.at("spec").at("id")));
  CHECK(ids.size() == v.at("jobs").as_array().size());  // none twice
  return ids;
}

inline std::set<std::string> names_of(const Daemon& d, const char* what, const char* list) {
  const Run r = gpuq_cmd(d, {what, "-o", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  std::set<std::string> names;
  const boost::json::value v = parse_json(r.out);
  for (const auto& x : v.at(list).as_array()) names.insert(str(x.at("spec").at("name")));
  return names;
}

// Output written from another thread (a watch running while the test looks at what it printed).
class SharedText : public std::streambuf {
 public:
  std::string text() const {
    std::lock_guard lock(mu_);
    return text_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) {
      std::lock_guard lock(mu_);
      text_.push_back(static_cast<char>(c));
    }
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard lock(mu_);
    text_.append(s, static_cast<std::size_t>(n));
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::string text_;
};

// `gpuq watch ...` on a thread of its own. gpuqd ends every watch stream (UNAVAILABLE, "gpuqd
// is stopping") when it stops on SIGTERM, and watch has no option that ends it sooner, so the
// end is stopping the daemon; the destructor does it too, so a failed check cannot leave the
// thread waiting.
class Watch {
 public:
  Watch(Daemon& d, std::vector<std::string> args) : d_(d) {
    args.insert(args.begin(), {"--server", d.address(), "watch"});
    thread_ = std::thread([this, args] { rc_ = gpuq::cli::run_cli(args, out_, err_); });
  }
  ~Watch() { finish(); }
  // Waits (at most 10 s) until it has printed `n` lines.
  bool wait_lines(std::size_t n) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (lines_of(out_text_.text()).size() < n) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  // Stops gpuqd (every watch on it ends) and waits for the command to return.
  int finish(int sig = SIGTERM) {
    d_.stop(sig);
    if (thread_.joinable()) thread_.join();
    return rc_;
  }
  std::string out() const { return out_text_.text(); }
  std::string err() const { return err_text_.text(); }

 private:
  Daemon& d_;
  SharedText out_text_, err_text_;
  std::ostream out_{&out_text_}, err_{&err_text_};
  std::atomic<int> rc_{-1};
  std::thread thread_;
};

}  // namespace gpuq::test
