#include "spec/quantity.hpp"

#include <cctype>
#include <cstdint>
#include <limits>

namespace gpuq {
namespace {

__extension__ using i128 = __int128;  // exact intermediate products

Error bad(std::string_view text, std::string_view why) {
  return Error{"quantity \"" + std::string(text) + "\": " + std::string(why)};
}

constexpr std::string_view kTooLarge =
    "too large; at most 2^63-1 base units (thousandths for gpu and cpu, bytes for memory)";
constexpr std::string_view kHint =
    "; use a number with an optional suffix, e.g. 2, 500m, 1.5, 16Gi";

struct Suffix {
  int exp10 = 0;
  int exp2 = 0;
  bool ok = true;
};

Suffix parse_suffix(std::string_view s) {
  if (s.empty()) return {};
  if (s.size() == 2 && s[1] == 'i') {
    switch (s[0]) {
      case 'K':
        return {0, 10};
      case 'M':
        return {0, 20};
      case 'G':
        return {0, 30};
      case 'T':
        return {0, 40};
      case 'P':
        return {0, 50};
      case 'E':
        return {0, 60};
      default:
        return {0, 0, false};
    }
  }
  if (s.size() != 1) return {0, 0, false};
  switch (s[0]) {
    case 'n':
      return {-9, 0};
    case 'u':
      return {-6, 0};
    case 'm':
      return {-3, 0};
    case 'k':
      return {3, 0};
    case 'M':
      return {6, 0};
    case 'G':
      return {9, 0};
    case 'T':
      return {12, 0};
    case 'P':
      return {15, 0};
    case 'E':
      return {18, 0};
    default:
      return {0, 0, false};
  }
}

// The number part of a quantity: sign, up to 18 significant digits, and the decimal exponent
// they carry (from a fraction and an "e" exponent). `end` is where the suffix starts.
struct Decimal {
  bool negative = false;
  i128 mantissa = 0;
  int exp10 = 0;
  std::size_t end = 0;
};

Result<Decimal> read_decimal(std::string_view text, std::string_view s) {
  Decimal out;
  std::size_t i = 0;
  if (s[i] == '+' || s[i] == '-') out.negative = s[i++] == '-';
  int digits = 0;
  bool any_digit = false;
  auto take_digit = [&](char c, bool fractional) {
    any_digit = true;
    int d = c - '0';
    if (digits == 0 && d == 0) {
      if (fractional) --out.exp10;
      return true;
    }
    if (digits >= 18) {
      // Beyond 18 significant digits only zeros may follow (they only scale the value).
      if (d != 0) return false;
      if (!fractional) ++out.exp10;
      return true;
    }
    out.mantissa = out.mantissa * 10 + d;
    ++digits;
    if (fractional) --out.exp10;
    return true;
  };
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i)
    if (!take_digit(s[i], false)) return bad(text, "more than 18 significant digits");
  if (i < s.size() && s[i] == '.') {
    ++i;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i)
      if (!take_digit(s[i], true)) return bad(text, "more than 18 significant digits");
  }
  if (!any_digit) return bad(text, std::string("not a number") + std::string(kHint));

  // An exponent ("1e3", "2E-3"); a lone trailing "E" is the exa suffix instead.
  if (i + 1 < s.size() && (s[i] == 'e' || s[i] == 'E') &&
      (std::isdigit(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '+' || s[i + 1] == '-')) {
    ++i;
    bool exp_negative = false;
    if (s[i] == '+' || s[i] == '-') exp_negative = s[i++] == '-';
    int e = 0;
    bool any = false;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      any = true;
      e = e * 10 + (s[i] - '0');
      if (e > 100) return bad(text, "exponent out of range (at most 100 either way)");
    }
    if (!any) return bad(text, std::string("malformed exponent") + std::string(kHint));
    out.exp10 += exp_negative ? -e : e;
  }
  out.end = i;
  return out;
}

}  // namespace

Result<Quantity> parse_quantity(std::string_view text, UnitScale scale) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) return bad(text, std::string("empty") + std::string(kHint));

  auto number = read_decimal(text, s);
  if (!number) return Error{number.error()};
  const bool negative = number->negative;
  const i128 mantissa = number->mantissa;
  int exp10 = number->exp10;
  const std::size_t i = number->end;

  Suffix suffix = parse_suffix(s.substr(i));
  if (!suffix.ok)
    return bad(text, "unknown suffix \"" + std::string(s.substr(i)) +
                         "\"; allowed: n u m k M G T P E Ki Mi Gi Ti Pi Ei");
  exp10 += suffix.exp10;
  if (scale == UnitScale::kMilli) exp10 += 3;

  // mantissa < 1e18 and 2^exp2 <= 2^60, so the product fits in 128 bits.
  i128 value = mantissa << suffix.exp2;
  constexpr i128 kMax = std::numeric_limits<std::int64_t>::max();
  if (value != 0) {
    for (; exp10 > 0; --exp10) {
      value *= 10;
      if (value > kMax) return bad(text, kTooLarge);
    }
    for (; exp10 < 0; ++exp10) {
      if (value % 10 != 0)
        return bad(text, scale == UnitScale::kMilli
                             ? "finer than the smallest unit (1m, one thousandth)"
                             : "not a whole number of units");
      value /= 10;
    }
    if (value > kMax) return bad(text, kTooLarge);
  }
  return static_cast<Quantity>(negative ? -value : value);
}

std::string format_quantity(Quantity q, UnitScale scale) {
  if (q == 0) return "0";
  std::string sign = q < 0 ? "-" : "";
  std::uint64_t a =
      q < 0 ? static_cast<std::uint64_t>(-(q + 1)) + 1 : static_cast<std::uint64_t>(q);
  if (scale == UnitScale::kMilli) {
    if (a % 1000 == 0) return sign + std::to_string(a / 1000);
    return sign + std::to_string(a) + "m";
  }
  static constexpr const char* kBinary[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  int shift = 0;
  while (shift < 6 && a % 1024 == 0 && a >= 1024) {
    a /= 1024;
    ++shift;
  }
  return sign + std::to_string(a) + (shift ? kBinary[shift - 1] : "");
}

std::string format_quantity(Quantity q, ResourceId r) {
  // Only memory uses the binary suffixes; "other" resources are plain counts even when they
  // happen to be multiples of 1024.
  if (r == kMemory || scale_of(r) == UnitScale::kMilli) return format_quantity(q, scale_of(r));
  return std::to_string(q);
}

}  // namespace gpuq
