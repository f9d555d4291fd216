// Core::hold and Core::release (core.hpp): the engine's holds, for jobs gpuqd knows.
#include "daemon/core.hpp"

namespace gpuq::daemon {

namespace {

// Why a job that is not live cannot be held: it ended, or there is none.
Error not_live(storage::Store& store, const std::string& id) {
  auto on_disk = store.job(id);
  if (!on_disk) return Error{on_disk.error(), ErrorCode::kUnavailable};
  if (on_disk.value())
    return Error{"job \"" + id + "\" already ended (" + to_string(on_disk.value()->state) + ")",
                 ErrorCode::kFailedPrecondition};
  return Error{"job \"" + id + "\" does not exist", ErrorCode::kNotFound};
}

}  // namespace

Result<void> Core::hold(const std::string& id, Time now, const std::string& by) {
  if (unfinished_.count(id) == 0) return not_live(*store_, id);
  return engine_->hold(JobId(id), now, "held by " + by);
}

Result<void> Core::release(const std::string& id, Time now, const std::string& by) {
  if (unfinished_.count(id) == 0) return not_live(*store_, id);
  return engine_->release_hold(JobId(id), now, "released by " + by);
}

}  // namespace gpuq::daemon
