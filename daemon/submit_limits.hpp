#pragma once
// The per-user submit rate limit of a queue (QueueSpec::max_submits_per_user_per_minute): a token
// bucket per (queue, user) holding `limit` submissions, refilled at `limit` a minute, so a user
// may send a burst of `limit` and then one every 60/limit seconds. The Core's, not the engine's:
// it is about requests, not about what runs. Times are the Core's (whole seconds).
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "spec/types.hpp"

namespace gpuq::daemon {

class SubmitRate {
 public:
  // Seconds until `user` may submit to `queue` again: 0 when it may now.
  Time wait(const std::string& queue, const std::string& user, std::int32_t limit, Time now) const;
  // Takes one submission from the bucket (after the submission was accepted).
  void take(const std::string& queue, const std::string& user, std::int32_t limit, Time now);

 private:
  struct Bucket {
    double tokens = 0;
    Time at = 0;
  };
  double tokens(const Bucket& b, std::int32_t limit, Time now) const;
  std::map<std::pair<std::string, std::string>, Bucket> buckets_;
};

}  // namespace gpuq::daemon
