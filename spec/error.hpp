#pragma once
// Where a value sits in what a user declared, and the error that names it. Every front end (YAML
// files, the gRPC API, traces, the Kubernetes binder) reports a bad value the same way:
//
//   [SOURCE:][LINE:COLUMN: ]PATH: REASON
//   queues.yaml:12:24: queues[3].quotas[0].resources.gpu.borrowingLimit: "-2" is negative; it must
//   be >= 0 spec.pods[0].resources.gpu: "banana" is not a quantity ...              (an API
//   request)
//
// PATH uses the YAML keys (the scenario format's spelling) whatever the front end.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuq::spec {

// A position in a text: 1-based line and column.
struct Mark {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
};

// The path of the field being read or checked, as a stack the reader pushes and pops while it
// descends (Path::Key and Path::Index do both). Keys are views: they must outlive the Path's use
// (literals, or the text of the document being read). Nothing is allocated until an error
// turns it into text.
class Path {
 public:
  struct Part {
    std::string_view key;  // empty for an index
    std::size_t index = 0;
    bool is_index = false;
  };

  Path() = default;
  explicit Path(std::string_view root) { push_key(root); }

  void push_key(std::string_view k) { parts_.push_back({k, 0, false}); }
  void push_index(std::size_t i) { parts_.push_back({{}, i, true}); }
  void pop() { parts_.pop_back(); }
  const std::vector<Part>& parts() const { return parts_; }
  // "queues[3].quotas[0].resources.gpu"; "" at the root.
  std::string str() const;

  // Pushes for the lifetime of the guard: `Path::Key k(path, "quotas");`.
  class Key {
   public:
    Key(Path& p, std::string_view k) : p_(p) { p_.push_key(k); }
    ~Key() { p_.pop(); }
    Key(const Key&) = delete;
    Key& operator=(const Key&) = delete;

   private:
    Path& p_;
  };
  class Index {
   public:
    Index(Path& p, std::size_t i) : p_(p) { p_.push_index(i); }
    ~Index() { p_.pop(); }
    Index(const Index&) = delete;
    Index& operator=(const Index&) = delete;

   private:
    Path& p_;
  };

 private:
  std::vector<Part> parts_;
};

// A field that is wrong, or a text that cannot be understood. Owns copies of everything it names.
class SpecError : public std::exception {
 public:
  struct Part {
    std::string key;
    std::size_t index = 0;
    bool is_index = false;
  };

  SpecError(const Path& at, std::string reason);
  // A problem of the whole input (no field), e.g. a syntax error, located or not.
  explicit SpecError(std::string reason, std::optional<Mark> mark = std::nullopt);

  const char* what() const noexcept override { return message_.c_str(); }
  const std::vector<Part>& path() const { return path_; }
  const std::string& path_text() const { return path_text_; }
  const std::string& reason() const { return reason_; }
  const std::optional<Mark>& mark() const { return mark_; }

  // The front end adds what it knows: where in the text (when not yet known) and the source's
  // name ("queues.yaml"), or a prefix for every path ("spec" for an API request's fields).
  SpecError& locate(Mark m);
  SpecError& from_source(std::string source);
  SpecError& under(std::string_view root);

 private:
  void render();

  std::vector<Part> path_;
  std::string path_text_;
  std::string reason_;
  std::optional<Mark> mark_;
  std::string source_;
  std::string message_;
};

[[noreturn]] void fail(const Path& at, std::string reason);

// "\"text\"": how a value is shown in an error (control characters escaped, long text cut).
std::string quoted(std::string_view text);

// The allowed word nearest to `word` when it is a plausible misspelling (a small edit distance,
// or the same letters in another case); nullopt otherwise.
std::optional<std::string_view> nearest(std::string_view word,
                                        std::initializer_list<std::string_view> allowed);
std::optional<std::string_view> nearest(std::string_view word,
                                        const std::vector<std::string_view>& allowed);

// "a, b or c".
std::string one_of(const std::vector<std::string_view>& words);

}  // namespace gpuq::spec
