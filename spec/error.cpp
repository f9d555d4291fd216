#include "spec/error.hpp"

#include <algorithm>
#include <cctype>

namespace gpuq::spec {

namespace {

template <class Parts>
std::string path_string(const Parts& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (p.is_index) {
      out += '[';
      out += std::to_string(p.index);
      out += ']';
    } else {
      if (!out.empty()) out += '.';
      out += p.key;
    }
  }
  return out;
}

// Edit distance with adjacent transpositions (optimal string alignment), case-insensitive: keys
// are short, a few dozen characters at most.
std::size_t distance(std::string_view a, std::string_view b) {
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  const std::size_t w = b.size() + 1;
  std::vector<std::size_t> d((a.size() + 1) * w);
  for (std::size_t i = 0; i <= a.size(); ++i) d[i * w] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t v = std::min({d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1,
                                d[(i - 1) * w + j - 1] + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
        v = std::min(v, d[(i - 2) * w + j - 2] + 1);
      d[i * w + j] = v;
    }
  return d[a.size() * w + b.size()];
}

template <class Words>
std::optional<std::string_view> nearest_of(std::string_view word, const Words& allowed) {
  if (word.size() > 64) return std::nullopt;
  std::optional<std::string_view> best;
  std::size_t best_d = 0;
  for (std::string_view a : allowed) {
    const std::size_t d = distance(word, a);
    // One edit in four letters, at least one: "weigth", "borowingLimit", "Nominal".
    const std::size_t allowed_d = std::max<std::size_t>(1, a.size() / 4);
    if (d <= allowed_d && (!best || d < best_d)) {
      best = a;
      best_d = d;
    }
  }
  return best;
}

}  // namespace

std::string Path::str() const { return path_string(parts_); }

SpecError::SpecError(const Path& at, std::string reason) : reason_(std::move(reason)) {
  path_.reserve(at.parts().size());
  for (const Path::Part& p : at.parts()) path_.push_back({std::string(p.key), p.index, p.is_index});
  render();
}

SpecError::SpecError(std::string reason, std::optional<Mark> mark)
    : reason_(std::move(reason)), mark_(mark) {
  render();
}

SpecError& SpecError::locate(Mark m) {
  if (!mark_) {
    mark_ = m;
    render();
  }
  return *this;
}

SpecError& SpecError::from_source(std::string source) {
  source_ = std::move(source);
  render();
  return *this;
}

SpecError& SpecError::under(std::string_view root) {
  path_.insert(path_.begin(), Part{std::string(root), 0, false});
  render();
  return *this;
}

void SpecError::render() {
  path_text_ = path_string(path_);
  message_.clear();
  if (!source_.empty()) message_ += source_ + (mark_ ? ":" : ": ");
  if (mark_) message_ += std::to_string(mark_->line) + ":" + std::to_string(mark_->column) + ": ";
  if (!path_text_.empty()) message_ += path_text_ + ": ";
  message_ += reason_;
}

void fail(const Path& at, std::string reason) { throw SpecError(at, std::move(reason)); }

std::string quoted(std::string_view text) {
  constexpr std::size_t kShown = 80;
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kShown)
    out += "...\" (" + std::to_string(text.size()) + " bytes)";
  else
    out += '"';
  return out;
}

std::optional<std::string_view> nearest(std::string_view word,
                                        std::initializer_list<std::string_view> allowed) {
  return nearest_of(word, allowed);
}
std::optional<std::string_view> nearest(std::string_view word,
                                        const std::vector<std::string_view>& allowed) {
  return nearest_of(word, allowed);
}

std::string one_of(const std::vector<std::string_view>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

}  // namespace gpuq::spec
