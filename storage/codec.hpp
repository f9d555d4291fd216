#pragma once
// How specs (JSON, Boost.JSON) and the cold part of a job row are written as text. Resources
// always by NAME: a ResourceId depends on the order names were registered in one process and
// means nothing in the next; names are interned into the caller's ResourceNames on decode.
// Enums by their names too, so reordering an enum never changes what a stored file means.
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "scheduler/model.hpp"
#include "spec/result.hpp"
#include "storage/store.hpp"

namespace gpuq::storage {

class ResourceInterner;  // job_rows.hpp

std::string encode_queue(const QueueSpec& q, const ResourceNames& names);
Result<QueueSpec> decode_queue(std::string_view json, ResourceNames& names);

std::string encode_node(const NodeSpec& n, const ResourceNames& names);
Result<NodeSpec> decode_node(std::string_view json, ResourceNames& names);

// The job fields that are not columns: pod sets, accepted flavors, options, run spec, placement
// (job_body.cpp: a compact length-prefixed text form, not JSON, for start-up speed).
std::string encode_job_body(const JobRecord& j, const ResourceNames& names);
Result<void> decode_job_body(std::string_view text, JobRecord& j, ResourceInterner& names);

// A whole job record as one string: its row's columns, then its body. For a front end that keeps
// many records at rest in memory (gpuqd's pending jobs, about 130 bytes each instead of a
// JobRecord's 1,200: daemon/core.hpp). unpack_job reads what pack_job wrote; what a row does not
// store (GpuUse's idle stretch) is not kept either. Not a stored format.
std::string pack_job(const JobRecord& j, const ResourceNames& names);
Result<void> unpack_job(std::string_view packed, JobRecord& j, ResourceInterner& names);

// A usage history row's averages (usage_history.average): {"gpu":1500.25,"cpu":0.5}, by resource
// name. Decoding checks the form only (an object of numbers); whether the names and values make
// sense is the daemon's to judge.
std::string encode_history(const HistoryRecord& h);
Result<std::map<std::string, double>> decode_history(std::string_view json,
                                                     const std::string& queue);
// The first value of `h` that may not be stored (negative, or not finite), as "gpu is -3";
// nullopt: all may.
std::optional<std::string> bad_history_value(const HistoryRecord& h);

// A resource slot that `names` does not know (a spec built against another ResourceNames):
// its name, to refuse the write instead of storing a wrong or missing name. nullopt: all known.
std::optional<std::string> unknown_resource(const QueueSpec& q, const ResourceNames& names);
std::optional<std::string> unknown_resource(const NodeSpec& n, const ResourceNames& names);
std::optional<std::string> unknown_resource(const JobSpec& j, const ResourceNames& names);

// The stored state codes (column jobs.state, events.from_state/to_state): fixed numbers, written
// out here rather than taken from the enum's order. 0..3 are the unfinished states.
int state_code(JobState s);
std::optional<JobState> state_from_code(std::int64_t code);
inline constexpr int kFirstFinishedStateCode = 4;

// Milli-GPU a job holds when admitted: sum over pod sets of count * per-pod gpu.
Quantity job_gpu_milli(const JobSpec& spec);

}  // namespace gpuq::storage
