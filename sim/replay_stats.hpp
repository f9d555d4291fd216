#pragma once
// The replay's measurements (internal to sim/): a timeline of time-weighted averages that keeps
// a bounded number of buckets however long the trace, and the summary.json builder.
#include <cstdint>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "sim/replay.hpp"

namespace gpuq::sim::detail {

// Piecewise-constant series (set by changes at increasing times) averaged over buckets of equal
// width. The width starts at one second and doubles, merging pairs of buckets, whenever time
// runs past the last bucket, so memory stays at 2 x points buckets per series. Sampled series
// (fragmentation, busy GPUs) are point samples averaged per bucket.
class Timeline {
 public:
  Timeline(std::size_t series, std::size_t sampled, std::size_t points, Time start);

  // Moves the clock to `now` (>= the last time), integrating the current levels.
  void advance(Time now);
  void add(std::size_t series, double delta) { level_[series] += delta; }
  // A sampled series' value from the current time on (until the next sample): sampled series
  // are weighted by time as the others are, so a busy hour with many events counts no more
  // than a quiet hour with none.
  void sample(std::size_t sampled, double value);
  // When the next sample is due (every half bucket).
  Time next_sample_at() const { return next_sample_; }
  void sampled_now();
  // Over the whole run: a series' integral (level x seconds), a sampled series' time-weighted mean.
  double total(std::size_t series) const;
  double sample_mean(std::size_t sampled) const;

  struct Output {
    std::vector<double> t;                    // bucket starts
    std::vector<std::vector<double>> series;  // averages per bucket
    std::vector<std::vector<double>> sampled; // time-weighted means per bucket
  };
  Output finish() const;

 private:
  void grow();
  std::size_t points_;
  Time start_, width_ = 1, now_;
  Time next_sample_;
  // Series [0, plain_) are moved by add(); the sampled ones after them are set by sample(). Both
  // kinds are integrated alike.
  std::size_t plain_;
  std::vector<double> level_;
  std::vector<std::vector<double>> integral_;  // [series][bucket]
};

// What the replay loop measured, beyond the per-job outcomes.
struct Measured {
  Timeline::Output timeline;
  std::vector<std::string> queue_names;   // timeline series 0..n-1 are GPU milli by queue,
                                          // n..2n-1 pending jobs by queue, 2n capacity milli
  std::vector<std::uint32_t> job_queue;   // each job's index in queue_names
  std::vector<double> gpu_milli_seconds;  // by queue, over the whole run
  double capacity_milli_seconds = 0;      // up capacity integrated over the run
  double busy_gpu_mean = 0, frag_mean = 0;
  Time start = 0, end = 0;
  std::int64_t nodes = 0, gpus = 0;
};

boost::json::value build_summary(const ReplayInput& input, const std::vector<JobOutcome>& jobs,
                                 const Measured& m);

}  // namespace gpuq::sim::detail
