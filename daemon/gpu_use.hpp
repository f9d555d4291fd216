#pragma once
// A job's GPU use from the local executor's samples (binder/local/README.md: GPU use), and what
// its queue's idle policy asks of it. Pure: the Core (daemon/gpu_use.cpp) feeds the samples in
// and acts on the answer.
#include <span>
#include <string>
#include <vector>

#include "binder/binder.hpp"
#include "spec/types.hpp"
#include "storage/store.hpp"

namespace gpuq::daemon {

// Adds one sample of a job's GPUs (`readings`: those of its GPUs that were read) taken at `at`:
// the sample's utilization is the mean over its GPUs (rounded to a whole percent), its memory the
// sum over them. Every GPU at most `idle_threshold` percent busy: the job is idle (an idle stretch
// begins at its first idle sample); any busier GPU ends the stretch. False (nothing changed) when
// no GPU of the job was read.
bool add_gpu_sample(storage::GpuUse& use, std::span<const binder::GpuReading> readings, Time at, int idle_threshold);

enum class IdleAction { kNone, kWarn, kCancel };
// What `policy` asks at `now` of a job with this use: cancel once idle for cancel_after; warn once
// per stretch once idle for warn_after (not when it is cancelled in the same breath).
IdleAction idle_action(const storage::GpuUse& use, const IdlePolicy& policy, Time now);

// "6h0m", "45m0s", "30s": an idle stretch's length as the reasons show it.
std::string idle_duration_text(Time seconds);
// "GPU 3", "GPUs 0,1".
std::string gpus_text(const std::vector<int>& gpus);

}  // namespace gpuq::daemon
