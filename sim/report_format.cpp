#include "sim/report_format.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <vector>

namespace gpuq::sim::report {

namespace {

// 1234567 -> "1,234,567"; only called below 1e15, where a double holds the integer exactly.
std::string grouped(double v) {
  std::string digits = printf_double("%.0f", std::fabs(v));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 && digits != "0" ? "-" : "") + out;
}

std::string duration(double seconds) {
  const double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  if (a < 120) return printf_double("%.1f s", seconds);
  if (a < 7200) return printf_double("%.1f min", seconds / 60);
  if (a < 172800) return printf_double("%.1f h", seconds / 3600);
  if (a < 86400e6) return printf_double("%.1f d", seconds / 86400);
  return printf_double("%.3g d", seconds / 86400);
}

// ---- colors: sRGB 0..255 per channel, compared in CIELAB ----

using Rgb = std::array<int, 3>;
using Lab = std::array<double, 3>;

Rgb from_hsl(double hue, double saturation, double lightness) {
  const double c = (1 - std::fabs(2 * lightness - 1)) * saturation;
  const double h = hue / 60;
  const double x = c * (1 - std::fabs(std::fmod(h, 2) - 1));
  const std::array<double, 3> rgb = h < 1   ? std::array<double, 3>{c, x, 0}
                                    : h < 2 ? std::array<double, 3>{x, c, 0}
                                    : h < 3 ? std::array<double, 3>{0, c, x}
                                    : h < 4 ? std::array<double, 3>{0, x, c}
                                    : h < 5 ? std::array<double, 3>{x, 0, c}
                                            : std::array<double, 3>{c, 0, x};
  Rgb out{};
  for (std::size_t i = 0; i < 3; ++i)
    out[i] = static_cast<int>(std::lround((rgb[i] + lightness - c / 2) * 255));
  return out;
}

Rgb from_hex(std::string_view hex) {  // "#rrggbb"
  const auto digit = [](char ch) { return ch <= '9' ? ch - '0' : ch - 'a' + 10; };
  Rgb out{};
  for (std::size_t i = 0; i < 3; ++i) out[i] = 16 * digit(hex[1 + 2 * i]) + digit(hex[2 + 2 * i]);
  return out;
}

std::string to_hex(const Rgb& c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
  return buf;
}

// sRGB with the D65 white point to CIELAB.
Lab to_lab(const Rgb& c) {
  std::array<double, 3> lin{};
  for (std::size_t i = 0; i < 3; ++i) {
    const double v = c[i] / 255.0;
    lin[i] = v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  }
  const double x = 0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2];
  const double y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  const double z = 0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2];
  const auto f = [](double t) {
    constexpr double d = 6.0 / 29;
    return t > d * d * d ? std::cbrt(t) : t / (3 * d * d) + 4.0 / 29;
  };
  const double fx = f(x / 0.95047), fy = f(y), fz = f(z / 1.08883);
  return {116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)};
}

double delta_e(const Lab& a, const Lab& b) {  // CIE76
  return std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

// Every queue color in order: the Tableau 10 palette, then greedy farthest-point selection over
// a fixed grid (hues every 5 degrees, mid saturations and lightnesses, so nothing near white,
// black or grey): each pick is the candidate whose nearest chosen color is farthest, ties to the
// earlier candidate, so the order never changes. Ends when every candidate is taken.
std::vector<std::string> all_queue_colors() {
  static constexpr std::string_view kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                  "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                  "#9c755f", "#bab0ac"};
  std::vector<Rgb> candidates;
  for (double lightness : {0.30, 0.45, 0.60})
    for (double saturation : {0.40, 0.60, 0.80})
      for (int hue = 0; hue < 360; hue += 5)
        candidates.push_back(from_hsl(hue, saturation, lightness));
  std::vector<Lab> labs;
  for (const Rgb& c : candidates) labs.push_back(to_lab(c));
  std::vector<double> nearest(candidates.size(), HUGE_VAL);  // to the closest chosen color
  std::vector<std::string> out;
  const auto choose = [&](const Rgb& c) {
    const Lab lab = to_lab(c);
    for (std::size_t k = 0; k < labs.size(); ++k)
      nearest[k] = std::min(nearest[k], delta_e(labs[k], lab));
    out.push_back(to_hex(c));
  };
  for (std::string_view hex : kPalette) choose(from_hex(hex));
  for (;;) {
    std::size_t best = 0;
    for (std::size_t k = 1; k < nearest.size(); ++k)
      if (nearest[k] > nearest[best]) best = k;
    if (!(nearest[best] > 0)) return out;  // all taken: a chosen candidate is 0 from itself
    choose(candidates[best]);
  }
}

}  // namespace

std::string escape_html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string printf_double(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string format_value(std::optional<double> v, Kind kind) {
  if (!v) return "\u2013";  // en dash: the summary lacks this key
  const double x = *v;
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "\u221e" : "-\u221e";
  const double a = std::fabs(x);
  switch (kind) {
    case Kind::kSeconds:
      return duration(x);
    case Kind::kRatio:
      return a < 1e6 ? printf_double("%.3f", x) : printf_double("%.3g", x);
    case Kind::kCount:
      return a < 1e15 ? grouped(x) : printf_double("%.3g", x);
    case Kind::kNumber:
      if (a >= 1e15) return printf_double("%.3g", x);
      if (a >= 1000) return grouped(x);
      return printf_double("%.2f", x);
  }
  return {};
}

std::optional<std::string> format_delta(std::optional<double> now, std::optional<double> base,
                                        Kind kind) {
  if (!now || !base) return std::nullopt;
  const double d = *now - *base;
  if (!std::isfinite(d)) return std::nullopt;  // a side is not finite, or the difference overflows
  if (d == 0) return "\u00b1" + format_value(0.0, kind);
  return (d > 0 ? "+" : "\u2212") + format_value(std::fabs(d), kind);
}

std::string queue_color(std::size_t i) {
  // Built once, on first use (a function-local static: thread-safe). Past its end (658 colors)
  // the sequence repeats; no grid keeps that many queues apart anyway.
  static const std::vector<std::string> colors = all_queue_colors();
  return colors[i % colors.size()];
}

}  // namespace gpuq::sim::report
