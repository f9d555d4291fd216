#pragma once
// Job arrays as Slurm writes them (sbatch --array): "0-99%8", "1,3,5-9", "0-30:10" (a step):
// the members' indices, and after '%' how many of them may run at once.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "spec/result.hpp"

namespace gpuq::spec {

// The most members one array may have, and the largest index. Slurm's MaxArraySize is 1001 by
// default and at most 4,000,001 (indices 0 to 4,000,000); gpuq takes indices as large and up to
// 100,000 members: a held array of any size costs gpuqd a few bytes a member, but a command on
// the whole array (hold, release, cancel) still costs about 16 us a member (1.6 s at 100,000),
// daemon/LAZY_ARRAYS.md.
inline constexpr std::size_t kArrayMembers = 100'000;
inline constexpr std::int32_t kArrayMaxIndex = 4'000'000;

struct ArrayRange {
  std::vector<std::int32_t> indices;  // ascending, no repeats
  std::int32_t throttle = 0;          // 0: no cap
};

// Errors quote the text and say what is allowed; the caller puts the field's name before them.
Result<ArrayRange> parse_array(std::string_view text);

// Indices written back in Slurm's compact form: "0-3,7,9-12" (ascending input).
std::string array_text(const std::vector<std::int32_t>& indices);

}  // namespace gpuq::spec
