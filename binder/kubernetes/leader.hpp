#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it: a
// candidate takes the Lease when it is free or its holder has not renewed it for leaseDuration
// (measured on this machine's clock from when this candidate last saw it change, so clocks need
// not agree); the leader renews it every retryPeriod and, when it could not renew for
// renewDeadline, stops leading at once. Updates carry the resourceVersion read, so two
// candidates never both take it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

#include "binder/kubernetes/client.hpp"

namespace gpuq::binder::k8s {

inline constexpr const char* kLeaseNoteAnnotation = "gpuq.io/fair-share";

struct LeaderConfig {
  bool enabled = false;
  std::string ns = "gpuq-system";
  std::string name = "gpuq";
  std::string identity;  // default: host name and process id
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

// "<host name>_<pid>": a candidate's default identity (client-go's is the host name and a uuid).
std::string default_identity();

class LeaderElector {
 public:
  // on_change(true) once it leads; on_change(false) when it stopped leading (it does not lead
  // again: gpuqd stops, as kube-scheduler does, and starts afresh as a candidate).
  LeaderElector(Client& client, LeaderConfig config, std::function<void(bool)> on_change);
  // Campaigns, then renews, until stop() or the lead is lost. Blocking.
  void run();
  void stop();
  const std::string& identity() const { return config_.identity; }
  // A note the leader keeps on the Lease (annotation kLeaseNoteAnnotation), written with its
  // renewals: the fair-share history checkpoint a new leader starts from. Any thread.
  void set_note(std::string note);
  // The note the Lease held when this candidate took it (the last leader's); empty if none.
  std::string taken_note() const;

 private:
  enum class Outcome { kHeld, kNotOurs, kFailed };
  Outcome try_acquire_or_renew();
  bool wait(std::chrono::milliseconds d);  // false when stopped

  Client& client_;
  LeaderConfig config_;
  std::function<void(bool)> on_change_;
  std::string path_;
  // What this candidate last saw of the Lease, and when it saw it change.
  std::string observed_holder_, observed_renew_;
  std::chrono::steady_clock::time_point observed_at_{};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::string note_, taken_note_;  // under mu_
};

}  // namespace gpuq::binder::k8s
