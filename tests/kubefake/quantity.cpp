#include "tests/kubefake/quantity.hpp"

#include <cctype>
#include <charconv>
#include <limits>
#include <string>

namespace gpuq::kubefake {

namespace {

__extension__ typedef __int128 Wide;  // GCC/Clang; exact for every valid quantity

struct Suffix {
  int binary_exp = 0;   // times 2^binary_exp
  int decimal_exp = 0;  // times 10^decimal_exp
};

std::optional<Suffix> suffix_of(std::string_view s) {
  static constexpr std::string_view binary[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  for (int i = 0; i < 6; ++i) {
    if (s == binary[i]) return Suffix{10 * (i + 1), 0};
  }
  static constexpr std::pair<std::string_view, int> decimal[] = {
      {"", 0},  {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3},
      {"M", 6}, {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  for (const auto& [name, exp] : decimal) {
    if (s == name) return Suffix{0, exp};
  }
  if (s.size() >= 2 && (s[0] == 'e' || s[0] == 'E')) {
    int exp = 0;
    auto [p, ec] = std::from_chars(s.data() + 1, s.data() + s.size(), exp);
    if (ec == std::errc() && p == s.data() + s.size() && exp >= -18 && exp <= 18)
      return Suffix{0, exp};
  }
  return std::nullopt;
}

Wide pow10(int n) {
  Wide r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}

}  // namespace

std::optional<std::int64_t> parse_milli(std::string_view text) {
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  Wide mantissa = 0;
  int digits = 0;
  int fraction = 0;  // digits after the point
  bool point = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == '.' && !point) {
      point = true;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      if (++digits > 18) return std::nullopt;
      mantissa = mantissa * 10 + (c - '0');
      if (point) ++fraction;
    } else {
      break;
    }
  }
  if (digits == 0) return std::nullopt;
  auto suffix = suffix_of(text.substr(i));
  if (!suffix) return std::nullopt;
  // value * 1000 = mantissa * 2^b * 10^(d + 3 - fraction), rounded up.
  Wide num = mantissa << suffix->binary_exp;
  int exp = suffix->decimal_exp + 3 - fraction;
  Wide den = 1;
  if (exp >= 0) {
    // num < 10^18 * 2^60 < 2^120: at most 10^2 more fits, and anything past int64 is refused.
    if (exp > 21 || num > std::numeric_limits<std::int64_t>::max() / pow10(exp) + 1)
      return std::nullopt;
    num *= pow10(exp);
  } else {
    if (-exp > 36) return std::nullopt;
    den = pow10(-exp);
  }
  Wide milli = (num + den - 1) / den;
  if (milli > std::numeric_limits<std::int64_t>::max()) return std::nullopt;
  auto v = static_cast<std::int64_t>(milli);
  return negative ? -v : v;
}

std::string quantity_text(const boost::json::value& v) {
  if (v.is_string()) return std::string(v.get_string().c_str());
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  if (v.is_double()) return boost::json::serialize(v);
  return "";
}

std::optional<std::int64_t> parse_milli(const boost::json::value& v) {
  std::string t = quantity_text(v);
  if (t.empty()) return std::nullopt;
  return parse_milli(std::string_view(t));
}

}  // namespace gpuq::kubefake
