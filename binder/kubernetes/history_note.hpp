#pragma once
// The fair-share history checkpoint a leader keeps on its Lease (leader.hpp, set_note), for the
// replica that takes over: {"by": IDENTITY, "queues": [{"queue": Q, "at": UNIX_SECONDS,
// "average": {"gpu": 1500.5, ...}}]}. At most kMaxNoteBytes: a Lease's annotations share
// 256 KiB, and the note travels with every renewal.
#include <string>
#include <string_view>
#include <vector>

#include "storage/store.hpp"

namespace gpuq::binder::k8s {

inline constexpr std::size_t kMaxNoteBytes = 64 * 1024;

// Empty when the note would be larger than kMaxNoteBytes (too many queues to share).
std::string encode_history_note(const std::string& by, const std::vector<storage::HistoryRecord>& records);
// An error names what is wrong (the daemon checks the values themselves: apply_history).
Result<std::vector<storage::HistoryRecord>> decode_history_note(std::string_view note);

}  // namespace gpuq::binder::k8s
