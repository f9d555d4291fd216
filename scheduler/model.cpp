#include "scheduler/model.hpp"

#include <type_traits>

namespace gpuq {

const JobId* job_of(const BinderFact& fact) {
  return std::visit(
      [](const auto& f) -> const JobId* {
        if constexpr (std::is_same_v<std::decay_t<decltype(f)>, NodeLost>)
          return nullptr;
        else
          return &f.job;
      },
      fact);
}

const char* to_string(JobState s) {
  switch (s) {
    case JobState::kPending: return "Pending";
    case JobState::kAdmitted: return "Admitted";
    case JobState::kRunning: return "Running";
    case JobState::kPreempting: return "Preempting";
    case JobState::kSucceeded: return "Succeeded";
    case JobState::kFailed: return "Failed";
    case JobState::kCancelled: return "Cancelled";
  }
  return "?";
}

}  // namespace gpuq
