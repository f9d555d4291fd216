#pragma once
// How report.html writes what it shows (internal to sim/, used by report.cpp): numbers by kind,
// differences between variants, HTML escaping, and the color of each queue.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpuq::sim::report {

std::string escape_html(std::string_view s);

// printf with one double, for formats that fit 64 characters.
std::string printf_double(const char* format, double v);

enum class Kind { kCount, kSeconds, kRatio, kNumber };

// For a table cell: "1,234", "1.5 min", "0.850", "12.50"; an en dash when the summary lacks the
// key (never for running text).
std::string format_value(std::optional<double> v, Kind kind);

// `now - base` formatted like the value and always signed ("+1.2 min", "\u22120.05", "\u00b10"),
// or nothing when either side is missing or not finite.
std::optional<std::string> format_delta(std::optional<double> now, std::optional<double> base,
                                        Kind kind);

// "#rrggbb" for the i-th queue: the 10 Tableau colors, then colors chosen greedily to be as far
// as possible (CIE76) from every earlier one. The same i gives the same color in every run.
std::string queue_color(std::size_t i);

}  // namespace gpuq::sim::report
