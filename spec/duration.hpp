#pragma once
// Durations as Slurm's and Kubernetes' users write them, one reading for the command line, the
// config and the specs:
//   90            seconds
//   90s 15m 2h 1d  one unit (500ms where milliseconds are allowed)
//   1h30m 2d12h    units together, largest first (Go's and Kubernetes' style)
//   30:00         minutes:seconds        1:30:00   hours:minutes:seconds
//   1-12          days-hours             1-12:30   days-hours:minutes
//   1-12:00:00    days-hours:minutes:seconds (Slurm's)
// A bare number is seconds, as gpuq has always taken it (Slurm's is minutes).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuq::spec {

// What an error says is allowed.
inline constexpr const char* kDurationForms = "90 (seconds), 90s, 15m, 2h, 1d, 1h30m, 1:30:00 or 1-12:00:00";

// Milliseconds; nullopt when `text` is none of the forms, or beyond about 290 million years.
// `millis`: "500ms" is allowed.
std::optional<std::int64_t> duration_ms(std::string_view text, bool millis = false);
// Whole seconds (a duration in milliseconds must be whole seconds here: "1500ms" is refused).
std::optional<std::int64_t> duration_seconds(std::string_view text);

}  // namespace gpuq::spec
