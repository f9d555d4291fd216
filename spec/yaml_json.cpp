#include "spec/yaml_json.hpp"

#include <charconv>
#include <cstdint>

namespace gpuq::spec {

namespace {

bool json_digit(char c) { return c >= '0' && c <= '9'; }

// `digits` (no sign, no prefix) in `base` as a decimal integer with `sign`; "" when they are not
// all digits of the base, or do not fit 64 bits.
std::string radix_number(std::string_view sign, std::string_view digits, int base) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) return {};
  return std::string(sign) + std::to_string(v);
}

void write_json(std::string& out, yaml::Node n) {
  if (!n) {
    out += "null";
    return;
  }
  switch (n.kind()) {
    case yaml::Kind::kNull:
      out += "null";
      return;
    case yaml::Kind::kScalar: {
      const std::string_view t = n.text();
      if (!n.quoted()) {
        if (t == "true" || t == "True" || t == "TRUE") {
          out += "true";
          return;
        }
        if (t == "false" || t == "False" || t == "FALSE") {
          out += "false";
          return;
        }
        if (std::string number = json_number(t); !number.empty()) {
          out += number;
          return;
        }
      }
      append_json_string(out, t);
      return;
    }
    case yaml::Kind::kList:
      out.push_back('[');
      for (std::size_t i = 0; i < n.size(); ++i) {
        if (i > 0) out.push_back(',');
        write_json(out, n.item(i));
      }
      out.push_back(']');
      return;
    case yaml::Kind::kMap:
      out.push_back('{');
      for (std::size_t i = 0; i < n.size(); ++i) {
        if (i > 0) out.push_back(',');
        append_json_string(out, n.key(i).text());
        out.push_back(':');
        write_json(out, n.value(i));
      }
      out.push_back('}');
      return;
  }
}

}  // namespace

std::string json_number(std::string_view text) {
  std::string_view s = text;
  std::string_view sign;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    if (s.front() == '-') sign = "-";
    s.remove_prefix(1);
  }
  if (s.empty()) return {};
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x') return radix_number(sign, s.substr(2), 16);
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o') return radix_number(sign, s.substr(2), 8);
  // 0644: octal, as YAML 1.1 (which Kubernetes' YAML reading follows) has it; 089 is no number.
  if (s.size() > 1 && s[0] == '0' && s.find_first_not_of("0123456789") == std::string_view::npos)
    return radix_number(sign, s.substr(1), 8);

  // [digits] [. [digits]] [(e|E) [+|-] digits], with a digit before or after the point.
  std::size_t i = 0;
  while (i < s.size() && json_digit(s[i])) ++i;
  const std::string_view whole = s.substr(0, i);
  std::string_view fraction;
  if (i < s.size() && s[i] == '.') {
    const std::size_t from = ++i;
    while (i < s.size() && json_digit(s[i])) ++i;
    fraction = s.substr(from, i - from);
  }
  if (whole.empty() && fraction.empty()) return {};
  std::string_view exponent;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    const std::size_t from = i++;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const std::size_t digits_from = i;
    while (i < s.size() && json_digit(s[i])) ++i;
    if (i == digits_from) return {};
    exponent = s.substr(from, i - from);
  }
  if (i != s.size()) return {};

  std::string out(sign);
  const std::size_t nonzero = whole.find_first_not_of('0');  // JSON has no leading zeros
  out += whole.empty() ? std::string_view("0")
         : nonzero == std::string_view::npos ? std::string_view("0")
                                             : whole.substr(nonzero);
  if (!fraction.empty()) {
    out.push_back('.');
    out += fraction;
  }
  out += exponent;
  return out;
}

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out.push_back(kHex[static_cast<unsigned char>(c) >> 4]);
          out.push_back(kHex[static_cast<unsigned char>(c) & 0xf]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

std::string to_json(yaml::Node n) {
  std::string out;
  write_json(out, n);
  return out;
}

}  // namespace gpuq::spec
