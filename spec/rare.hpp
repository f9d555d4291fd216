#pragma once
// Rare<T>: a part of a record that most records never use, kept out of line (one pointer) until
// it is first written. A scheduler holds a Job per pending job, a million of them at a large
// site, and most of a Job is what only an admitted, preempted or tried job has: inline, that
// was most of its memory (BENCHMARKS.md: Memory per pending job).
//
// Value semantics: copying copies the part (the estimator copies the whole engine), moving moves
// the pointer. Reading an absent part reads a default-made T, so a reader never needs to know
// whether it was ever written. Writing goes through mut(), which makes it first.
#include <concepts>
#include <memory>
#include <utility>

namespace gpuq {

template <class T>
class Rare {
 public:
  Rare() = default;
  Rare(T v) { *this = std::move(v); }  // NOLINT: a T where a Rare<T> is wanted
  Rare(const Rare& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Rare& operator=(const Rare& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Rare(Rare&&) noexcept = default;
  Rare& operator=(Rare&&) noexcept = default;
  ~Rare() = default;

  // Writes the whole part (`= {}` is ambiguous: reset() says it). A T that compares equal to a
  // default-made one is not kept: reading it gives the same, and it costs nothing.
  Rare& operator=(T v) {
    if constexpr (std::equality_comparable<T>) {
      if (v == T{}) {
        reset();
        return *this;
      }
    }
    mut() = std::move(v);
    return *this;
  }

  const T& operator*() const { return p_ ? *p_ : none(); }
  operator const T&() const { return **this; }  // NOLINT: read where a T is wanted
  const T* operator->() const { return &**this; }
  T& mut() {
    if (!p_) p_ = std::make_unique<T>();
    return *p_;
  }
  // Back to the default, giving its memory back.
  void reset() { p_.reset(); }
  bool present() const { return p_ != nullptr; }
  friend bool operator==(const Rare& a, const T& b) { return *a == b; }
  friend bool operator==(const Rare& a, const Rare& b) { return *a == *b; }

 private:
  static const T& none() {
    static const T kEmpty{};
    return kEmpty;
  }
  std::unique_ptr<T> p_;
};

}  // namespace gpuq
