#pragma once
// Result<T>: a value or an error message a person can read. The engine reports every failure a
// caller must handle this way; exceptions are kept for the edges (parsing, startup).
#include <string>
#include <utility>
#include <variant>

namespace gpuq {

// What kind of failure: lets the API layer map errors to canonical status codes. The engine uses
// the first five; kResourceExhausted, kUnavailable and kPermissionDenied come from the layers above
// it (limits, storage, the executor's accounts).
enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kRejected,
  kResourceExhausted,
  kUnavailable,
  kPermissionDenied
};

struct Error {
  std::string message;
  ErrorCode code = ErrorCode::kInvalidArgument;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<1>(v_).message; }
  ErrorCode code() const { return std::get<1>(v_).code; }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& error() const { return error_.message; }
  ErrorCode code() const { return error_.code; }

 private:
  Error error_;
  bool failed_ = false;
};

inline Result<void> Ok() { return {}; }

}  // namespace gpuq
